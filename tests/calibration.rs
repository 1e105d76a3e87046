//! Calibration, shown (issue 27): a finding's confidence is read as the chance that its
//! category is one the case's label accepts. Over every labelled fixture (the seed cases,
//! `corpus/`, `captured/`, `pastes/`, every real-thread batch), each cause finding is one
//! prediction, scored **leave-one-out**: its confidence comes from curves fitted on every other
//! case, and a real thread's right answer counts only if the rule that decided it survives
//! leaving that thread's project out (`labelled::calibration_points`). The reliability table
//! (per band: findings, mean confidence, accuracy) and the expected calibration error must
//! match docs/calibration.md, the error must be at most 0.05, and the curves shipped in
//! `data/calibration.toml` must be the ones the fixtures give. Regenerate with
//! `cargo run --release --example calibrate > data/calibration.toml` and
//! `cargo test --release --test calibration -- --nocapture` (copy the printed table).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trainwreck::correlate::calibrate::{self, Calibration, Place, Point};

mod labelled;

/// Band lower edges: [0.0, 0.1), …, [0.9, 1.0].
const EDGES: [f64; 10] = [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9];

/// Drift allowed before the document must be regenerated.
const TOLERANCE: f64 = 0.005;

/// The goal.
const MAX_ECE: f64 = 0.05;

/// How far the shipped curves may be from the fixtures' before the file must be regenerated.
const CURVE_TOLERANCE: f64 = 0.02;

/// A case's findings calibrated as `apply` does (`Calibration::confidences`).
fn calibrated(cal: &Calibration, points: &[Point]) -> Vec<(f64, bool)> {
    let strengths: Vec<f64> = points.iter().map(|p| p.strength).collect();
    let places: Vec<Place> = points.iter().map(|p| p.place).collect();
    cal.confidences(&strengths, &places, false)
        .into_iter()
        .zip(points.iter().map(|p| p.right))
        .collect()
}

/// Leave-one-out: each case's predictions calibrated by curves fitted on every other case,
/// as (that confidence, right, the band's confidence). A prediction is put in its band by the
/// curves fitted on every case, not by its own leave-one-out confidence: leaving a case out
/// moves its prediction towards its own label's opposite (a wrong one up, a right one down),
/// so a pool of equal strengths whose confidence sits on a band edge (0.895) would be split by
/// its own labels, its right members in the band below and its wrong ones above.
fn leave_one_out(by_case: &BTreeMap<PathBuf, Vec<Point>>) -> Vec<(f64, bool, f64)> {
    let all: Vec<Point> = by_case.values().flatten().copied().collect();
    let full = calibrate::fit(&all, by_case.len());
    let mut out = Vec::new();
    for (case, own) in by_case {
        let others: Vec<Point> = by_case
            .iter()
            .filter(|(c, _)| *c != case)
            .flat_map(|(_, p)| p.iter().copied())
            .collect();
        let cal = calibrate::fit(&others, by_case.len() - 1);
        let band = calibrated(&full, own);
        out.extend(
            calibrated(&cal, own)
                .into_iter()
                .zip(band)
                .map(|((c, right), (b, _))| (c, right, b)),
        );
    }
    out
}

/// The table as Markdown rows, and the ECE.
fn table(p: &[(f64, bool, f64)]) -> (Vec<String>, f64) {
    let mut rows = Vec::new();
    let mut ece = 0.0;
    for (i, lo) in EDGES.iter().enumerate() {
        let hi = EDGES.get(i + 1).copied().unwrap_or(1.01);
        let band: Vec<&(f64, bool, f64)> = p.iter().filter(|x| x.2 >= *lo && x.2 < hi).collect();
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
fn confidence_is_calibrated_leave_one_out_and_docs_and_data_say_so() {
    let mut by_case: BTreeMap<PathBuf, Vec<Point>> = BTreeMap::new();
    for (case, p) in labelled::calibration_points() {
        by_case.entry(case).or_default().push(p);
    }
    let loo = leave_one_out(&by_case);
    let (rows, ece) = table(&loo);
    println!("| band | findings | mean confidence | accuracy | accuracy − confidence |");
    println!("|---|---|---|---|---|");
    for r in &rows {
        println!("{r}");
    }
    println!(
        "\ncases: {}, findings: {}, ECE: {ece:.3}",
        by_case.len(),
        loo.len()
    );

    // The shipped curves are the fixtures' own.
    let all: Vec<Point> = by_case.values().flatten().copied().collect();
    let fitted = calibrate::fit(&all, by_case.len());
    let shipped = calibrate::shipped();
    for (name, a, b) in [
        ("first", &shipped.first, &fitted.first),
        (
            "first_generic",
            &shipped.first_generic,
            &fitted.first_generic,
        ),
        ("other", &shipped.other, &fitted.other),
    ] {
        for i in 0..=100 {
            let x = i as f64 / 100.0;
            assert!(
                (a.at(x) - b.at(x)).abs() <= CURVE_TOLERANCE,
                "data/calibration.toml [{name}] at strength {x}: {} shipped, {} fitted; \
                 regenerate with `cargo run --release --example calibrate > data/calibration.toml`",
                a.at(x),
                b.at(x)
            );
        }
    }

    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/calibration.md"))
            .expect("docs/calibration.md");
    let recorded: Vec<&str> = doc.lines().filter(|l| l.starts_with("| 0.")).collect();
    assert_eq!(
        recorded,
        rows.iter().map(String::as_str).collect::<Vec<_>>(),
        "calibration drifted from docs/calibration.md: regenerate it"
    );
    let want = format!(
        "cases: {}, findings: {}, ECE: {ece:.3}",
        by_case.len(),
        loo.len()
    );
    let ece_line = doc.lines().find(|l| l.starts_with("cases: ")).unwrap_or("");
    let recorded_ece: f64 = ece_line
        .rsplit(' ')
        .next()
        .and_then(|x| x.parse().ok())
        .unwrap_or(f64::NAN);
    assert!(
        (recorded_ece - ece).abs() <= TOLERANCE,
        "{want} vs docs: {ece_line}"
    );
    assert!(ece <= MAX_ECE, "leave-one-out ECE {ece:.3} above {MAX_ECE}");
}

/// What `apply` does to a report: the first cause on its curve, every later finding at or
/// below it, the strength kept — checked on the seed case through the production path.
#[test]
fn a_report_shows_calibrated_confidences_in_rank_order_and_keeps_the_strength() {
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).unwrap();
    let seed = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/seed-bus-error");
    let r = trainwreck::diagnose(&kb, &[seed.display().to_string()], 2);
    let cal = calibrate::shipped();
    let top = &r.findings[0];
    assert_eq!(
        top.confidence,
        cal.confidences(&[top.strength], &[Place::First], false)[0]
    );
    for f in &r.findings[1..] {
        assert!(
            f.confidence <= top.confidence,
            "{}: {}",
            f.rule,
            f.confidence
        );
        assert!(f.strength <= top.strength || f.symptom_of.is_some());
    }
}
