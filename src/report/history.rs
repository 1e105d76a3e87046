//! The failure history for people: the "seen before" line of a report, and the tables of
//! `history list | show | hosts | gpus`, laid out as `table::Tables` says (their JSON is the
//! data itself, serialised). Formats only; the counting and the tests live in `history`. The
//! rows those views show are defined here (as `report::triage` holds triage's), so `history`
//! depends on `report` and not back.

use crate::model::{Note, Seen, Text, text};
use crate::report::i18n::{Lang, Tr};
use crate::report::table::Tables;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt::Write;

/// One row of `history list`: a fingerprint and how often it failed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ListEntry {
    pub fingerprint: String,
    pub count: u64,
    pub category: Option<String>,
    pub rule: Option<String>,
    /// The lead finding's title; `title_zh` from the stored report, when it had one.
    #[serde(flatten, with = "crate::model::keys::title")]
    pub title: Option<Text>,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
    pub hosts: Vec<String>,
    /// The newest note, if any.
    pub note: Option<Note>,
}

/// One host or GPU over the window.
#[derive(Debug, Clone, Serialize)]
pub struct UnitStat {
    /// The host name, or the GPU's UUID.
    pub id: String,
    /// For a GPU: every host it was seen in (a GPU that moves stays one GPU).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hosts: Option<Vec<String>>,
    /// Runs it took part in.
    pub jobs: u64,
    /// Its share of all runs in the window.
    pub share: f64,
    /// Failures counted against it, by class (`none` never counts).
    pub failures: BTreeMap<String, u64>,
    /// Its failures of the suspect classes (hardware, unexplained).
    pub suspect_failures: u64,
    /// The rest of the fleet's rate of suspect failures per job (Laplace-smoothed).
    pub base_rate: f64,
    /// `jobs × base_rate`.
    pub expected: f64,
    /// P(≥ suspect_failures | binomial(jobs, base_rate)).
    pub p_value: f64,
    pub suspect: bool,
}

/// `history hosts` / `history gpus`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FleetStats {
    /// `host` or `gpu`.
    pub unit: &'static str,
    pub since: Option<String>,
    /// Runs in the window.
    pub runs: u64,
    pub alpha: f64,
    /// The per-unit p-value below which a unit is a suspect: alpha / units tested.
    pub threshold: f64,
    pub units: Vec<UnitStat>,
    /// The suspects, most significant first.
    pub suspects: Vec<String>,
}

/// `history report`: the fleet over a window, as one page draws it.
#[derive(Debug, Clone, Default, Serialize)]
pub struct FleetReport {
    pub since: Option<String>,
    /// When the report was made (UTC).
    pub generated: String,
    /// Runs in the window, and of them the failed ones (every verdict but `no_failure`).
    pub runs: u64,
    pub failed: u64,
    /// Every day with a run, oldest first.
    pub days: Vec<DayCount>,
    /// The top fingerprints, as `history list` gives them.
    pub top: Vec<ListEntry>,
    /// Each top fingerprint's runs per day (`YYYY-MM-DD` → runs), in `top`'s order.
    pub top_per_day: Vec<BTreeMap<String, u64>>,
    /// Each top fingerprint's latest runs with the lines their reports cite, in `top`'s order
    /// (at most `history::fleet::RUNS_PER_FINGERPRINT` each): what a fingerprint links to.
    pub top_runs: Vec<Vec<FleetRun>>,
    /// `history hosts` and `history gpus` over the same window.
    pub hosts: FleetStats,
    pub gpus: FleetStats,
    /// Each GPU in each host it was seen in: the heat map's cells.
    pub cells: Vec<GpuCell>,
    /// The latest runs, newest first.
    pub recent: Vec<RecentRun>,
}

/// One day of the fleet.
#[derive(Debug, Clone, Default, Serialize)]
pub struct DayCount {
    /// `YYYY-MM-DD` (UTC).
    pub day: String,
    /// Runs without a failure.
    pub healthy: u64,
    /// Failed runs by category (`unknown_failure` for a failure no rule explains).
    pub failures: BTreeMap<String, u64>,
}

/// One GPU in one host over the window.
#[derive(Debug, Clone, Default, Serialize)]
pub struct GpuCell {
    pub host: String,
    pub uuid: String,
    /// Runs it took part in there.
    pub jobs: u64,
    /// Its failures of the suspect classes (hardware, unexplained) there.
    pub suspect_failures: u64,
}

/// A run of a top fingerprint, with the lines its stored report cites for its cause (the
/// lead finding's first evidence lines, as triage shows them).
#[derive(Debug, Clone, Default, Serialize)]
pub struct FleetRun {
    /// When it failed (or was recorded), UTC.
    pub at: String,
    pub job: Option<String>,
    /// The host it started on, else its first host.
    pub host: Option<String>,
    pub lines: Vec<crate::report::triage::CitedLine>,
}

