#!/usr/bin/env python3
"""Score a trainwreck binary on the real-thread fixtures (fixtures/real/batch-NN/<ID>_<name>/).

Usage: scripts/score_real.py BINARY [--root fixtures/real] [--batch batch-01 ...] [--misses] [--marks]

For each case: top-1 (the first finding that is not a symptom, or `no_failure`), top-3 (any of the
first three distinct root-cause categories accepted), and fix right (counted only among cases whose
top-1 is right and whose label names a step: the first sentence of the top finding's `fix`
matches every regex of `fix_must_contain`, case-insensitive: the step must come first). This is the same scoring as tests/real_threads.rs, run on a
built binary so that a batch can be scored on the build from before any change for it.

Leave-one-source-out: `fixtures/real/shaped-by.json` maps a rule name to the case IDs whose thread
shaped it (a signature, token, anchor or fix variant added or changed because of that thread). A
right answer counts in the leave-one-source-out score only if the rule that decided it (the top
finding's rule and the rules merged into it) would still exist without that case's project: i.e.
the rule has no shaping cases, or has at least one from another project. The script also lists
rules that are right only on threads of the project that shaped them (too narrow).
Prints misses (--misses), a per-category table, per-rule projects, and last a summary line with the
Markdown cells for docs/accuracy.md."""
import argparse
import collections
import json
import os
import re
import subprocess
import sys

ap = argparse.ArgumentParser()
ap.add_argument("binary")
ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "real"))
ap.add_argument("--batch", action="append", help="score only these batch folders (default: all)")
ap.add_argument("--misses", action="store_true", help="print every miss with the top fix")
ap.add_argument("--marks", action="store_true", help="print every case whose known_miss / fix_known_miss mark disagrees with its result (the ratchet tests/real_threads.rs enforces)")
ap.add_argument("--reliability", action="store_true", help="print the reliability table of the shown confidences (docs/calibration.md's bands, every cause finding of a case not called no_failure) and the first causes' mean confidence against their accuracy: run it on a new batch before fitting it")
ap.add_argument("--coverage", action="store_true", help="print Markdown coverage tables (threads per category and per stack over all batches, with the scored batches' results) for docs/coverage.md")
a = ap.parse_args()

root = os.path.normpath(a.root)
shaped_path = os.path.join(root, "shaped-by.json")
shaped = json.load(open(shaped_path)) if os.path.isfile(shaped_path) else {}
shaped = {k: v for k, v in shaped.items() if not k.startswith("_")}

labels = {}  # case id -> label, over all batches (shaping cases may sit in other batches)
case_dirs = []
for b in sorted(os.listdir(root)):
    bd = os.path.join(root, b)
    if not (b.startswith("batch-") and os.path.isdir(bd)):
        continue
    for c in sorted(os.listdir(bd)):
        cd = os.path.join(bd, c)
        if os.path.isfile(os.path.join(cd, "label.json")):
            lab = json.load(open(os.path.join(cd, "label.json")))
            labels[c.split("_", 1)[0]] = lab
            if not a.batch or b in a.batch:
                case_dirs.append((b, c, cd, lab))


def first_sentence(fix):
    """Up to the first '.' (or '。') ending a sentence outside backticks, as tests/real_threads.rs."""
    in_code = False
    for i, c in enumerate(fix):
        if c == "`":
            in_code = not in_code
        elif c == "。" and not in_code:
            return fix[:i]
        elif c == "." and not in_code:
            blank = i + 1 >= len(fix) or fix[i + 1].isspace()
            if blank and not any(fix[:i].endswith(a) for a in ("e.g", "i.e", "vs")):
                return fix[:i]
    return fix


def project_of(case_id):
    lab = labels.get(case_id)
    return lab.get("project") if lab else None


rows = collections.defaultdict(lambda: [0, 0, 0, 0, 0])  # cases, top1, top3, fix_n, fix_ok
stack_rows = collections.defaultdict(lambda: [0, 0, 0, 0, 0])

