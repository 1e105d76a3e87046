//! What CI reads: the Markdown summary (pinned with insta), GitHub workflow commands, JUnit
//! XML, and redaction: secrets planted in the logs never reach a pasted or redacted report.

use std::path::{Path, PathBuf};
use std::process::Command;
use trainwreck::rules::KnowledgeBase;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name)
}

fn run(args: &[&str], path: &Path) -> (String, Option<i32>) {
    let out = Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .args(args)
        .arg(path)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.code(),
    )
}

#[test]
fn markdown_summary_of_the_seed_bus_error() {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let r = trainwreck::diagnose(&kb, &[fixture("seed-bus-error").display().to_string()], 1);
    insta::assert_snapshot!(trainwreck::report::markdown::render(&r));
}

#[test]
fn github_format_annotates_evidence_lines() {
    let (out, code) = run(
        &["analyze", "--format", "github"],
        &fixture("seed-bus-error"),
    );
    assert_eq!(code, Some(0));
    let first = out.lines().next().unwrap();
    assert!(first.starts_with("::error file="), "{first}");
    assert!(
        first.contains("seed-bus-error/train.log,line=27,"),
        "{first}"
    );
    assert!(out.lines().all(|l| l.starts_with("::")), "{out}");
}

#[test]
fn junit_reports_the_run_as_one_failing_case() {
    let (out, _) = run(
        &["analyze", "--format", "junit"],
        &fixture("seed-bus-error"),
    );
    assert!(out.starts_with("<?xml"));
    assert!(out.contains("failures=\"1\""));
    assert!(out.contains("<failure type=\"shm_exhausted\""));
}

const SECRETS: &[&str] = &[
    "hf_AbCdEfGhIjKlMnOpQrStUvWx12",
    "ghp_0123456789abcdefghijABCDEFGHIJ",
    "AKIAIOSFODNN7EXAMPLE",
    "wJalrXUtnFEMI-K7MDENG-bPxRfiCYEXAMPLEKEY",
    "s3cr3t-pa55",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXhZ",
    "sk-proj-0123456789abcdefXYZ",
];

/// The seed fixture with secrets planted in the very lines the report cites.
fn planted() -> tempfile::TempDir {
    let tmp = tempfile::tempdir().unwrap();
    for e in std::fs::read_dir(fixture("seed-bus-error"))
        .unwrap()
        .flatten()
    {
        let text = std::fs::read_to_string(e.path()).unwrap_or_default();
        let text = if e.file_name() == "train.log" {
            let mut lines: Vec<String> = text.lines().map(String::from).collect();
            lines[26].push_str(&format!(
                " HF_TOKEN={} url=https://bob:{}@hub.example.com/x Authorization: Bearer {}",
                SECRETS[0], SECRETS[4], SECRETS[5]
            ));
            lines[39].push_str(&format!(
                " GITHUB_TOKEN={} AWS_ACCESS_KEY_ID={} AWS_SECRET_ACCESS_KEY={} --api-key {}",
                SECRETS[1], SECRETS[2], SECRETS[3], SECRETS[6]
            ));
            lines.join("\n") + "\n"
        } else {
            text
        };
        std::fs::write(tmp.path().join(e.file_name()), text).unwrap();
    }
    tmp
}

#[test]
fn planted_secrets_never_reach_pasted_or_redacted_reports() {
    let tmp = planted();
    let (plain, _) = run(&["analyze", "--format", "json"], tmp.path());
    assert!(
        plain.contains(SECRETS[0]),
        "the plant must reach the evidence, or this test proves nothing"
    );
    for args in [
        vec!["analyze", "--format", "markdown"],
        vec!["analyze", "--format", "github"],
        vec!["analyze", "--format", "junit"],
        vec!["analyze", "--format", "html"],
        vec!["analyze", "--format", "json", "--redact"],
        vec!["analyze", "--format", "table", "--redact=all"],
        vec!["triage", "--format", "markdown"],
        vec!["triage", "--format", "html"],
        vec!["triage", "--format", "json", "--redact"],
    ] {
        let (out, code) = run(&args, tmp.path());
        assert_eq!(code, Some(0), "{args:?}");
        for s in SECRETS {
            assert!(!out.contains(s), "{args:?} leaked {s}:\n{out}");
        }
    }
}

#[test]
fn redacted_hosts_get_consistent_masks_and_keep_the_fingerprint() {
    let (plain, _) = run(&["analyze", "--format", "json"], &fixture("seed-bus-error"));
    let (red, _) = run(
        &["analyze", "--format", "json", "--redact=hosts,paths"],
        &fixture("seed-bus-error"),
    );
    assert!(plain.contains("c0a8f1e2d4b5"));
    assert!(!red.contains("c0a8f1e2d4b5"), "{red}");
    let p: serde_json::Value = serde_json::from_str(&plain).unwrap();
    let r: serde_json::Value = serde_json::from_str(&red).unwrap();
    assert_eq!(p["fingerprint"], r["fingerprint"]);
    let host = r["findings"][0]["origin"]["host"].as_str().unwrap();
    assert_eq!(host, "host-1");
    assert!(
        r["findings"][0]["evidence"][0]["text"]
            .as_str()
            .unwrap()
            .contains("[host-1:")
    );
}
