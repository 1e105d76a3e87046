//! The triage contract (`trainwreck.triage/1`: the grouped outcomes of many runs) and its
//! renderings: JSON, a table for people, Markdown for a job summary. Formats only; the
//! grouping is `triage::group`'s.

use crate::model::{Action, Category, Verdict, Warning};
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

#[derive(Debug, Clone, Serialize)]
pub struct Group {
    /// `null` for runs with no sign of failure.
    pub fingerprint: Option<String>,
    pub count: usize,
    pub verdict: Verdict,
    pub category: Option<Category>,
    pub action: Action,
    pub title: Option<String>,
    pub first_seen: Option<String>,
    pub last_seen: Option<String>,
    /// Host → number of runs of this group that involved it.
    pub hosts: BTreeMap<String, usize>,
    pub gpus: BTreeMap<String, usize>,
    pub recurring: Vec<Recurrence>,
    pub example: String,
    pub runs: Vec<String>,
}

#[derive(Debug, Clone, Serialize)]
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

fn suspect_line(r: &Recurrence) -> String {
    format!(
        "{} {} failed in {} runs: hardware suspect",
        r.kind, r.name, r.runs
    )
}

pub fn render_table(t: &Triage, tables: super::table::Tables) -> String {
    let mut tb = tables.table();
    tb.set_header(vec![
        "runs",
        "fingerprint",
        "category",
        "action",
        "first seen",
        "last seen",
        "hosts",
        "example",
    ]);
    for g in &t.groups {
        tables.row(
            &mut tb,
            vec![
                g.count.to_string(),
                g.fingerprint.clone().unwrap_or_else(|| "-".into()),
                g.category
                    .map_or_else(|| g.verdict.to_string(), |c| c.to_string()),
                g.action.to_string(),
                g.first_seen.clone().unwrap_or_default(),
                g.last_seen.clone().unwrap_or_default(),
                hosts_text(&g.hosts, 3),
                g.example.clone(),
            ],
        );
    }
    let mut s = format!(
        "{}\n{} runs, {} groups\n",
        tables.finish(tb),
        t.runs_total,
        t.groups.len()
    );
    for r in &t.suspects {
        s.push_str(&format!("suspect: {}\n", suspect_line(r)));
    }
    for w in &t.warnings {
        s.push_str(&format!("warning: {w}\n"));
    }
    s
}

pub fn render_markdown(t: &Triage) -> String {
    use crate::report::markdown::inline;
    let mut s = format!(
        "## trainwreck triage: {} runs, {} groups\n\n| runs | fingerprint | category | action | first seen | last seen | hosts | example |\n|---:|---|---|---|---|---|---|---|\n",
        t.runs_total,
        t.groups.len()
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
            g.first_seen.as_deref().unwrap_or(""),
            g.last_seen.as_deref().unwrap_or(""),
            inline(&hosts_text(&g.hosts, 3)),
            g.example.replace('`', "'")
        ));
    }
    if !t.suspects.is_empty() {
        s.push_str("\n**Hardware suspects** (failed in more than one run):\n\n");
        for r in &t.suspects {
            s.push_str(&format!("- {}\n", inline(&suspect_line(r))));
        }
    }
    for g in t.groups.iter().filter(|g| g.verdict != Verdict::NoFailure) {
        s.push_str(&format!(
            "\n<details><summary><code>{}</code> · {} · {} run{}</summary>\n\n{}\n\nRuns:\n\n{}\n</details>\n",
            g.fingerprint.as_deref().unwrap_or("-"),
            inline(&g.category.map_or_else(|| g.verdict.to_string(), |c| c.to_string())),
            g.count,
            if g.count == 1 { "" } else { "s" },
            inline(g.title.as_deref().unwrap_or("no rule explains it: investigate")),
            crate::report::markdown::fenced(&g.runs.join("\n"))
        ));
    }
    s
}
