//! Fixtures written from the shapes of 59 real users' pastes (`fixtures/pastes/<ID>_<name>/`): one
//! folder per real user failure (P01–P59, plus variants such as P59b), holding a paste as a
//! user would give it and a `label.json`; and `H<n>_*`, harmless runs of the kinds issue 15
//! names (fp16 overflow while the scale settles, transport fallbacks, exit-time warnings);
//! `R<n>_real_*` are real captures from the GPU machine (their `label.json` says how).
//! The top root cause's category must be one the label accepts; the harmless ones (scary
//! output at a clean end) must come out `no_failure`. Prints a per-category top-1/top-3 table.

use std::collections::BTreeMap;
use trainwreck::model::Verdict;
use trainwreck::rules::KnowledgeBase;

mod labelled;

/// Cases that need reasoning the rules cannot express (issue 16, the engine). Each is printed
/// on every run with its reason; a case listed here that starts passing fails the test, so
/// the list cannot go stale.
const PENDING: &[(&str, &str)] = &[];

#[test]
fn every_real_paste_fixture_ranks_an_accepted_category_first() {
    let kb = KnowledgeBase::load(&[]).expect("built-in rules load");
    let cases = labelled::cases(&["pastes"]);
    for n in 1..=59 {
        let id = format!("P{n:02}_");
        assert!(
            cases.iter().any(|c| c
                .file_name()
                .is_some_and(|f| f.to_string_lossy().starts_with(&id))),
            "real paste P{n:02} has no fixture under fixtures/pastes/"
        );
    }
    for (p, _) in PENDING {
        assert!(
            cases.iter().any(|c| c.ends_with(p)),
            "PENDING names a fixture that does not exist: {p}"
        );
    }
    let mut failures = Vec::new();
    let mut pending_passing = Vec::new();
    // category → (cases, top-1 right, right within the top three causes)
    let mut table: BTreeMap<String, (u32, u32, u32)> = BTreeMap::new();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let label: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("label.json")).unwrap())
                .unwrap();
        let accept = labelled::accepted(&label);
        let r = trainwreck::diagnose(&kb, &labelled::inputs(case), 1);
        let got = if r.verdict == Verdict::NoFailure {
            "no_failure".to_string()
        } else {
            r.top()
                .or(r.findings.first())
                .map(|f| f.category.to_string())
                .unwrap_or_else(|| r.verdict.to_string())
        };
        let ok = accept.contains(&got);
        let mut top3: Vec<String> = r
            .findings
            .iter()
            .filter(|f| f.symptom_of.is_none())
            .map(|f| f.category.to_string())
            .collect();
        if r.verdict == Verdict::NoFailure {
            top3.insert(0, "no_failure".into());
        }
        top3.dedup();
        let row = table
            .entry(label["category"].as_str().unwrap_or("?").to_string())
            .or_default();
        row.0 += 1;
        row.1 += u32::from(ok);
        row.2 += u32::from(top3.iter().take(3).any(|c| accept.contains(c)));
        let pending = PENDING.iter().find(|(p, _)| *p == name);
        match (ok, pending) {
            (true, Some(_)) => pending_passing.push(name),
            (false, None) => failures.push(format!(
                "{name}: want {accept:?}, got {got} (verdict {}, causes {top3:?})",
                r.verdict
            )),
            (false, Some((_, why))) => {
                eprintln!("pending: {name}: want {accept:?}, got {got}: {why}")
            }
            (true, None) => {}
        }
    }
    let (n, t1, t3) = table
        .values()
        .fold((0, 0, 0), |a, r| (a.0 + r.0, a.1 + r.1, a.2 + r.2));
    eprintln!(
        "{:26} {:>5} {:>5} {:>5}",
        "category", "cases", "top1", "top3"
    );
    for (c, (k, a, b)) in &table {
        eprintln!("{c:26} {k:5} {a:5} {b:5}");
    }
    eprintln!(
        "real pastes {n}, top-1 {:.1}%, top-3 {:.1}%",
        100.0 * f64::from(t1) / f64::from(n),
        100.0 * f64::from(t3) / f64::from(n)
    );
    assert!(
        failures.is_empty(),
        "wrong top category:\n{}",
        failures.join("\n")
    );
    assert!(
        pending_passing.is_empty(),
        "now passing, remove from PENDING: {pending_passing:?}"
    );
}
