//! `trainwreck triage`: analyse many failed runs in parallel and group them by fingerprint,
//! calling out hosts and GPUs that keep failing; and the action exit status of one report.
//! `discover` finds the runs, this module diagnoses them on a pool of threads (one compiled
//! engine per worker) and keeps each one's outcome, `group` groups the outcomes into a
//! `report::triage::Triage` (the contract lives beside its renderings). Diagnosis itself
//! stays in `diagnose`; this module never reads log contents itself and never formats
//! output.

pub mod discover;
pub(crate) mod group;

pub use crate::report::triage::{CitedLine, Group, Recurrence, RunLines, SCHEMA, Suspect, Triage};
pub use discover::discover;
pub use group::group;

use crate::analyze::Engine;
use crate::model::{Action, Category, Text, Verdict};
use crate::report::Report;
use crate::rules::KnowledgeBase;
use regex::Regex;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};

/// The verdict and the top finding's action class as one exit status.
pub fn exit_for(r: &Report) -> i32 {
    action_of(r).exit_status()
}

/// `triage --exit-code action`: analyze's statuses, for the most frequent failure (groups come
/// failures first, most runs first); 0 when no run failed.
pub fn exit_for_triage(t: &crate::report::triage::Triage) -> i32 {
    t.groups
        .first()
        .filter(|g| g.verdict != Verdict::NoFailure)
        .map_or(Action::None.exit_status(), |g| g.action.exit_status())
}

/// The action a report asks for: the top finding's, `none` or `investigate`.
pub fn action_of(r: &Report) -> Action {
    match r.top() {
        Some(t) => t.action,
        None if r.verdict == Verdict::NoFailure => Action::None,
        None => Action::Investigate,
    }
}

crate::model::vocabulary! {
    /// Where a run's date came from.
    SeenFrom {
        /// The logs' own timestamps (the failure's time).
        Logs = "logs",
        /// The newest file's modification time: the logs carry no time.
        Mtime = "mtime",
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
    /// The lead finding's title (`title`, `title_zh` where the rule gives it).
    #[serde(flatten, with = "crate::model::keys::title")]
    pub title: Option<Text>,
    pub confidence: Option<f64>,
    pub hosts: Vec<String>,
    pub gpus: Vec<String>,
    /// When the run failed (its logs' time), else when it was last written (newest file
    /// mtime), UTC; `seen_from` says which.
    pub seen: Option<String>,
    pub seen_from: Option<SeenFrom>,
    pub warnings: usize,
    /// The top finding's first evidence lines (`report::triage::MAX_CITED`): what a group's
    /// runs show of their cause without each run's whole report.
    pub cited: Vec<CitedLine>,
}

static GPU_RE: LazyLock<Option<Regex>> = LazyLock::new(|| {
    Regex::new(
        r"(?i)(?:PCI:|GPU\s+)((?:[0-9a-f]{4,8}:)?[0-9a-f]{2}:[0-9a-f]{2}(?:\.[0-9a-f])?)|\bGPU\s+(\d{1,2})\b|cuda:(\d{1,2})\b",
    )
    .ok()
});

fn outcome(path: &Path, r: &Report) -> RunOutcome {
    let lead = r.top().or(r.findings.first());
    // When the run failed by its own logs; a copied run keeps its date. The newest file's
    // modification time only when the logs carry no time.
    let (seen, seen_from) = match crate::history::record::failure_time(r)
        .and_then(|t| crate::history::record::epoch(&t))
        .filter(|t| *t >= 0)
    {
        Some(t) => (Some(t as u64), Some(SeenFrom::Logs)),
        None => match newest_mtime(path) {
            Some(t) => (Some(t), Some(SeenFrom::Mtime)),
            None => (None, None),
        },
    };
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
        seen: seen.map(utc),
        seen_from,
        warnings: r.warnings.len(),
        cited: lead
            .filter(|_| r.verdict != Verdict::NoFailure)
            .map(|f| {
                f.evidence
                    .iter()
                    .take(crate::report::triage::MAX_CITED)
                    .map(|e| CitedLine {
                        path: e.path.clone(),
                        line: e.line,
                        text: crate::report::cut(&e.text, 300),
                    })
                    .collect()
            })
            .unwrap_or_default(),
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
pub fn analyse(
    kb: &KnowledgeBase,
    runs: &[PathBuf],
    threads: usize,
    each: &(dyn Fn(&Path, &Report) + Sync),
) -> Vec<RunOutcome> {
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
                    each(run, &r);
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

/// Discover, analyse and group.
pub fn run(kb: &KnowledgeBase, args: &[String], threads: usize) -> Triage {
    run_with(kb, args, threads, &|_, _| {})
}

/// [`run`], handing each run's report to `each` (from the worker threads) as it is made:
/// `triage --record` records them in the failure history.
pub fn run_with(
    kb: &KnowledgeBase,
    args: &[String],
    threads: usize,
    each: &(dyn Fn(&Path, &Report) + Sync),
) -> Triage {
    let (runs, warnings) = discover(args);
    let outcomes = analyse(kb, &runs, threads, each);
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
}
