//! Scale of the failure history (issue 18, point 6): generate a synthetic history of
//! TW_BENCH_RUNS runs (default 1,000,000) in SQLite, then time `history list`, `hosts`, `gpus`,
//! a seen-before lookup and the cost recording adds to an analysis. A benchmark, not a timed
//! test: `cargo bench --bench history_scale` (TW_BENCH_DB=path keeps and reuses the file).

use std::time::{Duration, Instant};
use trainwreck::history::record::{RecordGpu, RecordOrigin};
use trainwreck::history::stats::Unit;
use trainwreck::history::{Location, RecordContext, RunRecord, Store};

const HOSTS: u64 = 2000;
const FINGERPRINTS: u64 = 300;

fn synthetic(i: u64, at: i64, seed: &mut u64) -> RunRecord {
    let mut rand = || {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    };
    let host = format!("node{:04}", rand() % HOSTS);
    let gpu0 = rand() % 8;
    let gpus: Vec<RecordGpu> = [gpu0, (gpu0 + 1) % 8]
        .iter()
        .map(|g| RecordGpu {
            uuid: format!("GPU-{host}-{g}"),
            host: Some(host.clone()),
        })
        .collect();
    let r = rand() % 100;
    let (verdict, action) = match r {
        0..=1 => ("diagnosed", "replace-hardware"),
        2 => ("unknown_failure", "investigate"),
        3..=30 => ("diagnosed", "fix-config"),
        31..=45 => ("diagnosed", "fix-code"),
        _ => ("no_failure", "none"),
    };
    // A skewed fingerprint distribution: a few common failures, a long tail.
    let fp = (rand() % FINGERPRINTS).min(rand() % FINGERPRINTS);
    RunRecord {
        run_id: format!("bench-{i}"),
        failed_at: Some(
            trainwreck::history::utc(at)
                .trim_end_matches('Z')
                .to_string(),
        ),
        recorded_at: at,
        job: Some(format!("job-{i}")),
        verdict: verdict.into(),
        fingerprint: (verdict != "no_failure").then(|| format!("fp1:{fp:016x}")),
        category: (verdict != "no_failure").then(|| "other".to_string()),
        action: action.into(),
        confidence: Some(0.9),
        rule: Some("bench-rule".into()),
        title: Some("synthetic failure".into()),
        origin: RecordOrigin {
            host: Some(host.clone()),
            gpu_uuid: (action == "replace-hardware").then(|| gpus[0].uuid.clone()),
            ..Default::default()
        },
        hosts: vec![host],
        gpus,
        versions: Default::default(),
        report: serde_json::json!({}),
        inputs: Vec::new(),
    }
}

fn time<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let t = Instant::now();
    let v = f();
    println!("{what:<44} {:>9.1} ms", t.elapsed().as_secs_f64() * 1e3);
    v
}

fn median(mut v: Vec<Duration>) -> f64 {
    v.sort();
    v[v.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let n: u64 = std::env::var("TW_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let tmp = tempfile::tempdir().expect("temp dir");
    let path = std::env::var("TW_BENCH_DB")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|_| tmp.path().join("history.db"));
    let loc = Location::Sqlite(path.clone());
    let mut store = Store::open(&loc).expect("open the history");
    let have = store.run_count().expect("count");
    let now = trainwreck::history::now();
    if have < n {
        time(&format!("generate {} synthetic runs", n - have), || {
            let mut seed = 0x9e37_79b9_7f4a_7c15u64 ^ have;
            let mut batch = Vec::with_capacity(5000);
            for i in have..n {
                let at = now - ((n - i) * 30) as i64;
                batch.push(synthetic(i, at, &mut seed));
                if batch.len() == 5000 {
                    store.record_many(&batch).expect("record");
                    batch.clear();
                }
            }
            store.record_many(&batch).expect("record");
        });
    }
    let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "history: {} runs, {} MiB at {}",
        store.run_count().unwrap_or(0),
        size >> 20,
        path.display()
    );
    let list = time("history list (all time, top 20)", || {
        store.list(None, None, 20).expect("list")
    });
    time("history list --since 7d", || {
        store.list(Some(now - 7 * 86_400), None, 20).expect("list")
    });
    let hosts = time("history hosts (all time)", || {
        store.fleet(Unit::Host, None, 0.01).expect("hosts")
    });
    time("history hosts --since 7d", || {
        store
            .fleet(Unit::Host, Some(now - 7 * 86_400), 0.01)
            .expect("hosts")
    });
    time("history gpus (all time)", || {
        store.fleet(Unit::Gpu, None, 0.01).expect("gpus")
    });
    let top = list
        .first()
        .map(|e| e.fingerprint.clone())
        .unwrap_or_default();
    let seen = time("seen-before of the commonest fingerprint", || {
        store.seen(&top, None, 10).expect("seen")
    });
    println!(
        "  ({} fingerprints listed, top seen {} times on {} hosts; {} hosts, {} suspects)",
        list.len(),
        seen.count,
        seen.hosts.len(),
        hosts.units.len(),
        hosts.suspects.len()
    );

    // What recording adds to one analysis: open the history, record, look up seen-before.
    let kb = trainwreck::rules::KnowledgeBase::load(&[]).expect("rules");
    let seed_dir = "fixtures/seed-bus-error".to_string();
    let mut analysis = Vec::new();
    let mut recording = Vec::new();
    for i in 0..21 {
        let t = Instant::now();
        let mut r = trainwreck::diagnose(&kb, std::slice::from_ref(&seed_dir), 1);
        analysis.push(t.elapsed());
        let t = Instant::now();
        let ctx = RecordContext {
            paths: vec![seed_dir.clone()],
            job: Some(format!("bench-record-{i}")),
            ..Default::default()
        };
        trainwreck::history::command::attach(&mut r, Some(&path.display().to_string()), Some(&ctx))
            .expect("record");
        recording.push(t.elapsed());
        assert!(r.history.is_some());
    }
    println!(
        "analysis of the seed example (median of 21)  {:>9.2} ms",
        median(analysis)
    );
    println!(
        "open + record + seen-before (median of 21)   {:>9.2} ms",
        median(recording)
    );
}