# Stack families for the coverage table: a label's free-text `stack` names the frameworks,
# launchers and schedulers the paste shows; each family counts the threads that mention it.
STACKS = [
    ("verl", r"\bverl\b"), ("OpenRLHF", r"openrlhf"), ("TRL", r"\btrl\b"), ("ms-swift", r"swift"),
    ("LLaMA-Factory", r"llama-?factory"), ("axolotl", r"axolotl"), ("unsloth", r"unsloth"),
    ("Megatron", r"megatron"), ("DeepSpeed", r"deepspeed|zero-?[123]"), ("HF Trainer / accelerate", r"hf trainer|trainer|accelerate"),
    ("FSDP / torchtitan", r"fsdp|torchtitan"), ("vLLM / SGLang", r"vllm|sglang"), ("Ray", r"\bray\b"),
    ("torchrun / torch.distributed", r"torchrun|torch\.distributed|ddp|dataparallel"), ("Slurm", r"slurm"),
    ("Kubernetes", r"kubernetes|kubeflow|\bpod\b|k8s"), ("Docker / containers", r"docker|container|singularity"),
    ("notebooks (Colab, Jupyter, Kaggle)", r"colab|jupyter|notebook|kaggle"), ("NCCL / nccl-tests", r"nccl"),
    ("PaddlePaddle", r"paddle"), ("ROCm / Ascend", r"rocm|ascend|npu"), ("mmcv / Lightning / other trainers", r"mmcv|mmdet|lightning|composer|ignite|fairseq"),
]
rule_projects = collections.defaultdict(set)  # rule -> projects it decided right
n = t1 = t3 = fn = fo = loso = errors = 0
shown = []  # (confidence, right, first cause) for --reliability
for b, c, cd, lab in case_dirs:
    accept = set(lab.get("accept") or [lab["category"]])
    must = lab.get("fix_must_contain") or []
    inputs = [os.path.join(cd, f) for f in sorted(os.listdir(cd)) if f != "label.json"]
    n += 1
    try:
        p = subprocess.run([a.binary, "analyze", "--format", "json", *inputs], capture_output=True, timeout=60)
        rep = json.loads(p.stdout)
    except Exception as e:  # a crash or bad JSON is a miss, and counted
        errors += 1
        print(f"ERROR {b}/{c}: {type(e).__name__}: {str(e)[:120]}")
        rep = {"findings": []}
    roots = [f for f in rep.get("findings", []) if not f.get("symptom_of")]
    cats = []
    for f in roots:
        if f["category"] not in cats:
            cats.append(f["category"])
    if rep.get("verdict") == "no_failure":
        cats.insert(0, "no_failure")
    got = cats[0] if cats else rep.get("verdict", "?")
    ok1 = got in accept
    ok3 = bool(accept & set(cats[:3]))
    top = roots[0] if roots else {}
    if rep.get("verdict") not in (None, "no_failure"):
        shown += [(f["confidence"], f["category"] in accept, i == 0) for i, f in enumerate(roots)]
    fix = top.get("fix", "") if got != "no_failure" else ""
    r = rows[lab["category"]]
    r[0] += 1
    r[1] += ok1
    r[2] += ok3
    t1 += ok1
    t3 += ok3
    fix_ok = None
    if ok1 and must and got != "no_failure":
        fix_ok = all(re.search(m, first_sentence(fix), re.I) for m in must)
        r[3] += 1
        r[4] += fix_ok
        fn += 1
        fo += fix_ok
    for fam, rx in STACKS:
        if re.search(rx, lab.get("stack", ""), re.I):
            sr = stack_rows[fam]
            sr[0] += 1
            sr[1] += ok1
            sr[2] += ok3
            if fix_ok is not None:
                sr[3] += 1
                sr[4] += fix_ok
    proj = lab.get("project")
    if ok1:
        deciders = [top.get("rule")] + list(top.get("merged_rules", [])) if top else []
        deciders = [d for d in deciders if d]
        for d in deciders:
            rule_projects[d].add(proj)

        def survives(rule):
            src = shaped.get(rule, [])
            return not src or any(project_of(s) != proj for s in src)

        loso += (not deciders) or any(survives(d) for d in deciders)
    if a.marks:
        km, fkm = lab.get("known_miss"), lab.get("fix_known_miss")
        if not ok1 and not km:
            print(f"mark     {b}/{c}: top-1 wrong ({cats[:3]}) but no known_miss")
        if ok1 and km:
            print(f"mark     {b}/{c}: top-1 right now: remove known_miss")
        if fix_ok is False and not fkm:
            print(f"mark     {b}/{c}: fix misses but no fix_known_miss: {first_sentence(fix)[:120]!r}")
        if fix_ok and fkm:
            print(f"mark     {b}/{c}: fix right now: remove fix_known_miss")
    if a.misses and (not ok1 or fix_ok is False):
        what = "category" if not ok1 else "fix"
        print(f"miss {what:8} {b}/{c}: want {'|'.join(sorted(accept))}, got {cats[:3]}; fix: {fix[:160]!r}")

