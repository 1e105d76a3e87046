//! Every labelled fixture (`fixtures/*/label.json`, `fixtures/corpus/*/label.json`): the top
//! finding's category must be one the label accepts (no_failure: verdict no_failure).

use trainwreck::model::Verdict;
use trainwreck::rules::KnowledgeBase;

mod labelled;

/// Labelled cases whose category has no rules yet. Each entry is a known gap, printed on
/// every run; the knowledge-base work removes them. A case listed here that starts passing
/// fails the test, so the list cannot go stale.
const PENDING: &[&str] = &[];

#[test]
fn every_labelled_fixture_ranks_its_category_first() {
    let kb = KnowledgeBase::load(&[]).expect("built-in rules load");
    let mut failures = Vec::new();
    let mut pending_passing = Vec::new();
    let cases = labelled::cases(&["", "corpus", "captured"]);
    assert!(cases.len() >= 20, "fixtures missing: found {}", cases.len());
    // category → (cases, top-1 right, right within the top three causes)
    let mut table: std::collections::BTreeMap<String, (u32, u32, u32)> = Default::default();
    for case in &cases {
        let name = case.file_name().unwrap().to_string_lossy().to_string();
        let label: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("label.json")).unwrap())
                .unwrap();
        let accept: Vec<String> = label["accept"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_else(|| vec![label["category"].as_str().unwrap().to_string()]);
        let r = trainwreck::diagnose(&kb, &labelled::inputs(case), 2);
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
        let pending = PENDING.contains(&name.as_str());
        match (ok, pending) {
            (true, true) => pending_passing.push(name),
            (false, false) => failures.push(format!("{name}: want {accept:?}, got {got}")),
            (false, true) => {
                eprintln!("pending (no rules yet): {name}: want {accept:?}, got {got}")
            }
            (true, false) => {}
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
        "cases {n}, top-1 {:.1}%, top-3 {:.1}%",
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
