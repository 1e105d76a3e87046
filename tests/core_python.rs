//! Python stacks from real cores: for every CPython 3.8+ on this machine (the pyenv builds under
//! ~/.pyenv/versions, and `python3`/`python3.N` on PATH), a script written now into a scratch
//! directory segfaults in `ctypes.string_at(0)` three Python calls deep while a second thread
//! waits on an Event; the core is the kernel's, written into the scratch directory with
//! RLIMIT_CORE raised, or, where core_pattern sends cores elsewhere (a pipe to systemd-coredump
//! or apport, which a test cannot change), gdb's `gcore` of the process stopped at the faulting
//! instruction (`core_helpers::core_of`): either way the real crash state, never a simulation.
//! The test asserts the exact file, function and line of each script frame, for each version.

mod core_helpers;

use core_helpers::{core_of, scratch};
use std::path::{Path, PathBuf};
use std::process::Command;
use trainwreck::sources::elfcore::python::{PythonStacks, PythonThread};
use trainwreck::sources::elfcore::{CoreOptions, analyze_core};

const SCRIPT: &str = "import ctypes
import threading


def idle(ev):
    ev.wait()


def read_record(ptr):
    return ctypes.string_at(ptr)


def collate_fn(batch):
    return read_record(0)


def main():
    ev = threading.Event()
    t = threading.Thread(target=idle, args=(ev,), daemon=True)
    t.start()
    collate_fn([1, 2])


main()
";

/// The line of SCRIPT that is `text` once indented (1-based), so the assertions follow it.
fn line_of(text: &str) -> u32 {
    SCRIPT
        .lines()
        .position(|l| l.trim() == text)
        .map(|i| i as u32 + 1)
        .expect("text in the script")
}

/// (version "3.N", interpreter) for every distinct CPython 3.8+ found.
fn pythons() -> Vec<(String, PathBuf)> {
    let mut cands: Vec<PathBuf> = Vec::new();
    if let Some(home) = std::env::var_os("HOME")
        && let Ok(rd) = std::fs::read_dir(Path::new(&home).join(".pyenv/versions"))
    {
        let mut v: Vec<PathBuf> = rd
            .filter_map(Result::ok)
            .map(|e| e.path().join("bin/python"))
            .collect();
        v.sort();
        cands.extend(v);
    }
    for dir in ["/usr/bin", "/usr/local/bin"] {
        cands.push(Path::new(dir).join("python3"));
        for m in 8..=14 {
            cands.push(Path::new(dir).join(format!("python3.{m}")));
        }
    }
    let mut out: Vec<(String, PathBuf)> = Vec::new();
    for p in cands.into_iter().filter(|p| p.exists()) {
        let Ok(o) = Command::new(&p)
            .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"])
            .output()
        else {
            continue;
        };
        let v = String::from_utf8_lossy(&o.stdout).trim().to_string();
        let minor: u32 = v
            .strip_prefix("3.")
            .and_then(|m| m.parse().ok())
            .unwrap_or(0);
        if o.status.success() && minor >= 8 && !out.iter().any(|(have, _)| *have == v) {
            out.push((v, p));
        }
    }
    out
}

fn ctypes_line(python: &Path) -> (String, u32) {
    // Where the interpreter's own ctypes.string_at calls into C: read from its source file.
    let o = Command::new(python)
        .args([
            "-c",
            "import ctypes, inspect; f = ctypes.__file__; src = open(f).read().splitlines(); \
             start = inspect.getsourcelines(ctypes.string_at)[1]; \
             print(f); print(next(i + 1 for i in range(start - 1, len(src)) if '_string_at(' in src[i] and 'def' not in src[i]))",
        ])
        .output()
        .expect("python runs");
    let out = String::from_utf8_lossy(&o.stdout).to_string();
    let mut lines = out.lines();
    let file = lines.next().expect("ctypes file").to_string();
    let line = lines.next().and_then(|l| l.parse().ok()).expect("line");
    (file, line)
}