/// One run in the report's list of the latest.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RecentRun {
    /// When it failed (or was recorded), UTC.
    pub at: String,
    pub job: Option<String>,
    /// The host it started on, else its first host.
    pub host: Option<String>,
    pub verdict: String,
    pub category: Option<String>,
    /// The lead finding's title; `title_zh` from the stored report, when it had one.
    #[serde(flatten, with = "crate::model::keys::title")]
    pub title: Option<Text>,
    pub action: String,
    pub confidence: Option<f64>,
    pub fingerprint: Option<String>,
}

/// `2026-10-02T08:00:00Z` → `2026-10-02`.
fn day(t: &str) -> &str {
    t.get(..10).unwrap_or(t)
}

/// Seconds as "3 h ago", "2 d ago" ("3 小时前" in Chinese).
fn ago(secs: i64) -> Text {
    let s = secs.max(0);
    match s {
        0..60 => text!("{s} s ago", "{s} 秒前"),
        60..3600 => {
            let m = s / 60;
            text!("{m} min ago", "{m} 分钟前")
        }
        3600..86_400 => {
            let h = s / 3600;
            text!("{h} h ago", "{h} 小时前")
        }
        _ => {
            let d = s / 86_400;
            text!("{d} d ago", "{d} 天前")
        }
    }
}

fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// `Seen 14 times since 2026-10-02 on 6 hosts (last: 3 h ago, node17). Team note: "…" (alice,
/// 2026-10-03)`, in `lang`.
pub fn seen_line_in(s: &Seen, lang: Lang) -> String {
    seen_line(s).get(lang).to_string()
}

/// The seen line in both languages.
fn seen_line(s: &Seen) -> Text {
    let others: Vec<_> = s
        .runs
        .iter()
        .filter(|r| Some(&r.run_id) != s.this_run.as_ref())
        .collect();
    let mut line = if s.count == 0 {
        Text::new(
            "Not seen before in the failure history.",
            "故障历史里没有见过这个失败。",
        )
    } else if others.is_empty() && s.this_run.is_some() {
        Text::new("First time seen (recorded now).", "第一次出现（已记录）。")
    } else {
        let since = s.first_seen.as_deref().map(day).unwrap_or("?");
        let (count, hosts) = (s.count, s.hosts.len() as u64);
        let (times, on) = (
            plural(count, "time", "times"),
            plural(hosts, "host", "hosts"),
        );
        let mut l = text!(
            "Seen {times} since {since} on {on}",
            "自 {since} 起在 {hosts} 台主机上出现过 {count} 次"
        );
        if let Some(last) = others.first() {
            let when = crate::sources::units::epoch_from_iso(last.time.trim())
                .map(|t| ago(s.asked_at - t as i64))
                .unwrap_or_else(|| Text::plain(last.time.clone()));
            l.push(&match &last.host {
                Some(h) => text!(" (last: {when}, {h})", "（最近一次：{when}，{h}）"; when = when),
                None => text!(" (last: {when})", "（最近一次：{when}）"; when = when),
            });
        }
        l.push(&Text::new(".", "。"));
        l
    };
    if let Some(n) = s.notes.last() {
        let text = super::cut(&n.text, 200);
        let (author, day) = (&n.author, day(&n.time));
        line.push(&text!(
            " Team note: \"{text}\" ({author}, {day})",
            "团队备注：\"{text}\"（{author}，{day}）"
        ));
    }
    line
}

/// `history show`: the seen line, then notes, hosts and runs (laid out as `tables` says).
pub fn show(s: &Seen, tables: Tables, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut out = format!("{}\n{}\n", s.fingerprint, seen_line_in(s, lang));
    if s.count > 0 {
        let _ = writeln!(
            out,
            "{}",
            tr.history_first_last(
                s.first_seen.as_deref().unwrap_or("?"),
                s.last_seen.as_deref().unwrap_or("?")
            )
        );
    }
    if !s.hosts.is_empty() {
        let _ = writeln!(out, "{}", tr.history_hosts(&s.hosts.join(", ")));
    }
    if !s.notes.is_empty() {
        let _ = writeln!(out, "\n{}", tr.history_notes());
        for n in &s.notes {
            let _ = writeln!(out, "  {}  {}: {}", n.time, n.author, n.text);
        }
    }
    if !s.runs.is_empty() {
        let mut t = tables.table();
        t.set_header(tr.history_runs_header().to_vec());
        for r in &s.runs {
            tables.row(
                &mut t,
                vec![
                    r.time.clone(),
                    r.run_id.clone(),
                    r.job.clone().unwrap_or_default(),
                    r.host.clone().unwrap_or_default(),
                    r.verdict.clone(),
                ],
            );
        }
        let _ = writeln!(out, "\n{}", tables.finish(t));
    }
    out
}

