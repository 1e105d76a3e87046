//! Core dumps, read from real crashes: the helper in tests/core_helpers/ is compiled and crashed
//! at test time (`core_helpers::crash_core`), so symbols and stacks are checked against a binary
//! that exists on this machine. Committed fixtures (fixtures/cores/) cover bad input and fuzzing,
//! and are asserted only on what the core itself holds.

mod core_helpers;

use core_helpers::{core_of, cpp_helper, crash_core, helper, scratch};
use flate2::read::GzDecoder;
use std::io::Read;
use std::path::{Path, PathBuf};
use trainwreck::sources::SourceKind;
use trainwreck::sources::elfcore::{CoreAnalysis, CoreOptions, analyze_core, parse_core_bytes};
use trainwreck::sources::{FactOut, fact_parser};

/// The corpus's real core (case 12), used in place rather than copied into fixtures/cores.
fn corpus_core() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/corpus/12_core_dump_sigbus_tmpfs/run/core.python3.24528.7.gz")
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/cores")
        .join(name)
}

fn gunzip(path: &Path) -> Vec<u8> {
    let mut out = Vec::new();
    GzDecoder::new(std::fs::File::open(path).expect("fixture"))
        .read_to_end(&mut out)
        .expect("gunzip fixture");
    out
}

fn fact(a: &CoreAnalysis, name: &str) -> Option<String> {
    a.facts
        .iter()
        .find(|f| f.name == name)
        .map(|f| f.value.to_string())
}

fn symbols(a: &CoreAnalysis) -> Vec<String> {
    a.summary
        .frames
        .iter()
        .filter_map(|f| f.symbol.clone())
        .collect()
}

#[test]
fn real_sigbus_on_a_shrunk_dev_shm_mapping_names_the_mapping() {
    let shm = format!("/dev/shm/trainwreck-test-bus-{}", std::process::id());
    let core = crash_core("bus", &[&shm]);
    let _ = std::fs::remove_file(&shm);
    let a = analyze_core(&core, &CoreOptions::default());
    assert_eq!(fact(&a, "core.signal").as_deref(), Some("SIGBUS"), "{a:#?}");
    assert_eq!(fact(&a, "core.si_code").as_deref(), Some("BUS_ADRERR"));
    assert_eq!(
        fact(&a, "core.fault_mapping").as_deref(),
        Some(shm.as_str())
    );
    assert!(fact(&a, "core.fault_addr").is_some_and(|v| v.starts_with("0x")));
    assert_eq!(
        a.summary.meaning.as_deref(),
        Some("nonexistent physical address")
    );
    let helper = helper().display().to_string();
    assert_eq!(fact(&a, "core.exe").as_deref(), Some(helper.as_str()));
    assert_eq!(
        fact(&a, "core.crash_module").as_deref(),
        Some(helper.as_str())
    );
    let syms = symbols(&a);
    assert!(syms[0].starts_with("touch+"), "{syms:?}");
    for want in ["crash_bus+", "main+"] {
        assert!(
            syms.iter().any(|s| s.starts_with(want)),
            "{want} in {syms:?}"
        );
    }
    assert_eq!(a.summary.frames[0].how, "pc");
    // The helper's own file is at hand: its CFI finds the callers.
    assert!(
        a.summary.frames.iter().any(|f| f.how == "cfi"),
        "{:#?}",
        a.summary.frames
    );
    // Without the files (no CFI), the frame-pointer chain finds the same return addresses.
    let bare = analyze_core(
        &core,
        &CoreOptions {
            symbolize: false,
            ..CoreOptions::default()
        },
    );
    let fp: Vec<&str> = bare
        .summary
        .frames
        .iter()
        .filter(|f| f.how == "frame-pointer")
        .map(|f| f.pc.as_str())
        .collect();
    assert!(!fp.is_empty(), "{:#?}", bare.summary.frames);
    for pc in fp {
        assert!(
            a.summary.frames.iter().any(|f| f.pc == pc),
            "frame-pointer frame {pc} is one CFI found too"
        );
    }
    let _ = std::fs::remove_dir_all(core.parent().unwrap_or(Path::new("/nonexistent")));
}

