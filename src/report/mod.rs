//! Reports: the JSON contract of docs/json-schema.md (`Report`) and its renderings for people
//! (terminal, markdown, github, junit) and machines (json), each a printer in the one table of
//! output formats (`format`), and the triage view. The only
//! module that formats output; it decides nothing (that is `correlate`) and never sees a regex.

pub(crate) mod diff;
pub(crate) mod facts;
pub mod format;
pub mod github;
pub(crate) mod history;
pub mod html;
pub(crate) mod i18n;
pub(crate) mod json;
pub mod junit;
pub mod markdown;
pub(crate) mod progress;
pub(crate) mod rules;
pub(crate) mod table;
pub mod terminal;
pub(crate) mod timeline;
pub mod triage;

use crate::analyze::{Analysis, CoreReport, InputInfo};
pub use crate::correlate::ErrorLine;
use crate::correlate::{Diagnosis, Finding, RULED_OUT_BELOW};
use crate::model::{Fact, Text, Verdict, Warning};
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
    /// `trainwreck run`'s memory samples, for the HTML page's curves; not part of the JSON
    /// contract.
    #[serde(skip)]
    pub samples: Vec<crate::sources::samples::Samples>,
    /// "Seen before": this fingerprint in the failure history, when one is configured (an
    /// addition to the contract, docs/json-schema.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<crate::model::Seen>,
    /// `analyze --baseline`: what changed since the good run (`trainwreck.diff/1`, an
    /// addition to the contract, docs/diff.md).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub diff: Option<crate::diff::Diff>,
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
        samples: a.samples,
        last_errors: d.last_errors,
        timeline: d.timeline,
        history: None,
        diff: None,
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
            samples: Vec::new(),
            history: None,
            diff: None,
        }
    }

    /// The most likely root cause, if any: only a diagnosed run has one (an unknown failure's
    /// findings are candidates, shown as the closest).
    pub fn top(&self) -> Option<&Finding> {
        self.findings.first().filter(|f| {
            self.verdict == Verdict::Diagnosed
                && f.symptom_of.is_none()
                && f.strength >= RULED_OUT_BELOW
        })
    }

    /// The causes the evidence argued against (a rule's finding with `against`; the second
    /// tier's copy of the same kind says no more), at most two: what an unknown failure shows
    /// besides its closest guess — why each is out, what else fits, its contradicted-case fix.
    pub fn ruled_out_by_evidence(&self) -> impl Iterator<Item = &Finding> {
        self.findings
            .iter()
            .filter(|f| !f.against.is_empty() && f.rule != crate::correlate::second_tier::RULE)
            .take(2)
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

    /// Each finding [`Report::considered`] and why it ranks lower, decided once here for
    /// every view (terminal, Markdown, HTML) from the same keys as the ranking
    /// (`correlate::why_lower`); the views only put the reason in words.
    pub fn considered_why(&self) -> Vec<Considered<'_>> {
        let top = self.top();
        self.considered()
            .map(|f| {
                let why = match top {
                    Some(top) => match crate::correlate::why_lower(f, top) {
                        crate::correlate::Lower::Against => {
                            f.against.first().map_or(Lower::Tie, Lower::Against)
                        }
                        crate::correlate::Lower::Weak => Lower::Weak,
                        crate::correlate::Lower::LessEvidence => Lower::LessEvidence,
                        crate::correlate::Lower::Tie => Lower::Tie,
                    },
                    // No root cause: an unknown failure's candidates, each for itself.
                    None => match f.against.first() {
                        Some(a) => Lower::Against(a),
                        None if f.strength < RULED_OUT_BELOW => Lower::Weak,
                        None => Lower::OnlyCandidate,
                    },
                };
                Considered { finding: f, why }
            })
            .collect()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// Every text of the report from the inputs, through the one redactor, before any format
    /// renders it (so an escaping format, XML or workflow commands, cannot hide a secret from
    /// it). The fingerprint is computed before and is never touched.
    pub fn redact(&mut self, red: &mut crate::redact::Redactor) {
        self.map_texts(&mut |name, s| match name {
            Some(n) => red.value_of(n, s),
            None => red.text(s),
        });
    }

    /// The one walk over the report's input-derived texts, for redaction (neutralisation is
    /// `emit`'s, on the whole text). `f` gets the name of a named value (a fact's name, a
    /// difference's key), so a bare value is masked when its name names a secret.
    fn map_texts(&mut self, f: &mut dyn FnMut(Option<&str>, &str) -> String) {
        let mut each = |t: &mut String| *t = f(None, t);
        // A text's Chinese, where it has one.
        fn zh(t: Option<&mut Text>) -> Option<&mut String> {
            t.map(|t| &mut t.zh).filter(|z| !z.is_empty())
        }
        for fd in &mut self.findings {
            each(&mut fd.title.en);
            each(&mut fd.fix.en);
            // The Chinese texts hold the same captured values as the English ones.
            zh(Some(&mut fd.title))
                .into_iter()
                .chain(zh(Some(&mut fd.fix)))
                .chain(zh(fd.next_time.as_mut()))
                .chain(zh(fd.alternatives.as_mut()))
                .for_each(&mut each);
            for e in &mut fd.evidence {
                each(&mut e.text);
                each(&mut e.path);
                let why = e.why.as_mut().map(|w| (&mut w.en, &mut w.zh));
                let (why_en, why_zh) = why.map_or((None, None), |(en, zh)| {
                    (Some(en), Some(zh).filter(|z| !z.is_empty()))
                });
                e.host
                    .iter_mut()
                    .chain(why_en)
                    .chain(why_zh)
                    .for_each(&mut each);
            }
            for a in &mut fd.against {
                each(&mut a.text);
                each(&mut a.why.en);
                each(&mut a.path);
                zh(Some(&mut a.why)).into_iter().for_each(&mut each);
            }
            fd.score.iter_mut().for_each(|c| each(&mut c.what));
            fd.next_time
                .iter_mut()
                .map(|t| &mut t.en)
                .chain(fd.alternatives.iter_mut().map(|t| &mut t.en))
                .chain(fd.origin.host.iter_mut())
                .chain(fd.origin.time.iter_mut())
                .for_each(&mut each);
        }
        for e in &mut self.timeline.events {
            each(&mut e.text);
            each(&mut e.path);
            e.time.iter_mut().for_each(&mut each);
        }
        for w in &mut self.warnings {
            w.path.iter_mut().for_each(&mut each);
            w.message.each_mut().for_each(&mut each);
        }
        for e in &mut self.last_errors {
            each(&mut e.text);
            each(&mut e.path);
        }
        self.inputs.iter_mut().for_each(|i| each(&mut i.path));
        // The history's texts come from other runs' inputs and from people (notes).
        if let Some(h) = &mut self.history {
            h.hosts.iter_mut().for_each(&mut each);
            for n in &mut h.notes {
                each(&mut n.text);
                each(&mut n.author);
            }
            for run in &mut h.runs {
                run.job
                    .iter_mut()
                    .chain(run.host.iter_mut())
                    .for_each(&mut each);
            }
        }
        if let Some(d) = &mut self.diff {
            d.map_texts(&mut *f);
        }
        for fact in &mut self.facts {
            if let crate::model::FactValue::Text(v) = &mut fact.value {
                *v = f(Some(&fact.name), v);
            }
            fact.text = f(None, &fact.text);
            fact.path = f(None, &fact.path);
        }
        // Numbers but for their file's path (and a polled sampler's first time as printed).
        for s in &mut self.samples {
            s.path = f(None, &s.path);
            if let crate::sources::samples::Clock::Wall { start, .. } = &mut s.clock {
                *start = f(None, start);
            }
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

/// A finding that was considered and ranks below the cause, with why ([`Report::considered_why`]).
#[derive(Debug, Clone, Copy)]
pub struct Considered<'a> {
    pub finding: &'a Finding,
    pub why: Lower<'a>,
}

impl Considered<'_> {
    /// Below the floor: ruled out rather than a rival cause.
    pub fn ruled_out(&self) -> bool {
        self.finding.strength < RULED_OUT_BELOW
    }
}

/// Why a considered finding ranks lower: the ranking's reason, or, with no root cause, why a
/// candidate is not one.
#[derive(Debug, Clone, Copy)]
pub enum Lower<'a> {
    /// Evidence argues against it (its first `against`).
    Against(&'a crate::correlate::Against),
    /// Below the floor: ruled out for lack of evidence.
    Weak,
    /// Less confidence than the cause.
    LessEvidence,
    /// As much confidence as the cause; ranked after it by provenance or order.
    Tie,
    /// No cause was found and it is the only kind of candidate (not ruled out).
    OnlyCandidate,
}

/// Where a finished text goes. Every text printed (stdout and stderr, reports, tables, our
/// own messages) passes [`emit`] once, whole, with its sink: this is the one place that makes
/// what came from inputs, rule files, the history or people harmless for what reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sink {
    /// A terminal, a pager or a log: control characters shown as `\x1b`-style escapes. Our
    /// own colours are written as [`COLOUR`] markers by `terminal::Style` and become real
    /// escapes only here, after the input's have been made visible.
    Terminal,
    /// Markdown and GitHub workflow commands: printed to terminals and Actions logs as well,
    /// so the same as a terminal, with no colours.
    Document,
    /// XML 1.0 (JUnit) and HTML (the page is well-formed XML too): characters XML forbids or discourages (controls, U+FFFE/U+FFFF and
    /// the other noncharacters) become U+FFFD, so one byte of a log cannot make the report
    /// ill-formed.
    Xml,
    /// JSON: serde has escaped what JSON needs; the text is data and is left as it is.
    Json,
}

