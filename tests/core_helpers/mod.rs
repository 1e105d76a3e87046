//! Real cores made at test time: `crash.c` (beside this file) is compiled with the system `cc`
//! into the test's own target directory and crashed with RLIMIT_CORE raised; the core is read
//! where the kernel's core_pattern puts it, or taken with gdb's `gcore` when the pattern sends
//! it elsewhere (said on stderr, never a silent pass). Nothing here reads or leaves files
//! outside `CARGO_TARGET_TMPDIR`, so the tests that use it run the same on a new machine.
//! Shared by the test crates that `mod core_helpers;` it; each uses a subset.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A fresh, empty directory under this test run's target tmpdir.
pub fn scratch(tag: &str) -> PathBuf {
    static N: AtomicUsize = AtomicUsize::new(0);
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "core-{tag}-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("scratch dir");
    d
}

/// The crash helper, built once per test binary (dynamic, with a symbol table, frame pointers).
pub fn helper() -> &'static Path {
    static H: OnceLock<PathBuf> = OnceLock::new();
    H.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/core_helpers/crash.c");
        let out = scratch("helper").join("crash-helper");
        let st = Command::new("cc")
            .args(["-O1", "-g0", "-fno-omit-frame-pointer", "-o"])
            .arg(&out)
            .arg(&src)
            .status()
            .expect("these tests need a C compiler (`cc`) to build the crash helper");
        assert!(st.success(), "cc failed to build {}", src.display());
        out
    })
}

/// Crash the helper in `mode` (with `args`) in a scratch directory and return the core it left.
pub fn crash_core(mode: &str, args: &[&str]) -> PathBuf {
    let mut all = vec![mode];
    all.extend_from_slice(args);
    core_of(mode, helper(), &all)
}

/// Build a C++ source beside this file once per test binary with the system `g++` (no
/// inlining, frame pointers, a symbol table: the frames and names the test asserts).
pub fn cpp_helper(name: &str) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<(String, PathBuf)>> = std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(n, _)| n == name) {
        return p.clone();
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/core_helpers")
        .join(name);
    let out = scratch("cpp").join(name.trim_end_matches(".cpp"));
    let st = Command::new("g++")
        .args(["-O0", "-g0", "-fno-inline", "-fno-omit-frame-pointer", "-o"])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("these tests need a C++ compiler (`g++`) to build the C++ crash helper");
    assert!(st.success(), "g++ failed to build {}", src.display());
    built.push((name.to_string(), out.clone()));
    out
}

/// Run `program args` so that it crashes, in a scratch directory, and return its core: the
/// kernel's when core_pattern writes into the working directory, else gdb's `gcore` at the
/// crash (the same process state, stopped at the faulting instruction).
pub fn core_of(tag: &str, program: &Path, args: &[&str]) -> PathBuf {
    let dir = scratch(tag);
    let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern")
        .unwrap_or_default()
        .trim()
        .to_string();
    if pattern.starts_with('|') || pattern.starts_with('/') || pattern.is_empty() {
        eprintln!(
            "core_pattern is {pattern:?}: the kernel does not write cores into the working directory here; falling back to gdb's gcore"
        );
        return gcore_of(&dir, program, args);
    }
    let out = Command::new("sh")
        .arg("-c")
        .arg("ulimit -c unlimited; exec \"$0\" \"$@\"")
        .arg(program)
        .args(args)
        .current_dir(&dir)
        .output()
        .expect("run the crash helper");
    assert!(
        !out.status.success(),
        "{} did not crash ({tag})",
        program.display()
    );
    let prefix = pattern.split('%').next().unwrap_or("core").to_string();
    let found = std::fs::read_dir(&dir)
        .expect("scratch dir")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with(&prefix))
        });
    match found {
        Some(p) => p,
        None => {
            eprintln!(
                "no core written in {} (core_pattern {pattern:?}, status {:?}); falling back to gdb's gcore",
                dir.display(),
                out.status
            );
            gcore_of(&dir, program, args)
        }
    }
}

/// Take the core with gdb when the kernel will not write one where we can find it.
pub fn gcore(dir: &Path, mode: &str, args: &[&str]) -> PathBuf {
    let mut all = vec![mode];
    all.extend_from_slice(args);
    gcore_of(dir, helper(), &all)
}