#[test]
fn real_sigsegv_through_a_wild_pointer_is_maperr_at_that_address() {
    let core = crash_core("segv", &[]);
    let a = analyze_core(&core, &CoreOptions::default());
    assert_eq!(
        fact(&a, "core.signal").as_deref(),
        Some("SIGSEGV"),
        "{a:#?}"
    );
    assert_eq!(fact(&a, "core.si_code").as_deref(), Some("SEGV_MAPERR"));
    assert_eq!(fact(&a, "core.fault_addr").as_deref(), Some("0xdead0000"));
    assert_eq!(
        fact(&a, "core.fault_mapping").as_deref(),
        Some("[unmapped]")
    );
    assert!(
        fact(&a, "core.crash_symbol").is_some_and(|s| s.starts_with("crash_segv")),
        "{:?}",
        symbols(&a)
    );
    let _ = std::fs::remove_dir_all(core.parent().unwrap_or(Path::new("/nonexistent")));
}

#[test]
fn real_abort_is_sigabrt_sent_by_the_process_itself() {
    let core = crash_core("abort", &[]);
    let a = analyze_core(&core, &CoreOptions::default());
    assert_eq!(
        fact(&a, "core.signal").as_deref(),
        Some("SIGABRT"),
        "{a:#?}"
    );
    assert_eq!(fact(&a, "core.si_code").as_deref(), Some("SI_TKILL"));
    assert_eq!(fact(&a, "core.sender_pid"), fact(&a, "core.pid"));
    assert!(fact(&a, "core.fault_addr").is_none());
    assert!(
        fact(&a, "core.crash_module").is_some_and(|m| m.contains("libc")),
        "{a:#?}"
    );
    let syms = symbols(&a);
    for want in ["abort", "main+"] {
        assert!(
            syms.iter().any(|s| s.starts_with(want)),
            "{want} in {syms:?}"
        );
    }
    let _ = std::fs::remove_dir_all(core.parent().unwrap_or(Path::new("/nonexistent")));
}

#[test]
fn corpus_python_core_faulted_in_dev_shm_and_its_stack_runs_through_libc_and_python() {
    let a = analyze_core(&corpus_core(), &CoreOptions::default());
    assert_eq!(fact(&a, "core.signal").as_deref(), Some("SIGBUS"));
    assert_eq!(fact(&a, "core.si_code").as_deref(), Some("BUS_ADRERR"));
    assert_eq!(
        fact(&a, "core.fault_addr").as_deref(),
        Some("0x7f5975e9b000")
    );
    assert_eq!(
        fact(&a, "core.fault_mapping").as_deref(),
        Some("/dev/shm/feature_cache.bin")
    );
    assert_eq!(fact(&a, "core.exe").as_deref(), Some("/usr/bin/python3.12"));
    assert_eq!(
        a.summary.execfn.as_deref(),
        Some("/opt/torch/.venv/bin/python3")
    );
    assert_eq!(fact(&a, "core.pid").as_deref(), Some("24528"));
    assert_eq!(fact(&a, "core.threads").as_deref(), Some("1"));
    assert_eq!(
        fact(&a, "core.crash_module").as_deref(),
        Some("/usr/lib/x86_64-linux-gnu/libc.so.6")
    );
    let mods = fact(&a, "core.stack_modules").unwrap_or_default();
    assert!(mods.contains("mmap.cpython-312"), "{mods}");
    assert!(mods.contains("/usr/bin/python3.12"), "{mods}");
    assert!(a.summary.frames.len() >= 8, "{:#?}", a.summary.frames);
    // Another machine's libc: never named with this machine's symbols.
    assert!(
        a.summary
            .frames
            .iter()
            .filter(|f| f.module.as_deref() == Some("/usr/lib/x86_64-linux-gnu/libc.so.6"))
            .all(|f| f.symbol.is_none()
                || a.summary
                    .modules
                    .iter()
                    .any(|m| m.symbols == "build-id-match" && m.path.contains("libc")))
    );
}

