//! Fingerprints and triage on real variants of the corpus: a case copied with other pids,
//! times, hosts and rank counts keeps its fingerprint; different failures never share one;
//! hundreds of varied runs group back into their cases, analysed in parallel.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use trainwreck::rules::KnowledgeBase;

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/corpus")
}

/// Failing cases with distinct failures (fingerprints must survive variation).
const CASES: &[&str] = &[
    "01a_dataloader_shm_deepspeed_zero2",
    "03a_cuda_oom_python",
    "04_nccl_collective_timeout",
    "06b_cgroup_oom_kill_rank1_only",
    "09_rank0_keyerror_record",
    "10b_deepspeed_batch_size_assert",
    "15_corrupt_checkpoint_resume",
    "20_dataloader_worker_segfault",
];

/// How one copy differs from the original run.
struct Variant {
    /// Added to every digit of numbers of 4+ digits (pids, ports, years, seq numbers).
    shift: u8,
    /// Replaces each host name the original report names.
    host: String,
    /// Extra ranks: copies of the last `rankN.log` as higher ranks.
    extra_ranks: u32,
}

fn shift_numbers(text: &str, shift: u8) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let mut j = i;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
            let run = &text[i..j];
            if run.len() >= 4 {
                for c in run.bytes() {
                    let d = (c - b'0' + shift) % 10;
                    // Keep the leading digit non-zero so the width stays.
                    out.push((b'0' + if d == 0 && c != b'0' { 1 } else { d }) as char);
                }
            } else {
                out.push_str(run);
            }
            i = j;
        } else {
            let n = text[i..].chars().next().map_or(1, char::len_utf8);
            out.push_str(&text[i..i + n]);
            i += n;
        }
    }
    out
}

fn hosts_of(run: &Path) -> Vec<String> {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let r = trainwreck::diagnose(&kb, &[run.display().to_string()], 1);
    let mut set = BTreeSet::new();
    for f in &r.findings {
        set.extend(f.origin.host.clone());
        for e in &f.evidence {
            set.extend(e.host.clone());
        }
    }
    set.into_iter().filter(|h| h.len() >= 3).collect()
}

/// Copy `src` (a run directory) to `dst`, varied. Snapshots are copied unchanged: they hold
/// the facts (sizes, limits) that decide the diagnosis, not the noise.
fn copy_varied(src: &Path, dst: &Path, v: &Variant, hosts: &[String]) {
    for e in walkdir::WalkDir::new(src).into_iter().flatten() {
        let rel = e.path().strip_prefix(src).unwrap();
        let to = dst.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&to).unwrap();
            continue;
        }
        let snapshot = rel
            .components()
            .any(|c| c.as_os_str().to_string_lossy().starts_with("snapshot"));
        let bytes = std::fs::read(e.path()).unwrap();
        match (snapshot, String::from_utf8(bytes.clone())) {
            (false, Ok(text)) => {
                let mut t = shift_numbers(&text, v.shift);
                for h in hosts {
                    t = t.replace(h.as_str(), &v.host);
                }
                std::fs::write(&to, &t).unwrap();
                let name = rel.file_name().unwrap().to_string_lossy().to_string();
                if let Some(n) = name
                    .strip_prefix("rank")
                    .and_then(|s| s.strip_suffix(".log"))
                    .and_then(|s| s.parse::<u32>().ok())
                {
                    for k in 1..=v.extra_ranks {
                        let r = n + 10 * k;
                        let copy = t
                            .replace(&format!("[rank{n}]"), &format!("[rank{r}]"))
                            .replace(&format!("[default{n}]"), &format!("[default{r}]"));
                        std::fs::write(to.with_file_name(format!("rank{r}.log")), copy).unwrap();
                    }
                }
            }
            _ => std::fs::write(&to, &bytes).unwrap(),
        }
    }
}

fn fingerprint(kb: &KnowledgeBase, run: &Path) -> Option<String> {
    trainwreck::diagnose(kb, &[run.display().to_string()], 1).fingerprint
}

#[test]
fn same_failure_with_other_pids_times_hosts_and_ranks_keeps_its_fingerprint() {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut unstable = Vec::new();
    for case in CASES {
        let src = corpus().join(case).join("run");
        let original = fingerprint(&kb, &src);
        assert!(
            original.is_some(),
            "{case}: a failed run must have a fingerprint"
        );
        let hosts = hosts_of(&src);
        for (i, v) in [
            Variant {
                shift: 3,
                host: "gpu-node-117".into(),
                extra_ranks: 0,
            },
            Variant {
                shift: 7,
                host: "a100-x9".into(),
                extra_ranks: 2,
            },
        ]
        .iter()
        .enumerate()
        {
            let dst = tmp.path().join(format!("{case}-{i}"));
            copy_varied(&src, &dst, v, &hosts);
            let got = fingerprint(&kb, &dst);
            if got != original {
                unstable.push(format!("{case} variant {i}: {original:?} → {got:?}"));
            }
        }
    }
    assert!(
        unstable.is_empty(),
        "fingerprints moved:\n{}",
        unstable.join("\n")
    );
}

