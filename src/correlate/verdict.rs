//! What a run's findings add up to: the verdict (diagnosed, unknown failure, no failure) and,
//! for an unknown failure, the last error lines of its logs to show instead of a diagnosis.
//! Decides from data; it never reads files or formats output.

use super::{Finding, RULED_OUT_BELOW};
use crate::analyze::Analysis;
use crate::model::Verdict;
use serde::Serialize;

/// A line of a run's log cited as it is (an unknown failure's last errors).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ErrorLine {
    pub path: String,
    pub line: u64,
    pub text: String,
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
pub fn last_errors(a: &Analysis) -> Vec<ErrorLine> {
    let mut out: Vec<ErrorLine> = Vec::new();
    for t in &a.error_tail {
        let Some(input) = a.inputs.get(t.input) else {
            continue;
        };
        if input.phase == crate::model::Phase::Before || !input.kind.is_scanned() {
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
            .is_some_and(|i| i.phase != crate::model::Phase::Before && i.kind.is_scanned())
            && is_fatal_line(&t.text)
    }) || !a.cores.is_empty()
        || a.facts.all().iter().any(|f| {
            (f.name.ends_with(".exit_code") && f.value.as_i64().is_some_and(|c| c != 0))
                || f.name.ends_with(".exit_signal")
        })
}

/// Diagnosed when a cause that is not a symptom is confident enough; an unknown failure
/// when there are findings or signs of failure but no such cause; otherwise no failure.
pub fn verdict(findings: &[Finding], a: &Analysis) -> Verdict {
    let has_cause = findings
        .iter()
        .any(|f| f.symptom_of.is_none() && f.confidence >= RULED_OUT_BELOW);
    if has_cause {
        Verdict::Diagnosed
    } else if !findings.is_empty() || failure_signs(a) {
        Verdict::UnknownFailure
    } else {
        Verdict::NoFailure
    }
}
