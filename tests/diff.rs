//! `trainwreck diff` and `analyze --baseline` on real pairs of runs: the lead's pairs captured
//! on an H200 where exactly one setting differs (fixtures/pairs, README there), and corpus
//! runs of one script (11a healthy vs 01b/01c shm, 11a vs its rerun 11b). On each pair the
//! setting that changed is listed first and nothing identical or noisy is listed.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn trainwreck(args: &[&str]) -> (String, String, Option<i32>) {
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .current_dir(root())
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code(),
    )
}

fn diff_json(good: &str, bad: &str) -> Value {
    let (out, err, code) = trainwreck(&["diff", good, bad, "--format", "json"]);
    assert_eq!(code, Some(0), "{err}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"))
}

/// Every listed difference differs, and none is a time, pid, host, port or path noise.
fn nothing_identical_or_noisy(d: &Value) {
    let diffs = d["differences"].as_array().unwrap();
    for x in diffs {
        assert_ne!(x["good"], x["bad"], "identical values listed: {x}");
        let key = x["key"].as_str().unwrap().to_ascii_lowercase();
        for noise in ["time", "pid", "host", "port", "addr", "date", "run_id"] {
            // `trajectory.step_time` is a measured quantity, not a timestamp.
            if key == "trajectory.step_time" {
                continue;
            }
            assert!(!key.contains(noise), "noise listed: {x}");
        }
        for side in ["good", "bad"] {
            let v = x[side].to_string();
            assert!(
                !v.contains("/tmp/") && !v.contains("torchelastic_"),
                "a run path listed as a difference: {x}"
            );
        }
    }
}

fn first_key(d: &Value) -> &str {
    d["differences"][0]["key"].as_str().unwrap_or("")
}

fn pair(name: &str, changed: &str, category: &str) {
    let good = format!("fixtures/pairs/{name}/good");
    let bad = format!("fixtures/pairs/{name}/bad");
    let d = diff_json(&good, &bad);
    assert_eq!(d["schema"], "trainwreck.diff/1");
    assert_eq!(d["bad"]["top"]["category"], category, "{d:#}");
    assert_eq!(first_key(&d), changed, "{:#}", d["differences"]);
    let first = &d["differences"][0];
    assert!(
        first["explains"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c == category),
        "{first}"
    );
    assert!(
        first["evidence"].as_array().unwrap().len() == 2,
        "both sides cited: {first}"
    );
    let headline = d["headline"].as_str().unwrap();
    assert!(headline.starts_with("Likely culprit: "), "{headline}");
    nothing_identical_or_noisy(&d);
    // Every other setting is the same in a pair: only effects of the failure follow.
    for x in &d["differences"].as_array().unwrap()[1..] {
        let key = x["key"].as_str().unwrap();
        assert!(
            key.starts_with("trajectory."),
            "only {changed} differs: {x}"
        );
    }
}

#[test]
fn pair_shm_size_lists_dev_shm_first() {
    pair("shm_size", "shm.size_bytes", "shm_exhausted");
}

#[test]
fn pair_workers_lists_dataloader_workers_first() {
    pair("workers", "config.workers", "shm_exhausted");
}

#[test]
fn pair_batch_size_lists_the_micro_batch_first() {
    pair("batch_size", "config.micro_batch", "gpu_oom");
}

