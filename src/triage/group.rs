//! Grouping run outcomes by fingerprint, and the hosts and GPUs that recur across failed
//! runs (hardware suspects). Pure data in, data out: it never reads files or formats output
//! (`report::triage` renders a `Triage`).

use super::{RunOutcome, SCHEMA};
use crate::model::{Action, Category, Verdict, Warning};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

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

#[cfg(test)]
mod tests {
    use super::*;

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
