//! The per-rank timeline: every rule hit, watchdog/teardown mark and each file's last timed
//! line, with its time resolved to one clock (glog and syslog get their year from a dated
//! line in the same inputs; raw dmesg is aligned when one kernel line is seen both raw and
//! with `-T`). Data only: it decides nothing about causes (that is `correlate::cascade`)
//! and prints nothing (that is `report::terminal`).
//!
//! Clock skew between hosts is not corrected: the corpus has no multi-host capture. The
//! method, when there is one: take an event every rank logs within milliseconds of one
//! store write (the flight-recorder "dump signal … via TCPStore", the abort fan-out) and use
//! the median per-host difference as that host's offset.

use crate::analyze::Analysis;
use crate::model::{Attribution, SourceKind};
use crate::sources::prefix;
use regex::Regex;
use std::io::{Read, Seek, SeekFrom};
use std::sync::OnceLock;

/// How much of each log's end is read for its last sign of life.
pub const TAIL_BYTES: u64 = 64 * 1024;

/// Scanner patterns for lines the cascade logic reads (after the launcher patterns in the
/// same single pass). Each holds a rare literal.
pub static PATTERNS: &[&str] = &[
    r"WorkNCCL\(SeqNum=\d+, OpType=\w+",
    r"[Ll]ast enqueued (?:NCCL )?work: -?\d+, last completed (?:NCCL )?work: -?\d+",
    r"CollectiveFingerPrint\(SequenceNumber=\d+, OpType=\w+",
    r"Sending process \d+ closing signal SIG[A-Z]+",
    r"Killing subprocess \d+",
    r"rank\s*: \d+ \(local_rank: \d+\)",
    r"exitcode\s*: -?\d+ \(pid: \d+\)",
    r"failed \(exitcode: -?\d+\) local_rank: \d+ \(pid: \d+\)",
    r"^\s*host\s*: [\w.-]+\s*$",
];

/// What an event is, as far as the cascade logic cares.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// The last timed line of a file for this rank: its last sign of life.
    LastLine,
    /// A rule hit: the rule's name and category, and whether the rule is a symptom.
    Hit {
        rule: String,
        category: crate::model::Category,
        symptom: bool,
    },
    /// `Watchdog caught collective operation timeout: WorkNCCL(SeqNum=26, OpType=ALLREDUCE …)`.
    Watchdog {
        seq: u64,
        op: String,
        numel: Option<u64>,
        ran_ms: Option<u64>,
    },
    /// `Last enqueued NCCL work: 25, last completed NCCL work: 25`.
    WorkState { enqueued: i64, completed: i64 },
    /// `Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=153, OpType=…)`:
    /// `of` is the rank the fingerprint belongs to (may differ from who printed it).
    Fingerprint { of: u32, seq: u64, op: String },
    /// The launcher sending a signal to a worker (`Sending process 10645 closing signal SIGTERM`).
    Teardown { pid: u32, signal: String },
    /// A launcher's view of a worker: rank / local rank / pid / exit code.
    Exit {
        rank: Option<u32>,
        local_rank: Option<u32>,
        pid: Option<u32>,
        code: i64,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// Seconds since the Unix epoch, when the time could be resolved.
    pub t: Option<f64>,
    /// The time as read (normalised by `prefix`).
    pub time: Option<String>,
    pub who: Attribution,
    pub path: String,
    pub line: Option<u64>,
    pub kind: Kind,
    pub text: String,
}

/// A mark: one scanner hit on `PATTERNS`, kept by the analysis for this module.
#[derive(Debug, Clone)]
pub struct Mark {
    pub input: usize,
    pub pattern: usize,
    pub line: u64,
    pub text: String,
    pub attr: Attribution,
}

#[derive(Debug, Clone, Default)]
pub struct Timeline {
    /// In time order; untimed events last, in input order.
    pub events: Vec<Event>,
    /// The year glog/syslog times were given, and where it came from.
    pub year: Option<i32>,
    /// Seconds since the epoch at boot, when raw dmesg could be aligned.
    pub boot_epoch: Option<f64>,
}

use crate::sources::units::{civil_from_days, days_from_civil};

/// A time string as `prefix` writes it.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Stamp {
    Full(f64),
    NoYear { m: u32, d: u32, secs: f64 },
    Boot(f64),
}

