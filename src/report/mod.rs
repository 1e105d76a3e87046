//! Reports: the JSON contract of DESIGN.md (`Report`) and its renderings for people
//! (terminal, markdown, github, junit) and machines (json), and the triage view. The only
//! module that formats output; it decides nothing (that is `correlate`) and never sees a regex.

pub mod facts;
pub mod github;
pub mod junit;
pub mod markdown;
pub mod progress;
pub mod rules;
pub mod terminal;
pub mod timeline;
pub mod triage;

use crate::analyze::{Analysis, CoreReport, InputInfo};
pub use crate::correlate::ErrorLine;
use crate::correlate::{Diagnosis, Finding, RULED_OUT_BELOW};
use crate::model::{Fact, Verdict, Warning};
use crate::rules::Role;
use serde::Serialize;

pub const SCHEMA: &str = "trainwreck.report/1";

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub schema: &'static str,
    pub verdict: Verdict,
    pub findings: Vec<Finding>,
    pub facts: Vec<Fact>,
    pub fingerprint: Option<String>,
    pub inputs: Vec<InputInfo>,
    pub warnings: Vec<Warning>,
    /// Core dumps read (an addition to the contract): signal, fault, mapping, stack.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub cores: Vec<CoreReport>,
    /// For an unknown failure: the last error lines of the run's logs (an addition to the
    /// contract), so there is something to read and to group by before a rule exists.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub last_errors: Vec<ErrorLine>,
    /// The merged per-rank timeline (`--timeline`); not part of the JSON contract.
    #[serde(skip)]
    pub timeline: crate::timeline::Timeline,
}

/// The report of one run: the analysis's inputs, facts and warnings with the diagnosis's
/// decisions, as they are. Decides nothing.
pub fn build(a: Analysis, d: Diagnosis) -> Report {
    Report {
        schema: SCHEMA,
        verdict: d.verdict,
        findings: d.findings,
        facts: a.facts.all().to_vec(),
        fingerprint: d.fingerprint,
        inputs: a.inputs,
        warnings: a.warnings,
        cores: a.cores,
        last_errors: d.last_errors,
        timeline: d.timeline,
    }
}

impl Report {
    /// A report holding only facts and warnings (`trainwreck facts`), so they go through the
    /// same redaction as a full report.
    pub fn of_facts(facts: Vec<Fact>, warnings: Vec<Warning>) -> Report {
        Report {
            schema: SCHEMA,
            verdict: Verdict::NoFailure,
            findings: Vec::new(),
            facts,
            fingerprint: None,
            inputs: Vec::new(),
            warnings,
            cores: Vec::new(),
            last_errors: Vec::new(),
            timeline: Default::default(),
        }
    }

    /// The most likely root cause, if any.
    pub fn top(&self) -> Option<&Finding> {
        self.findings
            .first()
            .filter(|f| f.symptom_of.is_none() && f.confidence >= RULED_OUT_BELOW)
    }

    pub fn symptoms_of<'a>(&'a self, rule: &'a str) -> impl Iterator<Item = &'a Finding> + 'a {
        self.findings
            .iter()
            .filter(move |f| f.symptom_of.as_deref() == Some(rule))
    }

    pub fn considered(&self) -> impl Iterator<Item = &Finding> {
        let top = self.top().map(|f| f.rule.clone());
        self.findings.iter().filter(move |f| {
            Some(&f.rule) != top.as_ref() && f.symptom_of.is_none() && f.role != Role::Advice
        })
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Every text of the report from the inputs, through the one redactor, before any format
    /// renders it (so an escaping format, XML or workflow commands, cannot hide a secret from
    /// it). The fingerprint is computed before and is never touched.
    pub fn redact(&mut self, red: &mut crate::redact::Redactor) {
        for f in &mut self.findings {
            red_all(red, [&mut f.title, &mut f.fix]);
            for e in &mut f.evidence {
                red_all(red, [&mut e.text, &mut e.path]);
                if let Some(h) = e.host.as_mut() {
                    *h = red.host(h);
                }
                if let Some(w) = e.why.as_mut() {
                    *w = red.text(w);
                }
            }
            for a in &mut f.against {
                red_all(red, [&mut a.text, &mut a.why, &mut a.path]);
            }
            for c in &mut f.score {
                c.what = red.text(&c.what);
            }
            for o in [&mut f.next_time, &mut f.alternatives]
                .into_iter()
                .flatten()
            {
                *o = red.text(o);
            }
            if let Some(h) = f.origin.host.as_mut() {
                *h = red.host(h);
            }
        }
        for fact in &mut self.facts {
            if let crate::model::FactValue::Text(v) = &mut fact.value {
                *v = red.value_of(&fact.name, v);
            }
            red_all(red, [&mut fact.text, &mut fact.path]);
        }
        for w in &mut self.warnings {
            w.message = red.text(&w.message);
        }
        for e in &mut self.last_errors {
            red_all(red, [&mut e.text, &mut e.path]);
        }
        for i in &mut self.inputs {
            i.path = red.text(&i.path);
        }
    }

    /// Hosts named by the findings, sorted (for consistent redaction masks).
    pub fn hosts(&self) -> Vec<String> {
        let mut set = std::collections::BTreeSet::new();
        for f in &self.findings {
            if let Some(h) = &f.origin.host {
                set.insert(h.clone());
            }
            for e in &f.evidence {
                if let Some(h) = &e.host {
                    set.insert(h.clone());
                }
            }
        }
        set.into_iter().collect()
    }
}

fn red_all<const N: usize>(red: &mut crate::redact::Redactor, texts: [&mut String; N]) {
    for t in texts {
        *t = red.text(t);
    }
}

/// Where a finding started, for people: `rank 1, host node7, pid 5151, at …`.
pub fn origin_text(f: &Finding) -> Option<String> {
    let o = &f.origin;
    let mut parts = Vec::new();
    if let Some(r) = o.rank {
        parts.push(format!("rank {r}"));
    }
    if let Some(h) = &o.host {
        parts.push(format!("host {h}"));
    }
    if let Some(p) = o.pid {
        parts.push(format!("pid {p}"));
    }
    if let Some(t) = &o.time {
        parts.push(format!("at {t}"));
    }
    (!parts.is_empty()).then(|| parts.join(", "))
}

/// `s` cut to `n` characters, with an ellipsis when cut.
pub fn cut(s: &str, n: usize) -> String {
    if s.chars().count() <= n {
        s.to_string()
    } else {
        s.chars().take(n).collect::<String>() + "…"
    }
}
