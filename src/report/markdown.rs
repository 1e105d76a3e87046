//! Markdown for a GitHub job summary or a PR/issue comment: the cause, confidence, action
//! and fix up front, evidence in a collapsible block. Text only; the caller redacts it
//! (Markdown is meant to be pasted) and it never decides anything about the verdict.

use super::Report;
use crate::correlate::{Finding, RULED_OUT_BELOW};
use crate::model::Verdict;
use std::fmt::Write;

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

fn evidence_block(out: &mut String, f: &Finding) {
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
        if let Some(w) = &e.why {
            let _ = writeln!(body, "    → {w}");
        }
    }
    let more = f.evidence.len().saturating_sub(MAX_EVIDENCE) as u64 + f.more_lines;
    if more > 0 {
        let _ = writeln!(body, "… and {more} more matching lines");
    }
    let n = f.evidence.len();
    let _ = writeln!(
        out,
        "<details><summary>Evidence ({n} line{})</summary>\n\n{}\n</details>\n",
        if n == 1 { "" } else { "s" },
        fenced(body.trim_end())
    );
    if !f.against.is_empty() {
        let mut body = String::new();
        for a in &f.against {
            let loc = match a.line {
                Some(l) => format!("{}:{l}", a.path),
                None => a.path.clone(),
            };
            let _ = writeln!(body, "{loc}  {}\n    ✗ {}", super::cut(&a.text, 200), a.why);
        }
        let _ = writeln!(
            out,
            "<details><summary>Against ({})</summary>\n\n{}\n</details>\n",
            f.against.len(),
            fenced(body.trim_end())
        );
    }
}

pub fn render(r: &Report) -> String {
    let mut out = String::new();
    match r.top() {
        Some(top) => {
            let _ = writeln!(
                out,
                "## trainwreck: `{}` — {}\n",
                top.category,
                inline(&top.title)
            );
            let _ = writeln!(
                out,
                "**Confidence** {:.2} · **action** `{}` · **rule** `{} {}`{}\n",
                top.confidence,
                top.action,
                top.code,
                top.rule,
                super::origin_text(top)
                    .map(|o| format!(" · started at {}", inline(&o)))
                    .unwrap_or_default()
            );
            let _ = writeln!(out, "**Fix:** {}\n", inline(&top.fix));
            if let Some(n) = &top.next_time {
                let _ = writeln!(out, "**To be sure next time:** {}\n", inline(n));
            }
            evidence_block(&mut out, top);
            let symptoms: Vec<&Finding> = r.symptoms_of(&top.rule).collect();
            if !symptoms.is_empty() {
                let _ = writeln!(out, "**Symptoms of this cause:**\n");
                for s in symptoms {
                    let _ = writeln!(
                        out,
                        "- `{}` — {} ({} lines)",
                        s.category,
                        inline(&s.title),
                        s.evidence.len()
                    );
                }
                out.push('\n');
            }
        }
        None if r.verdict == Verdict::NoFailure => {
            let _ = writeln!(
                out,
                "## trainwreck: no failure found\n\nNo sign of a failure in {} input{}.\n",
                r.inputs.len(),
                if r.inputs.len() == 1 { "" } else { "s" }
            );
        }
        None => {
            let _ = writeln!(
                out,
                "## trainwreck: unknown failure\n\nThe run failed, but no known signature explains it. **Action** `investigate`.\n"
            );
            if let Some(f) = r.findings.first() {
                let _ = writeln!(
                    out,
                    "Closest: `{}` — {} (confidence {:.2})\n",
                    f.category,
                    inline(&f.title),
                    f.confidence
                );
                evidence_block(&mut out, f);
            }
        }
    }
    if let Some(line) = r.history.as_ref().map(super::history::seen_line) {
        let _ = writeln!(out, "**History:** {}\n", inline(&line));
    }
    let considered: Vec<&Finding> = r.considered().collect();
    if !considered.is_empty() {
        let _ = writeln!(
            out,
            "<details><summary>Also considered ({})</summary>\n\n| category | confidence | hypothesis | why it ranks lower |\n|---|---|---|---|",
            considered.len()
        );
        for f in considered.iter().take(8) {
            let why = if let Some(a) = f.against.first() {
                a.why.clone()
            } else if f.confidence < RULED_OUT_BELOW {
                "weak evidence".to_string()
            } else {
                "less evidence than the top cause".to_string()
            };
            let _ = writeln!(
                out,
                "| `{}` | {:.2} | {} | {} |",
                f.category,
                f.confidence,
                inline(&super::cut(&f.title, 80)),
                inline(&super::cut(&why, 100))
            );
        }
        let _ = writeln!(out, "\n</details>\n");
    }
    if !r.warnings.is_empty() {
        let mut body = String::new();
        for w in r.warnings.iter().take(20) {
            let _ = writeln!(body, "{w}");
        }
        let _ = writeln!(
            out,
            "<details><summary>Warnings ({})</summary>\n\n{}\n</details>\n",
            r.warnings.len(),
            fenced(body.trim_end())
        );
    }
    let _ = writeln!(
        out,
        "<sub>verdict `{}` · {} input{} read · {} fact{}{}</sub>",
        r.verdict,
        r.inputs.len(),
        if r.inputs.len() == 1 { "" } else { "s" },
        r.facts.len(),
        if r.facts.len() == 1 { "" } else { "s" },
        r.fingerprint
            .as_ref()
            .map(|f| format!(" · fingerprint `{f}`"))
            .unwrap_or_default()
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
