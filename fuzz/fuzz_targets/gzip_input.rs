//! Any bytes as a `.gz` log, through the production opener (gzip detection, the multi-member
//! decoder, the decompression caps, then the line reader and scanner). Must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;
use trainwreck::analyze::Engine;
use trainwreck::rules::KnowledgeBase;

static KB: LazyLock<KnowledgeBase> =
    LazyLock::new(|| KnowledgeBase::load(&[]).expect("built-in rules load"));
/// Compiled once, as `triage` does for many runs: building the scanner per input would make
/// its ~30 ms, not the parsers, what the fuzzer spends its time on.
static ENGINE: LazyLock<Engine<'static>> = LazyLock::new(|| Engine::new(&KB));

fuzz_target!(|data: &[u8]| {
    let dir = std::env::temp_dir().join(format!("tw-fuzz-gz-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("train.log.gz");
    if std::fs::write(&path, data).is_err() {
        return;
    }
    let _ = trainwreck::diagnose_with(&ENGINE, &[path.display().to_string()], 1);
    let _ = std::fs::remove_file(&path);
});
