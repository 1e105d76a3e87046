//! The inner scanner on log-like text: 10 signatures vs 150, and 150 where many use `\b`
//! or `(?i)`; and the real knowledge base, whole vs its first 10 signatures. Throughput
//! must not fall off a cliff as rules are added (README, Performance).
//!
//! `cargo bench --bench scan` (synthetic text), or with `TW_BENCH_TEXT=FILE` to scan the
//! first 64 MiB of a real or `gen_logs.py` log instead.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use trainwreck::scan::{PatternSpec, ScanScratch, Scanner};

/// `TW_BENCH_TEXT`'s first 64 MiB (cut at a line end), or the synthetic corpus.
fn text() -> Vec<u8> {
    let Some(path) = std::env::var_os("TW_BENCH_TEXT") else {
        return corpus();
    };
    let mut buf = Vec::new();
    use std::io::Read;
    std::fs::File::open(&path)
        .and_then(|f| f.take(64 << 20).read_to_end(&mut buf))
        .expect("TW_BENCH_TEXT must be a readable file");
    let end = memchr::memrchr(b'\n', &buf).map_or(buf.len(), |i| i + 1);
    buf.truncate(end);
    buf
}

/// The built-in knowledge base's signatures (the first `n`, or all) plus the launcher/NCCL
/// line shapes the analysis scans with them.
fn kb_patterns(n: Option<usize>) -> Vec<String> {
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).expect("built-in rules load");
    let sigs = kb
        .sig_of
        .iter()
        .map(|&(r, s)| kb.rules[r].signatures[s].source.clone());
    match n {
        Some(n) => sigs.take(n).collect(),
        None => sigs
            .chain(
                trainwreck::sources::launcher::LINES
                    .iter()
                    .map(|(_, p)| p.to_string()),
            )
            .collect(),
    }
}

/// ~8 MB of training-log-like lines (tqdm bars, NCCL INFO, trainer metrics), no hits.
fn corpus() -> Vec<u8> {
    let mut s = String::new();
    let mut i = 0u64;
    while s.len() < 8 << 20 {
        i += 1;
        match i % 4 {
            0 => s.push_str(&format!(
                "[rank{}]: node-03:2381:2419 [1] NCCL INFO AllReduce: opCount {i:x} sendbuff 0x7f count 1024 datatype 7 op 0 root 0 comm 0x55 [nranks=64] stream 0x56\n",
                i % 64
            )),
            1 => s.push_str(&format!(
                "{{'loss': {}.{:04}, 'grad_norm': 1.23, 'learning_rate': 2e-05, 'epoch': 0.{i}}}\n",
                i % 3,
                i % 9999
            )),
            2 => s.push_str(&format!(
                " {}%|███▍      | {i}/20000 [01:02<10:00,  3.10s/it]\r 35%|███▌      | {i}/20000 [01:05<09:57,  3.10s/it]\n",
                i % 100
            )),
            _ => s.push_str(&format!(
                "[2024-05-14 03:12:45,123] [INFO] [logging.py:96:log_dist] [Rank 0] step={i}, skipped=0, lr=[2e-05], mom=[(0.9, 0.999)]\n"
            )),
        }
    }
    s.into_bytes()
}

/// Signatures with varied leading words (like a real knowledge base), none matching.
fn signatures(n: usize, style: &str) -> Vec<String> {
    const W: &[&str] = &[
        "Segfault",
        "Xid",
        "watchdog",
        "posix_fallocate",
        "CUBLAS",
        "oom-killer",
        "Traceback",
        "NVRM",
        "cudaError",
        "SIGBUS",
        "ChildFailedError",
        "Heartbeat",
        "ncclSystemError",
        "hung_task",
        "EFA",
        "ibv_poll",
        "zero_grad",
    ];
    (0..n)
        .map(|i| {
            let w = W[i % W.len()];
            match style {
                "plain" => format!(r"{w} condition {i:03} detected: code \d+"),
                "word" => format!(r"\b{w} condition {i:03}\b detected: \w+ code \d+\b"),
                _ => format!(r"(?i){w} condition {i:03} detected: code \d+"),
            }
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let text = text();
    let mut g = c.benchmark_group("scan");
    g.throughput(Throughput::Bytes(text.len() as u64));
    g.sample_size(10);
    let only = std::env::var("TW_BENCH_ONLY").ok();
    for (name, n, style) in [
        ("10-plain", 10, "plain"),
        ("150-plain", 150, "plain"),
        ("150-word-boundary", 150, "word"),
        ("150-case-insensitive", 150, "ci"),
        ("kb-10", 10, "kb"),
        ("kb-full", 0, "kb"),
    ] {
        if only.as_deref().is_some_and(|o| !name.starts_with(o)) {
            continue;
        }
        let srcs = match style {
            "kb" => kb_patterns((n > 0).then_some(n)),
            _ => signatures(n, style),
        };
        let specs: Vec<PatternSpec> = srcs
            .iter()
            .enumerate()
            .map(|(id, r)| PatternSpec::new(id, r))
            .collect();
        let scanner = Scanner::new(&specs).expect("bench patterns compile");
        let mut scratch = ScanScratch::default();
        g.bench_function(name, |b| {
            b.iter(|| {
                let mut n = 0usize;
                for chunk in text.chunks(1 << 20) {
                    scanner.scan_chunk(chunk, 1, &mut scratch, |_, _| n += 1);
                }
                n
            })
        });
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
