//! The progress line on stderr for long analyses: files done, bytes read, rate. Drawn only
//! when stderr is a terminal (the caller checks) and only once an analysis has run for a
//! moment, so short runs print nothing. The analysis itself only bumps counters.

use crate::analyze::Progress;
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Redraw the line every 200 ms until `done`; then erase it. Only `\r` and spaces: no escape
/// sequence, so a `TERM=dumb` terminal, `NO_COLOR` or `--color never` never receive one.
pub fn show(p: &Progress, done: &AtomicBool) {
    let t0 = Instant::now();
    let mut width: usize = 0;
    while !done.load(Ordering::Relaxed) {
        std::thread::sleep(Duration::from_millis(50));
        let el = t0.elapsed();
        if el < Duration::from_millis(500) || !(el.as_millis() / 50).is_multiple_of(4) {
            continue;
        }
        let text = line(p, el.as_secs_f64());
        let n = text.chars().count();
        eprint!("\r{text}{:pad$}", "", pad = width.saturating_sub(n));
        let _ = std::io::stderr().flush();
        width = width.max(n);
    }
    if width > 0 {
        eprint!("\r{:width$}\r", "");
    }
}

/// `12/80 files · 1.2/4.0 GB · 1.9 GB/s`. Bytes are the inputs' bytes as stored (a compressed
/// input's compressed bytes), the unit of their sizes; when a stream of unknown size (stdin,
/// a FIFO) has taken the count past the known total, only what was read is shown.
pub fn line(p: &Progress, secs: f64) -> String {
    let gb = |b: u64| b as f64 / 1e9;
    let done = p.bytes_done.load(Ordering::Relaxed);
    let total = p.bytes_total.load(Ordering::Relaxed);
    let bytes = if done > total {
        format!("{:.2} GB read", gb(done))
    } else {
        format!("{:.2}/{:.2} GB", gb(done), gb(total))
    };
    format!(
        "{}/{} files · {bytes} · {:.2} GB/s",
        p.files_done.load(Ordering::Relaxed),
        p.files_total.load(Ordering::Relaxed),
        if secs > 0.0 { gb(done) / secs } else { 0.0 }
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_line() {
        let p = Progress::default();
        p.files_total.store(80, Ordering::Relaxed);
        p.files_done.store(12, Ordering::Relaxed);
        p.bytes_total.store(4_000_000_000, Ordering::Relaxed);
        p.bytes_done.store(1_200_000_000, Ordering::Relaxed);
        assert_eq!(line(&p, 2.0), "12/80 files · 1.20/4.00 GB · 0.60 GB/s");
    }

    #[test]
    fn a_stream_of_unknown_size_past_the_known_total_shows_bytes_read_only() {
        let p = Progress::default();
        p.files_total.store(1, Ordering::Relaxed);
        p.bytes_total.store(0, Ordering::Relaxed);
        p.bytes_done.store(3_000_000_000, Ordering::Relaxed);
        assert_eq!(line(&p, 2.0), "0/1 files · 3.00 GB read · 1.50 GB/s");
    }
}
