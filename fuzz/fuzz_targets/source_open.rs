//! Any bytes as any text source kind, through the production path: the first byte picks the
//! file name the kind is detected from, the rest is written to a file that the real analysis
//! (`sources::open`, the line reader, the fact parser of that kind, the scanner, the
//! correlation) reads. Must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::sync::LazyLock;
use trainwreck::analyze::Engine;
use trainwreck::rules::KnowledgeBase;

/// One name per text source kind (and a few that content sniffing decides).
const NAMES: &[&str] = &[
    "console.log",
    "rank0.log",
    "dmesg.txt",
    "kern.log",
    "nvidia-smi.txt",
    "nvidia-smi-q.txt",
    "nvidia-smi-query-gpu.csv",
    "memory.events",
    "memory.max",
    "memory.stat",
    "df-h_dev_shm.txt",
    "meminfo.txt",
    "ulimit-a.txt",
    "error.json",
    "pod-describe.txt",
    "slurm-1234.out",
    "environment.txt",
    "docker-inspect.json",
    "versions.txt",
    "samples.csv",
    "manifest.json",
    "gdb-bt.txt",
    "notes.md",
    "unknown.bin",
];

static KB: LazyLock<KnowledgeBase> =
    LazyLock::new(|| KnowledgeBase::load(&[]).expect("built-in rules load"));
/// Compiled once, as `triage` does for many runs: building the scanner per input would make
/// its ~30 ms, not the parsers, what the fuzzer spends its time on.
static ENGINE: LazyLock<Engine<'static>> = LazyLock::new(|| Engine::new(&KB));

fuzz_target!(|data: &[u8]| {
    let Some((&pick, body)) = data.split_first() else {
        return;
    };
    let dir = std::env::temp_dir().join(format!("tw-fuzz-open-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join(NAMES[pick as usize % NAMES.len()]);
    if std::fs::write(&path, body).is_err() {
        return;
    }
    let r = trainwreck::diagnose_with(&ENGINE, &[path.display().to_string()], 1);
    let _ = r.to_json();
    let _ = std::fs::remove_file(&path);
});
