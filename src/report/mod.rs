//! Reports: the JSON contract of DESIGN.md (`Report`) and its renderings for people
//! (terminal) and machines (json). The only module that writes output; it never sees a regex.

pub mod github;
pub mod junit;
pub mod markdown;
pub mod progress;
pub mod terminal;
pub mod timeline;

use crate::analyze::{Analysis, CoreReport, InputInfo};
use crate::correlate::{Finding, RULED_OUT_BELOW};
use crate::model::{Fact, Verdict, Warning};
use crate::rules::Role;
use serde::Serialize;

pub const SCHEMA: &str = "trainwreck.report/1";

#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ErrorLine {
    pub path: String,
    pub line: u64,
    pub text: String,
}

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

/// A line that ends a program: an uncaught Python exception, a fatal interpreter error, a C++
/// terminate. (Lines only reach here from the error tail, already prefix-peeled below.)
fn is_fatal_line(text: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::Regex::new(
            r"^(?:[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)(?::\s.*)?|Fatal Python error: .*|terminate called .*)$",
        )
        .expect("fatal-line regex")
    });
    let (_, at) = crate::sources::prefix::peel(text);
    re.is_match(text[at..].trim())
}

/// The last error-ish lines of the run's logs (not of before-run snapshots), newest last:
/// what an unknown failure shows instead of a diagnosis.
fn last_errors(a: &Analysis) -> Vec<ErrorLine> {
    let mut out: Vec<ErrorLine> = Vec::new();
    for t in &a.error_tail {
        let Some(input) = a.inputs.get(t.input) else {
            continue;
        };
        if crate::facts::is_before(&input.path) || !input.kind.is_scanned() {
            continue;
        }
        if out.iter().any(|e| e.text == t.text) {
            continue;
        }
        out.push(ErrorLine {
            path: input.path.clone(),
            line: t.line,
            text: t.text.clone(),
        });
    }
    let keep = out.len().saturating_sub(8);
    out.drain(..keep);
    out
}

/// Did the inputs show that something failed, even if no rule explains it?
fn failure_signs(a: &Analysis) -> bool {
    a.error_tail.iter().any(|t| {
        a.inputs
            .get(t.input)
            .is_some_and(|i| !crate::facts::is_before(&i.path) && i.kind.is_scanned())
            && is_fatal_line(&t.text)
    }) || !a.cores.is_empty()
        || a.facts.all().iter().any(|f| {
            (f.name.ends_with(".exit_code") && f.value.as_i64().is_some_and(|c| c != 0))
                || f.name.ends_with(".exit_signal")
        })
}

pub fn build(a: Analysis, findings: Vec<Finding>) -> Report {
    let has_cause = findings
        .iter()
        .any(|f| f.symptom_of.is_none() && f.confidence >= RULED_OUT_BELOW);
    let verdict = if has_cause {
        Verdict::Diagnosed
    } else if !findings.is_empty() || failure_signs(&a) {
        Verdict::UnknownFailure
    } else {
        Verdict::NoFailure
    };
    let fingerprint = crate::fingerprint::compute(&findings, &a, verdict);
    let last_errors = if verdict == Verdict::UnknownFailure {
        last_errors(&a)
    } else {
        Vec::new()
    };
    Report {
        schema: SCHEMA,
        verdict,
        findings,
        facts: a.facts.all().to_vec(),
        fingerprint,
        inputs: a.inputs,
        warnings: a.warnings,
        cores: a.cores,
        last_errors,
        timeline: Default::default(),
    }
}

impl Report {
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