/// `history list`: one row per fingerprint, most frequent first.
pub fn list(entries: &[ListEntry], tables: Tables, lang: Lang) -> String {
    let tr = Tr(lang);
    if entries.is_empty() {
        return format!("{}\n", tr.history_empty());
    }
    let mut t = tables.table();
    t.set_header(tr.history_list_header().to_vec());
    for e in entries {
        let what = match &e.note {
            Some(n) => tr.history_note(&super::cut(&n.text, 60)),
            None => super::cut(e.title.as_ref().map_or("", |t| t.get(lang)), 60),
        };
        tables.row(
            &mut t,
            vec![
                e.count.to_string(),
                e.fingerprint.clone(),
                e.category.clone().unwrap_or_default(),
                e.hosts.len().to_string(),
                e.first_seen.as_deref().map(day).unwrap_or("").to_string(),
                e.last_seen.as_deref().map(day).unwrap_or("").to_string(),
                what,
            ],
        );
    }
    format!("{}\n", tables.finish(t))
}

/// A p-value as the tables print it.
pub(crate) fn p_value(p: f64) -> String {
    if p < 1e-300 {
        "<1e-300".to_string()
    } else if p < 0.001 {
        format!("{p:.1e}")
    } else {
        format!("{p:.3}")
    }
}

/// `history hosts` / `history gpus`: counts per unit, then the suspects with their test.
pub fn fleet(s: &FleetStats, tables: Tables, lang: Lang) -> String {
    let tr = Tr(lang);
    let (lead, tail, hosts) = tr.fleet_header();
    let mut out = String::new();
    let mut classes: Vec<&String> = s.units.iter().flat_map(|u| u.failures.keys()).collect();
    classes.sort();
    classes.dedup();
    let mut t = tables.table();
    let mut header = vec![tr.fleet_unit(s.unit).to_string()];
    header.extend(lead.map(String::from));
    header.extend(classes.iter().map(|c| c.to_string()));
    header.extend(tail.map(String::from));
    if s.unit == "gpu" {
        header.push(hosts.into());
    }
    t.set_header(header);
    for u in s.units.iter().take(50) {
        let mut row = vec![
            format!("{}{}", u.id, if u.suspect { " *" } else { "" }),
            u.jobs.to_string(),
            format!("{:.1}%", u.share * 100.0),
        ];
        row.extend(
            classes
                .iter()
                .map(|c| u.failures.get(*c).copied().unwrap_or(0).to_string()),
        );
        row.extend([
            u.suspect_failures.to_string(),
            format!("{:.2}", u.expected),
            p_value(u.p_value),
        ]);
        if let Some(h) = &u.hosts {
            row.push(h.join(", "));
        }
        tables.row(&mut t, row);
    }
    let tested = s.units.iter().filter(|u| u.jobs > 0).count().max(1);
    let _ = writeln!(out, "{}", tr.fleet_summary(s, tested));
    let _ = writeln!(out, "{}", tables.finish(t));
    if s.units.len() > 50 {
        let _ = writeln!(out, "{}", tr.fleet_more(s.units.len() - 50));
    }
    if s.suspects.is_empty() {
        let _ = writeln!(out, "{}", tr.fleet_no_suspects());
    } else {
        let _ = writeln!(out, "{}", tr.fleet_suspects());
        for u in s.units.iter().filter(|u| u.suspect) {
            let _ = writeln!(out, "  {}", tr.fleet_suspect(u, &p_value(u.p_value)));
        }
    }
    out
}

/// `history report` in a terminal: the window's totals, the failures per day (the last two
/// weeks of it), the top fingerprints, then the host and GPU tests as `history hosts | gpus`.
/// `--html` draws the same data as one page.
pub fn report(f: &FleetReport, tables: Tables, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut out = format!(
        "{}\n\n",
        tr.html_fleet_title(f.runs, f.failed, f.since.as_deref())
    );
    if f.runs == 0 {
        return out + tr.history_empty() + "\n";
    }
    let [per_day, top, ..] = tr.html_fleet_sections();
    let mut t = tables.table();
    t.set_header(tr.fleet_report_days_header().to_vec());
    const DAYS: usize = 14;
    for d in f.days.iter().skip(f.days.len().saturating_sub(DAYS)) {
        let failed: u64 = d.failures.values().sum();
        let mut most: Vec<(&String, &u64)> = d.failures.iter().collect();
        most.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let most: Vec<String> = most
            .iter()
            .take(3)
            .map(|(c, n)| format!("{c} {n}"))
            .collect();
        tables.row(
            &mut t,
            vec![
                d.day.clone(),
                (d.healthy + failed).to_string(),
                failed.to_string(),
                most.join(", "),
            ],
        );
    }
    let _ = writeln!(out, "{per_day}\n{}", tables.finish(t));
    if f.days.len() > DAYS {
        let _ = writeln!(out, "{}", tr.fleet_more(f.days.len() - DAYS));
    }
    let _ = write!(out, "\n{top}\n{}\n", list(&f.top, tables, lang));
    out.push_str(&fleet(&f.hosts, tables, lang));
    out.push('\n');
    out.push_str(&fleet(&f.gpus, tables, lang));
    out
}
