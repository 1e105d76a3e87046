//! Markdown for a GitHub job summary or a PR/issue comment: the cause, confidence, action
//! and fix up front, evidence in a collapsible block. Text only; the caller redacts it
//! (Markdown is meant to be pasted) and it never decides anything about the verdict.

use super::Report;
use super::i18n::{Lang, Tr};
use crate::correlate::Finding;
use crate::model::Verdict;
use std::fmt::Write;

/// The `markdown` format's printer: this report for a run, and the triage's and the diff's
/// Markdown.
pub struct Printer;

impl super::format::Printer for Printer {
    fn print(
        &self,
        view: super::format::View<'_>,
        o: &super::format::Options<'_>,
        _: Option<&mut crate::redact::Redactor>,
    ) -> Option<String> {
        use super::format::View;
        let lang = o.term.lang;
        match view {
            View::Run(r) => {
                let mut t = render_in(r, lang);
                if let Some(d) = &r.diff {
                    t.push('\n');
                    t.push_str(&super::diff::markdown(d, lang));
                }
                Some(t)
            }
            View::Triage(t) => Some(super::triage::render_markdown(t, lang)),
            View::Diff(d) => Some(super::diff::markdown(d, lang)),
            _ => None,
        }
    }
}

const MAX_EVIDENCE: usize = 12;

/// Escape what GitHub would read as HTML or table syntax, outside `code spans`.
pub fn inline(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut in_code = false;
    for c in s.chars() {
        match c {
            '`' => {
                in_code = !in_code;
                out.push(c);
            }
            '<' if !in_code => out.push_str("&lt;"),
            '>' if !in_code => out.push_str("&gt;"),
            '|' if !in_code => out.push_str("\\|"),
            '\n' | '\r' => out.push(' '),
            _ => out.push(c),
        }
    }
    out
}

/// A fenced block whose fence is longer than any backtick run inside it.
pub fn fenced(body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(3));
    format!("{fence}text\n{body}\n{fence}\n")
}

fn evidence_block(out: &mut String, f: &Finding, tr: Tr) {
    if f.evidence.is_empty() {
        return;
    }
    let mut body = String::new();
    for e in f.evidence.iter().take(MAX_EVIDENCE) {
        let loc = match e.line {
            Some(l) => format!("{}:{l}", e.path),
            None => e.path.clone(),
        };
        let rank = e.rank.map(|r| format!("[rank {r}] ")).unwrap_or_default();
        let _ = writeln!(body, "{loc}  {rank}{}", super::cut(&e.text, 300));
        if let Some(w) = tr.why(e) {
            let _ = writeln!(body, "    → {w}");
        }
    }
    let more = f.evidence.len().saturating_sub(MAX_EVIDENCE) as u64 + f.more_lines;
    if more > 0 {
        let _ = writeln!(body, "{}", tr.more_matching(more));
    }
    let _ = writeln!(
        out,
        "<details><summary>{}</summary>\n\n{}\n</details>\n",
        tr.md_evidence_summary(f.evidence.len()),
        fenced(body.trim_end())
    );
    against_block(out, f, tr);
}

/// The lines that argue against `f`, folded, each with why.
fn against_block(out: &mut String, f: &Finding, tr: Tr) {
    if !f.against.is_empty() {
        let mut body = String::new();
        for a in &f.against {
            let loc = match a.line {
                Some(l) => format!("{}:{l}", a.path),
                None => a.path.clone(),
            };
            let _ = writeln!(
                body,
                "{loc}  {}\n    ✗ {}",
                super::cut(&a.text, 200),
                tr.against_why(a)
            );
        }
        let _ = writeln!(
            out,
            "<details><summary>{} ({})</summary>\n\n{}\n</details>\n",
            tr.against(),
            f.against.len(),
            fenced(body.trim_end())
        );
    }
}

/// The Markdown report in English (see [`render_in`]).
pub fn render(r: &Report) -> String {
    render_in(r, Lang::En)
}

