#!/usr/bin/env python3
"""Seed corpus for the fuzz targets, from the repository's own fixtures (never committed:
fuzz/corpus/ is ignored). One distinct file per seed; small files only (libFuzzer mutates
better from small seeds). The source_open target's first byte picks the file name the kind is
detected from, so each seed is prefixed with the index of its file's name in NAMES below,
which mirrors fuzz/fuzz_targets/source_open.rs."""
import gzip, hashlib, os, pathlib, sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
OUT = ROOT / "fuzz" / "corpus"
MAX = 64 * 1024
NAMES = [l.strip().strip('",') for l in
         (ROOT / "fuzz/fuzz_targets/source_open.rs").read_text().split("const NAMES: &[&str] = &[")[1]
         .split("];")[0].splitlines() if l.strip()]
ALIASES = {"proc_meminfo.txt": "meminfo.txt", "df-B1_dev_shm.txt": "df-h_dev_shm.txt",
           "torchelastic_error.json": "error.json", "dmesg-tail.txt": "dmesg.txt",
           "paste.txt": "console.log", "rank1.log": "rank0.log", "stdout.log": "console.log"}


def put(target, data):
    d = OUT / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


def main():
    n = {}
    for p in sorted((ROOT / "fixtures").rglob("*")):
        if not p.is_file():
            continue
        # Real cores, decompressed: the ELF parser learns nothing from the gzip bytes. Only
        # cores that fit libFuzzer's -max_len (fuzz.sh: 1 MiB) whole.
        if (".core" in p.name or p.name.startswith("core.")) and p.name.endswith(".gz"):
            if p.stat().st_size <= MAX:
                core = gzip.decompress(p.read_bytes())
                if len(core) <= 1 << 20:
                    put("core_parse", core)
        if p.stat().st_size > MAX:
            continue
        data = p.read_bytes()
        name = ALIASES.get(p.name, p.name)
        if name.startswith("nccl_trace_rank"):
            put("flight_recorder", data)
        elif p.name.endswith(".gz"):
            put("gzip_input", data)
        elif ".core" in p.name or p.name.startswith("core."):
            put("core_parse", data)
        elif name in NAMES:
            put("source_open", bytes([NAMES.index(name)]) + data)
            # The same log as Windows writes it (UTF-16LE with a BOM and CRLF, GBK), for the
            # encoding layer, through the whole opening path and on its own.
            if name.endswith(".log"):
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    text = None
                if text is not None:
                    for enc in (b"\xff\xfe" + text.replace("\n", "\r\n").encode("utf-16-le"),
                                ("开始训练\n" + text).encode("gb18030")):
                        if len(enc) <= MAX:
                            put("source_open", bytes([NAMES.index(name)]) + enc)
                            put("text_encoding", bytes([len(enc) % 256]) + enc)
            if name == "gdb-bt.txt":
                put("core_text", data)
        else:
            continue
        n[p.name] = n.get(p.name, 0) + 1
    for p in sorted((ROOT / "rules").glob("*.toml")):
        put("rule_loader", p.read_bytes())
    for t in sorted(os.listdir(OUT)):
        print(f"seed corpus {t}: {len(os.listdir(OUT / t))} files", file=sys.stderr)


main()