fn label(case: &Path) -> Option<String> {
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(case.join("label.json")).ok()?).ok()?;
    v["category"].as_str().map(String::from)
}

#[test]
fn fixtures_of_different_categories_never_share_a_fingerprint() {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let mut by_fp: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut n = 0;
    for e in std::fs::read_dir(corpus()).unwrap().flatten() {
        let Some(cat) = label(&e.path()) else {
            continue;
        };
        let fp = fingerprint(&kb, &e.path().join("run"));
        if cat == "no_failure" {
            assert_eq!(
                fp,
                None,
                "{}: a healthy run has no fingerprint",
                e.path().display()
            );
            continue;
        }
        let fp =
            fp.unwrap_or_else(|| panic!("{}: a failure has a fingerprint", e.path().display()));
        assert!(fp.starts_with("fp2:") && fp.len() == 20, "{fp}");
        by_fp.entry(fp).or_default().insert(cat);
        n += 1;
    }
    assert!(n >= 10, "only {n} fingerprinted fixtures");
    let clashes: Vec<_> = by_fp.iter().filter(|(_, c)| c.len() > 1).collect();
    assert!(
        clashes.is_empty(),
        "one fingerprint for different failures: {clashes:?}"
    );
}

#[test]
fn two_different_failures_get_different_fingerprints() {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let a = fingerprint(&kb, &corpus().join("09_rank0_keyerror_record/run"));
    let b = fingerprint(&kb, &corpus().join("15_corrupt_checkpoint_resume/run"));
    let c = fingerprint(&kb, &corpus().join("03a_cuda_oom_python/run"));
    assert!(a.is_some() && b.is_some() && c.is_some());
    assert_ne!(a, b);
    assert_ne!(a, c);
    assert_ne!(b, c);
}

#[test]
fn triage_of_hundreds_of_varied_runs_groups_them_by_case_in_parallel() {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let jobs = tmp.path().join("failed-jobs");
    let per_case = 26; // 8 cases × 26 = 208 runs
    let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for case in CASES {
        let src = corpus().join(case).join("run");
        let hosts = hosts_of(&src);
        for i in 0..per_case {
            let v = Variant {
                shift: (i % 9 + 1) as u8,
                host: format!("node-{:03}", i % 5),
                extra_ranks: (i % 3) as u32,
            };
            // Two layouts: job/run/… (corpus style) and job/… (files directly).
            let dst = if i % 2 == 0 {
                jobs.join(format!("{case}-{i}")).join("run")
            } else {
                jobs.join(format!("{case}-{i}"))
            };
            copy_varied(&src, &dst, &v, &hosts);
            expected
                .entry(case.to_string())
                .or_default()
                .insert(dst.display().to_string());
        }
    }
    let start = std::time::Instant::now();
    let t = trainwreck::triage::run(&kb, &[jobs.display().to_string()], 4);
    let elapsed = start.elapsed();
    assert_eq!(t.schema, "trainwreck.triage/1");
    assert_eq!(t.runs_total, CASES.len() * per_case, "runs discovered");
    let groups: Vec<BTreeSet<String>> = t
        .groups
        .iter()
        .map(|g| g.runs.iter().cloned().collect())
        .collect();
    for (case, runs) in &expected {
        assert!(
            groups.contains(runs),
            "{case}: its {} runs are not exactly one group (groups: {:?})",
            runs.len(),
            t.groups
                .iter()
                .map(|g| (g.fingerprint.clone(), g.count))
                .collect::<Vec<_>>()
        );
    }
    assert_eq!(t.groups.len(), CASES.len());
    for g in &t.groups {
        assert_eq!(g.count, per_case);
        assert!(g.first_seen.is_some() && g.last_seen.is_some());
        assert!(g.example.contains(&jobs.display().to_string()));
    }
    let json: serde_json::Value =
        serde_json::from_str(&trainwreck::report::triage::json(&t)).unwrap();
    assert_eq!(json["groups"][0]["count"], per_case);
    eprintln!("triage of {} runs took {elapsed:?}", t.runs_total);
}

#[test]
fn a_parent_with_notes_is_a_parent_and_run_parts_stay_in_their_run() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(root.join("README.md"), "notes").unwrap();
    std::fs::create_dir_all(root.join("job1/logs")).unwrap();
    std::fs::write(root.join("job1/logs/rank0.log"), "x").unwrap();
    std::fs::create_dir_all(root.join("job2")).unwrap();
    std::fs::write(root.join("job2/console.log"), "x").unwrap();
    let (runs, w) = trainwreck::triage::discover(&[root.display().to_string()]);
    assert!(w.is_empty());
    assert_eq!(runs, vec![root.join("job1"), root.join("job2")]);
}

#[test]
fn exit_code_action_maps_verdicts_for_scripts() {
    let bin = env!("CARGO_BIN_EXE_trainwreck");
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/seed-bus-error");
    let status = |p: &Path| {
        std::process::Command::new(bin)
            .args(["analyze", "--format", "json", "--exit-code", "action"])
            .arg(p)
            .output()
            .unwrap()
            .status
            .code()
    };
    assert_eq!(status(&seed), Some(12), "shm_exhausted is fix-config");
    assert_eq!(status(&corpus().join("11a_healthy_torchrun/run")), Some(0));
    assert_eq!(
        status(&corpus().join("15_corrupt_checkpoint_resume/run")).map(|c| c >= 10),
        Some(true)
    );
    let default = std::process::Command::new(bin)
        .args(["analyze", "--format", "json"])
        .arg(&seed)
        .output()
        .unwrap();
    assert_eq!(default.status.code(), Some(0), "default exit stays 0");
}