/// Stands for ESC in our own colour codes until [`emit`] (a private-use character; one that
/// comes from an input is made visible like a control character).
pub const COLOUR: char = '\u{E000}';

/// The text made safe for its sink (see [`Sink`]).
pub fn emit(sink: Sink, text: &str) -> std::borrow::Cow<'_, str> {
    match sink {
        Sink::Json => std::borrow::Cow::Borrowed(text),
        Sink::Terminal if text.contains(COLOUR) => {
            // Our colour markers become escapes; any other COLOUR (an input's) is made
            // visible. An input can at most forge one of these six SGR codes (bold, dim, red,
            // green, yellow, reset): never a title, the clipboard, a cursor move or hiding.
            const OURS: &[&str] = &["[0m", "[1m", "[2m", "[32m", "[33m", "[1;31m"];
            let mut out = String::with_capacity(text.len());
            for (i, part) in text.split(COLOUR).enumerate() {
                if i > 0 {
                    match OURS.iter().find(|c| part.starts_with(**c)) {
                        Some(_) => out.push('\x1b'),
                        None => out.push_str("\\u{e000}"),
                    }
                }
                out.push_str(&neutralize(part));
            }
            std::borrow::Cow::Owned(out)
        }
        Sink::Terminal => neutralize(text),
        Sink::Document => neutralize(text),
        Sink::Xml => {
            if !text.chars().any(not_xml) {
                return std::borrow::Cow::Borrowed(text);
            }
            std::borrow::Cow::Owned(
                text.chars()
                    .map(|c| if not_xml(c) { '\u{FFFD}' } else { c })
                    .collect(),
            )
        }
    }
}

