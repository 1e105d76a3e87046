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