#[test]
fn gzip_stream_and_in_memory_bytes_give_the_same_facts() {
    for (name, sig, code) in [
        ("bus-static.core.gz", "SIGBUS", "BUS_ADRERR"),
        ("bus-dyn.core.gz", "SIGBUS", "BUS_ADRERR"),
        ("segv-static.core.gz", "SIGSEGV", "SEGV_MAPERR"),
        ("abort-static.core.gz", "SIGABRT", "SI_TKILL"),
    ] {
        let raw = gunzip(&fixture(name));
        let mem = parse_core_bytes(&raw);
        assert_eq!(fact(&mem, "core.signal").as_deref(), Some(sig), "{name}");
        assert_eq!(fact(&mem, "core.si_code").as_deref(), Some(code), "{name}");
        assert!(mem.warnings.is_empty(), "{name}: {:?}", mem.warnings);
        assert!(
            mem.summary.frames.len() >= 3,
            "{name}: {:#?}",
            mem.summary.frames
        );
        let opts = CoreOptions {
            symbolize: false,
            ..CoreOptions::default()
        };
        let streamed = analyze_core(&fixture(name), &opts);
        assert_eq!(mem.facts, streamed.facts, "{name}");
        assert_eq!(mem.summary, streamed.summary, "{name}");
    }
    let bus = parse_core_bytes(&gunzip(&fixture("bus-static.core.gz")));
    assert_eq!(
        fact(&bus, "core.fault_mapping").as_deref(),
        Some("/dev/shm/trainwreck-fixture-bus")
    );
}

/// A real C++ crash (tests/core_helpers/crash.cpp, built now with g++): the innermost frame is
/// a member of a class template in nested namespaces, named as a C++ programmer writes it, with
/// the mangled name kept beside it; the caller is named too.
#[test]
fn a_cpp_crash_names_its_frames_demangled() {
    let exe = cpp_helper("crash.cpp");
    let core = core_of("cpp", &exe, &["5"]);
    let a = analyze_core(&core, &CoreOptions::default());
    assert_eq!(
        fact(&a, "core.signal").as_deref(),
        Some("SIGSEGV"),
        "{a:#?}"
    );
    let top = &a.summary.frames[0];
    assert!(
        top.symbol
            .as_deref()
            .is_some_and(|s| s.starts_with("trainwreck_test::loader::Batch<long>::fill(long)+0x")),
        "{top:?}"
    );
    assert_eq!(
        top.mangled.as_deref(),
        Some("_ZN15trainwreck_test6loader5BatchIlE4fillEl")
    );
    let syms = symbols(&a);
    assert!(
        syms.iter()
            .any(|s| s.starts_with("trainwreck_test::loader::collate(int)+0x")),
        "{syms:?}"
    );
    assert!(syms.iter().any(|s| s.starts_with("main+")), "{syms:?}");
    assert_eq!(
        fact(&a, "core.crash_symbol").as_deref(),
        top.symbol.as_deref()
    );
}

