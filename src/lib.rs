//! trainwreck: reads what a failed ML training run left behind and says why it died.
//!
//! Data flows one way: `inputs` (collect files, decide each one's phase) → `sources` (open,
//! decompress, detect the kind, read lines, parse facts and typed events) → `analyze` (one
//! pass per file: the `scan` scanner serving its watchers — rule signatures, launcher/NCCL
//! lines, the error tail) → `correlate` (findings, ranking, cascades over the `timeline`, the
//! verdict and fingerprint: a `Diagnosis`) → `report` (the only module that formats output).
//! `rules` is the knowledge base as data (loading, templates, derived values); `kbtest`
//! checks its examples through the production scanner. The `use` graph has no cycles.

pub mod analyze;
pub mod capture;
pub mod cli;
pub mod correlate;
pub(crate) mod diff;
pub(crate) mod errtail;
pub(crate) mod fact_names;
pub mod facts;
pub mod history;
pub mod inputs;
pub mod kbtest;
pub mod limits;
pub mod model;
pub(crate) mod notify;
pub(crate) mod prepared;
pub mod redact;
pub mod report;
pub mod rules;
pub mod scan;
pub mod sources;
#[cfg(test)]
mod testrand;
pub(crate) mod timeline;
pub mod tokens;
pub mod triage;

/// The whole pipeline on the user's paths: collect, read, correlate, assemble the report.
pub fn diagnose(kb: &rules::KnowledgeBase, paths: &[String], threads: usize) -> report::Report {
    diagnose_with(&analyze::Engine::new(kb), paths, threads)
}

/// [`diagnose`] with an engine already compiled (many runs, one engine per worker).
pub fn diagnose_with(engine: &analyze::Engine, paths: &[String], threads: usize) -> report::Report {
    diagnose_with_progress(engine, paths, threads, &analyze::Progress::default())
}

/// As [`diagnose_with`], updating `progress` while the inputs are read.
pub fn diagnose_with_progress(
    engine: &analyze::Engine,
    paths: &[String],
    threads: usize,
    progress: &analyze::Progress,
) -> report::Report {
    let kb = engine.kb;
    let (inputs, mut warnings) = inputs::collect_with(paths, engine.follow_links);
    let mut a = engine.run_with_progress(&inputs, threads, progress);
    warnings.append(&mut a.warnings);
    a.warnings = warnings;
    let d = correlate::correlate(kb, &a);
    report::build(a, d)
}
