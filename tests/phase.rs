//! Which inputs were taken before the run is decided once, from whole path components, when
//! the inputs are collected: a folder a user happened to name `before_lr_fix/` is a run like any
//! other (it used to be dropped in silence), `trainwreck capture`'s `snapshot_before/` is history
//! without comment, and any other name read as "before" says so in a warning.

use std::path::Path;
use trainwreck::inputs::phase_of;
use trainwreck::model::{Category, Phase};
use trainwreck::rules::KnowledgeBase;

fn seed_log() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/seed-bus-error/train.log")
}

fn diagnose(paths: &[&Path]) -> trainwreck::report::Report {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let p: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    trainwreck::diagnose(&kb, &p, 1)
}

#[test]
fn a_folder_named_before_something_is_not_a_snapshot() {
    let t = tempfile::tempdir().unwrap();
    let dir = t.path().join("before_lr_fix");
    std::fs::create_dir(&dir).unwrap();
    std::fs::copy(seed_log(), dir.join("train.log")).unwrap();
    // Named as a directory above it, and as the file itself.
    for arg in [t.path().to_path_buf(), dir.join("train.log")] {
        let r = diagnose(&[&arg]);
        let top = r
            .top()
            .unwrap_or_else(|| panic!("{}: diagnosed", arg.display()));
        assert_eq!(top.category, Category::ShmExhausted, "{}", arg.display());
        assert!(
            r.warnings
                .iter()
                .all(|w| !w.message.en.contains("before the run")),
            "{:?}",
            r.warnings
        );
    }
}

#[test]
fn capture_layout_is_certain_other_names_are_said() {
    assert_eq!(phase_of("snapshot_before/df.txt").0, Phase::Before);
    assert!(!phase_of("snapshot_before/df.txt").1.unwrap().1, "certain");
    assert_eq!(phase_of("snapshot_after/df.txt").0, Phase::After);
    assert_eq!(phase_of("node3/before/dmesg.txt").0, Phase::Before);
    assert_eq!(phase_of("dmesg_before.txt").0, Phase::Before);
    assert_eq!(phase_of("nvidia-smi-after.log").0, Phase::After);
    assert!(phase_of("dmesg_before.txt").1.unwrap().1, "a guess");
    for during in [
        "before_lr_fix/train.log",
        "pre_tokenize.log",
        "prefetch/rank0.log",
        "logs/before.log",
        "run-before-fix/console.log",
        "train.log",
    ] {
        assert_eq!(phase_of(during).0, Phase::During, "{during}");
    }
}

#[test]
fn a_guessed_before_folder_is_history_and_the_report_says_why() {
    let t = tempfile::tempdir().unwrap();
    let before = t.path().join("before");
    std::fs::create_dir(&before).unwrap();
    std::fs::copy(seed_log(), before.join("train.log")).unwrap();
    let r = diagnose(&[t.path()]);
    assert!(r.top().is_none(), "{:?}", r.findings);
    let w = r
        .warnings
        .iter()
        .find(|w| w.message.en.contains("before the run"))
        .expect("a warning naming the guess");
    assert!(w.message.en.contains("`before/`"), "{}", w.message.en);
    let input = r
        .inputs
        .iter()
        .find(|i| i.path == "before/train.log")
        .unwrap();
    assert_eq!(input.phase, Phase::Before);
}

#[test]
fn an_old_kernel_event_set_aside_is_named_by_its_line_and_state_snapshots_are_not() {
    // A real run (corpus 10a): the kernel log after the run still holds an OOM kill from
    // before it; `ulimit -a` is the same before and after.
    let run = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/corpus/10a_deepspeed_fp16_loss_scale_collapse/run");
    let r = diagnose(&[&run]);
    let w = r
        .warnings
        .iter()
        .find(|w| w.message.en.contains("before the run started"))
        .expect("the old event is said");
    assert_eq!(
        w.path.as_deref(),
        Some("snapshot_after/dmesg-tail.txt:10"),
        "{w:?}"
    );
    assert!(
        w.message
            .en
            .contains("oom-kill:constraint=CONSTRAINT_MEMCG")
            && w.message
                .en
                .contains("was already at snapshot_before/dmesg-tail.txt:10")
            && w.message
                .en
                .contains("an older event, not counted as evidence")
            && w.message.en.contains("(and 8 more such lines)"),
        "{}",
        w.message.en
    );
    assert!(w.message.zh.contains("更早的事件"), "{}", w.message.zh);
    // The same limits before and after are the run's limits, not history: no warning.
    assert!(
        r.warnings
            .iter()
            .all(|w| !w.path.as_deref().unwrap_or("").contains("ulimit")),
        "{:?}",
        r.warnings
    );
    // The set-aside lines are no evidence.
    for f in &r.findings {
        assert!(
            f.evidence.iter().all(|e| !e.path.contains("dmesg")),
            "{}: {:?}",
            f.rule,
            f.evidence
        );
    }
}
