//! Verdicts for automation: the documented action exit statuses of one report, and
//! `trainwreck triage`, which analyses many failed runs in parallel and groups them by
//! fingerprint, calling out hosts and GPUs that keep failing. Diagnosis itself stays in
//! `diagnose`; this module never reads log contents itself.

use crate::analyze::Engine;
use crate::model::{Action, Category, Verdict, Warning};
use crate::report::Report;
use crate::rules::KnowledgeBase;
use regex::Regex;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};

pub const SCHEMA: &str = "trainwreck.triage/1";

/// The verdict and the top finding's action class as one exit status.
pub fn exit_for(r: &Report) -> i32 {
    action_of(r).exit_status()
}

/// The action a report asks for: the top finding's, `none` or `investigate`.
pub fn action_of(r: &Report) -> Action {
    match r.top() {
        Some(t) => t.action,
        None if r.verdict == Verdict::NoFailure => Action::None,
        None => Action::Investigate,
    }
}

/// Subdirectory names that are parts of one run, never runs of their own.
const RUN_PARTS: &[&str] = &[
    "logs",
    "log",
    "out",
    "output",
    "outputs",
    "snapshot_before",
    "snapshot_after",
    "snapshots",
    "torchrun_logs",
    "cgroup",
    "ranks",
    "cores",
];

/// Deepest a parent-of-runs tree is searched.
const MAX_DEPTH: usize = 4;

/// Expand the user's arguments into run directories (README.md "Which directories are
/// runs"): a file is a run; a directory holding `run/` is analysed through it; a directory
/// with a regular file (other than `*.md` notes) directly inside, or with a subdirectory named like a part of a run
/// (`logs`, `snapshot_after`, …), or with no subdirectory at all, is a run; any other
/// directory is a parent whose subdirectories are looked at the same way.
pub fn discover(args: &[String]) -> (Vec<PathBuf>, Vec<Warning>) {
    let mut runs = Vec::new();
    let mut warnings = Vec::new();
    for a in args {
        let p = Path::new(a);
        if p.is_file() {
            runs.push(p.to_path_buf());
        } else if p.is_dir() {
            walk(p, 0, &mut runs, &mut warnings);
        } else {
            warnings.push(Warning::new(Some(a), "not a file or directory: skipped"));
        }
    }
    (runs, warnings)
}

fn walk(dir: &Path, depth: usize, runs: &mut Vec<PathBuf>, warnings: &mut Vec<Warning>) {
    if dir.join("run").is_dir() {
        runs.push(dir.join("run"));
        return;
    }
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            warnings.push(Warning::new(
                Some(&dir.display().to_string()),
                format!("cannot read directory: {e}"),
            ));
            return;
        }
    };
    let mut subdirs = Vec::new();
    let mut has_file = false;
    let mut has_part = false;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_file() {
            // Notes (`README.md`) sit in parents of runs too: they do not make a run.
            has_file |= !name.ends_with(".md");
        } else if ft.is_dir() {
            has_part |= RUN_PARTS.contains(&name.as_str());
            subdirs.push(e.path());
        }
    }
    if has_file || has_part || subdirs.is_empty() || depth >= MAX_DEPTH {
        runs.push(dir.to_path_buf());
        return;
    }
    subdirs.sort();
    for d in subdirs {
        walk(&d, depth + 1, runs, warnings);
    }
}

/// One run's outcome, as triage keeps it.
#[derive(Debug, Clone, Serialize)]
pub struct RunOutcome {
    pub path: String,
    pub verdict: Verdict,
    pub fingerprint: Option<String>,
    pub category: Option<Category>,
    pub action: Action,
    pub title: Option<String>,
    pub confidence: Option<f64>,
    pub hosts: Vec<String>,
    pub gpus: Vec<String>,
    /// When the run was last written (newest file mtime), UTC.
    pub seen: Option<String>,
    pub warnings: usize,
}

static GPU_RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:PCI:|GPU\s+)((?:[0-9a-f]{4,8}:)?[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-9a-f])?)|\bGPU\s+(\d{1,2})\b|cuda:(\d{1,2})\b",
    )
    .ok()
});

