//! `--timeline`: the merged per-rank timeline around the failure, one row per event kind,
//! ranks that did the same thing at the same step folded into one row (`ranks 1-511`).
//! Formatting only: the timeline and the origin are computed elsewhere.

use super::Report;
use crate::report::i18n::{Lang, Tr};
use crate::sources::launcher::What;
use crate::sources::prefix;
use crate::timeline::{Event, Kind, format_epoch};
use std::fmt::Write;

/// Events this long before the first failure sign are shown too.
const LEAD_SECONDS: f64 = 120.0;
const MAX_ROWS: usize = 60;

fn label(e: &Event, tr: Tr) -> (&'static str, String) {
    let bare = |t: &str| {
        let (_, pos) = prefix::peel(t);
        let s = t.get(pos..).unwrap_or(t).trim();
        s.chars().take(110).collect::<String>()
    };
    match &e.kind {
        Kind::LastLine => (tr.timeline_label("last line"), bare(&e.text)),
        Kind::Hit { rule, .. } => (
            tr.timeline_label("matched"),
            format!("{rule}: {}", bare(&e.text)),
        ),
        Kind::Launch(What::Watchdog {
            seq, op, ran_ms, ..
        }) => (
            tr.timeline_label("watchdog"),
            tr.timeline_watchdog(*seq, op, *ran_ms),
        ),
        Kind::Launch(What::WorkState {
            enqueued,
            completed,
        }) => (
            tr.timeline_label("counters"),
            tr.timeline_counters(*enqueued, *completed),
        ),
        Kind::Launch(What::Fingerprint { of, seq, op }) => (
            tr.timeline_label("fingerprint"),
            tr.timeline_fingerprint(*of, *seq, op),
        ),
        Kind::Launch(What::Teardown { pid, signal }) => (
            tr.timeline_label("teardown"),
            tr.timeline_teardown(signal, *pid),
        ),
        Kind::Launch(What::WorkerExit { code, pid, .. }) => {
            (tr.timeline_label("exit"), tr.timeline_exit(*code, *pid))
        }
        Kind::Launch(What::WorkerKilled { .. } | What::RankPid { .. }) => {
            (tr.timeline_label("exit"), bare(&e.text))
        }
        Kind::Machine { kind, pid } => (
            kind.as_str(),
            format!(
                "{}{}",
                bare(&e.text),
                pid.map(|p| format!(" [pid {p}]")).unwrap_or_default()
            ),
        ),
    }
}

/// (time, label, text, ranks, place, count).
type Row = (f64, &'static str, String, Vec<u32>, String, usize);

/// `0-3,7,9-10`.
fn ranks_text(r: &[u32]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < r.len() {
        let mut j = i;
        while j + 1 < r.len() && r[j + 1] == r[j] + 1 {
            j += 1;
        }
        out.push(if j > i {
            format!("{}-{}", r[i], r[j])
        } else {
            r[i].to_string()
        });
        i = j + 1;
    }
    out.join(",")
}

/// Pads `s` to `n` terminal columns (a Chinese character takes two).
fn pad(s: &str, n: usize) -> String {
    let w = unicode_width::UnicodeWidthStr::width(s);
    format!("{s}{}", " ".repeat(n.saturating_sub(w)))
}

pub fn render(r: &Report, lang: Lang) -> String {
    let tr = Tr(lang);
    let tl = &r.timeline;
    let mut out = String::new();
    let timed: Vec<&Event> = tl.events.iter().filter(|e| e.t.is_some()).collect();
    let _ = writeln!(out, "\n{}", tr.timeline_heading(tl.year));
    if timed.is_empty() {
        let _ = writeln!(out, "  {}", tr.timeline_empty());
        return out;
    }
    let from = window_start(&timed);
    let origin = r.top().and_then(|f| f.origin.rank);
    // Fold rows: same label and text (ranks stripped) → one row with the ranks.
    let mut rows: Vec<Row> = Vec::new();
    for e in timed.iter().filter(|e| e.t.unwrap_or(0.0) >= from) {
        let (lab, text) = label(e, tr);
        let text = text
            .replace(
                &format!("[rank{}]", e.who.rank.unwrap_or(u32::MAX)),
                "[rank*]",
            )
            .replace(
                &format!("Rank {}", e.who.rank.unwrap_or(u32::MAX)),
                "Rank *",
            );
        let place = match e.line {
            Some(l) => format!("{}:{l}", e.path),
            None => e.path.clone(),
        };
        match rows
            .iter_mut()
            .find(|x| x.1 == lab && x.2 == text && (e.t.unwrap_or(0.0) - x.0).abs() < 60.0)
        {
            Some(row) => {
                if let Some(rk) = e.who.rank
                    && !row.3.contains(&rk)
                {
                    row.3.push(rk);
                }
                row.5 += 1;
            }
            None => rows.push((
                e.t.unwrap_or(0.0),
                lab,
                text,
                e.who.rank.into_iter().collect(),
                place,
                1,
            )),
        }
    }
    let total = rows.len();
    for (t, lab, text, mut ranks, place, n) in rows.into_iter().take(MAX_ROWS) {
        ranks.sort_unstable();
        let who = match ranks.len() {
            0 => "-".to_string(),
            1 => format!("rank {}", ranks[0]),
            k => format!("ranks {} ({k})", ranks_text(&ranks)),
        };
        let mark = if ranks.len() == 1 && Some(ranks[0]) == origin {
            "▶"
        } else {
            " "
        };
        let _ = writeln!(
            out,
            "{mark} {}  {:<14} {} {}{}  [{place}]",
            format_epoch(t),
            who,
            pad(lab, 11),
            text,
            if n > 1 && ranks.len() < 2 {
                format!(" (×{n})")
            } else {
                String::new()
            }
        );
    }
    if total > MAX_ROWS {
        let _ = writeln!(out, "  {}", tr.timeline_more_rows(total - MAX_ROWS));
    }
    if let Some(o) = origin {
        let _ = writeln!(out, "  {}", tr.timeline_origin(o));
    }
    out
}

/// Where a drawn timeline starts: `LEAD_SECONDS` before the first timed event that is not a
/// file's last line (everything, when there is none).
pub(super) fn window_start(timed: &[&Event]) -> f64 {
    let first_fail = timed
        .iter()
        .filter(|e| !matches!(e.kind, Kind::LastLine))
        .filter_map(|e| e.t)
        .fold(f64::INFINITY, f64::min);
    if first_fail.is_finite() {
        first_fail - LEAD_SECONDS
    } else {
        f64::NEG_INFINITY
    }
}
