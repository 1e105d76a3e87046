//! The triage contract (`trainwreck.triage/1`: the grouped outcomes of many runs) and its
//! renderings: JSON, a table for people, Markdown for a job summary. Formats only; the
//! grouping is `triage::group`'s.

use crate::model::{Action, Category, Text, Verdict, Warning};
use crate::report::i18n::{Lang, Tr};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

pub const SCHEMA: &str = "trainwreck.triage/1";

crate::model::vocabulary! {
    /// What a recurrence names.
    Suspect {
        Host = "host",
        Gpu = "gpu",
    }
}

/// A host or GPU seen in more than one failed run of one group: a hardware suspect.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Recurrence {
    pub kind: Suspect,
    pub name: String,
    pub runs: usize,
}

/// A run of a group with the lines its report cites for the group's cause: the top
/// finding's first evidence lines, each with the file and line it is at.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct RunLines {
    pub run: String,
    pub lines: Vec<CitedLine>,
}

/// One cited line: the file (as the run's report names it), its line number, its text.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct CitedLine {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub text: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// `null` for runs with no sign of failure.
    pub fingerprint: Option<String>,
    pub count: usize,
    pub verdict: Verdict,
    pub category: Option<Category>,
    pub action: Action,
    /// Its lead run's title (`title`, `title_zh` where the rule gives it).
    #[serde(flatten, with = "crate::model::keys::title")]
    pub title: Option<Text>,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
    /// Where those dates came from: `logs` (the failure's own timestamps) or `mtime` (file
    /// modification times, for runs whose logs carry no time; any such run makes it `mtime`).
    pub seen_from: Option<crate::triage::SeenFrom>,
    /// Host → number of runs of this group that involved it.
    pub hosts: BTreeMap<String, usize>,
    pub gpus: BTreeMap<String, usize>,
    pub recurring: Vec<Recurrence>,
    pub example: String,
    pub runs: Vec<String>,
    /// Each failed run's cited lines, in the order of `runs` (at most `MAX_CITED` a run);
    /// absent for runs with no sign of failure.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub evidence: Vec<RunLines>,
}

/// At most this many cited lines are kept per run of a triage.
pub const MAX_CITED: usize = 3;

#[derive(Debug, Clone, Default, Serialize)]
pub struct Triage {
    pub schema: &'static str,
    pub runs_total: usize,
    pub groups: Vec<Group>,
    /// Hosts/GPUs in more than one failed run across all groups whose action is not a
    /// config or code fix: hardware suspects.
    pub suspects: Vec<Recurrence>,
    pub warnings: Vec<Warning>,
}

impl Triage {
    /// Every host named anywhere, in a stable order (for consistent redaction masks).
    pub fn hosts(&self) -> Vec<String> {
        let set: BTreeSet<String> = self
            .groups
            .iter()
            .flat_map(|g| {
                g.hosts.keys().cloned().chain(
                    g.gpus
                        .keys()
                        .filter_map(|x| x.split('/').next().map(String::from)),
                )
            })
            .collect();
        set.into_iter().collect()
    }
}

/// The triage as pretty JSON (`trainwreck.triage/1`).
pub fn json(t: &Triage) -> String {
    serde_json::to_string_pretty(t).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

fn hosts_text(m: &BTreeMap<String, usize>, max: usize) -> String {
    let mut v: Vec<(&String, &usize)> = m.iter().collect();
    v.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    let mut s: Vec<String> = v
        .iter()
        .take(max)
        .map(|(h, n)| {
            if **n > 1 {
                format!("{h}×{n}")
            } else {
                h.to_string()
            }
        })
        .collect();
    if v.len() > max {
        s.push(format!("+{}", v.len() - max));
    }
    s.join(", ")
}

/// A group's first or last seen for people: marked when it is a file modification time.
fn seen_text(g: &Group, t: &Option<String>) -> String {
    match (t, g.seen_from) {
        (Some(t), Some(crate::triage::SeenFrom::Mtime)) => format!("{t} (mtime)"),
        (Some(t), _) => t.clone(),
        (None, _) => String::new(),
    }
}

fn suspect_line(r: &Recurrence, tr: Tr) -> String {
    tr.triage_suspect(r.kind.as_str(), &r.name, r.runs)
}

pub fn render_table(t: &Triage, tables: super::table::Tables, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut tb = tables.table();
    tb.set_header(tr.triage_header().to_vec());
    for g in &t.groups {
        tables.row(
            &mut tb,
            vec![
                g.count.to_string(),
                g.fingerprint.clone().unwrap_or_else(|| "-".into()),
                g.category
                    .map_or_else(|| g.verdict.to_string(), |c| c.to_string()),
                g.action.to_string(),
                seen_text(g, &g.first_seen),
                seen_text(g, &g.last_seen),
                hosts_text(&g.hosts, 3),
                g.example.clone(),
            ],
        );
    }
    let mut s = format!(
        "{}\n{}\n",
        tables.finish(tb),
        tr.triage_totals(t.runs_total, t.groups.len())
    );
    let sep = tr.after_label();
    for r in &t.suspects {
        s.push_str(&format!(
            "{}{sep}{}\n",
            tr.triage_suspect_label(),
            suspect_line(r, tr)
        ));
    }
    for w in &t.warnings {
        s.push_str(&format!("{}{sep}{}\n", tr.warning(), tr.warning_line(w)));
    }
    s
}

pub fn render_markdown(t: &Triage, lang: Lang) -> String {
    use crate::report::markdown::inline;
    let tr = Tr(lang);
    let mut s = format!(
        "{}\n\n| {} |\n|---:|---|---|---|---|---|---|---|\n",
        tr.triage_md_title(t.runs_total, t.groups.len()),
        tr.triage_header().join(" | ")
    );
    for g in &t.groups {
        s.push_str(&format!(
            "| {} | `{}` | {} | `{}` | {} | {} | {} | `{}` |\n",
            g.count,
            g.fingerprint.as_deref().unwrap_or("-"),
            inline(
                &g.category
                    .map_or_else(|| g.verdict.to_string(), |c| c.to_string())
            ),
            g.action,
            seen_text(g, &g.first_seen),
            seen_text(g, &g.last_seen),
            inline(&hosts_text(&g.hosts, 3)),
            g.example.replace('`', "'")
        ));
    }
    if !t.suspects.is_empty() {
        s.push_str(&format!("\n{}\n\n", tr.triage_md_suspects()));
        for r in &t.suspects {
            s.push_str(&format!("- {}\n", inline(&suspect_line(r, tr))));
        }
    }
    for g in t.groups.iter().filter(|g| g.verdict != Verdict::NoFailure) {
        s.push_str(&format!(
            "\n<details><summary><code>{}</code> · {} · {}</summary>\n\n{}\n\n{}\n\n{}\n</details>\n",
            g.fingerprint.as_deref().unwrap_or("-"),
            inline(&g.category.map_or_else(|| g.verdict.to_string(), |c| c.to_string())),
            tr.triage_md_group_runs(g.count),
            inline(tr.group_title(g).unwrap_or(tr.triage_no_rule())),
            tr.triage_md_runs(),
            crate::report::markdown::fenced(&g.runs.join("\n"))
        ));
    }
    s
}