/// A character XML 1.0 does not allow (C0 controls but tab, LF and CR; U+FFFE, U+FFFF) or
/// discourages (DEL, C1 controls, the noncharacters U+FDD0–U+FDEF and U+nFFFE/U+nFFFF).
pub fn not_xml(c: char) -> bool {
    let u = c as u32;
    (u < 0x20 && !matches!(c, '\t' | '\n' | '\r'))
        || (0x7f..=0x9f).contains(&u)
        || (0xFDD0..=0xFDEF).contains(&u)
        || (u & 0xFFFE) == 0xFFFE
}

/// Text from the inputs made safe for a terminal: ESC, the other C0 controls except tab and
/// newline, DEL and the C1 controls (U+0080–U+009F, where a terminal may read U+009B as CSI)
/// are shown as `\x1b`-style escapes, so a log cannot set the window title, write the clipboard
/// (OSC 52), move the cursor or hide a line behind a carriage return. What follows an ESC stays
/// as plain text. Matching never sees this: the scanner strips ANSI colours on its own.
pub fn neutralize(s: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| {
        let u = c as u32;
        (u < 0x20 && c != '\t' && c != '\n') || (0x7f..=0x9f).contains(&u) || c == COLOUR
    };
    if !s.chars().any(bad) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c == COLOUR {
            out.push_str("\\u{e000}");
        } else if bad(c) {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
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

/// A core's one-line headline, as every printer shows it: the signal, its code and what the
/// code means, the faulting address and the mapping it falls in.
pub(crate) fn core_headline(s: &crate::sources::elfcore::CoreSummary) -> String {
    let mut head = Vec::new();
    if let Some(sig) = &s.signal {
        head.push(sig.clone());
    }
    if let Some(code) = &s.code {
        head.push(match &s.meaning {
            Some(m) => format!("{code} ({m})"),
            None => code.clone(),
        });
    }
    if let Some(a) = &s.fault_addr {
        head.push(format!("at {a}"));
    }
    if let Some(m) = &s.fault_mapping {
        head.push(format!("in {m}"));
    }
    head.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_our_colour_markers_become_escapes() {
        let ours = format!("{COLOUR}[1;31mCause{COLOUR}[0m");
        let theirs = format!("x{COLOUR}]0;title\x07 {COLOUR}[8mhidden \x1b[2J");
        let out = emit(Sink::Terminal, &format!("{ours} {theirs}")).into_owned();
        assert!(out.starts_with("\x1b[1;31mCause\x1b[0m "), "{out}");
        assert!(!out[20..].contains('\x1b'), "{out}");
        assert!(
            out.contains("\\u{e000}]0;title\\x07") && out.contains("\\x1b[2J"),
            "{out}"
        );
        assert_eq!(
            emit(Sink::Document, &ours),
            "\\u{e000}[1;31mCause\\u{e000}[0m"
        );
        assert_eq!(emit(Sink::Xml, "a\u{FFFE}b\u{1}"), "a\u{FFFD}b\u{FFFD}");
    }
}
