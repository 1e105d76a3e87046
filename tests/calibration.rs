//! Calibration, shown (issue 27): over every own labelled fixture (`fixtures/*`, `corpus/`,
//! `captured/`, `pastes/`), each cause finding's confidence is read as the chance that its
//! category is one the label accepts. The reliability table (per confidence band: findings,
//! mean confidence, accuracy) and the expected calibration error are printed, and must match
//! the table recorded in docs/calibration.md: the test fails when calibration drifts, so the
//! document always says what the code does. Regenerate with
//! `cargo test --test calibration -- --nocapture` and copy the printed table.

use std::path::Path;
use trainwreck::model::Verdict;
use trainwreck::rules::KnowledgeBase;

mod labelled;

/// Band lower edges: [0.0, 0.1), …, [0.9, 1.0].
const EDGES: [f64; 10] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/// Drift allowed before the document must be regenerated.
const TOLERANCE: f64 = 0.005;

/// (confidence, right) for every cause finding of every failing fixture.
fn predictions() -> Vec<(f64, bool)> {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let engine = trainwreck::analyze::Engine::new(&kb);
    let mut out = Vec::new();
    for case in labelled::cases(&["", "corpus", "captured", "pastes"]) {
        let label: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(case.join("label.json")).unwrap())
                .unwrap();
        let accept: Vec<String> = match label["accept"].as_array() {
            Some(a) => a
                .iter()
                .filter_map(|v| v.as_str().map(String::from))
                .collect(),
            None => vec![label["category"].as_str().unwrap().to_string()],
        };
        let r = trainwreck::diagnose_with(&engine, &labelled::inputs(&case), 2);
        if r.verdict == Verdict::NoFailure {
            continue;
        }
        for f in r.findings.iter().filter(|f| f.symptom_of.is_none()) {
            out.push((
                f.confidence,
                accept.iter().any(|a| a == f.category.as_str()),
            ));
        }
    }
    out
}

/// The table as Markdown rows, and the ECE.
fn table(p: &[(f64, bool)]) -> (Vec<String>, f64) {
    let mut rows = Vec::new();
    let mut ece = 0.0;
    for (i, lo) in EDGES.iter().enumerate() {
        let hi = EDGES.get(i + 1).copied().unwrap_or(1.01);
        let band: Vec<&(f64, bool)> = p.iter().filter(|x| x.0 >= *lo && x.0 < hi).collect();
        if band.is_empty() {
            continue;
        }
        let n = band.len() as f64;
        let conf = band.iter().map(|x| x.0).sum::<f64>() / n;
        let acc = band.iter().filter(|x| x.1).count() as f64 / n;
        ece += n / p.len() as f64 * (conf - acc).abs();
        rows.push(format!(
            "| {lo:.1}–{:.1} | {} | {conf:.3} | {acc:.3} | {:+.3} |",
            hi.min(1.0),
            band.len(),
            acc - conf
        ));
    }
    (rows, ece)
}

#[test]
fn the_reliability_table_in_docs_is_the_one_the_code_gives() {
    let p = predictions();
    let (rows, ece) = table(&p);
    println!("| band | findings | mean confidence | accuracy | accuracy − confidence |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        println!("{r}");
    }
    println!("\nfindings: {}, ECE: {ece:.3}", p.len());
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/calibration.md"))
            .expect("docs/calibration.md");
    let recorded: Vec<&str> = doc.lines().filter(|l| l.starts_with("| 0.")).collect();
    assert_eq!(
        recorded,
        rows.iter().map(String::as_str).collect::<Vec<_>>(),
        "calibration drifted from docs/calibration.md: regenerate it"
    );
    let want = format!("findings: {}, ECE: {ece:.3}", p.len());
    let ece_line = doc
        .lines()
        .find(|l| l.starts_with("findings: "))
        .unwrap_or("");
    let recorded_ece: f64 = ece_line
        .rsplit(' ')
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or(f64::NAN);
    assert!(
        (recorded_ece - ece).abs() <= TOLERANCE,
        "{want} vs docs: {ece_line}"
    );
}
