//! Each log's last sign of life: the last timed line of each rank in the file's last
//! `TAIL_BYTES` (interleaved consoles give one per rank; per-rank files one), skipping the
//! lines a rank prints *because* of the failure, and how the output stops (`ending`, from the
//! same bytes). The analysis reads them in its per-file work; the timeline orders them. Reads
//! only the file's end, never the whole file; decides nothing.

use crate::model::Attribution;
use crate::sources::ending::{self, Ending};
use crate::sources::{detect, prefix};
use std::io::{Read, Seek, SeekFrom};

/// How much of each log's end is read for its last sign of life.
pub(crate) const TAIL_BYTES: u64 = 64 * 1024;

/// At most this many ranks' last lines are kept per file.
const MAX_RANKS: usize = 4096;

/// One rank's last timed line in one file.
#[derive(Debug, Clone, PartialEq)]
pub struct LastLine {
    /// The time as read (normalised by `prefix`).
    pub time: Option<String>,
    pub who: Attribution,
    pub path: String,
    pub text: String,
}

/// Lines a rank prints because of the failure (NCCL/watchdog/dump messages, tracebacks), not
/// as a sign that it was still working.
fn is_chatter(line: &str) -> bool {
    [
        "ProcessGroupNCCL",
        "NCCL",
        "Watchdog",
        "Traceback",
        "Error",
        "flight recorder",
        "Signal",
        "SIG",
    ]
    .iter()
    .any(|w| line.contains(w))
}

/// The last timed line of each rank in the end of the plain-text file at `path` (`display`
/// is its report path). A compressed file or an archive member keeps its end as it streams
/// instead (`Tail`): its end on disk is not text.
pub fn read(
    path: &std::path::Path,
    display: &str,
    out: &mut Vec<LastLine>,
    end: &mut Option<Ending>,
) {
    // A FIFO named on the command line was read once, as a stream: opening it again would
    // wait for a writer that never comes.
    if !std::fs::metadata(path).is_ok_and(|m| m.is_file()) {
        return;
    }
    let Ok(mut f) = std::fs::File::open(path) else {
        return;
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(TAIL_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return;
    }
    let mut buf = Vec::new();
    if f.take(TAIL_BYTES).read_to_end(&mut buf).is_err() || detect::is_gzip(&buf) {
        return;
    }
    // A hole of NULs in the end (the scan skipped it: `holes::SkipHoles`) is no text either.
    if memchr::memmem::find(&buf, &[0u8; crate::sources::holes::MIN_HOLE]).is_some() {
        buf.retain(|&b| b != 0);
    }
    *end = Some(from_tail(&buf, start > 0, display, out));
}

/// The end of a stream read once (an archive member), kept as it goes by: the last
/// `TAIL_BYTES` (and a little more) of it, for its last timed lines without a second read.
#[derive(Default)]
pub struct Tail {
    kept: std::cell::RefCell<(Vec<u8>, u64)>,
}

struct Keep<'t, R> {
    inner: R,
    kept: &'t std::cell::RefCell<(Vec<u8>, u64)>,
}

impl<R: Read> Read for Keep<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        let mut kept = self.kept.borrow_mut();
        let (v, total) = &mut *kept;
        v.extend_from_slice(&buf[..k]);
        *total += k as u64;
        let cap = TAIL_BYTES as usize;
        if v.len() > 2 * cap {
            v.drain(..v.len() - cap);
        }
        Ok(k)
    }
}

impl Tail {
    /// `r`, keeping its end when `on` (a file on disk is read again at its end instead).
    pub fn keep<'t, R: Read + 't>(&'t self, r: R, on: bool) -> Box<dyn Read + 't> {
        if on {
            Box::new(Keep {
                inner: r,
                kept: &self.kept,
            })
        } else {
            Box::new(r)
        }
    }

    /// The last timed line of each rank in what was kept (`display`: the report path).
    pub fn read(&self, display: &str, out: &mut Vec<LastLine>, end: &mut Option<Ending>) {
        let kept = self.kept.borrow();
        let (v, total) = &*kept;
        let from = v.len().saturating_sub(TAIL_BYTES as usize);
        let mid = *total > (v.len() - from) as u64;
        *end = Some(from_tail(&v[from..], mid, display, out));
    }
}

/// The last timed line of each rank in `buf`, the end of a log (`mid`: it begins mid-file),
/// and how its output stops.
fn from_tail(buf: &[u8], mid: bool, display: &str, out: &mut Vec<LastLine>) -> Ending {
    let start = u64::from(mid);
    let text = String::from_utf8_lossy(buf);
    let base = prefix::from_path(display);
    let mut seen: Vec<(Option<u32>, Option<u32>)> = Vec::new();
    // Skip a partial first line when the read began mid-file.
    let body = if start > 0 {
        text.split_once('\n').map_or("", |x| x.1)
    } else {
        &text
    };
    for line in body.lines().rev() {
        if is_chatter(line) {
            continue;
        }
        let (mut a, _) = prefix::peel(line);
        if a.time.is_none() {
            continue;
        }
        a.rank = a.rank.or(base.rank);
        a.local_rank = a.local_rank.or(base.local_rank);
        a.host = a.host.or_else(|| base.host.clone());
        let key = (a.rank, a.local_rank);
        if seen.contains(&key) {
            continue;
        }
        seen.push(key);
        out.push(LastLine {
            time: a.time.clone(),
            who: a,
            path: display.to_string(),
            text: line.trim().chars().take(300).collect(),
        });
        if seen.len() > MAX_RANKS {
            break;
        }
    }
    ending::read(body.lines().rev())
}