fn parse_stamp(s: &str) -> Option<Stamp> {
    if let Some(b) = s.strip_prefix("boot+") {
        return b.parse().ok().map(Stamp::Boot);
    }
    let (date, time) = s.split_once('T')?;
    let mut tp = time.splitn(3, ':');
    let hh: f64 = tp.next()?.parse().ok()?;
    let mm: f64 = tp.next()?.parse().ok()?;
    let ss: f64 = tp.next()?.parse().ok()?;
    let secs = hh * 3600.0 + mm * 60.0 + ss;
    if let Some(md) = date.strip_prefix("--") {
        let (m, d) = md.split_once('-')?;
        return Some(Stamp::NoYear {
            m: m.parse().ok()?,
            d: d.parse().ok()?,
            secs,
        });
    }
    let mut dp = date.splitn(3, '-');
    let y: i64 = dp.next()?.parse().ok()?;
    let m: u32 = dp.next()?.parse().ok()?;
    let d: u32 = dp.next()?.parse().ok()?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    Some(Stamp::Full(
        days_from_civil(y, m, d) as f64 * 86400.0 + secs,
    ))
}

fn year_of(s: &str) -> Option<(i32, u32)> {
    let y: i32 = s.get(0..4)?.parse().ok()?;
    let m: u32 = s.get(5..7)?.parse().ok()?;
    (s.as_bytes().get(4) == Some(&b'-')).then_some((y, m))
}

/// Resolve a time string to epoch seconds with what the timeline knows.
pub fn resolve(s: &str, year: Option<(i32, u32)>, boot: Option<f64>) -> Option<f64> {
    match parse_stamp(s)? {
        Stamp::Full(t) => Some(t),
        Stamp::NoYear { m, d, secs } => {
            let (y, ym) = year?;
            // A run that crosses New Year: a December line in a January run is last year's.
            let y = if m == 12 && ym == 1 {
                y - 1
            } else if m == 1 && ym == 12 {
                y + 1
            } else {
                y
            };
            if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
                return None;
            }
            Some(days_from_civil(y as i64, m, d) as f64 * 86400.0 + secs)
        }
        Stamp::Boot(b) => boot.map(|e| e + b),
    }
}

/// Seconds since the epoch as `YYYY-MM-DD HH:MM:SS.mmm` (UTC as logged: no zone applied).
pub fn format_epoch(t: f64) -> String {
    let days = (t / 86400.0).floor() as i64;
    let secs = t - days as f64 * 86400.0;
    let (y, m, d) = civil_from_days(days);
    let ms = (secs * 1000.0).round() as i64;
    let (h, mi, s, frac) = (ms / 3_600_000, ms / 60_000 % 60, ms / 1000 % 60, ms % 1000);
    format!("{y:04}-{m:02}-{d:02} {h:02}:{mi:02}:{s:02}.{frac:03}")
}

fn re(i: usize) -> &'static Regex {
    static R: OnceLock<Vec<Regex>> = OnceLock::new();
    &R.get_or_init(|| {
        [
            r"WorkNCCL\(SeqNum=(\d+), OpType=(\w+)(?:, NumelIn=(\d+))?",
            r"[Ll]ast enqueued (?:NCCL )?work: (-?\d+), last completed (?:NCCL )?work: (-?\d+)",
            r"(?:Rank (\d+) is running collective: )?CollectiveFingerPrint\(SequenceNumber=(\d+), OpType=(\w+)",
            r"Sending process (\d+) closing signal (SIG[A-Z]+)",
            r"Killing subprocess (\d+)",
            r"rank\s*: (\d+) \(local_rank: (\d+)\)",
            r"exitcode\s*: (-?\d+) \(pid: (\d+)\)",
            r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)",
            r"^\s*host\s*: ([\w.-]+)\s*$",
        ]
        .iter()
        .map(|r| Regex::new(r).expect("timeline regex"))
        .collect::<Vec<_>>()
    })[i]
}

fn ran_for() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"ran for (\d+) milliseconds").expect("timeline regex"))
}

/// A launcher `Root Cause` / `Other Failures` block being read: host line, then rank line.
#[derive(Default)]
struct Block {
    host: Option<(String, u64)>,
    rank: Option<(u32, u32, u64)>,
}