fn triage_out(args: &[&str]) -> (Option<i32>, String) {
    let o = std::process::Command::new(env!("CARGO_BIN_EXE_trainwreck"))
        .arg("triage")
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    (
        o.status.code(),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn triage_speaks_github_and_junit_and_exits_by_action_as_analyze_does() {
    let pairs = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pairs");
    let pairs = pairs.to_str().unwrap();
    let (_, j) = triage_out(&[pairs, "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    let groups = v["groups"].as_array().unwrap();
    let failing: Vec<&serde_json::Value> = groups
        .iter()
        .filter(|g| g["verdict"] != "no_failure")
        .collect();
    let failed_runs: u64 = failing.iter().map(|g| g["count"].as_u64().unwrap()).sum();
    assert!(!failing.is_empty() && failed_runs < v["runs_total"].as_u64().unwrap());

    // GitHub: one ::error per failing group, each naming its fingerprint; every line a command.
    let (code, gh) = triage_out(&[pairs, "--format", "github"]);
    assert_eq!(code, Some(0));
    assert!(gh.lines().all(|l| l.starts_with("::")), "{gh}");
    let errors: Vec<&str> = gh.lines().filter(|l| l.starts_with("::error ")).collect();
    assert_eq!(errors.len(), failing.len(), "{gh}");
    for g in &failing {
        let fp = g["fingerprint"].as_str().unwrap();
        assert!(errors.iter().any(|l| l.contains(fp)), "{fp}:\n{gh}");
    }

    // JUnit: one test case per run, the failed ones failing.
    let (_, xml) = triage_out(&[pairs, "--format", "junit"]);
    assert_eq!(
        xml.matches("<testcase ").count() as u64,
        v["runs_total"].as_u64().unwrap(),
        "{xml}"
    );
    assert_eq!(
        xml.matches("<failure ").count() as u64,
        failed_runs,
        "{xml}"
    );
    assert!(
        xml.contains(&format!("failures=\"{failed_runs}\"")),
        "{xml}"
    );

    // --exit-code action: the most frequent failure's status, as analyze gives it.
    let top = failing[0]["action"].as_str().unwrap();
    let (code, _) = triage_out(&[pairs, "--exit-code", "action"]);
    let expected = if top.starts_with("fix-config") || top == "fix-environment" {
        12
    } else {
        -1
    };
    assert_eq!(code, Some(expected), "top action {top}");
    let healthy = corpus().join("11a_healthy_torchrun/run");
    let (code, _) = triage_out(&[healthy.to_str().unwrap(), "--exit-code", "action"]);
    assert_eq!(code, Some(0));
    let (code, _) = triage_out(&[pairs]);
    assert_eq!(code, Some(0), "default exit stays 0");
}

#[test]
fn first_and_last_seen_are_the_runs_own_times_not_the_copys() {
    // A copy made now of a run from 2024: its date is the failure's, from its logs.
    let t = tempfile::tempdir().unwrap();
    let copy = t.path().join("copied-run");
    std::fs::create_dir(&copy).unwrap();
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/seed-bus-error");
    for e in std::fs::read_dir(&seed).unwrap() {
        let e = e.unwrap();
        if e.file_type().unwrap().is_file() {
            std::fs::copy(e.path(), copy.join(e.file_name())).unwrap();
        }
    }
    // A run whose log has no time at all: only the file's time is known, and said.
    let untimed = t.path().join("untimed");
    std::fs::create_dir(&untimed).unwrap();
    std::fs::write(
        untimed.join("train.log"),
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
    )
    .unwrap();
    let (_, j) = triage_out(&[t.path().to_str().unwrap(), "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&j).unwrap();
    let group_of = |run: &str| {
        v["groups"]
            .as_array()
            .unwrap()
            .iter()
            .find(|g| g["example"].as_str().unwrap().ends_with(run))
            .unwrap_or_else(|| panic!("{run} in {v}"))
            .clone()
    };
    let copied = group_of("copied-run");
    assert_eq!(copied["first_seen"], "2024-05-14T09:14:02Z", "{copied}");
    assert_eq!(copied["seen_from"], "logs");
    let u = group_of("untimed");
    assert_eq!(u["seen_from"], "mtime", "{u}");
    assert!(u["first_seen"].as_str().unwrap() > "2026", "{u}");
    let (_, table) = triage_out(&[t.path().to_str().unwrap()]);
    let row = table.lines().find(|l| l.contains("untimed")).unwrap();
    assert!(row.contains("(mtime)"), "{row}");
    let row = table.lines().find(|l| l.contains("copied-run")).unwrap();
    assert!(
        row.contains("2024-05-14") && !row.contains("(mtime)"),
        "{row}"
    );
}
