//! Cores through the whole analysis: a directory holding only a real core of a process that
//! died of SIGBUS in a /dev/shm mapping is diagnosed as shm_exhausted, citing the fault
//! address and the mapping, with the crashing stack in the report; the other real crash
//! kinds are named by their own rules. (The cores were produced by really crashing
//! tests/core_helpers/crash.c; fixtures/cores/README.md says how.)

use trainwreck::rules::KnowledgeBase;

fn only(core: &str) -> trainwreck::report::Report {
    let d = tempfile::tempdir().unwrap();
    let src = format!("{}/fixtures/cores/{core}", env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(&src, d.path().join(core)).unwrap();
    let kb = KnowledgeBase::load(&[]).unwrap();
    trainwreck::diagnose(&kb, &[d.path().display().to_string()], 1)
}

#[test]
fn sigbus_core_in_dev_shm_alone_names_shared_memory() {
    let r = only("bus-dyn.core.gz");
    let top = r.top().expect("diagnosed from the core alone");
    assert_eq!(top.category, "shm_exhausted");
    let core = &r.cores[0].summary;
    let addr = core.fault_addr.clone().unwrap();
    let mapping = core.fault_mapping.clone().unwrap();
    assert!(mapping.starts_with("/dev/shm/"), "{mapping}");
    assert!(
        top.evidence.iter().any(|e| e
            .why
            .as_deref()
            .is_some_and(|w| w.contains(&addr) && w.contains(&mapping))),
        "evidence cites the fault address and mapping: {:?}",
        top.evidence
    );
    assert!(core.frames.len() >= 3, "a stack: {:?}", core.frames);
    assert!(core.frames.iter().any(|f| {
        f.symbol
            .as_deref()
            .is_some_and(|s| s.starts_with("crash_bus"))
    }));
    let text = trainwreck::report::terminal::render(
        &r,
        &trainwreck::report::terminal::Style { color: false },
    );
    assert!(
        text.contains("Core dump") && text.contains("BUS_ADRERR"),
        "{text}"
    );
}

#[test]
fn sigsegv_core_is_a_native_crash() {
    let r = only("segv-static.core.gz");
    assert_eq!(r.top().unwrap().category, "segfault_native");
    assert_eq!(r.cores[0].summary.code.as_deref(), Some("SEGV_MAPERR"));
}

#[test]
fn abort_core_is_named_but_not_overclaimed() {
    let r = only("abort-static.core.gz");
    let top = r.top().unwrap();
    assert_eq!(top.category, "segfault_native");
    assert!(
        top.confidence < 0.6,
        "an abort alone is a weak story: {}",
        top.confidence
    );
}