#[test]
fn pair_precision_lists_fp16_first_and_finds_where_the_loss_parts() {
    pair("precision", "config.precision", "nan_loss");
    let d = diff_json(
        "fixtures/pairs/precision/good",
        "fixtures/pairs/precision/bad",
    );
    assert_eq!(d["differences"][0]["bad"], "fp16");
    assert_eq!(d["differences"][0]["good"], "bf16");
    let p = &d["parting"];
    assert_eq!(p["step"], 1, "{p:#}");
    assert!(
        p["metrics"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["metric"] == "loss" && m["bad"] == "NaN"),
        "{p:#}"
    );
    // The bad run's own lines at that step: the step line and what followed it.
    let lines: Vec<&str> = p["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert!(lines[0].contains("step 1/60 loss nan"), "{lines:?}");
    assert!(lines.iter().any(|l| l.contains("Loss is nan")), "{lines:?}");
}

#[test]
fn corpus_shm_runs_of_the_healthy_script_put_dev_shm_first() {
    for bad in [
        "fixtures/corpus/01b_dataloader_shm_torchrun/run",
        "fixtures/corpus/01c_dataloader_shm_sigbus_torchrun/run",
    ] {
        let d = diff_json("fixtures/corpus/11a_healthy_torchrun/run", bad);
        assert_eq!(
            first_key(&d),
            "shm.size_bytes",
            "{bad}: {:#}",
            d["differences"]
        );
        // More workers in the bad run also explain it, and rank right after.
        assert_eq!(d["differences"][1]["key"], "config.workers", "{bad}");
        // A smaller batch cannot explain running out of shared memory.
        let batch = d["differences"]
            .as_array()
            .unwrap()
            .iter()
            .find(|x| x["key"] == "config.micro_batch")
            .unwrap();
        assert!(
            !batch["explains"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c == "shm_exhausted"),
            "{batch}"
        );
        nothing_identical_or_noisy(&d);
    }
}

#[test]
fn two_healthy_runs_of_one_command_differ_in_no_setting() {
    let d = diff_json(
        "fixtures/corpus/11a_healthy_torchrun/run",
        "fixtures/captured/11b_healthy_torchrun_again/run",
    );
    nothing_identical_or_noisy(&d);
    for x in d["differences"].as_array().unwrap() {
        let key = x["key"].as_str().unwrap();
        assert!(key.starts_with("trajectory."), "a setting listed: {x}");
    }
    assert!(d["parting"].is_null(), "healthy reruns stay in band: {d:#}");
    assert!(
        d["headline"]
            .as_str()
            .unwrap()
            .starts_with("The second run did not fail either")
    );
}

#[test]
fn analyze_with_a_baseline_adds_the_diff_and_keeps_the_report_schema() {
    let (out, err, code) = trainwreck(&[
        "analyze",
        "fixtures/pairs/shm_size/bad",
        "--baseline",
        "fixtures/pairs/shm_size/good",
        "--format",
        "json",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(r["schema"], "trainwreck.report/1");
    assert_eq!(r["findings"][0]["category"], "shm_exhausted");
    assert_eq!(r["diff"]["schema"], "trainwreck.diff/1");
    assert_eq!(r["diff"]["differences"][0]["key"], "shm.size_bytes");
    // The same object `diff` prints.
    let d = diff_json(
        "fixtures/pairs/shm_size/good",
        "fixtures/pairs/shm_size/bad",
    );
    assert_eq!(r["diff"]["differences"], d["differences"]);

    for (format, heading) in [
        ("table", "What changed since the good run"),
        ("markdown", "### What changed since the good run"),
    ] {
        let (out, err, code) = trainwreck(&[
            "analyze",
            "fixtures/pairs/shm_size/bad",
            "--baseline",
            "fixtures/pairs/shm_size/good",
            "--format",
            format,
        ]);
        assert_eq!(code, Some(0), "{err}");
        assert!(out.contains(heading), "{format}: {out}");
        assert!(
            out.contains("Likely culprit: /dev/shm size 64 MiB here vs 128 GiB in the good run"),
            "{format}: {out}"
        );
    }
}

#[test]
fn a_baseline_that_does_not_exist_or_last_good_is_a_clear_usage_error() {
    let (_, err, code) = trainwreck(&[
        "analyze",
        "fixtures/pairs/shm_size/bad",
        "--baseline",
        "fixtures/pairs/no_such_run",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no such file or directory"), "{err}");
    let (_, err, code) = trainwreck(&[
        "analyze",
        "fixtures/pairs/shm_size/bad",
        "--baseline",
        "last-good",
    ]);
    assert_eq!(code, Some(2));
    assert!(err.contains("last-good") && err.contains("--job"), "{err}");
    let (_, err, code) =
        trainwreck(&["diff", "fixtures/pairs/nope", "fixtures/pairs/shm_size/bad"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("no such file or directory"), "{err}");
}

#[test]
fn markdown_diff_is_a_table_with_the_culprit_first() {
    let (out, err, code) = trainwreck(&[
        "diff",
        "fixtures/pairs/batch_size/good",
        "fixtures/pairs/batch_size/bad",
        "--format",
        "markdown",
    ]);
    assert_eq!(code, Some(0), "{err}");
    let rows: Vec<&str> = out.lines().filter(|l| l.starts_with("| ")).collect();
    assert!(rows[0].starts_with("| what | good | bad |"), "{out}");
    assert!(
        rows[1].starts_with("| micro-batch size per GPU | `4096` | `1048576` | gpu_oom"),
        "{out}"
    );
}

#[test]
fn last_good_is_the_last_recorded_no_failure_run_of_the_job() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("history.db").display().to_string();
    let analyze = |run: &str, extra: &[&str]| {
        let mut args = vec!["analyze", run, "--db", &db, "--format", "json"];
        args.extend_from_slice(extra);
        trainwreck(&args)
    };
    // No history yet, then none for this job: said, with what to do.
    let (_, err, code) = analyze(
        "fixtures/pairs/shm_size/bad",
        &["--job", "train-42", "--baseline", "last-good"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("does not exist yet"), "{err}");
    let (_, err, code) = analyze(
        "fixtures/pairs/batch_size/good",
        &["--record", "--job", "other-job"],
    );
    assert_eq!(code, Some(0), "{err}");
    let (_, err, code) = analyze(
        "fixtures/pairs/shm_size/bad",
        &["--job", "train-42", "--baseline", "last-good"],
    );
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no run of job \"train-42\""), "{err}");
    // The good run of the job, a failed run of the same job, and a good run of another job.
    for (run, job) in [
        ("fixtures/pairs/shm_size/good", "train-42"),
        ("fixtures/pairs/workers/bad", "train-42"),
    ] {
        let (_, err, code) = analyze(run, &["--record", "--job", job]);
        assert_eq!(code, Some(0), "{err}");
    }
    let (out, err, code) = analyze(
        "fixtures/pairs/shm_size/bad",
        &["--job", "train-42", "--baseline", "last-good", "--record"],
    );
    assert_eq!(code, Some(0), "{err}");
    let r: Value = serde_json::from_str(&out).unwrap();
    let good = r["diff"]["good"]["paths"][0].as_str().unwrap();
    assert!(good.ends_with("fixtures/pairs/shm_size/good"), "{good}");
    assert_eq!(r["diff"]["differences"][0]["key"], "shm.size_bytes");
}
