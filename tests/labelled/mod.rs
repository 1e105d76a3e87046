//! The labelled fixture folders the scoring tests share (`fixtures.rs`, `calibration.rs`,
//! `real_pastes.rs`, `real_threads.rs`, and for a fix's first sentence `second_tier.rs` and
//! `exception_remedies.rs`): which folders are cases, what the analyzer is pointed at in each,
//! the label's lists, and how a fix is scored. Test support only; it scores nothing itself.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Every folder holding a `label.json` directly under each of `dirs` (relative to
/// `fixtures/`, `""` for `fixtures/` itself), sorted.
pub fn cases(dirs: &[&str]) -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut out = Vec::new();
    for dir in dirs {
        let dir = root.join(dir);
        let rd = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for e in rd.flatten() {
            if e.path().join("label.json").is_file() {
                out.push(e.path());
            }
        }
    }
    out.sort();
    out
}

/// What the analyzer is pointed at: `run/` when present, else the case's files minus the
/// label and notes.
pub fn inputs(case: &Path) -> Vec<String> {
    if case.join("run").is_dir() {
        return vec![case.join("run").display().to_string()];
    }
    let mut v: Vec<String> = std::fs::read_dir(case)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let n = p.file_name().unwrap().to_string_lossy();
            !matches!(n.as_ref(), "label.json" | "README.md" | "GROUND_TRUTH.md")
        })
        .map(|p| p.display().to_string())
        .collect();
    v.sort();
    v
}

/// A label's list of strings (`accept`, `fix_must_contain`); empty when absent.
pub fn strings(v: &serde_json::Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The categories a label accepts as the top cause: `accept`, else its `category`.
pub fn accepted(label: &serde_json::Value) -> Vec<String> {
    let a = strings(&label["accept"]);
    if a.is_empty() {
        vec![label["category"].as_str().unwrap().to_string()]
    } else {
        a
    }
}

/// The fix's first sentence: up to the first `.` (or `。`) that ends a sentence outside
/// backticks — the step a user reads first (issue 29: the decisive step comes first).
pub fn first_sentence(fix: &str) -> &str {
    let mut in_code = false;
    let b = fix.as_bytes();
    for (i, c) in fix.char_indices() {
        match c {
            '`' => in_code = !in_code,
            '。' if !in_code => return &fix[..i],
            '.' if !in_code => {
                let next_blank = b.get(i + 1).is_none_or(|n| n.is_ascii_whitespace());
                let abbrev = ["e.g", "i.e", "vs"].iter().any(|a| fix[..i].ends_with(a));
                if next_blank && !abbrev {
                    return &fix[..i];
                }
            }
            _ => {}
        }
    }
    fix
}

/// The calibration's data (`tests/calibration.rs`, `examples/calibrate.rs`): every labelled
/// case (the seed cases, `corpus/`, `captured/`, `pastes/`, every `real/` batch) that did not
/// come out `no_failure`, with one point per finding that is not a symptom: its strength, its
/// place (`calibrate::Place`), and whether it is right. A real thread's right answer counts as right only if
/// a rule that decided it survives leaving that thread's project out (`real/shaped-by.json`,
/// as `scripts/score_real.py` scores leave-one-source-out): a fixture's own rule tuning is
/// not evidence that the rule generalises.
pub fn calibration_points() -> Vec<(PathBuf, trainwreck::correlate::calibrate::Point)> {
    use trainwreck::correlate::calibrate::{Place, Point};
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let mut dirs: Vec<String> = ["", "corpus", "captured", "pastes"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let mut batches: Vec<String> = std::fs::read_dir(root.join("real"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| format!("real/{}", e.file_name().to_string_lossy()))
        .collect();
    batches.sort();
    dirs.extend(batches);
    let shaped: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("real/shaped-by.json")).unwrap())
            .unwrap();
    let cases = cases(&dirs.iter().map(String::as_str).collect::<Vec<_>>());
    let label = |c: &Path| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(c.join("label.json")).unwrap()).unwrap()
    };
    // Case ID (`T0107`) → project, for the real threads.
    let project: std::collections::HashMap<String, String> = cases
        .iter()
        .filter(|c| c.starts_with(root.join("real")))
        .map(|c| {
            let id = c.file_name().unwrap().to_string_lossy();
            let id = id.split('_').next().unwrap_or_default().to_string();
            (
                id,
                label(c)["project"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect();
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).unwrap();
    let engine = trainwreck::analyze::Engine::new(&kb);
    let mut out = Vec::new();
    for case in cases {
        let l = label(&case);
        let accept = accepted(&l);
        let r = trainwreck::diagnose_with(&engine, &inputs(&case), 2);
        if r.verdict == trainwreck::model::Verdict::NoFailure {
            continue;
        }
        let own = l["project"].as_str();
        let survives = |rule: &str| {
            let by = strings(&shaped[rule]);
            own.is_none()
                || by.is_empty()
                || by
                    .iter()
                    .any(|id| project.get(id).map(String::as_str) != own)
        };
        let places = Place::of(&r.findings);
        for (f, &place) in r.findings.iter().zip(&places) {
            if f.symptom_of.is_some() {
                continue;
            }
            let right = accept.iter().any(|a| a == f.category.as_str())
                && std::iter::once(&f.rule)
                    .chain(&f.merged_rules)
                    .any(|rule| survives(rule));
            out.push((
                case.clone(),
                Point {
                    strength: f.strength,
                    place,
                    right,
                },
            ));
        }
    }
    out
}