/// The Markdown report in `lang`; evidence, commands and numbers as they are.
pub fn render_in(r: &Report, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut out = String::new();
    match r.top() {
        Some(top) => {
            let _ = writeln!(
                out,
                "## trainwreck: `{}` — {}\n",
                top.category,
                inline(tr.title(top))
            );
            let _ = writeln!(
                out,
                "{}{}\n",
                tr.md_confidence_line(top),
                tr.started(top)
                    .map(|o| format!(" · {}", inline(&o)))
                    .unwrap_or_default()
            );
            let _ = writeln!(out, "{} {}\n", tr.md_fix(), inline(tr.fix(top)));
            if let Some(n) = tr.next_time(top) {
                let _ = writeln!(out, "{} {}\n", tr.md_next_time(), inline(n));
            }
            evidence_block(&mut out, top, tr);
            let symptoms: Vec<&Finding> = r.symptoms_of(&top.rule).collect();
            if !symptoms.is_empty() {
                let _ = writeln!(out, "{}\n", tr.md_symptoms());
                for s in symptoms {
                    let _ = writeln!(
                        out,
                        "- `{}` — {}{}",
                        s.category,
                        inline(tr.title(s)),
                        tr.md_lines(s.evidence.len())
                    );
                }
                out.push('\n');
            }
        }
        None if r.verdict == Verdict::NoFailure => {
            let _ = writeln!(out, "{}", tr.md_no_failure(r.inputs.len()));
        }
        None => {
            let _ = writeln!(out, "{}", tr.md_unknown());
            if let Some(f) = r.findings.first() {
                let _ = writeln!(out, "{}", tr.md_closest(f, &inline(tr.title(f))));
                evidence_block(&mut out, f, tr);
            }
            // What the evidence ruled out, why, what else fits and what to look at instead.
            for f in r.ruled_out_by_evidence() {
                let _ = writeln!(
                    out,
                    "**{}** `{}` — {}\n",
                    tr.against(),
                    f.category,
                    inline(tr.title(f))
                );
                against_block(&mut out, f, tr);
                if let Some(alt) = tr.alternatives(f) {
                    let _ = writeln!(
                        out,
                        "**{}**{}{}\n",
                        tr.what_else_fits(),
                        tr.after_label(),
                        inline(alt)
                    );
                }
                let _ = writeln!(out, "{} {}\n", tr.md_fix(), inline(tr.fix(f)));
                if let Some(n) = tr.next_time(f) {
                    let _ = writeln!(out, "{} {}\n", tr.md_next_time(), inline(n));
                }
            }
        }
    }
    if let Some(line) = r
        .history
        .as_ref()
        .map(|h| super::history::seen_line_in(h, lang))
    {
        let _ = writeln!(out, "{} {}\n", tr.history(), inline(&line));
    }
    let considered = r.considered_why();
    if !considered.is_empty() {
        let _ = writeln!(out, "{}", tr.md_considered_header(considered.len()));
        for c in considered.iter().take(8) {
            let (f, why) = (c.finding, tr.why_lower(c.why));
            let _ = writeln!(
                out,
                "| `{}` | {:.2} | {} | {} |",
                f.category,
                f.confidence,
                inline(&super::cut(tr.title(f), 80)),
                inline(&super::cut(why, 100))
            );
        }
        let _ = writeln!(out, "\n</details>\n");
    }
    if !r.warnings.is_empty() {
        let mut body = String::new();
        for w in r.warnings.iter().take(20) {
            let _ = writeln!(body, "{}", tr.warning_line(w));
        }
        let _ = writeln!(
            out,
            "<details><summary>{} ({})</summary>\n\n{}\n</details>\n",
            tr.warnings(),
            r.warnings.len(),
            fenced(body.trim_end())
        );
    }
    let _ = writeln!(
        out,
        "{}",
        tr.md_footer(
            r.verdict,
            r.inputs.len(),
            r.facts.len(),
            r.fingerprint.as_deref()
        )
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_is_escaped_outside_code_spans_only() {
        assert_eq!(inline("file </x> and `a<b>`"), "file &lt;/x&gt; and `a<b>`");
    }

    #[test]
    fn fence_outgrows_backticks_inside() {
        assert!(fenced("a ``` b").starts_with("````text\n"));
    }
}
