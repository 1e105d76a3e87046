#!/usr/bin/env python3
"""Side-by-side timing of trainwreck builds against ripgrep on one corpus (docs/performance.md).

    scripts/bench_compare.py TARGET ROUNDS NAME=BINARY... [--rg RG] [--cpus 2,3]
                             [--rules DIR] [--threads N]

Each round runs every build's `analyze TARGET --format json` and `rg -c -f PATTERNS TARGET` once,
alternated, so drift in the host's load reaches all of them alike; the first round warms the
page cache and is not counted. With --cpus, every command is pinned there with taskset (two
cores of a quiet many-core machine stand in for the 2-core development machine). Prints per
command the median wall and CPU (user+sys) time and the peak RSS, and per build its ratio to
rg (median of the per-round ratios, wall and CPU). ripgrep gets the last build's
`rules patterns` with `\\b` made ASCII, as scripts/bench.sh does; `cat` of every file of the
target (one process, one thread) is the read limit beside them. With --rules DIR every build
also loads that local knowledge base (scripts/gen_rules.py makes one) and ripgrep gets its patterns
too; with --threads N every build runs `--threads N` and ripgrep `-j N`.
"""
import os, re, statistics, subprocess, sys, tempfile, time

def main():
    args = sys.argv[1:]
    rg, cpus, rules, threads = "rg", None, None, None
    if "--rg" in args:
        i = args.index("--rg"); rg = args[i + 1]; del args[i:i + 2]
    if "--cpus" in args:
        i = args.index("--cpus"); cpus = args[i + 1]; del args[i:i + 2]
    if "--rules" in args:
        i = args.index("--rules"); rules = args[i + 1]; del args[i:i + 2]
    if "--threads" in args:
        i = args.index("--threads"); threads = args[i + 1]; del args[i:i + 2]
    extra = (["--rules", rules] if rules else []) + (["--threads", threads] if threads else [])
    target, rounds, builds = args[0], int(args[1]), [a.split("=", 1) for a in args[2:]]
    pats = subprocess.run([builds[-1][1], "rules", "patterns"] + (["--rules", rules] if rules else []), capture_output=True, text=True, check=True).stdout
    pf = tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False)
    pf.write(re.sub(r"\\b", r"(?-u:\\b)", pats)); pf.close()
    cmds = {name: [b, "analyze", target, "--format", "json"] + extra for name, b in builds}
    cmds["rg"] = [rg, "-c", "-f", pf.name, target] + (["-j", threads] if threads else [])
    cmds["cat"] = ["sh", "-c", 'find "$1" -type f -exec cat {} + >/dev/null', "cat", target]
    wall = {k: [] for k in cmds}; cpu = {k: [] for k in cmds}; rss = {k: [] for k in cmds}
    pin = ["taskset", "-c", cpus] if cpus else []
    for r in range(rounds + 1):
        for k, c in cmds.items():
            t0 = time.perf_counter()
            p = subprocess.Popen(pin + c, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            _, _, ru = os.wait4(p.pid, 0)
            if r > 0:
                wall[k].append(time.perf_counter() - t0)
                cpu[k].append(ru.ru_utime + ru.ru_stime)
                rss[k].append(ru.ru_maxrss / 1024)
    for k in cmds:
        print(f"{k:12} wall {statistics.median(wall[k]):.3f} s (min {min(wall[k]):.3f}, max {max(wall[k]):.3f})"
              f"  cpu {statistics.median(cpu[k]):.3f} s  peak RSS {max(rss[k]):.1f} MiB")
    for name, _ in builds:
        for what, t in (("wall", wall), ("cpu", cpu)):
            q = sorted(a / b for a, b in zip(t[name], t["rg"]))
            print(f"{name}/rg {what}: {statistics.median(q):.3f} (min {q[0]:.3f}, max {q[-1]:.3f})")
        q = sorted(a / b for a, b in zip(wall[name], wall["cat"]))
        print(f"{name}/cat wall: {statistics.median(q):.3f} (min {q[0]:.3f}, max {q[-1]:.3f})")
    os.unlink(pf.name)

main()