fn crash(python: &Path, tag: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(&format!("py-{tag}"));
    let script = dir.join("crash.py");
    std::fs::write(&script, SCRIPT).expect("write script");
    let core = core_of(
        &format!("pycore-{tag}"),
        python,
        &[script.to_str().unwrap()],
    );
    (core, script)
}

fn frames(t: &PythonThread) -> Vec<(String, String, Option<u32>)> {
    t.frames
        .iter()
        .map(|f| (f.file.clone(), f.function.clone(), f.line))
        .collect()
}

fn check(version: &str, python: &Path, py: &PythonStacks, script: &Path, crashing_tid: i32) {
    let script = script.display().to_string();
    assert_eq!(py.version, version, "{python:?}");
    assert_eq!(py.threads.len(), 2, "{version}: {py:#?}");
    let crashed = &py.threads[0];
    assert!(
        crashed.crashed && crashed.holds_gil,
        "{version}: {crashed:#?}"
    );
    assert_eq!(crashed.tid, Some(crashing_tid), "{version}");
    let (ctypes_file, ctypes_at) = ctypes_line(python);
    let s = |f: &str, l: &str| (script.clone(), f.to_string(), Some(line_of(l)));
    assert_eq!(
        frames(crashed),
        vec![
            (ctypes_file, "string_at".to_string(), Some(ctypes_at)),
            s("read_record", "return ctypes.string_at(ptr)"),
            s("collate_fn", "return read_record(0)"),
            s("main", "collate_fn([1, 2])"),
            s("<module>", "main()"),
        ],
        "{version}: {python:?}"
    );
    let idle = &py.threads[1];
    assert!(
        !idle.crashed && !idle.holds_gil && !idle.truncated,
        "{idle:#?}"
    );
    assert_ne!(idle.tid, crashed.tid);
    let f = frames(idle);
    assert!(
        f.contains(&s("idle", "ev.wait()")),
        "{version}: the waiting thread's frames {f:?}"
    );
    assert!(f[0].0.ends_with("threading.py"), "{version}: {f:?}");
}

#[test]
fn every_available_python_version_gives_the_crashing_threads_stack_first() {
    let found = pythons();
    assert!(
        !found.is_empty(),
        "no CPython 3.8+ found (pyenv, /usr/bin/python3*): these tests need at least one"
    );
    eprintln!("CPython versions tested: {:?}", found);
    for (version, python) in &found {
        let (core, script) = crash(python, version);
        let a = analyze_core(&core, &CoreOptions::default());
        let py = a
            .summary
            .python
            .as_ref()
            .unwrap_or_else(|| panic!("{version}: no Python stacks; {:?}", a.warnings));
        let tid = a.summary.crashing_tid.expect("crashing tid");
        check(version, python, py, &script, tid);
        let _ = std::fs::remove_file(&core);
    }
}

/// The walk chases pointers backwards through the core; a compressed core can only restart its
/// stream to go back, which must still give the same stacks.
#[test]
fn a_zstd_python_core_gives_the_same_stacks() {
    let (version, python) = pythons().into_iter().next().expect("a CPython 3.8+");
    let (core, _) = crash(&python, &format!("{version}-zst"));
    let raw = std::fs::read(&core).expect("core");
    let zst = core.with_extension("zst");
    std::fs::write(&zst, zstd::stream::encode_all(&raw[..], 1).expect("zstd")).expect("write");
    let want = analyze_core(&core, &CoreOptions::default());
    let got = analyze_core(&zst, &CoreOptions::default());
    assert!(want.summary.python.is_some(), "{:?}", want.warnings);
    assert_eq!(
        got.summary.python, want.summary.python,
        "{:?}",
        got.warnings
    );
    let _ = std::fs::remove_file(&core);
    let _ = std::fs::remove_file(&zst);
}
