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
        if version == &found[0].0 {
            report_shows_the_python_stack(&core, &script);
        }
        let _ = std::fs::remove_file(&core);
    }
}

/// Through the whole analysis: the terminal shows the Python stack under the native one, the
/// JSON carries it in `cores[].python`, and the SIGSEGV finding cites the user's line.
fn report_shows_the_python_stack(core: &Path, script: &Path) {
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).unwrap();
    let r = trainwreck::diagnose(&kb, &[core.display().to_string()], 1);
    let want = format!(
        "File \"{}\", line {}, in read_record",
        script.display(),
        line_of("return ctypes.string_at(ptr)")
    );
    let top = r.top().expect("diagnosed");
    assert_eq!(top.category, trainwreck::model::Category::SegfaultNative);
    assert!(
        top.evidence.iter().any(|e| e
            .why
            .as_ref()
            .map(|t| t.en.as_str())
            .is_some_and(|w| w.ends_with(&want))),
        "{:#?}",
        top.evidence
    );
    let text = trainwreck::report::terminal::render(
        &r,
        &trainwreck::report::terminal::Style { color: false },
    );
    let native = text.find("#0 ").expect("native frames");
    let python = text
        .rfind(&format!("    {want}"))
        .expect("python frame in the terminal report");
    assert!(
        native < python && text.contains("(crashed, holds the GIL)"),
        "{text}"
    );
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    let frames = &json["cores"][0]["python"]["threads"][0]["frames"];
    assert_eq!(frames[1]["function"], "read_record", "{json:#}");
    assert_eq!(frames[1]["file"], script.display().to_string());
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

const BUS_SCRIPT: &str = "import mmap
import os
import sys


def fill(m, size):
    for i in range(0, size, 4096):
        m[i] = 1


def main():
    fd = os.open(sys.argv[1], os.O_CREAT | os.O_RDWR, 0o600)
    size = 8 << 20
    os.ftruncate(fd, size)
    m = mmap.mmap(fd, size)
    fill(m, size)


main()
";

fn can_unshare() -> bool {
    Command::new("unshare")
        .args(["-m", "sh", "-c", "mount -t tmpfs -o size=1M tmpfs /dev/shm"])
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Corpus case 12 made per version: a private 1 MB tmpfs on /dev/shm (a mount namespace of its
/// own, so the machine's /dev/shm is untouched), a script writing an 8 MB mmap of a file there
/// dies of SIGBUS on the first page the tmpfs cannot give; the diagnosis names the mapping and
/// the Python line that touched it.
#[test]
#[ignore = "needs root + unshare -m (a private tmpfs on /dev/shm): .ci/run runs it with --ignored where they work"]
fn sigbus_in_a_full_dev_shm_names_the_python_line_that_touched_it() {
    assert!(
        can_unshare(),
        "this test needs root and `unshare -m` to give itself a private 1 MB /dev/shm"
    );
    let found = pythons();
    assert!(!found.is_empty(), "no CPython 3.8+ found");
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).unwrap();
    for (version, python) in &found {
        let dir = scratch(&format!("pybus-{version}"));
        let script = dir.join("bus.py");
        std::fs::write(&script, BUS_SCRIPT).expect("write script");
        let shm = "/dev/shm/trainwreck-py-bus";
        let pattern = std::fs::read_to_string("/proc/sys/kernel/core_pattern").unwrap_or_default();
        let kernel_writes_here = !pattern.starts_with('|') && !pattern.starts_with('/');
        let mut cmd = Command::new("unshare");
        cmd.args(["-m", "sh", "-c"])
            .arg("mount -t tmpfs -o size=1M tmpfs /dev/shm && ulimit -c unlimited && exec \"$@\"")
            .arg("sh");
        if !kernel_writes_here {
            cmd.args([
                "gdb",
                "-batch",
                "-nx",
                "-ex",
                "run",
                "-ex",
                "gcore core.gcore",
                "--args",
            ]);
        }
        let out = cmd
            .arg(python)
            .arg(&script)
            .arg(shm)
            .current_dir(&dir)
            .output()
            .expect("run under unshare");
        let core = std::fs::read_dir(&dir)
            .expect("dir")
            .filter_map(Result::ok)
            .map(|e| e.path())
            .find(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("core"))
            })
            .unwrap_or_else(|| panic!("{version}: no core ({out:?})"));
        let touch = BUS_SCRIPT
            .lines()
            .position(|l| l.trim() == "m[i] = 1")
            .unwrap()
            + 1;
        let want = format!("File \"{}\", line {touch}, in fill", script.display());
        let a = analyze_core(&core, &CoreOptions::default());
        assert_eq!(a.summary.signal.as_deref(), Some("SIGBUS"), "{version}");
        assert_eq!(a.summary.fault_mapping.as_deref(), Some(shm), "{version}");
        let r = trainwreck::diagnose(&kb, &[core.display().to_string()], 1);
        let top = r.top().expect("diagnosed");
        assert_eq!(
            top.category,
            trainwreck::model::Category::ShmExhausted,
            "{version}"
        );
        assert!(
            top.evidence.iter().any(|e| e
                .why
                .as_ref()
                .map(|t| t.en.as_str())
                .is_some_and(|w| w.ends_with(&want))),
            "{version}: evidence names {want}: {:#?}",
            top.evidence
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