/// systemd-coredump's formats: a real core made now, compressed by the same crates that read
/// it back (the xz/zstd/lz4 command-line tools are not on every machine), must give exactly
/// what the uncompressed core gives, symbols included.
#[test]
fn zstd_xz_and_lz4_cores_read_like_the_raw_core() {
    use std::io::Write;
    let shm = format!("/dev/shm/trainwreck-test-zbus-{}", std::process::id());
    let core = crash_core("bus", &[&shm]);
    let _ = std::fs::remove_file(&shm);
    let raw = std::fs::read(&core).expect("core");
    let want = analyze_core(&core, &CoreOptions::default());
    assert_eq!(fact(&want, "core.signal").as_deref(), Some("SIGBUS"));
    let dir = scratch("compressed");
    let zst = zstd::stream::encode_all(&raw[..], 3).expect("zstd");
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 1);
    xz.write_all(&raw).expect("xz");
    let xz = xz.finish().expect("xz");
    let mut lz4 = lz4_flex::frame::FrameEncoder::new(Vec::new());
    lz4.write_all(&raw).expect("lz4");
    let lz4 = lz4.finish().expect("lz4");
    for (name, bytes) in [("core.zst", zst), ("core.xz", xz), ("core.lz4", lz4)] {
        assert!(bytes.len() < raw.len(), "{name} compressed");
        let p = dir.join(name);
        std::fs::write(&p, &bytes).expect("write");
        let got = analyze_core(&p, &CoreOptions::default());
        assert_eq!(got.summary, want.summary, "{name}");
        assert_eq!(got.facts, want.facts, "{name}");
        assert_eq!(got.warnings, want.warnings, "{name}");
        // Cut in half: read as far as it goes, with a warning instead of a panic.
        let half = dir.join(format!("half-{name}"));
        std::fs::write(&half, &bytes[..bytes.len() / 2]).expect("write");
        let cut = analyze_core(&half, &CoreOptions::default());
        assert!(!cut.warnings.is_empty(), "{name} cut: {:?}", cut.warnings);
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_core_cut_at_any_byte_reads_partially_and_says_so() {
    let raw = gunzip(&fixture("bus-static.core.gz"));
    let full = parse_core_bytes(&raw);
    // Every byte through the headers, notes and first pages (where structure is); past that
    // the segments are plain memory, and every 61st byte keeps the loop to seconds.
    let cuts = (0..raw.len()).filter(|&c| c < 1 << 16 || c % 61 == 0);
    for cut in cuts {
        let a = parse_core_bytes(&raw[..cut]);
        assert!(!a.warnings.is_empty(), "no warning for a core cut at {cut}");
        // What is read is never made up: every fact present is the full core's fact.
        for f in &a.facts {
            assert!(
                full.facts.iter().any(|g| g.name == f.name) || f.name == "core.pid",
                "cut {cut}: unexpected {f:?}"
            );
        }
    }
}

fn find_note(raw: &[u8], ntype: u32) -> Option<(usize, usize, usize)> {
    let u16_at = |o: usize| u16::from_le_bytes([raw[o], raw[o + 1]]) as usize;
    let u32_at = |o: usize| u32::from_le_bytes(raw[o..o + 4].try_into().unwrap_or([0; 4]));
    let u64_at = |o: usize| u64::from_le_bytes(raw[o..o + 8].try_into().unwrap_or([0; 8])) as usize;
    let (phoff, phnum) = (u64_at(32), u16_at(56));
    for i in 0..phnum {
        let ph = phoff + i * 56;
        if u32_at(ph) != 4 {
            continue;
        }
        let (mut off, end) = (u64_at(ph + 8), u64_at(ph + 8) + u64_at(ph + 32));
        while off + 12 <= end {
            let (namesz, descsz, t) = (
                u32_at(off) as usize,
                u32_at(off + 4) as usize,
                u32_at(off + 8),
            );
            let desc = off + 12 + namesz.div_ceil(4) * 4;
            if t == ntype {
                return Some((off, desc, descsz));
            }
            off = desc + descsz.div_ceil(4) * 4;
        }
    }
    None
}

#[test]
fn damaged_cores_give_partial_facts_and_name_what_is_missing() {
    let raw = gunzip(&fixture("bus-static.core.gz"));
    let has = |a: &CoreAnalysis, s: &str| a.warnings.iter().any(|w| w.en.contains(s));

    // Another architecture: signal and mappings still read, no registers.
    let mut other = raw.clone();
    other[18..20].copy_from_slice(&40u16.to_le_bytes());
    let a = parse_core_bytes(&other);
    assert!(has(&a, "unsupported architecture"), "{:?}", a.warnings);
    assert_eq!(fact(&a, "core.signal").as_deref(), Some("SIGBUS"));
    assert!(a.summary.frames.is_empty());

    // No NT_FILE: no fault mapping, said so.
    let mut nofile = raw.clone();
    let (hdr, _, _) = find_note(&raw, 0x4649_4c45).expect("NT_FILE in fixture");
    nofile[hdr + 8..hdr + 12].copy_from_slice(&0x1234_5678u32.to_le_bytes());
    let a = parse_core_bytes(&nofile);
    assert!(has(&a, "no NT_FILE"), "{:?}", a.warnings);
    assert_eq!(fact(&a, "core.signal").as_deref(), Some("SIGBUS"));
    assert_eq!(fact(&a, "core.fault_mapping"), None);

    // Corrupt NT_FILE: a mapping count far beyond the note.
    let mut corrupt = raw.clone();
    let (_, desc, _) = find_note(&raw, 0x4649_4c45).expect("NT_FILE in fixture");
    corrupt[desc..desc + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    let a = parse_core_bytes(&corrupt);
    assert!(has(&a, "NT_FILE claims"), "{:?}", a.warnings);

    // A note whose size runs past the segment.
    let mut runaway = raw.clone();
    let (hdr, _, _) = find_note(&raw, 0x5349_4749).expect("NT_SIGINFO in fixture");
    runaway[hdr + 4..hdr + 8].copy_from_slice(&0x7fff_0000u32.to_le_bytes());
    let a = parse_core_bytes(&runaway);
    assert!(has(&a, "runs past the end"), "{:?}", a.warnings);
    assert!(has(&a, "no NT_SIGINFO"), "{:?}", a.warnings);

    // Not a core, empty, compressed with something we do not read.
    let dir = scratch("bad");
    let exe = parse_core_bytes(&std::fs::read(helper()).expect("helper binary"));
    assert!(has(&exe, "not a core dump"), "{:?}", exe.warnings);
    let empty = dir.join("empty");
    std::fs::write(&empty, b"").expect("write");
    assert!(has(
        &analyze_core(&empty, &CoreOptions::default()),
        "empty file"
    ));
    let zst = dir.join("core.zst");
    std::fs::write(&zst, [0x28, 0xb5, 0x2f, 0xfd, 0, 0, 0, 0]).expect("write");
    assert!(has(
        &analyze_core(&zst, &CoreOptions::default()),
        "zstd stream at offset 0"
    ));
    let missing = analyze_core(&dir.join("nope"), &CoreOptions::default());
    assert!(has(&missing, "cannot open"));
    let _ = std::fs::remove_dir_all(dir);
}

/// Deterministic mutation fuzzing (cargo-fuzz runs the same entry point without bounds: see
/// fuzz/). Flips, overwrites with boundary values, and cuts, thousands of times, over the
/// fixtures; the parser must return every time.
#[test]
fn mutated_fixtures_never_panic() {
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for name in [
        "bus-static.core.gz",
        "bus-dyn.core.gz",
        "abort-static.core.gz",
    ] {
        let raw = gunzip(&fixture(name));
        // Headers and notes are where parsing happens: mutate there most.
        let hot = find_note(&raw, 0x4649_4c45).map_or(8192, |(_, d, n)| d + n);
        for i in 0..3000 {
            let mut m = raw.clone();
            for _ in 0..1 + rnd() % 8 {
                let at = if i % 4 == 0 {
                    (rnd() as usize) % m.len()
                } else {
                    (rnd() as usize) % hot
                };
                m[at] = match rnd() % 4 {
                    0 => m[at] ^ (1 << (rnd() % 8)),
                    1 => 0xff,
                    2 => 0,
                    _ => rnd() as u8,
                };
            }
            if i % 5 == 0 {
                let cut = (rnd() as usize) % m.len();
                m.truncate(cut);
            }
            let _ = parse_core_bytes(&m);
        }
    }
}

fn text_facts(text: &str) -> Vec<(String, String)> {
    let mut p = fact_parser(SourceKind::CoreText, "coredumpctl-info.txt").expect("parser");
    let mut out = FactOut::default();
    for (i, l) in text.lines().enumerate() {
        p.line(i as u64 + 1, l, &mut out);
    }
    p.finish(&mut out);
    out.facts
        .into_iter()
        .map(|f| (f.name, f.value.to_string()))
        .collect()
}

fn has_fact(facts: &[(String, String)], name: &str, value: &str) -> bool {
    facts.iter().any(|(n, v)| n == name && v == value)
}

#[test]
fn coredumpctl_info_gives_the_core_facts() {
    let text = "           PID: 24528 (python3)
           UID: 0 (root)
           GID: 0 (root)
        Signal: 7 (BUS)
     Timestamp: Sun 2026-11-29 19:06:41 UTC (2min ago)
  Command Line: python3 /workspace/proj/shm_feature_cache.py /dev/shm/feature_cache.bin 256
    Executable: /usr/bin/python3.12
       Storage: /var/lib/systemd/coredump/core.python3.0.1b2c.24528.1796065601000000.zst (present)
       Message: Process 24528 (python3) of user 0 dumped core.

                Stack trace of thread 24528:
                #0  0x00007f59827a19d2 __memmove_avx_unaligned_erms (libc.so.6 + 0x1a19d2)
                #1  0x00007f59828437cc n/a (mmap.cpython-312-x86_64-linux-gnu.so + 0x37cc)
                #2  0x00000000005ddc49 n/a (python3.12 + 0x1ddc49)

                Stack trace of thread 24530:
                #0  0x00007f598269ed61 __futex_abstimed_wait_common (libc.so.6 + 0x9ed61)
";
    let f = text_facts(text);
    for (n, v) in [
        ("core.signal", "SIGBUS"),
        ("core.pid", "24528"),
        ("core.exe", "/usr/bin/python3.12"),
        ("core.tid", "24528"),
        ("core.crash_module", "libc.so.6"),
        ("core.crash_symbol", "__memmove_avx_unaligned_erms"),
        (
            "core.stack_modules",
            "libc.so.6 mmap.cpython-312-x86_64-linux-gnu.so python3.12",
        ),
    ] {
        assert!(has_fact(&f, n, v), "{n}={v} in {f:?}");
    }
}

#[test]
fn systemd_journal_fields_give_the_core_facts() {
    let text = "    COREDUMP_PID=5151
    COREDUMP_UID=1000
    COREDUMP_SIGNAL=11
    COREDUMP_SIGNAL_NAME=SIGSEGV
    COREDUMP_EXE=/opt/conda/bin/python3.11
    COREDUMP_CMDLINE=python train.py --bs 8
    COREDUMP_TIMESTAMP=1717652311000123
";
    let f = text_facts(text);
    assert!(has_fact(&f, "core.time", "2024-06-06T05:38:31Z"), "{f:?}");
    assert!(has_fact(&f, "core.signal", "SIGSEGV"), "{f:?}");
    assert_eq!(f.iter().filter(|(n, _)| n == "core.signal").count(), 1);
    assert!(has_fact(&f, "core.exe", "/opt/conda/bin/python3.11"));
    assert!(has_fact(&f, "core.pid", "5151"));
    assert!(has_fact(&f, "core.args", "python train.py --bs 8"));
}

#[test]
fn gdb_thread_apply_all_bt_picks_the_current_thread() {
    let text = "Core was generated by `python3 train.py'.
Program terminated with signal SIGSEGV, Segmentation fault.
#0  0x00007f1234567890 in ncclProxyProgress () from /usr/lib/libnccl.so.2
[Current thread is 1 (Thread 0x7f0000001000 (LWP 4242))]
(gdb) thread apply all bt

Thread 2 (Thread 0x7f0000002000 (LWP 4243)):
#0  0x00007f1111111111 in __futex_abstimed_wait_common () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007f2222222222 in pthread_cond_wait () from /lib/x86_64-linux-gnu/libc.so.6

Thread 1 (Thread 0x7f0000001000 (LWP 4242)):
#0  0x00007f1234567890 in ncclProxyProgress () from /usr/lib/libnccl.so.2
#1  0x00007f3333333333 in ncclProxyService (arg=0x1) at proxy.cc:1200
#2  0x00007f4444444444 in start_thread () from /lib/x86_64-linux-gnu/libc.so.6
(gdb) p $_siginfo
$1 = {si_signo = 11, si_errno = 0, si_code = 1, _sifields = {_sigfault = {si_addr = 0x18, _addr_lsb = 0}}}
";
    let f = text_facts(text);
    for (n, v) in [
        ("core.signal", "SIGSEGV"),
        ("core.args", "python3 train.py"),
        ("core.tid", "4242"),
        ("core.crash_module", "/usr/lib/libnccl.so.2"),
        ("core.crash_symbol", "ncclProxyProgress"),
        ("core.si_code", "SEGV_MAPERR"),
        ("core.fault_addr", "0x18"),
        (
            "core.stack_modules",
            "/usr/lib/libnccl.so.2 /lib/x86_64-linux-gnu/libc.so.6",
        ),
    ] {
        assert!(has_fact(&f, n, v), "{n}={v} in {f:?}");
    }
}
