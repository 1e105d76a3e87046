//! Fixtures written from real public threads (`fixtures/real/batch-NN/<ID>_<name>/`, see
//! `fixtures/real/README.md`): each folder holds a paste of our own making in the thread's real
//! shape and a `label.json` with the category and the decisive fix the thread confirms.
//! For every case the top root cause's category must be one the label accepts, and — where the
//! category is right — the top fix's first sentence must name the confirmed step
//! (`fix_must_contain`). Cases the
//! current engine gets wrong carry `known_miss` / `fix_known_miss` with the principle it would
//! take; such a case that starts passing fails the test, so the lists cannot go stale.
//! Prints a per-batch and a per-category table (top-1, top-3, fix right); with
//! `TW_REAL_VERBOSE=1` also every case's answer and top fix. It must not tune anything: it only
//! measures.

use regex::RegexBuilder;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use trainwreck::model::Verdict;
use trainwreck::rules::KnowledgeBase;

mod labelled;
use labelled::first_sentence;

const LABEL_KEYS: &[&str] = &[
    "category",
    "accept",
    "source",
    "project",
    "year",
    "stack",
    "paste_kind",
    "fix_step",
    "fix_must_contain",
    "known_miss",
    "fix_known_miss",
];

fn batches() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/real");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&root)
        .expect("fixtures/real exists")
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_dir()
                && p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("batch-"))
        })
        .collect();
    out.sort();
    out
}

fn cases(batch: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(batch)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    out.sort();
    out
}

fn reason(v: &serde_json::Value) -> Option<String> {
    v.as_str()
        .filter(|s| !s.trim().is_empty())
        .map(String::from)
}

#[derive(Default)]
struct Row {
    cases: u32,
    top1: u32,
    top3: u32,
    /// cases whose category was right and that name a fix step
    fix_n: u32,
    fix_ok: u32,
}

impl Row {
    fn add(&mut self, top1: bool, top3: bool, fix: Option<bool>) {
        self.cases += 1;
        self.top1 += u32::from(top1);
        self.top3 += u32::from(top3);
        if let Some(f) = fix {
            self.fix_n += 1;
            self.fix_ok += u32::from(f);
        }
    }
}

fn pct(a: u32, n: u32) -> String {
    if n == 0 {
        "-".into()
    } else {
        format!("{:.0}%", 100.0 * f64::from(a) / f64::from(n))
    }
}

fn print_table(title: &str, t: &BTreeMap<String, Row>) {
    eprintln!(
        "{title:26} {:>5} {:>5} {:>5} {:>9}",
        "cases", "top1", "top3", "fix"
    );
    for (k, r) in t {
        eprintln!(
            "{k:26} {:5} {:5} {:5} {:>4}/{:<4}",
            r.cases, r.top1, r.top3, r.fix_ok, r.fix_n
        );
    }
}

