//! Stacks unwound like a debugger: helpers built at `-O2 -fomit-frame-pointer` (no frame
//! pointers to follow), C and C++, nested five calls deep through a shared library
//! (tests/core_helpers/nest/), crashed for real; the report must list every frame in order by
//! CFI, with names, and with DWARF (in the binaries or in separate build-id debug files) file,
//! line and the inlined frame. Expected lines are read from the helper sources.

mod core_helpers;

use core_helpers::{Debug, core_of, line_of, nest_helper};
use trainwreck::sources::elfcore::{CoreAnalysis, CoreOptions, StackFrame, analyze_core};

/// The same core, and its stack, as zstd and as a systemd-coredump file (its name and
/// `user.coredump.*` xattrs) read the same.
fn frames_of(a: &CoreAnalysis) -> Vec<(String, Option<String>, &'static str)> {
    a.summary
        .frames
        .iter()
        .map(|f| (f.pc.clone(), f.symbol.clone(), f.how))
        .collect()
}

fn names(frames: &[StackFrame]) -> Vec<String> {
    frames
        .iter()
        .map(|f| {
            let s = f.symbol.clone().unwrap_or_default();
            // `name+0x1b` -> `name`; a C++ name keeps its parameter list.
            match s.rfind("+0x") {
                Some(i) => s[..i].to_string(),
                None => s,
            }
        })
        .collect()
}

fn crash(cpp: bool, debug: Debug, args: &[&str]) -> (CoreAnalysis, std::path::PathBuf) {
    let exe = nest_helper(cpp, debug);
    let core = core_of(if cpp { "nestpp" } else { "nest" }, &exe, args);
    let dir = exe.parent().expect("dir").to_path_buf();
    let opts = CoreOptions {
        search_paths: vec![dir.join("debug")],
        ..CoreOptions::default()
    };
    (analyze_core(&core, &opts), core)
}

fn file_name(f: &StackFrame) -> Option<&str> {
    f.file.as_deref().map(|p| p.rsplit('/').next().unwrap_or(p))
}

/// The C helper's frames, innermost first: level5 (poke inlined), 4, 3, 2 in libnest.so,
/// level1 in the executable (main calls it as a tail call, so main has no frame), then libc.
const C_FRAMES: [&str; 5] = [
    "nest_level5",
    "nest_level4",
    "nest_level3",
    "nest_level2",
    "level1",
];

fn assert_c_stack(a: &CoreAnalysis, with_lines: bool) {
    let f = &a.summary.frames;
    let got = names(f);
    assert!(got.len() >= 6, "too few frames: {got:?}\n{:#?}", a.warnings);
    assert_eq!(got[..5], C_FRAMES, "frames in order: {got:?}");
    assert_eq!(f[0].how, "pc");
    for fr in &f[1..5] {
        assert_eq!(fr.how, "cfi", "found by CFI: {fr:?}");
    }
    assert!(
        f[5..].iter().any(|x| x
            .symbol
            .as_deref()
            .is_some_and(|s| s.starts_with("__libc_start"))),
        "the walk reaches libc's start: {got:?}"
    );
    assert!(
        f[0].module
            .as_deref()
            .is_some_and(|m| m.ends_with("/libnest.so"))
    );
    if !with_lines {
        assert!(
            f[..5]
                .iter()
                .all(|x| x.line.is_none() && x.inlined.is_empty())
        );
        return;
    }
    let want = [
        (
            "libnest.c",
            line_of("nest/libnest.c", "int r = poke(x + 5);"),
        ),
        (
            "libnest.c",
            line_of("nest/libnest.c", "nest_level5(x + 1);"),
        ),
        (
            "libnest.c",
            line_of("nest/libnest.c", "nest_level4(x + 1);"),
        ),
        (
            "libnest.c",
            line_of("nest/libnest.c", "nest_level3(x + 1);"),
        ),
        ("nest.c", line_of("nest/nest.c", "nest_level2(x + 1);")),
    ];
    for (fr, (file, line)) in f.iter().zip(want) {
        assert_eq!(
            (file_name(fr), fr.line),
            (Some(file), Some(line)),
            "source line of {fr:?}"
        );
    }
    assert_eq!(
        f[0].inlined.len(),
        1,
        "poke is inlined into level 5: {:?}",
        f[0]
    );
    let inl = &f[0].inlined[0];
    assert_eq!(inl.function, "poke");
    assert_eq!(
        inl.line,
        Some(line_of(
            "nest/libnest.c",
            "*(volatile int *)nest_target = v;"
        ))
    );
}

