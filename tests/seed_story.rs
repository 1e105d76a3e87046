//! The story the project exists for (fixtures/seed-bus-error): a SIGBUS that points nowhere,
//! a launcher's -7, and a 64 MB /dev/shm must add up to one named cause with a sized fix —
//! and the same logs with a large, empty /dev/shm must not.

use trainwreck::model::Category;
use trainwreck::rules::KnowledgeBase;

fn diagnose(dir: &str) -> trainwreck::report::Report {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let path = format!("{}/fixtures/{dir}", env!("CARGO_MANIFEST_DIR"));
    trainwreck::diagnose(&kb, &[path], 2)
}

#[test]
fn seed_story_names_dev_shm_with_its_evidence_and_a_sized_fix() {
    let r = diagnose("seed-bus-error");
    let top = r.top().expect("a diagnosis");
    assert_eq!(top.category, Category::ShmExhausted);
    assert!(top.confidence >= 0.85, "confidence {}", top.confidence);
    let cites = |needle: &str| top.evidence.iter().any(|e| e.text.contains(needle));
    assert!(cites("Caught signal 7 (Bus error"), "bus-error line cited");
    assert!(cites("exits with return code = -7"), "-7 exit status cited");
    assert!(
        top.evidence
            .iter()
            .any(|e| e.path.ends_with("df-h_dev_shm.txt") && e.text.contains("64M")),
        "64M df snapshot cited: {:?}",
        top.evidence
    );
    assert!(top.fix.en.contains("--shm-size="), "{}", top.fix.en);
    assert!(
        top.fix.en.contains("sizeLimit"),
        "Kubernetes form too: {}",
        top.fix.en
    );
    assert!(top.against.is_empty());
    let rank2 = r
        .facts
        .iter()
        .find(|f| f.name == "rank.2.exit_signal")
        .expect("exit signal fact");
    assert_eq!(rank2.value.to_string(), "SIGBUS");
}

#[test]
fn large_empty_dev_shm_argues_against_and_changes_the_fix() {
    let r = diagnose("seed-bus-error-large-shm");
    let f = r
        .findings
        .iter()
        .find(|f| f.category == Category::ShmExhausted)
        .expect("still considered");
    assert!(
        f.confidence < 0.6,
        "must not claim high confidence: {}",
        f.confidence
    );
    assert!(
        f.against.iter().any(|a| a.text.contains("64G")),
        "the 64G df line argues against: {:?}",
        f.against
    );
    assert!(
        !f.fix.en.contains("--shm-size="),
        "no shrinking/growing advice: {}",
        f.fix.en
    );
    assert!(f.alternatives.is_some());
}

#[test]
fn terminal_report_of_the_seed_story_is_pinned() {
    let r = diagnose("seed-bus-error");
    let mut text = trainwreck::report::terminal::render(
        &r,
        &trainwreck::report::terminal::Style { color: false },
    );
    // Absolute fixture paths would differ per checkout; the report uses relative paths.
    text = text.replace(env!("CARGO_MANIFEST_DIR"), "<repo>");
    insta::assert_snapshot!(text);
}

#[test]
fn json_report_of_the_seed_story_is_pinned() {
    let r = diagnose("seed-bus-error");
    let mut v = serde_json::to_value(&r).unwrap();
    // Sizes of inputs are stable; nothing here depends on the machine.
    v["schema"] = serde_json::json!(r.schema);
    insta::assert_json_snapshot!(v);
}