/// Turn marks into events (one mark can give several: a mismatch line names two ranks).
fn mark_events(m: &Mark, path: &str, block: &mut Block, out: &mut Vec<Event>) {
    let ev = |kind: Kind| Event {
        t: None,
        time: m.attr.time.clone(),
        who: m.attr.clone(),
        path: path.to_string(),
        line: Some(m.line),
        kind,
        text: m.text.trim().to_string(),
    };
    let num = |c: &regex::Captures, i: usize| c.get(i).and_then(|x| x.as_str().parse::<i64>().ok());
    match m.pattern {
        0 => {
            if !m.text.contains("Watchdog caught") {
                return;
            }
            if let Some(c) = re(0).captures(&m.text) {
                out.push(ev(Kind::Watchdog {
                    seq: num(&c, 1).unwrap_or(0) as u64,
                    op: c[2].to_string(),
                    numel: num(&c, 3).map(|x| x as u64),
                    ran_ms: ran_for().captures(&m.text).and_then(|c| c[1].parse().ok()),
                }));
            }
        }
        1 => {
            if let Some(c) = re(1).captures(&m.text) {
                out.push(ev(Kind::WorkState {
                    enqueued: num(&c, 1).unwrap_or(-1),
                    completed: num(&c, 2).unwrap_or(-1),
                }));
            }
        }
        2 => {
            for c in re(2).captures_iter(&m.text) {
                let of = num(&c, 1).map(|x| x as u32).or(m.attr.rank);
                if let Some(of) = of {
                    out.push(ev(Kind::Fingerprint {
                        of,
                        seq: num(&c, 2).unwrap_or(0) as u64,
                        op: c[3].to_string(),
                    }));
                }
            }
        }
        3 => {
            if let Some(c) = re(3).captures(&m.text) {
                out.push(ev(Kind::Teardown {
                    pid: num(&c, 1).unwrap_or(0) as u32,
                    signal: c[2].to_string(),
                }));
            }
        }
        4 => {
            if let Some(c) = re(4).captures(&m.text) {
                out.push(ev(Kind::Teardown {
                    pid: num(&c, 1).unwrap_or(0) as u32,
                    signal: "SIGKILL".into(),
                }));
            }
        }
        5 => {
            if let Some(c) = re(5).captures(&m.text) {
                block.rank = Some((
                    num(&c, 1).unwrap_or(0) as u32,
                    num(&c, 2).unwrap_or(0) as u32,
                    m.line,
                ));
            }
        }
        6 => {
            let Some(c) = re(6).captures(&m.text) else {
                return;
            };
            let Some((rank, lr, at)) = block.rank else {
                return;
            };
            if m.line.saturating_sub(at) > 4 {
                return;
            }
            let mut e = ev(Kind::Exit {
                rank: Some(rank),
                local_rank: Some(lr),
                pid: num(&c, 2).map(|x| x as u32),
                code: num(&c, 1).unwrap_or(0),
            });
            e.who.rank = Some(rank);
            e.who.local_rank = Some(lr);
            e.who.pid = num(&c, 2).map(|x| x as u32);
            if let Some((h, hl)) = &block.host
                && m.line.saturating_sub(*hl) <= 6
            {
                e.who.host = Some(h.clone());
            }
            out.push(e);
        }
        8 => {
            if let Some(c) = re(8).captures(&m.text) {
                block.host = Some((c[1].to_string(), m.line));
            }
        }
        7 => {
            if let Some(c) = re(7).captures(&m.text) {
                out.push(ev(Kind::Exit {
                    rank: None,
                    local_rank: num(&c, 2).map(|x| x as u32),
                    pid: num(&c, 3).map(|x| x as u32),
                    code: num(&c, 1).unwrap_or(0),
                }));
            }
        }
        _ => {}
    }
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

/// Kinds whose last timed lines the timeline shows (`last_lines`).
pub fn is_log(kind: SourceKind) -> bool {
    matches!(
        kind,
        SourceKind::TorchLog
            | SourceKind::DeepspeedLog
            | SourceKind::HfTrainerLog
            | SourceKind::NcclLog
            | SourceKind::UcxMpiLog
            | SourceKind::SlurmLog
            | SourceKind::Text
    )
}

/// The last timed line of each rank in a file's last `TAIL_BYTES` (interleaved consoles
/// give one per rank; per-rank files one). The analysis reads them in its per-file work
/// (in parallel), into `Analysis::last_lines`.
pub fn last_lines(path: &std::path::Path, display: &str, out: &mut Vec<Event>) {
    let Ok(mut f) = std::fs::File::open(path) else {
        return;
    };
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    let start = len.saturating_sub(TAIL_BYTES);
    if f.seek(SeekFrom::Start(start)).is_err() {
        return;
    }
    let mut buf = Vec::new();
    if f.take(TAIL_BYTES).read_to_end(&mut buf).is_err() || buf.starts_with(&[0x1f, 0x8b]) {
        return;
    }
    let text = String::from_utf8_lossy(&buf);
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
        out.push(Event {
            t: None,
            time: a.time.clone(),
            who: a,
            path: display.to_string(),
            line: None,
            kind: Kind::LastLine,
            text: line.trim().chars().take(300).collect(),
        });
        if seen.len() > 4096 {
            break;
        }
    }
}

