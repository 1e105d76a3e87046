#!/usr/bin/env python3
"""Seed corpus for the fuzz targets, from the repository's own fixtures (never committed:
fuzz/corpus/ is ignored). One distinct file per seed; small files only (libFuzzer mutates
better from small seeds). The source_open target's first byte picks the file name the kind is
detected from, so each seed is prefixed with the index of its file's name in NAMES below,
which mirrors fuzz/fuzz_targets/source_open.rs."""
import gzip, hashlib, io, os, pathlib, shutil, struct, subprocess, sys, tarfile, tempfile, zipfile

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


def sections(elf, names):
    """The named sections of an ELF file as bytes (b"" where absent), by objcopy (which
    dumps non-loaded sections such as .debug_* only this way)."""
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            dump = os.path.join(tmp, "s")
            r = subprocess.run(["objcopy", "--dump-section", f"{name}={dump}", elf,
                                os.path.join(tmp, "copy")], capture_output=True)
            out.append(pathlib.Path(dump).read_bytes() if r.returncode == 0 and os.path.exists(dump) else b"")
            if os.path.exists(dump):
                os.remove(dump)
    return out


def packed(parts):
    """Each part behind a little-endian u16 length, as the unwinding targets read them."""
    return b"".join(struct.pack("<H", min(len(p), 0xFFFF)) + p[:0xFFFF] for p in parts)


# A program with inlined calls and more than one frame, built with -g: the DWARF and CFI the
# unwinding targets parse (`.eh_frame`, `.debug_frame` with -fno-asynchronous-unwind-tables).
PROGRAM = r"""
static inline int twice(int x) { return x * 2; }
__attribute__((noinline)) int inner(volatile int *p) { return twice(*p) + 1; }
__attribute__((noinline)) int outer(int n) { volatile int v = n; return inner(&v) * 3; }
int main(int argc, char **argv) { (void)argv; return outer(argc); }
"""


def unwind_seeds():
    """Seeds for cfi_unwind and dwarf_lines from a small program compiled here (needs gcc and
    objcopy; without them these two targets start from libFuzzer's empty input)."""
    if not (shutil.which("gcc") and shutil.which("objcopy")):
        print("gcc or objcopy missing: no seeds for cfi_unwind, dwarf_lines", file=sys.stderr)
        return
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "p.c")
        pathlib.Path(src).write_text(PROGRAM)
        for i, flags in enumerate([["-O2", "-g"], ["-O0", "-g", "-fno-omit-frame-pointer"],
                                   ["-O2", "-g", "-fno-asynchronous-unwind-tables"]]):
            elf = os.path.join(tmp, f"p{i}")
            if subprocess.run(["gcc", *flags, "-o", elf, src], capture_output=True).returncode:
                continue
            eh, hdr, debug = sections(elf, [".eh_frame", ".eh_frame_hdr", ".debug_frame"])
            stack = bytes(range(256)) * 2
            if eh:
                put("cfi_unwind", bytes([2]) + packed([eh, hdr, stack]))
                put("cfi_unwind", bytes([0]) + packed([eh, b"", stack]))
            if debug:
                put("cfi_unwind", bytes([1]) + packed([debug, b"", stack]))
            dw = sections(elf, [".debug_info", ".debug_abbrev", ".debug_line", ".debug_str",
                                ".debug_ranges", ".debug_aranges"])
            if dw[0]:
                addrs = b"".join(struct.pack("<Q", a) for a in range(0x1000, 0x1200, 0x10))
                put("dwarf_lines", packed(dw) + addrs)


ARCHIVE_NAMES = [n.strip().strip('"') for n in
                 (ROOT / "fuzz/fuzz_targets/archive_input.rs").read_text()
                 .split("const NAMES: &[&str] = &[")[1].split("]")[0].split(",") if n.strip()]


def archive_seeds(logs):
    """Small runs packed every way the archive reader walks them (tar: GNU, pax, sparse; zip:
    stored, deflated, a zip inside a zip; tar.gz), from a few fixture logs. The first byte
    picks the name, as archive_input.rs reads it."""
    def pick(name, data):
        if len(data) < MAX:
            put("archive_input", bytes([ARCHIVE_NAMES.index(name)]) + data)

    members = [(f"run/{p.name}", p.read_bytes()[:8192]) for p in logs]
    for fmt in (tarfile.GNU_FORMAT, tarfile.PAX_FORMAT):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=fmt) as t:
            for name, data in members:
                info = tarfile.TarInfo(name)
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
            link = tarfile.TarInfo("run/escape.log")
            link.type, link.linkname = tarfile.SYMTYPE, "/etc/hostname"
            t.addfile(link)
        pick("run.tar", buf.getvalue())
        pick("run.tar.gz", gzip.compress(buf.getvalue()))
    for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", method) as z:
            for name, data in members:
                z.writestr(name, data)
        pick("run.zip", buf.getvalue())
    outer = io.BytesIO()
    with zipfile.ZipFile(outer, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("inner.zip", buf.getvalue())
    pick("run.zip", outer.getvalue())
    # A GNU sparse member (Python's tarfile reads these but cannot write them): GNU tar's -S.
    if shutil.which("tar"):
        with tempfile.TemporaryDirectory() as d:
            f = pathlib.Path(d) / "train.log"
            with open(f, "wb") as w:
                w.write(members[0][1])
                w.seek(1 << 20)
                w.write(b"\nstep 9 loss nan\n")
            out = pathlib.Path(d) / "s.tar"
            if subprocess.run(["tar", "-S", "-cf", str(out), "-C", d, "train.log"],
                              capture_output=True).returncode == 0:
                pick("run.tar", out.read_bytes())


def main():
    unwind_seeds()
    archive_seeds(sorted((ROOT / "fixtures/captured").rglob("*.log"))[:3])
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
