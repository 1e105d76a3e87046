//! Overhead of `trainwreck run`: CPU time of the wrapper (this process: the watch loop, the
//! samplers, the output pumps) per second of run, measured with getrusage(RUSAGE_SELF) around
//! `capture::run` of an idle and a busy child. The child's own CPU is not counted.
//! Run: `scripts/bench_run_overhead.sh` (or `cargo bench --bench run_overhead`).

use std::ffi::OsString;
use std::time::{Duration, Instant};
use trainwreck::capture::{self, RunOptions, SnapshotOptions};

fn cpu_self() -> Duration {
    // SAFETY: getrusage fills a struct we own.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

fn measure(label: &str, cmd: &[&str], interval_ms: u64) {
    let dir = std::env::temp_dir().join(format!("tw-bench-{}", std::process::id()));
    let mut o = RunOptions::new(cmd.iter().map(OsString::from).collect(), dir.clone());
    o.interval = Duration::from_millis(interval_ms);
    o.snapshots = false;
    o.echo = false;
    let (c0, t0) = (cpu_self(), Instant::now());
    let out = capture::run(o).expect("run");
    let (cpu, wall) = (cpu_self() - c0, t0.elapsed());
    println!(
        "{label}: interval {interval_ms} ms, {:.1} s run, {} samples: wrapper CPU {:.2} ms per second of run ({:.3}% of one core)",
        wall.as_secs_f64(),
        out.peaks.samples,
        cpu.as_secs_f64() * 1000.0 / wall.as_secs_f64(),
        cpu.as_secs_f64() * 100.0 / wall.as_secs_f64(),
    );
    let _ = std::fs::remove_dir_all(dir);
}

fn main() {
    // `cargo bench` passes `--bench`; nothing to parse.
    let secs: u64 = std::env::var("TW_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(10);
    let s = secs.to_string();
    measure("idle child (sleep)", &["sleep", &s], 100);
    let busy = format!("timeout {secs} sh -c 'while :; do :; done'; true");
    measure("busy child (shell loop)", &["sh", "-c", &busy], 100);
    let chatty = format!(
        "end=$(($(date +%s)+{secs})); while [ $(date +%s) -lt $end ]; do i=0; while [ $i -lt 200 ]; do echo \"step $i loss 0.1234 lr 3e-4 |=====     | 50%\"; i=$((i+1)); done; sleep 0.1; done"
    );
    measure("chatty child (~2000 lines/s)", &["sh", "-c", &chatty], 100);

    // One-time cost of a snapshot (runs once before and once after a run).
    let dir = std::env::temp_dir().join(format!("tw-bench-snap-{}", std::process::id()));
    let (c0, t0) = (cpu_self(), Instant::now());
    let m = capture::snapshot(&dir, &SnapshotOptions::default()).expect("snapshot");
    println!(
        "snapshot (with versions probe): {:.2} s wall, {:.1} ms wrapper CPU, {} files",
        t0.elapsed().as_secs_f64(),
        (cpu_self() - c0).as_secs_f64() * 1000.0,
        m.files.len()
    );
    let _ = std::fs::remove_dir_all(dir);
}
