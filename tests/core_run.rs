//! `trainwreck run` and the core its command caused: a Python program that crashes in native
//! code, run with `ulimit -c unlimited` in a scratch folder; `run` must find the core where
//! `kernel.core_pattern` put it, bring it into the run folder, and report the Python and native
//! frames with no manual step. The expected lines come from the script itself.

mod core_helpers;

use core_helpers::scratch;
use std::path::Path;
use std::process::Command;

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