/// Build the timeline from the analysis (hits, marks, last lines).
pub fn build(a: &Analysis, kb: &crate::rules::KnowledgeBase) -> Timeline {
    let mut events = Vec::new();
    for h in &a.hits {
        let Some(rule) = kb.rules.get(h.rule) else {
            continue;
        };
        events.push(Event {
            t: None,
            time: h.attr.time.clone(),
            who: h.attr.clone(),
            path: a.inputs[h.input].path.clone(),
            line: Some(h.line),
            kind: Kind::Hit {
                rule: rule.name.clone(),
                category: rule.category,
                symptom: rule.role == crate::rules::Role::Symptom,
            },
            text: h.text.clone(),
        });
    }
    let mut block = Block::default();
    let mut last_input = usize::MAX;
    for m in &a.marks {
        if m.input != last_input {
            block = Block::default();
            last_input = m.input;
        }
        mark_events(m, &a.inputs[m.input].path, &mut block, &mut events);
    }
    events.extend(a.last_lines.iter().cloned());
    // The year for glog/syslog: the earliest fully dated line.
    let year = events
        .iter()
        .filter_map(|e| e.time.as_deref())
        .filter_map(year_of)
        .min();
    // Raw dmesg: one kernel message seen with `-T` and raw gives the boot time.
    let boot = events.iter().find_map(|raw| {
        let b = match raw.time.as_deref().and_then(parse_stamp) {
            Some(Stamp::Boot(b)) => b,
            _ => return None,
        };
        let msg = dmesg_msg(&raw.text)?;
        events
            .iter()
            .find_map(|o| match o.time.as_deref().and_then(parse_stamp) {
                Some(Stamp::Full(t)) if dmesg_msg(&o.text) == Some(msg) => Some(t - b),
                _ => None,
            })
    });
    for e in &mut events {
        e.t = e.time.as_deref().and_then(|s| resolve(s, year, boot));
    }
    events.sort_by(|x, y| match (x.t, y.t) {
        (Some(a), Some(b)) => a.total_cmp(&b),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => std::cmp::Ordering::Equal,
    });
    Timeline {
        events,
        year: year.map(|y| y.0),
        boot_epoch: boot,
    }
}

/// A kernel line's message after its time prefix.
fn dmesg_msg(text: &str) -> Option<&str> {
    let rest = text.split_once(']')?.1.trim();
    (!rest.is_empty()).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glog_takes_year_from_a_dated_line() {
        let y = Some((2026, 11));
        let glog = resolve("--11-29T19:00:04.020587", y, None).unwrap();
        let py = resolve("2026-11-29T18:59:34.729", y, None).unwrap();
        assert!((glog - py - 29.291587).abs() < 1e-3, "{}", glog - py);
        assert_eq!(format_epoch(py), "2026-11-29 18:59:34.729");
        assert_eq!(resolve("--11-29T19:00:04", None, None), None);
        // December line in a January run.
        let dec = resolve("--12-31T23:59:59", Some((2027, 1)), None).unwrap();
        assert_eq!(format_epoch(dec), "2026-12-31 23:59:59.000");
    }

    #[test]
    fn raw_dmesg_needs_boot_time() {
        assert_eq!(resolve("boot+10.5", None, None), None);
        assert_eq!(resolve("boot+10.5", None, Some(100.0)), Some(110.5));
    }

    #[test]
    fn fingerprint_mismatch_line_gives_both_ranks() {
        let m = Mark {
            input: 0,
            pattern: 2,
            line: 1,
            text: "[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=153, OpType=BROADCAST, TensorShape=[2]), but Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=153, OpType=ALLREDUCE, TensorShape=[2])".into(),
            attr: Attribution { rank: Some(1), ..Default::default() },
        };
        let mut out = Vec::new();
        mark_events(&m, "x", &mut Block::default(), &mut out);
        let k: Vec<_> = out.into_iter().map(|e| e.kind).collect();
        assert_eq!(
            k,
            vec![
                Kind::Fingerprint {
                    of: 1,
                    seq: 153,
                    op: "BROADCAST".into()
                },
                Kind::Fingerprint {
                    of: 0,
                    seq: 153,
                    op: "ALLREDUCE".into()
                }
            ]
        );
    }
}