#[test]
fn c_nested_crash_without_frame_pointers_unwinds_by_cfi_with_lines_and_the_inlined_frame() {
    let (a, _) = crash(false, Debug::Inline, &[]);
    assert_c_stack(&a, true);
    let m = a
        .summary
        .modules
        .iter()
        .find(|m| m.path.ends_with("/libnest.so"))
        .expect("libnest.so is a module");
    assert_eq!(m.symbols, "build-id-match");
    assert_eq!(m.debug_file.as_deref(), Some(m.path.as_str()));
    // The finding's evidence: the innermost frame in the user's own code.
    let user = a
        .facts
        .iter()
        .find(|f| f.name == "core.native_user_frame")
        .map(|f| f.value.to_string())
        .expect("a native user frame");
    let line = line_of("nest/libnest.c", "int r = poke(x + 5);");
    assert!(
        user.starts_with("nest_level5+0x")
            && user.ends_with(&format!(" at libnest.c:{line} in libnest.so")),
        "{user}"
    );
}

#[test]
fn c_nested_crash_without_debug_info_still_unwinds_and_names_every_frame() {
    let (a, _) = crash(false, Debug::None, &[]);
    assert_c_stack(&a, false);
}

#[test]
fn split_debug_files_in_a_build_id_folder_give_the_lines_of_stripped_binaries() {
    let (a, _) = crash(false, Debug::Split, &[]);
    assert_c_stack(&a, true);
    let m = a
        .summary
        .modules
        .iter()
        .find(|m| m.path.ends_with("/libnest.so"))
        .expect("libnest.so is a module");
    let d = m.debug_file.as_deref().expect("a debug file was used");
    assert!(d.contains("/debug/.build-id/"), "{d}");
}

#[test]
fn cpp_nested_crash_names_demangled_methods_with_lines_and_the_inlined_method() {
    let (a, _) = crash(true, Debug::Inline, &[]);
    let f = &a.summary.frames;
    let got = names(f);
    assert_eq!(
        got[..5],
        [
            "loader::Batch::stage5(int)",
            "loader::Batch::stage4(int)",
            "loader::Batch::stage3(int)",
            "loader::Batch::stage2(int)",
            "(anonymous namespace)::collate(int)",
        ],
        "{got:?}"
    );
    assert!(f[1..5].iter().all(|x| x.how == "cfi"), "{f:#?}");
    assert_eq!(f[1].mangled.as_deref(), Some("_ZN6loader5Batch6stage4Ei"));
    let want = [
        (
            "libnest.cpp",
            line_of("nest/libnest.cpp", "Batch::stage5(int x)"),
        ),
        (
            "libnest.cpp",
            line_of("nest/libnest.cpp", "Batch::stage4(int x)"),
        ),
        (
            "libnest.cpp",
            line_of("nest/libnest.cpp", "Batch::stage3(int x)"),
        ),
        (
            "libnest.cpp",
            line_of("nest/libnest.cpp", "Batch::stage2(int x)"),
        ),
        ("nest.cpp", line_of("nest/nest.cpp", "b.stage2(x + 1)")),
    ];
    for (fr, (file, line)) in f.iter().zip(want) {
        assert_eq!((file_name(fr), fr.line), (Some(file), Some(line)), "{fr:?}");
    }
    assert_eq!(f[0].inlined.len(), 1, "{:?}", f[0]);
    assert_eq!(f[0].inlined[0].function, "loader::Batch::poke(int)");
}

