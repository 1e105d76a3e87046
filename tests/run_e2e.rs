//! `trainwreck run` end to end with the real binary: a command that dies of SIGBUS on a full
//! 64 MB /dev/shm (a private tmpfs in a private mount namespace, so the machine's own
//! /dev/shm is untouched) must exit 135, leave a run directory `analyze` reads, and be
//! diagnosed as shm_exhausted with the recorded peak in the facts and a --shm-size fix.

use std::process::Command;

const FILL: &str = r#"
import mmap, os, sys
fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o600)
os.ftruncate(fd, 256 << 20)
m = mmap.mmap(fd, 256 << 20)
for i in range(0, 256 << 20, 4096):
    m[i] = 1
"#;

fn can_unshare() -> bool {
    Command::new("unshare")
        .args([
            "-m",
            "sh",
            "-c",
            "mount -t tmpfs -o size=64M tmpfs /dev/shm",
        ])
        .status()
        .is_ok_and(|s| s.success())
}

#[test]
#[ignore = "needs root, `unshare -m` and python3: .ci/run runs it with --ignored where they work"]
fn sigbus_on_a_full_64m_dev_shm_is_recorded_and_diagnosed() {
    assert!(
        can_unshare(),
        "this test needs root and `unshare -m` to give itself a private 64 MB /dev/shm"
    );
    let t = tempfile::tempdir().unwrap();
    let script = t.path().join("fill.py");
    std::fs::write(&script, FILL).unwrap();
    let out = t.path().join("run");
    let bin = env!("CARGO_BIN_EXE_trainwreck");
    let inner = format!(
        "mount -t tmpfs -o size=64M tmpfs /dev/shm && exec {bin} run --out {} --interval 20 -- python3 {} /dev/shm/cache.bin",
        out.display(),
        script.display()
    );
    let st = Command::new("unshare")
        .args(["-m", "sh", "-c", &inner])
        .output()
        .unwrap();
    assert_eq!(
        st.status.code(),
        Some(135),
        "stderr: {}",
        String::from_utf8_lossy(&st.stderr)
    );
    let diag = String::from_utf8_lossy(&st.stderr);
    assert!(
        diag.contains("shm_exhausted"),
        "diagnosis printed on failure: {diag}"
    );

    let json = Command::new(bin)
        .args(["analyze", "--format", "json"])
        .arg(&out)
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    let top = &r["findings"][0];
    assert_eq!(top["category"], "shm_exhausted");
    assert!(
        top["fix"].as_str().unwrap().contains("--shm-size="),
        "{}",
        top["fix"]
    );
    let fact = |name: &str| {
        r["facts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .map(|f| f["value"].clone())
    };
    assert_eq!(
        fact("launcher.exit_signal"),
        Some(serde_json::json!("SIGBUS"))
    );
    assert_eq!(fact("shm.size_bytes"), Some(serde_json::json!(64 << 20)));
    let peak = fact("shm.peak_bytes")
        .and_then(|v| v.as_i64())
        .expect("peak recorded");
    assert!(peak > 48 << 20, "peak {peak}");
    // Output written three times is read once.
    let paths: Vec<&str> = r["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["path"].as_str())
        .collect();
    assert!(paths.contains(&"console.log") && !paths.contains(&"stdout.log"));
}

#[test]
fn a_missing_command_exits_127_like_a_shell() {
    let t = tempfile::tempdir().unwrap();
    let st = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["run", "--out"])
        .arg(t.path().join("r"))
        .args(["--", "definitely-not-a-command-xyz"])
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(127));
    assert!(String::from_utf8_lossy(&st.stderr).contains("definitely-not-a-command-xyz"));
}

#[test]
fn capture_writes_a_snapshot_that_analyze_reads_back_as_facts() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("snap");
    let bin = env!("CARGO_BIN_EXE_trainwreck");
    let st = Command::new(bin)
        .args(["capture", "--no-versions"])
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "{}",
        String::from_utf8_lossy(&st.stderr)
    );
    assert!(dir.join("manifest.json").is_file());
    let json = Command::new(bin)
        .args(["analyze", "--format", "json"])
        .arg(&dir)
        .output()
        .unwrap();
    let r: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    // The verdict depends on this machine's kernel log (old OOM kills are real history), so
    // only the facts are pinned here.
    assert!(r["verdict"].is_string());
    let names: Vec<&str> = r["facts"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|f| f["name"].as_str())
        .collect();
    for want in [
        "shm.size_bytes",
        "host.mem_total_bytes",
        "ulimit.open_files",
    ] {
        assert!(names.contains(&want), "{want} missing from {names:?}");
    }
}

/// `trainwreck run` of a command that fails: (its stderr, the run directory's report as JSON).
fn failed_run(dir: &std::path::Path, db: &std::path::Path) -> (String, serde_json::Value) {
    let bin = env!("CARGO_BIN_EXE_trainwreck");
    let out = dir.join("run");
    let st = Command::new(bin)
        .env("XDG_DATA_HOME", dir.join("xdg"))
        .env_remove("TRAINWRECK_DB")
        .args(["--lang", "en", "run", "--interval", "50", "--db"])
        .arg(db)
        .arg("--out")
        .arg(&out)
        .args([
            "--",
            "sh",
            "-c",
            "echo step 1; echo 'torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2; exit 3",
        ])
        .output()
        .unwrap();
    assert_eq!(st.status.code(), Some(3));
    let json = Command::new(bin)
        .args(["analyze", "--format", "json"])
        .arg(&out)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&st.stderr).into_owned(),
        serde_json::from_slice(&json.stdout).unwrap(),
    )
}

#[test]
fn a_run_says_nothing_about_its_own_files() {
    let t = tempfile::tempdir().unwrap();
    let (stderr, r) = failed_run(t.path(), &t.path().join("h.db"));
    assert!(stderr.contains("gpu_oom"), "{stderr}");
    // Neither its own stdout.log/stderr.log (console.log holds them) nor the limits its
    // snapshots show before and after.
    for own in ["stdout.log", "stderr.log", "ulimit-a.txt", "already"] {
        assert!(!stderr.contains(own), "{own}:\n{stderr}");
    }
    let warnings = r["warnings"].to_string();
    for own in ["stdout.log", "stderr.log", "ulimit-a.txt"] {
        assert!(!warnings.contains(own), "{own}: {warnings}");
    }
}

#[test]
fn a_failed_run_is_recorded_with_the_host_it_ran_on() {
    let t = tempfile::tempdir().unwrap();
    let db = t.path().join("h.db");
    failed_run(t.path(), &db);
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let host = host.trim();
    let export = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(["history", "export", "--db"])
        .arg(&db)
        .output()
        .unwrap();
    let export = String::from_utf8_lossy(&export.stdout);
    let run: serde_json::Value = export
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .find(|l| l["type"] == "run")
        .expect("the failed run is recorded");
    assert_eq!(run["hosts"], serde_json::json!([host]), "{run}");
    assert_eq!(run["origin"]["host"], host, "{run}");
}
