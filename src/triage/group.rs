//! Grouping run outcomes by fingerprint, and the hosts and GPUs that recur across failed
//! runs (hardware suspects), into a `report::triage::Triage`. Pure data in, data out: it
//! never reads files or formats output.

use super::{RunOutcome, SeenFrom};
use crate::model::Verdict;
use crate::model::Warning;
use crate::report::triage::{Group, Recurrence, RunLines, SCHEMA, Suspect, Triage};
use std::collections::BTreeMap;

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
                // The weaker source when the runs differ: a date that may be a copy's.
                seen_from: runs
                    .iter()
                    .filter_map(|r| r.seen_from)
                    .find(|f| *f == SeenFrom::Mtime)
                    .or(runs.iter().find_map(|r| r.seen_from)),
                hosts,
                gpus,
                recurring,
                example: lead.path.clone(),
                runs: runs.iter().map(|r| r.path.clone()).collect(),
                evidence: runs
                    .iter()
                    .filter(|r| !r.cited.is_empty())
                    .map(|r| RunLines {
                        run: r.path.clone(),
                        lines: r.cited.clone(),
                    })
                    .collect(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Action, Category};

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
            seen_from: None,
            warnings: 0,
            cited: vec![crate::report::triage::CitedLine {
                path: format!("{p}/train.log"),
                line: Some(7),
                text: "NVRM: Xid (PCI:0000:3b:00): 79".into(),
            }],
        };
        let t = group(&[o("a", "n1"), o("b", "n1"), o("c", "n2")], vec![]);
        // Each run keeps its own cited lines, in the order of the group's runs.
        let ev = &t.groups[0].evidence;
        assert_eq!(
            ev.iter().map(|r| r.run.as_str()).collect::<Vec<_>>(),
            t.groups[0].runs
        );
        assert_eq!(ev[1].lines[0].path, "b/train.log");
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