fn outcome(path: &Path, r: &Report) -> RunOutcome {
    let lead = r.top().or(r.findings.first());
    let mut hosts = BTreeSet::new();
    let mut gpus = BTreeSet::new();
    if let Some(f) = lead {
        if let Some(h) = &f.origin.host {
            hosts.insert(h.clone());
        }
        for e in &f.evidence {
            if let Some(h) = &e.host {
                hosts.insert(h.clone());
            }
        }
        let host = f.origin.host.clone();
        if let Some(re) = GPU_RE.as_ref() {
            for e in &f.evidence {
                for c in re.captures_iter(&e.text) {
                    let id = c
                        .get(1)
                        .map(|m| m.as_str().to_ascii_lowercase())
                        .or_else(|| c.get(2).or(c.get(3)).map(|m| format!("gpu{}", m.as_str())));
                    if let Some(id) = id {
                        let h = e.host.clone().or(host.clone());
                        gpus.insert(match h {
                            Some(h) => format!("{h}/{id}"),
                            None => id,
                        });
                    }
                }
            }
        }
    }
    RunOutcome {
        path: path.display().to_string(),
        verdict: r.verdict,
        fingerprint: r.fingerprint.clone(),
        category: lead.map(|f| f.category),
        action: action_of(r),
        title: lead.map(|f| f.title.clone()),
        confidence: lead.map(|f| f.confidence),
        hosts: hosts.into_iter().collect(),
        gpus: gpus.into_iter().collect(),
        seen: newest_mtime(path).map(utc),
        warnings: r.warnings.len(),
    }
}

