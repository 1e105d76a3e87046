//! Any bytes as an archive handed to `analyze`, through the production path: the archive is
//! recognised by its magic (tar, zip, either inside gzip/zstd/xz), walked member by member
//! under the member, ratio and total caps (sparse tar holes, zip central directories that lie
//! about sizes or overlap, zips inside zips), and each member analysed. The first byte picks
//! the file name (some readers look at the extension only for what magic leaves open). Must
//! never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;
use trainwreck::analyze::Engine;
use trainwreck::rules::KnowledgeBase;

const NAMES: &[&str] = &["run.tar", "run.zip", "run.tar.gz", "logs.tgz", "run.tar.zst", "run"];

static KB: LazyLock<KnowledgeBase> =
    LazyLock::new(|| KnowledgeBase::load(&[]).expect("built-in rules load"));
/// Compiled once, as `triage` does for many runs (see `source_open`).
static ENGINE: LazyLock<Engine<'static>> = LazyLock::new(|| Engine::new(&KB));

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("tw-fuzz-archive-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(NAMES[pick as usize % NAMES.len()]);
    if std::fs::write(&path, body).is_err() {
        return;
    }
    let r = trainwreck::diagnose_with(&ENGINE, &[path.display().to_string()], 1);
    let _ = r.to_json();
    let _ = std::fs::remove_file(&path);
});