#[test]
fn every_thread_is_unwound_and_the_crashing_one_comes_first() {
    let (a, _) = crash(false, Debug::Inline, &["threads"]);
    assert_eq!(a.summary.thread_count, 3);
    assert_eq!(names(&a.summary.frames)[..5], C_FRAMES);
    assert_eq!(a.summary.other_threads.len(), 2);
    for t in &a.summary.other_threads {
        let n = names(&t.frames);
        assert!(
            n.iter().any(|s| s == "idle_worker"),
            "a waiting thread's stack runs through its start routine: {n:?}"
        );
        let i = n
            .iter()
            .position(|s| s == "idle_worker")
            .expect("idle_worker");
        assert!(
            t.frames[1..=i].iter().all(|f| f.how == "cfi"),
            "{:#?}",
            t.frames
        );
        // Released by the barrier, a worker may still be returning from it, or waiting.
        let waits = [
            line_of("nest/nest.c", "pthread_barrier_wait(&started);"),
            line_of("nest/nest.c", "for (;;) pause();"),
        ];
        assert!(
            t.frames[i].line.is_some_and(|l| waits.contains(&l)),
            "{:?} not in {waits:?}",
            t.frames[i]
        );
    }
}

#[test]
fn the_same_core_as_zstd_and_as_a_systemd_coredump_file_gives_the_same_stack() {
    let (raw, core) = crash(false, Debug::Inline, &[]);
    let pid = raw.summary.pid.expect("pid");
    let dir = core.parent().expect("dir");
    let boot = "0123456789abcdef0123456789abcdef";
    let name = format!("core.nest.0.{boot}.{pid}.1700000000123456.zst");
    let zst = dir.join(&name);
    let mut enc = zstd::stream::write::Encoder::new(std::fs::File::create(&zst).expect("zst"), 3)
        .expect("encoder");
    std::io::copy(&mut std::fs::File::open(&core).expect("core"), &mut enc).expect("compress");
    enc.finish().expect("finish");
    let opts = CoreOptions::default();
    let from_name = analyze_core(&zst, &opts);
    assert_eq!(frames_of(&from_name), frames_of(&raw));
    let meta = from_name
        .summary
        .coredump
        .as_ref()
        .expect("systemd-coredump metadata");
    assert_eq!(
        (meta.pid, meta.uid, meta.from),
        (Some(pid), Some(0), "file-name")
    );
    assert_eq!(meta.comm.as_deref(), Some("nest"));
    // xattrs, as systemd-coredump writes them (when the file system keeps user xattrs).
    let set = |k: &str, v: &str| {
        use std::os::unix::ffi::OsStrExt;
        let p = std::ffi::CString::new(zst.as_os_str().as_bytes()).expect("path");
        let k = std::ffi::CString::new(format!("user.coredump.{k}")).expect("key");
        // SAFETY: NUL-terminated strings and a valid buffer.
        unsafe { libc::setxattr(p.as_ptr(), k.as_ptr(), v.as_ptr().cast(), v.len(), 0) == 0 }
    };
    if !set("pid", &pid.to_string()) {
        panic!(
            "this file system keeps no user xattrs ({}): cannot test systemd-coredump's metadata",
            std::io::Error::last_os_error()
        );
    }
    assert!(set("signal", "11") && set("exe", "/opt/train/nest") && set("hostname", "gpu-node-7"));
    let from_attrs = analyze_core(&zst, &opts);
    assert_eq!(frames_of(&from_attrs), frames_of(&raw));
    let meta = from_attrs.summary.coredump.as_ref().expect("metadata");
    assert_eq!(meta.from, "xattr");
    assert_eq!(meta.signal, Some(11));
    assert_eq!(meta.exe.as_deref(), Some("/opt/train/nest"));
    assert_eq!(meta.hostname.as_deref(), Some("gpu-node-7"));
}