fn newest_mtime(path: &Path) -> Option<u64> {
    walkdir::WalkDir::new(path)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .filter_map(|e| e.metadata().ok()?.modified().ok())
        .filter_map(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
        .max()
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ` (civil-from-days, proleptic Gregorian).
pub fn utc(secs: u64) -> String {
    crate::sources::units::utc_z(secs)
}

/// Diagnose every run, `threads` runs at a time (one thread per run, one compiled engine
/// per worker). Results come back in the order of `runs`.
pub fn analyse(kb: &KnowledgeBase, runs: &[PathBuf], threads: usize) -> Vec<RunOutcome> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<RunOutcome>>> = Mutex::new(vec![None; runs.len()]);
    let threads = threads.clamp(1, runs.len().max(1));
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let engine = Engine::new(kb);
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(run) = runs.get(i) else { break };
                    let r = crate::diagnose_with(&engine, &[run.display().to_string()], 1);
                    let o = outcome(run, &r);
                    results.lock().unwrap_or_else(|e| e.into_inner())[i] = Some(o);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .flatten()
        .collect()
}

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

/// Group outcomes by fingerprint; biggest groups first, then by fingerprint for stability.
pub fn group(outcomes: &[RunOutcome], warnings: Vec<Warning>) -> Triage {
    let mut by: BTreeMap<(Option<String>, Verdict), Vec<&RunOutcome>> = BTreeMap::new();
    for o in outcomes {
        by.entry((o.fingerprint.clone(), o.verdict))
            .or_default()
            .push(o);
    }
    let mut groups: Vec<Group> = by
        .into_iter()
        .map(|((fp, verdict), runs)| {
            let mut hosts: BTreeMap<String, usize> = BTreeMap::new();
            let mut gpus: BTreeMap<String, usize> = BTreeMap::new();
            for r in &runs {
                for h in &r.hosts {
                    *hosts.entry(h.clone()).or_default() += 1;
                }
                for g in &r.gpus {
                    *gpus.entry(g.clone()).or_default() += 1;
                }
            }
            let failed = verdict != Verdict::NoFailure;
            let recurring = if failed {
                recurrences(&hosts, &gpus)
            } else {
                Vec::new()
            };
            let seen: Vec<&String> = runs.iter().filter_map(|r| r.seen.as_ref()).collect();
            let lead = runs[0];
            Group {
                fingerprint: fp,
                count: runs.len(),
                verdict,
                category: lead.category,
                action: lead.action,
                title: lead.title.clone(),
                first_seen: seen.iter().min().map(|s| s.to_string()),
                last_seen: seen.iter().max().map(|s| s.to_string()),
                hosts,
                gpus,
                recurring,
                example: lead.path.clone(),
                runs: runs.iter().map(|r| r.path.clone()).collect(),
            }
        })
        .collect();
    groups.sort_by(|a, b| {
        (a.verdict == Verdict::NoFailure)
            .cmp(&(b.verdict == Verdict::NoFailure))
            .then(b.count.cmp(&a.count))
            .then(a.fingerprint.cmp(&b.fingerprint))
    });
    let mut all_hosts: BTreeMap<String, usize> = BTreeMap::new();
    let mut all_gpus: BTreeMap<String, usize> = BTreeMap::new();
    // A node that keeps failing for config or code reasons is not suspect hardware.
    for o in outcomes
        .iter()
        .filter(|o| o.verdict != Verdict::NoFailure && !o.action.is_fix())
    {
        for h in &o.hosts {
            *all_hosts.entry(h.clone()).or_default() += 1;
        }
        for g in &o.gpus {
            *all_gpus.entry(g.clone()).or_default() += 1;
        }
    }
    Triage {
        schema: SCHEMA,
        runs_total: outcomes.len(),
        groups,
        suspects: recurrences(&all_hosts, &all_gpus),
        warnings,
    }
}

fn recurrences(hosts: &BTreeMap<String, usize>, gpus: &BTreeMap<String, usize>) -> Vec<Recurrence> {
    let mut v: Vec<Recurrence> = hosts
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(h, n)| Recurrence {
            kind: Suspect::Host,
            name: h.clone(),
            runs: *n,
        })
        .chain(
            gpus.iter()
                .filter(|(_, n)| **n > 1)
                .map(|(g, n)| Recurrence {
                    kind: Suspect::Gpu,
                    name: g.clone(),
                    runs: *n,
                }),
        )
        .collect();
    v.sort_by(|a, b| b.runs.cmp(&a.runs).then(a.name.cmp(&b.name)));
    v
}

impl Triage {
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

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

pub fn render_table(t: &Triage) -> String {
    let mut tb = comfy_table::Table::new();
    tb.load_style(comfy_table::presets::UTF8_BORDERS_ONLY);
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
        tb.add_row(vec![
            g.count.to_string(),
            g.fingerprint.clone().unwrap_or_else(|| "-".into()),
            g.category
                .map_or_else(|| g.verdict.to_string(), |c| c.to_string()),
            g.action.to_string(),
            g.first_seen.clone().unwrap_or_default(),
            g.last_seen.clone().unwrap_or_default(),
            hosts_text(&g.hosts, 3),
            g.example.clone(),
        ]);
    }
    let mut s = format!("{tb}\n{} runs, {} groups\n", t.runs_total, t.groups.len());
    for r in &t.suspects {
        s.push_str(&format!("suspect: {}\n", suspect_line(r)));
    }
    for w in &t.warnings {
        s.push_str(&format!(
            "warning: {}{}\n",
            w.path
                .as_ref()
                .map(|p| format!("{p}: "))
                .unwrap_or_default(),
            w.message
        ));
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

/// Discover, analyse and group.
pub fn run(kb: &KnowledgeBase, args: &[String], threads: usize) -> Triage {
    let (runs, warnings) = discover(args);
    let outcomes = analyse(kb, &runs, threads);
    group(&outcomes, warnings)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn action_classes_map_to_documented_statuses() {
        assert_eq!(Action::RetryElsewhere.exit_status(), 10);
        assert_eq!(Action::ReplaceHardware.exit_status(), 11);
        assert_eq!(Action::FixEnvironment.exit_status(), 12);
        assert_eq!(Action::FixCode.exit_status(), 13);
        assert_eq!(Action::Investigate.exit_status(), 14);
        assert_eq!(Action::None.exit_status(), 0);
    }

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(utc(1_715_678_042), "2024-05-14T09:14:02Z");
    }

    #[test]
    fn recurring_hosts_are_hardware_suspects() {
        let o = |p: &str, h: &str| RunOutcome {
            path: p.into(),
            verdict: Verdict::Diagnosed,
            fingerprint: Some("fp1:x".into()),
            category: Some(Category::GpuHardwareXid),
            action: Action::ReplaceHardware,
            title: None,
            confidence: Some(0.9),
            hosts: vec![h.into()],
            gpus: vec![],
            seen: None,
            warnings: 0,
        };
        let t = group(&[o("a", "n1"), o("b", "n1"), o("c", "n2")], vec![]);
        assert_eq!(t.groups.len(), 1);
        assert_eq!(t.groups[0].count, 3);
        assert_eq!(
            t.groups[0].recurring,
            vec![Recurrence {
                kind: Suspect::Host,
                name: "n1".into(),
                runs: 2
            }]
        );
    }
}
