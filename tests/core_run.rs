//! `trainwreck run` and the core its command caused: a Python program that crashes in native
//! code, run with `ulimit -c unlimited` in a scratch folder; `run` must find the core where
//! `kernel.core_pattern` put it, bring it into the run folder, and report the Python and native
//! frames with no manual step. The expected lines come from the script itself.

mod core_helpers;

use core_helpers::scratch;
use std::path::Path;
use std::process::Command;
use trainwreck::sources::elfcore::locate::{Destination, destination, parse_systemd_name};

const SCRIPT: &str = r#"import ctypes


def load_batch(i):
    return ctypes.string_at(0xdead0000 + i, 64)


def train():
    for i in range(3):
        load_batch(i)


train()
"#;

fn line_in_script(what: &str) -> usize {
    SCRIPT
        .lines()
        .position(|l| l.contains(what))
        .map(|i| i + 1)
        .expect("line in the script")
}

/// Whether the kernel writes cores where `run` can find them here (a file pattern, or
/// systemd-coredump): said when not, so the failure names its cause.
fn core_pattern() -> String {
    std::fs::read_to_string("/proc/sys/kernel/core_pattern")
        .unwrap_or_default()
        .trim()
        .to_string()
}

#[test]
fn run_of_a_python_crash_in_native_code_collects_its_core_and_reports_both_stacks() {
    let dir = scratch("run-py");
    std::fs::write(dir.join("segv.py"), SCRIPT).expect("script");
    let out = dir.join("run");
    let bin = env!("CARGO_BIN_EXE_trainwreck");
    let res = Command::new("sh")
        .arg("-c")
        .arg("ulimit -c unlimited; exec \"$0\" run --out \"$1\" -- python3 segv.py")
        .arg(bin)
        .arg(&out)
        .current_dir(&dir)
        .env("NO_COLOR", "1")
        .output()
        .expect("run trainwreck");
    let stderr = String::from_utf8_lossy(&res.stderr);
    assert_eq!(
        res.status.code(),
        Some(139),
        "SIGSEGV, core dumped: {stderr}"
    );
    let cores: Vec<_> = std::fs::read_dir(out.join("cores"))
        .unwrap_or_else(|e| {
            panic!(
                "no cores/ in the run folder ({e}); core_pattern is {:?}\n{stderr}",
                core_pattern()
            )
        })
        .filter_map(Result::ok)
        .collect();
    assert_eq!(cores.len(), 1, "one core collected: {cores:?}");
    let manifest = std::fs::read_to_string(out.join("manifest.json")).expect("manifest");
    assert!(
        manifest.contains("cores/"),
        "the manifest lists the core: {manifest}"
    );

    // The report `run` printed names the Python frames and the native ones.
    let py_line =
        |what: &str, func: &str| format!("segv.py\", line {}, in {func}", line_in_script(what));
    for want in [
        py_line("ctypes.string_at", "load_batch"),
        py_line("        load_batch(i)", "train"),
    ] {
        assert!(stderr.contains(&want), "{want:?} in the report:\n{stderr}");
    }
    assert!(
        stderr.contains("#0 "),
        "native frames in the report:\n{stderr}"
    );

    // And the JSON of the run folder holds both stacks, the core tied to the command's pid.
    let json = Command::new(bin)
        .args(["analyze", "--format", "json"])
        .arg(&out)
        .output()
        .expect("analyze");
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("json");
    let core = &v["cores"][0];
    assert_eq!(core["signal"], "SIGSEGV", "{core:#}");
    let frames = core["frames"].as_array().expect("native frames");
    assert!(
        frames
            .iter()
            .any(|f| f["module"].as_str().is_some_and(|m| m.contains("libc.so"))),
        "the crash is in libc (ctypes copies from the wild address): {frames:#?}"
    );
    assert_eq!(frames[0]["component"], "libc", "{:#}", frames[0]);
    assert!(
        frames[1..].iter().all(|f| f["how"] == "cfi"),
        "CFI finds every caller: {frames:#?}"
    );
    let py = core["python"]["threads"][0]["frames"]
        .as_array()
        .expect("Python frames");
    let funcs: Vec<&str> = py.iter().filter_map(|f| f["function"].as_str()).collect();
    // ctypes' own `string_at` (the standard library) is innermost, then the script's.
    assert_eq!(
        funcs[..4],
        ["string_at", "load_batch", "train", "<module>"],
        "{funcs:?}"
    );
    let name = cores[0].file_name();
    let pid = core["pid"].as_i64().expect("pid");
    assert!(
        name.to_string_lossy().contains(&pid.to_string()) || name == "core",
        "the collected core {name:?} is the command's (pid {pid})"
    );
    let _ = std::fs::remove_dir_all(Path::new(&dir));
}

// Where cores go: `kernel.core_pattern` read as a place, systemd-coredump's file names.

fn file(d: &Destination) -> (&Path, &str) {
    match d {
        Destination::File { dir, name } => (dir, name.as_str()),
        Destination::Pipe { .. } => panic!("a pipe: {d:?}"),
    }
}

#[test]
fn patterns_are_read_as_a_folder_and_a_name() {
    let cwd = Path::new("/work/run");
    let d = destination("core", false, cwd).expect("core");
    assert_eq!(file(&d), (cwd, "^core$"));
    let d = destination("core", true, cwd).expect("core");
    let Destination::File { name, .. } = &d else {
        panic!()
    };
    assert_eq!(&name.captures("core.4242").expect("match")["pid"], "4242");
    let d = destination("/var/crash/core.%e.%p.%t", false, cwd).expect("abs");
    let Destination::File { dir, name } = &d else {
        panic!()
    };
    assert_eq!(dir, Path::new("/var/crash"));
    let c = name.captures("core.python3.77.1700000000").expect("match");
    assert_eq!(&c["pid"], "77");
    assert!(!name.is_match("core.python3.x.1700000000"));
    assert_eq!(
        destination(
            "|/usr/lib/systemd/systemd-coredump %P %u %g %s %t %c %h",
            true,
            cwd
        ),
        Some(Destination::Pipe {
            handler: "/usr/lib/systemd/systemd-coredump %P %u %g %s %t %c %h".into()
        })
    );
    assert_eq!(destination("/tmp/%u/core", false, cwd), None);
}

#[test]
fn systemd_coredump_names_give_pid_uid_comm_and_time() {
    let m = parse_systemd_name(
        "core.pt_data_worker.0.8c1f0c3c6f6c4a8e9d2b7a1e5f3c9d10.4242.1700000000123456.zst",
    )
    .expect("a systemd-coredump name");
    assert_eq!(m.pid, Some(4242));
    assert_eq!(m.uid, Some(0));
    assert_eq!(m.comm.as_deref(), Some("pt_data_worker"));
    assert_eq!(m.timestamp_usec, Some(1_700_000_000_123_456));
    assert_eq!(parse_systemd_name("core.4242"), None);
    assert_eq!(parse_systemd_name("core.a.0.nothex.1.2.zst"), None);
}
