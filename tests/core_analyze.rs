//! Cores through the whole analysis: a directory holding only a real core of a process that
//! died of SIGBUS in a /dev/shm mapping is diagnosed as shm_exhausted, citing the fault
//! address and the mapping, with the crashing stack in the report; the other real crash
//! kinds are named by their own rules. The committed cores (fixtures/cores/, made by really
//! crashing tests/core_helpers/crash.c) are asserted only on what the core itself holds: the
//! executable they name is not on this machine. Symbols are checked on a core made at test time
//! from a freshly built helper (`core_helpers`).

mod core_helpers;

use std::path::Path;
use trainwreck::model::Category;
use trainwreck::rules::KnowledgeBase;

fn only(core: &str) -> trainwreck::report::Report {
    let d = tempfile::tempdir().unwrap();
    let src = format!("{}/fixtures/cores/{core}", env!("CARGO_MANIFEST_DIR"));
    std::fs::copy(&src, d.path().join(core)).unwrap();
    diagnose_dir(d.path())
}

fn diagnose_dir(dir: &Path) -> trainwreck::report::Report {
    let kb = KnowledgeBase::load(&[]).unwrap();
    trainwreck::diagnose(&kb, &[dir.display().to_string()], 1)
}

#[test]
fn sigbus_core_in_dev_shm_alone_names_shared_memory() {
    let r = only("bus-dyn.core.gz");
    let top = r.top().expect("diagnosed from the core alone");
    assert_eq!(top.category, Category::ShmExhausted);
    let core = &r.cores[0].summary;
    let addr = core.fault_addr.clone().unwrap();
    let mapping = core.fault_mapping.clone().unwrap();
    assert!(mapping.starts_with("/dev/shm/"), "{mapping}");
    assert!(
        top.evidence.iter().any(|e| e
            .why
            .as_ref()
            .map(|t| t.en.as_str())
            .is_some_and(|w| w.contains(&addr) && w.contains(&mapping))),
        "evidence cites the fault address and mapping: {:?}",
        top.evidence
    );
    assert!(core.frames.len() >= 3, "a stack: {:?}", core.frames);
    // What the core holds: the crashing pc lies in the executable it names, at an offset.
    assert_eq!(core.exe.as_deref(), Some("/tmp/trainwreck-crash-dyn"));
    assert_eq!(core.frames[0].how, "pc");
    assert_eq!(core.frames[0].module, core.exe);
    assert!(core.frames[0].offset.is_some(), "{:?}", core.frames[0]);
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
fn sigbus_core_made_now_is_diagnosed_with_its_symbols() {
    let shm = format!("/dev/shm/trainwreck-test-analyze-{}", std::process::id());
    let core = core_helpers::crash_core("bus", &[&shm]);
    let _ = std::fs::remove_file(&shm);
    let r = diagnose_dir(core.parent().unwrap());
    let top = r.top().expect("diagnosed from the core alone");
    assert_eq!(top.category, Category::ShmExhausted);
    let summary = &r.cores[0].summary;
    assert_eq!(summary.fault_mapping.as_deref(), Some(shm.as_str()));
    let helper = core_helpers::helper().display().to_string();
    assert_eq!(summary.exe.as_deref(), Some(helper.as_str()));
    let syms: Vec<&str> = summary
        .frames
        .iter()
        .filter_map(|f| f.symbol.as_deref())
        .collect();
    for want in ["touch+", "crash_bus+", "main+"] {
        assert!(
            syms.iter().any(|s| s.starts_with(want)),
            "{want} in {syms:?}"
        );
    }
    let text = trainwreck::report::terminal::render(
        &r,
        &trainwreck::report::terminal::Style { color: false },
    );
    assert!(text.contains("crash_bus+"), "the stack is shown: {text}");
    let _ = std::fs::remove_dir_all(core.parent().unwrap());
}

#[test]
fn sigsegv_core_is_a_native_crash() {
    let r = only("segv-static.core.gz");
    assert_eq!(r.top().unwrap().category, Category::SegfaultNative);
    assert_eq!(r.cores[0].summary.code.as_deref(), Some("SEGV_MAPERR"));
}

#[test]
fn abort_core_is_named_but_not_overclaimed() {
    let r = only("abort-static.core.gz");
    let top = r.top().unwrap();
    assert_eq!(top.category, Category::SegfaultNative);
    assert!(
        top.strength < 0.6,
        "an abort alone is weak evidence: {}",
        top.strength
    );
}

#[test]
fn a_zstd_core_is_diagnosed_like_its_gzip_original() {
    use std::io::Read;
    let src = format!(
        "{}/fixtures/cores/bus-dyn.core.gz",
        env!("CARGO_MANIFEST_DIR")
    );
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&src).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    let d = tempfile::tempdir().unwrap();
    let zst = zstd::stream::encode_all(&raw[..], 3).unwrap();
    std::fs::write(d.path().join("core.1234.zst"), zst).unwrap();
    let from_zst = diagnose_dir(d.path());
    let from_gz = only("bus-dyn.core.gz");
    assert_eq!(
        from_zst.top().map(|f| f.category),
        Some(Category::ShmExhausted)
    );
    assert_eq!(from_zst.cores.len(), 1, "{:?}", from_zst.warnings);
    assert_eq!(from_zst.cores[0].summary, from_gz.cores[0].summary);
    assert_eq!(from_zst.fingerprint, from_gz.fingerprint);
}