#[test]
fn every_real_thread_fixture_ranks_its_category_and_fix_first() {
    let kb = KnowledgeBase::load(&[]).expect("built-in rules load");
    let categories: Vec<String> = trainwreck::model::Category::ALL
        .iter()
        .map(|c| c.to_string())
        .collect();
    let mut problems = Vec::new();
    let mut ratchet = Vec::new();
    let mut by_batch: BTreeMap<String, Row> = BTreeMap::new();
    let mut by_cat: BTreeMap<String, Row> = BTreeMap::new();
    let mut total = Row::default();
    let mut seen_ids = BTreeMap::new();
    // one thread backs one case: a thread in two batches would be scored twice and
    // the second batch would no longer measure unseen text
    let mut seen_sources: BTreeMap<String, String> = BTreeMap::new();
    // right-category cases whose fix names the step somewhere, not necessarily first
    let mut fix_anywhere = 0u32;
    for batch in batches() {
        let bname = batch.file_name().unwrap().to_string_lossy().to_string();
        for case in cases(&batch) {
            let name = case.file_name().unwrap().to_string_lossy().to_string();
            let id = name.split('_').next().unwrap_or("").to_string();
            if let Some(other) = seen_ids.insert(id.clone(), name.clone()) {
                problems.push(format!("{name}: id {id} also used by {other}"));
            }
            let text = std::fs::read_to_string(case.join("label.json"))
                .unwrap_or_else(|e| panic!("{bname}/{name}: label.json: {e}"));
            let label: serde_json::Value = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("{bname}/{name}: label.json: {e}"));
            // The label's shape: every key known, every category from the vocabulary.
            for k in label.as_object().expect("label is an object").keys() {
                assert!(
                    LABEL_KEYS.contains(&k.as_str()),
                    "{name}: unknown label key {k}"
                );
            }
            let category = label["category"].as_str().unwrap_or("?").to_string();
            let mut accept = labelled::strings(&label["accept"]);
            if accept.is_empty() {
                accept.push(category.clone());
            }
            for c in accept.iter().chain(std::iter::once(&category)) {
                assert!(
                    c == "no_failure" || categories.contains(c),
                    "{name}: {c} is not in the category vocabulary"
                );
            }
            assert!(
                accept.contains(&category),
                "{name}: accept must hold the category"
            );
            assert!(
                label["source"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("http")),
                "{name}: source must be the thread's URL"
            );
            let source = label["source"].as_str().unwrap_or("").trim_end_matches('/');
            if let Some(other) = seen_sources.insert(source.to_string(), name.clone()) {
                problems.push(format!("{name}: thread {source} is already case {other}"));
            }
            assert!(
                !labelled::inputs(&case).is_empty(),
                "{name}: a case needs at least one paste file"
            );
            let must: Vec<String> = labelled::strings(&label["fix_must_contain"]);
            assert!(
                category == "no_failure" || !must.is_empty(),
                "{name}: fix_must_contain names the confirmed step"
            );
            let known_miss = reason(&label["known_miss"]);
            let fix_known_miss = reason(&label["fix_known_miss"]);

            let r = trainwreck::diagnose(&kb, &labelled::inputs(&case), 1);
            let first = r.findings.iter().find(|f| f.symptom_of.is_none());
            let got = if r.verdict == Verdict::NoFailure {
                "no_failure".to_string()
            } else {
                first
                    .map(|f| f.category.to_string())
                    .unwrap_or_else(|| r.verdict.to_string())
            };
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
            let ok1 = accept.contains(&got);
            let ok3 = top3.iter().take(3).any(|c| accept.contains(c));
            // The fix column: only where the category is right and a step is named.
            let fix = first.map(|f| f.fix.en.as_str()).unwrap_or("");
            let names = |text: &str| {
                must.iter().all(|m| {
                    RegexBuilder::new(m)
                        .case_insensitive(true)
                        .build()
                        .unwrap_or_else(|e| panic!("{name}: bad fix_must_contain {m}: {e}"))
                        .is_match(text)
                })
            };
            let scored = ok1 && !must.is_empty() && got != "no_failure";
            let fix_ok = scored.then(|| names(first_sentence(fix)));
            if scored && names(fix) {
                fix_anywhere += 1;
            }
            if std::env::var_os("TW_REAL_VERBOSE").is_some() {
                eprintln!(
                    "case {name}: got {got} {top3:?}, fix: {}",
                    first.map(|f| f.fix.en.as_str()).unwrap_or("")
                );
            }
            by_batch
                .entry(bname.clone())
                .or_default()
                .add(ok1, ok3, fix_ok);
            by_cat
                .entry(category.clone())
                .or_default()
                .add(ok1, ok3, fix_ok);
            total.add(ok1, ok3, fix_ok);

            match (ok1, &known_miss) {
                (true, Some(_)) => {
                    ratchet.push(format!("{name}: category now right, drop known_miss"))
                }
                (false, None) => problems.push(format!(
                    "{bname}/{name}: want {accept:?}, got {got} (causes {top3:?})"
                )),
                (false, Some(why)) => {
                    eprintln!("known miss: {name}: want {accept:?}, got {got}: {why}")
                }
                (true, None) => {}
            }
            match (fix_ok, &fix_known_miss) {
                (Some(true), Some(_)) => ratchet.push(format!("{name}: fix now right, drop fix_known_miss")),
                (Some(false), None) => problems.push(format!(
                    "{bname}/{name}: the top fix's first sentence does not name the step {must:?}: {fix:?}"
                )),
                (Some(false), Some(why)) => eprintln!("known fix miss: {name}: {why}"),
                // the category is wrong: a fix_known_miss waits for it
                (None, _) | (Some(true), None) => {}
            }
        }
    }
    print_table("batch", &by_batch);
    print_table("category", &by_cat);
    eprintln!(
        "real threads {}, top-1 {}, top-3 {}, fix right (step in the first sentence) {} of {} \
         right-category cases, step named anywhere {}",
        total.cases,
        pct(total.top1, total.cases),
        pct(total.top3, total.cases),
        pct(total.fix_ok, total.fix_n),
        total.fix_n,
        pct(fix_anywhere, total.fix_n)
    );
    assert!(total.cases > 0, "no real-thread fixtures found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(ratchet.is_empty(), "ratchet:\n{}", ratchet.join("\n"));
}
