//! The per-rank timeline: every rule hit, launcher/NCCL event (exits, teardown, watchdog,
//! fingerprints), machine event (OOM kills with their pid, Xids, segfaults) and each file's
//! last timed line, with its time resolved to one clock (glog and syslog get their year from a dated
//! line in the same inputs; raw dmesg is aligned when one kernel line is seen both raw and
//! with `-T`). Data only: it decides nothing about causes (that is `correlate::cascade`)
//! and prints nothing (that is `report::terminal`).
//!
//! Clock skew between hosts is not corrected: the corpus has no multi-host capture. The
//! method, when there is one: take an event every rank logs within milliseconds of one
//! store write (the flight-recorder "dump signal … via TCPStore", the abort fan-out) and use
//! the median per-host difference as that host's offset.

use crate::analyze::Analysis;
use crate::model::{Attribution, Phase};
use crate::sources::launcher::{LaunchEvent, What};

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
    /// What a launcher or ProcessGroupNCCL line said (a worker's exit with its status,
    /// teardown, a watchdog timeout, work counters, a collective fingerprint): the event
    /// `sources::launcher` read, as it read it.
    Launch(What),
    /// A record from a machine-level source (dmesg OOM kill, Xid, segfault, Slurm task end):
    /// its kind, and the pid it names.
    Machine {
        kind: crate::sources::EventKind,
        pid: Option<u32>,
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

/// A launcher/NCCL event as a timeline event (a signal-only exit line adds nothing the
/// status did not say).
fn launch_event(e: &LaunchEvent, path: &str) -> Option<Event> {
    // Lines that only say which process is which (for tying cores to ranks) are no events.
    if matches!(
        e.what,
        What::WorkerExit { code: None, .. } | What::RankPid { .. }
    ) {
        return None;
    }
    let kind = Kind::Launch(e.what.clone());
    Some(Event {
        t: None,
        time: e.who.time.clone(),
        who: e.who.clone(),
        path: path.to_string(),
        line: Some(e.line),
        kind,
        text: e.text.clone(),
    })
}

/// Build the timeline from the analysis (hits, launcher/NCCL events, machine events, last
/// lines).
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
    for (input, e) in &a.launch {
        events.extend(launch_event(e, &a.inputs[*input].path));
    }
    // Machine events of the run: not from a snapshot taken before it, nor the same kernel
    // line again in a later snapshot (dmesg keeps history).
    let before = |i: usize| a.inputs[i].phase == Phase::Before;
    let history: std::collections::HashSet<&str> = a
        .events
        .iter()
        .filter(|(i, _)| before(*i))
        .map(|(_, e)| e.text.as_str())
        .collect();
    for (input, e) in &a.events {
        // nvidia-smi's process table is a state, not something that happened.
        if e.kind == crate::sources::EventKind::GpuProcess
            || before(*input)
            || history.contains(e.text.as_str())
        {
            continue;
        }
        events.push(Event {
            t: None,
            time: e.time.clone(),
            who: Attribution {
                host: e.host.clone(),
                pid: e.pid,
                time: e.time.clone(),
                ..Attribution::default()
            },
            path: a.inputs[*input].path.clone(),
            line: Some(e.line),
            kind: Kind::Machine {
                kind: e.kind,
                pid: e.pid,
            },
            text: e.text.clone(),
        });
    }
    events.extend(a.last_lines.iter().map(|l| Event {
        t: None,
        time: l.time.clone(),
        who: l.who.clone(),
        path: l.path.clone(),
        line: None,
        kind: Kind::LastLine,
        text: l.text.clone(),
    }));
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
}
