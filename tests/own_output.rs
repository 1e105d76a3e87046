//! A run folder often holds, beside its logs, what was said about it: trainwreck's own saved
//! report (JSON, Markdown, JUnit, the terminal table) and people's notes (`README.md`,
//! `label.json`, `GROUND_TRUTH.md`), all quoting error lines. Those are listed as inputs with
//! their kind and never cited as evidence: the diagnosis comes from the log alone.

use trainwreck::model::Category;
use trainwreck::rules::KnowledgeBase;

const LOG: &str = "step 40 loss 2.113\n\
[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.19 GiB of which 1.10 GiB is free.\n";

/// An older incident on the same machine, whose report was saved in the folder.
const XID: &str = "[Sun Nov 29 18:54:18 2026] NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=python, GPU has fallen off the bus.\n";

#[test]
fn saved_reports_and_notes_are_listed_but_never_evidence() {
    let kb = KnowledgeBase::load(&[]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let old = dir.path().join("old");
    std::fs::create_dir(&old).unwrap();
    std::fs::write(old.join("dmesg.txt"), XID).unwrap();
    let saved = trainwreck::diagnose(&kb, &[old.display().to_string()], 1);
    assert_eq!(
        saved.top().map(|f| f.category),
        Some(Category::GpuHardwareXid),
        "the saved report must quote an Xid for this test to mean anything"
    );

    let run = dir.path().join("run");
    std::fs::create_dir(&run).unwrap();
    std::fs::write(run.join("console.log"), LOG).unwrap();
    std::fs::write(run.join("trainwreck.json"), saved.to_json()).unwrap();
    std::fs::write(
        run.join("summary.md"),
        trainwreck::report::markdown::render(&saved),
    )
    .unwrap();
    std::fs::write(
        run.join("results.xml"),
        trainwreck::report::junit::render(&saved),
    )
    .unwrap();
    std::fs::write(
        run.join("README.md"),
        format!("# Run 17\n\nIt died; last week's trace was:\n\n```\n{XID}```\n\nand also `Bus error`.\n"),
    )
    .unwrap();
    std::fs::write(
        run.join("label.json"),
        r#"{"category": "gpu_hardware_xid", "accept": ["gpu_hardware_xid"], "note": "NVRM: Xid 79, GPU has fallen off the bus"}"#,
    )
    .unwrap();

    let r = trainwreck::diagnose(&kb, &[run.display().to_string()], 1);
    assert_eq!(r.top().map(|f| f.category), Some(Category::GpuOom));
    for f in &r.findings {
        assert_ne!(f.category, Category::GpuHardwareXid, "{f:?}");
        for e in &f.evidence {
            assert_eq!(e.path, "console.log", "cited: {e:?}");
        }
    }
    for e in &r.last_errors {
        assert_eq!(e.path, "console.log", "{e:?}");
    }
    let kind = |name: &str| {
        r.inputs
            .iter()
            .find(|i| i.path == name)
            .map(|i| i.kind.as_str())
            .unwrap_or_else(|| panic!("{name} not listed in {:?}", r.inputs))
    };
    assert_eq!(kind("trainwreck.json"), "trainwreck-report");
    assert_eq!(kind("summary.md"), "trainwreck-report");
    assert_eq!(kind("results.xml"), "trainwreck-report");
    assert_eq!(kind("README.md"), "notes");
    assert_eq!(kind("label.json"), "notes");
    assert_eq!(kind("console.log"), "torch-log");
}