pub fn gcore_of(dir: &Path, program: &Path, args: &[&str]) -> PathBuf {
    let core = dir.join("core.gcore");
    let st = Command::new("gdb")
        .args(["-batch", "-nx", "-ex", "run", "-ex"])
        .arg(format!("gcore {}", core.display()))
        .arg("--args")
        .arg(program)
        .args(args)
        .current_dir(dir)
        .output()
        .expect("no core from the kernel and no gdb to take one: cannot test real cores here");
    assert!(
        core.exists(),
        "gcore wrote no core: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    core
}

/// How a nested helper (tests/core_helpers/nest/) is built: all at `-O2 -fomit-frame-pointer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Debug {
    /// No `-g`: names from the symbol tables only.
    None,
    /// `-g`: DWARF in the library and the executable.
    Inline,
    /// `-g`, then the DWARF moved to `DIR/debug/.build-id/xx/….debug` and the binaries
    /// stripped (`objcopy --only-keep-debug`, `strip --strip-debug`), as distributions ship.
    Split,
}

/// Build the nested crash (C: `nest.c` + `libnest.c`; C++: `nest.cpp` + `libnest.cpp`) in a
/// scratch folder once per test binary and flavour; returns the executable. The library sits
/// beside it (found through `-rpath $ORIGIN`).
pub fn nest_helper(cpp: bool, debug: Debug) -> PathBuf {
    static BUILT: std::sync::Mutex<Vec<((bool, Debug), PathBuf)>> =
        std::sync::Mutex::new(Vec::new());
    let mut built = BUILT.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, p)) = built.iter().find(|(k, _)| *k == (cpp, debug)) {
        return p.clone();
    }
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/core_helpers/nest");
    let dir = scratch(if cpp { "nestpp" } else { "nest" });
    let (cc, ext, lib) = if cpp {
        ("g++", "cpp", "nestpp")
    } else {
        ("cc", "c", "nest")
    };
    let mut flags = vec!["-O2", "-fomit-frame-pointer", "-Wl,--build-id"];
    if debug != Debug::None {
        flags.push("-g");
    }
    let so = dir.join(format!("lib{lib}.so"));
    let exe = dir.join(lib);
    let run = |cmd: &mut Command| {
        let out = cmd.output().unwrap_or_else(|e| panic!("run {cmd:?}: {e}"));
        assert!(
            out.status.success(),
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    run(Command::new(cc)
        .args(&flags)
        .args(["-fPIC", "-shared", "-o"])
        .arg(&so)
        .arg(src.join(format!("libnest.{ext}"))));
    run(Command::new(cc)
        .args(&flags)
        .arg("-pthread")
        .arg("-o")
        .arg(&exe)
        .arg(src.join(format!("nest.{ext}")))
        .arg(format!("-L{}", dir.display()))
        .arg(format!("-l{lib}"))
        .arg("-Wl,-rpath,$ORIGIN"));
    if debug == Debug::Split {
        for bin in [&so, &exe] {
            let tmp = dir.join("split.debug");
            run(Command::new("objcopy")
                .arg("--only-keep-debug")
                .arg(bin)
                .arg(&tmp));
            let id = build_id_of(bin);
            let at = dir
                .join("debug/.build-id")
                .join(&id[..2])
                .join(format!("{}.debug", &id[2..]));
            std::fs::create_dir_all(at.parent().expect("parent")).expect("build-id dir");
            std::fs::rename(&tmp, &at).expect("place the debug file");
            run(Command::new("strip").arg("--strip-debug").arg(bin));
        }
    }
    built.push(((cpp, debug), exe.clone()));
    exe
}

/// A binary's GNU build-id in hex, as `readelf -n` prints it.
pub fn build_id_of(bin: &Path) -> String {
    let out = Command::new("readelf")
        .arg("-n")
        .arg(bin)
        .output()
        .expect("readelf (binutils) to read a build-id");
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("Build ID: "))
        .unwrap_or_else(|| panic!("no build-id in {}", bin.display()))
        .trim()
        .to_string()
}

/// The 1-based line of the first line of `file` (under tests/core_helpers/) containing `what`:
/// the line numbers tests expect come from the source itself.
pub fn line_of(file: &str, what: &str) -> u32 {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/core_helpers")
        .join(file);
    let text = std::fs::read_to_string(&src).expect("helper source");
    text.lines()
        .position(|l| l.contains(what))
        .map(|i| i as u32 + 1)
        .unwrap_or_else(|| panic!("{what:?} not in {}", src.display()))
}