/// The real PyTorch crash (fixtures/cores/torch-worker/, captured on a GPU machine): a
/// DataLoader worker killed by SIGSEGV in a ctypes-loaded C extension, its core written by the
/// kernel after torch's worker signal handler re-raised the signal. Only the extension (ours)
/// is at hand: libc and libtorch_python are not (their frames have a module and an offset, no
/// name: this machine's libc is another build), so the walk leaves `raise` by frame pointers,
/// finds the kernel's signal frame on the stack by its layout (the trampoline's CFI is libc's)
/// and goes on from the interrupted registers it saved into the extension, at the faulting
/// line, and by the extension's CFI to its caller.
#[test]
fn a_real_dataloader_worker_crash_in_a_c_extension_unwinds_through_the_signal_handler() {
    let fx = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/cores/torch-worker");
    let root = core_helpers::scratch("torch-sysroot");
    std::fs::create_dir_all(root.join("tmp")).expect("dir");
    std::fs::copy(fx.join("libcrashy.so"), root.join("tmp/libcrashy.so")).expect("copy");
    let opts = CoreOptions {
        sysroot: Some(root.clone()),
        ..CoreOptions::default()
    };
    let a = analyze_core(&fx.join("worker.core.gz"), &opts);
    let s = &a.summary;
    // torch's handler re-raised SIGSEGV with tkill: the worker's pid, the one the parent's
    // error names.
    assert_eq!(
        (s.signal.as_deref(), s.code.as_deref()),
        (Some("SIGSEGV"), Some("SI_TKILL"))
    );
    let log = std::fs::read_to_string(fx.join("stderr.log")).expect("log");
    let pid = s.pid.expect("pid");
    assert!(
        log.contains(&format!(
            "DataLoader worker (pid {pid}) is killed by signal: Segmentation fault"
        )),
        "the worker's pid {pid} is the one the log names"
    );
    let f = &s.frames;
    let in_libc = |fr: &StackFrame| {
        fr.module
            .as_deref()
            .is_some_and(|m| m.ends_with("/libc.so.6"))
    };
    // The libc boundary: frames in libc, named by module and offset only (unless this
    // machine's libc is the very build the worker had: then by its symbols).
    let libc_same_build = s
        .modules
        .iter()
        .any(|m| m.path.ends_with("/libc.so.6") && m.symbols == "build-id-match");
    for fr in &f[..2] {
        assert!(in_libc(fr), "{fr:?}");
        assert_eq!(fr.component, Some("libc"), "{fr:?}");
        assert!(fr.offset.is_some(), "{fr:?}");
        assert!(libc_same_build || fr.symbol.is_none(), "{fr:?}");
    }
    assert_eq!(
        f[2].component,
        Some("libtorch (Python bindings)"),
        "{:?}",
        f[2]
    );
    let at = f
        .iter()
        .position(|fr| fr.symbol.as_deref().is_some_and(|n| n.starts_with("scale")))
        .expect("scale");
    // The kernel's signal frame: the trampoline it gave the handler (in libc), then the
    // interrupted pc itself.
    assert!(
        in_libc(&f[at - 1]),
        "the signal trampoline: {:?}",
        f[at - 1]
    );
    assert_eq!((f[at - 1].how, f[at].how), ("signal-frame", "signal-frame"));
    assert!(
        f[at + 1]
            .symbol
            .as_deref()
            .is_some_and(|n| n.starts_with("crashy_decode")),
        "{:?}",
        f[at + 1]
    );
    assert_eq!(f[at + 1].how, "cfi", "{:?}", f[at + 1]);
    for fr in &f[at..=at + 1] {
        assert!(
            fr.file.as_deref().is_some_and(|p| p.ends_with("/c.c")),
            "{fr:?}"
        );
    }
    let src = std::fs::read_to_string(fx.join("crashy.c")).expect("source");
    let line_of = |w: &str| {
        src.lines()
            .position(|l| l.contains(w))
            .map(|i| i as u32 + 1)
    };
    assert_eq!(f[at].line, line_of("static void scale"));
    assert_eq!(f[at + 1].line, line_of("int crashy_decode"));
    let user = a
        .facts
        .iter()
        .find(|x| x.name == "core.native_user_frame")
        .map(|x| x.value.to_string())
        .expect("user frame");
    assert!(
        user.starts_with("scale+0x") && user.ends_with("in libcrashy.so"),
        "{user}"
    );
}