print()
print(f'{"category":26} {"cases":>5} {"top1":>5} {"top3":>5} {"fix":>9}')
for cat, (k, a1, a3, f_n, f_o) in sorted(rows.items()):
    print(f"{cat:26} {k:5} {a1:5} {a3:5} {f_o:>4}/{f_n:<4}")
narrow = []
for rule, projs in sorted(rule_projects.items()):
    src = {project_of(s) for s in shaped.get(rule, [])}
    if src and projs <= src:
        narrow.append(f"{rule} (right only on {sorted(projs)}, shaped by {sorted(src)})")
print()
print("rules right only on the projects that shaped them: " + (", ".join(narrow) if narrow else "none"))
if n == 0:
    print("no cases found")
    sys.exit(1)


def pc(x, d):
    return f"{100 * x / d:.0f} %" if d else "-"


print(
    f"cases {n}, top-1 {t1} ({pc(t1, n)}), top-3 {t3} ({pc(t3, n)}), fix right {fo}/{fn} ({pc(fo, fn)}), "
    f"leave-one-source-out top-1 {loso} ({pc(loso, n)}), errors {errors}"
)
if a.reliability and shown:
    print()
    print("| band | findings | mean confidence | accuracy | accuracy − confidence |")
    print("|---|---|---|---|---|")
    ece = 0.0
    for i in range(10):
        lo, hi = i / 10, (i + 1) / 10 if i < 9 else 1.01
        band = [x for x in shown if lo <= x[0] < hi]
        if not band:
            continue
        conf = sum(x[0] for x in band) / len(band)
        acc = sum(x[1] for x in band) / len(band)
        ece += len(band) / len(shown) * abs(conf - acc)
        print(f"| {lo:.1f}–{min(hi, 1.0):.1f} | {len(band)} | {conf:.3f} | {acc:.3f} | {acc - conf:+.3f} |")
    firsts = [x for x in shown if x[2]]
    print(
        f"\nfindings {len(shown)}, ECE {ece:.3f}; first causes {len(firsts)}, shown at "
        f"{sum(x[0] for x in firsts) / len(firsts):.3f}, right {sum(x[1] for x in firsts) / len(firsts):.3f}"
    )
if a.coverage:
    all_cat = collections.Counter(lab["category"] for lab in labels.values())
    all_stack = collections.Counter(
        fam for lab in labels.values() for fam, rx in STACKS if re.search(rx, lab.get("stack", ""), re.I)
    )
    print()
    print("| category | real threads (all batches) | scored here | top-1 | top-3 | fix right |")
    print("|---|---|---|---|---|---|")
    for cat in sorted(set(all_cat) | set(rows)):
        k, a1, a3, f_n, f_o = rows.get(cat, [0, 0, 0, 0, 0])
        print(f"| {cat} | {all_cat.get(cat, 0)} | {k} | {a1}/{k} | {a3}/{k} | {f_o}/{f_n} |")
    print()
    print("| stack | real threads (all batches) | scored here | top-1 | top-3 | fix right |")
    print("|---|---|---|---|---|---|")
    for fam, _ in STACKS:
        k, a1, a3, f_n, f_o = stack_rows.get(fam, [0, 0, 0, 0, 0])
        print(f"| {fam} | {all_stack.get(fam, 0)} | {k} | {a1}/{k} | {a3}/{k} | {f_o}/{f_n} |")
print(f"markdown cells: | {n} | {pc(t1, n)} ({t1}) | {pc(t3, n)} ({t3}) | {pc(fo, fn)} ({fo}/{fn}) |")
