#!/usr/bin/env python3
"""Regenerate src/scan/trigrams.bin: how common each three-byte sequence is in healthy
training-log text, for the scanner's choice of a literal's prefilter window
(`rare_window` in src/scan/mod.rs: a window is at most as common as its rarest trigram).

The background text is ours: the healthy runs captured on GPUs under fixtures/ and 20 MB of
scripts/gen_logs.py output (seed 7; the benchmarks use seed 1 and 2). ASCII is lower-cased
as the windows are. Each trigram is hashed into 65,536 one-byte buckets holding
bit_length(count), so 0 = never seen and 24 = about ten million times.

    scripts/window_freq.py            # rewrites src/scan/trigrams.bin
    scripts/window_freq.py --heads    # prints HEALTHY_HEADS for src/scan/literals.rs instead

`--heads`: the capitalised frequent words (`FREQUENT_WORDS` in src/scan/literals.rs) followed
by `: ` that any line of the same background holds (the generator's planted failure lines left
out): the message heads healthy logs write, which a case-sensitive literal cannot count as rare.
"""
import json
import re
import os
import subprocess
import sys
import tempfile

root = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
healthy = [
    "fixtures/corpus/11a_healthy_torchrun",
    "fixtures/captured/11b_healthy_torchrun_again",
    "fixtures/captured/23_healthy_hf_trainer",
]


def bucket(a, b, c):
    # Must equal `trigram_bucket` in src/scan/mod.rs.
    return ((((a << 16) | (b << 8) | c) * 0x9E3779B1) & 0xFFFFFFFF) >> 16


def lower(data):
    return data.translate(bytes.maketrans(bytes(range(65, 91)), bytes(range(97, 123))))


counts = [0] * 65536


def add(data):
    data = lower(data)
    for line in data.split(b"\n"):
        for i in range(len(line) - 2):
            counts[bucket(line[i], line[i + 1], line[i + 2])] += 1


def files(d):
    for dirpath, _, names in os.walk(d):
        for n in sorted(names):
            yield os.path.join(dirpath, n)


heads_mode = sys.argv[1:] == ["--heads"]
lines = []


def keep(data, planted=()):
    if heads_mode:
        lines.extend(l for i, l in enumerate(data.split(b"\n"), 1) if i not in planted)
    else:
        add(data)


for d in healthy:
    for f in files(os.path.join(root, d)):
        if not f.endswith(".md"):
            keep(open(f, "rb").read())
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "g")
    manifest = os.path.join(tmp, "m.json")
    subprocess.run([sys.executable, os.path.join(root, "scripts", "gen_logs.py"), "--out", out,
                    "--size-mb", "20", "--ranks", "8", "--seed", "7",
                    "--manifest", manifest], check=True, stdout=subprocess.DEVNULL)
    planted = {}
    for p in json.load(open(manifest))["planted"]:
        planted.setdefault(os.path.join(out, p["file"]), set()).add(p["line"])
    for f in files(out):
        keep(open(f, "rb").read(), planted.get(f, set()))
if heads_mode:
    src = open(os.path.join(root, "src", "scan", "literals.rs")).read()
    block = src[src.index("pub const FREQUENT_WORDS"):]
    words = dict.fromkeys(w.strip() for w in re.findall(r'"([^"]*)"', block[:block.index("];")]))
    heads = sorted(w[0].upper() + w[1:] + ": " for w in words if w[:1].isalpha())
    held = [h for h in heads if any(h.encode() in l for l in lines)]
    print("pub const HEALTHY_HEADS: &[&str] = &[" + ", ".join(json.dumps(h) for h in held) + "];")
    sys.exit(0)
table = bytes(min(255, c.bit_length()) for c in counts)
open(os.path.join(root, "src", "scan", "trigrams.bin"), "wb").write(table)
print(f"{sum(1 for c in counts if c)} of 65536 buckets used; max {max(table)}")
