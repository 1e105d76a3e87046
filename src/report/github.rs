//! GitHub Actions workflow commands (`::error file=…,line=…::…`) so the cause and its
//! evidence show inline in the job's annotations. One command per line, escaped as the
//! runner requires; it prints, it never decides the exit status.

use super::Report;
use super::i18n::{Lang, Tr};
use crate::model::Verdict;

/// The `github` format's printer: a run's or a triage's workflow commands.
pub struct Printer;

impl super::format::Printer for Printer {
    fn print(
        &self,
        view: super::format::View<'_>,
        o: &super::format::Options<'_>,
        _: Option<&mut crate::redact::Redactor>,
    ) -> Option<String> {
        use super::format::View;
        match view {
            View::Run(r) => Some(render_in(r, o.root, o.term.lang)),
            View::Triage(t) => Some(render_triage(t, o.term.lang)),
            _ => None,
        }
    }
}

/// Escape a command's message (`%`, CR, LF).
fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escape a property value (also `:` and `,`).
fn prop(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

fn join(root: &str, path: &str) -> String {
    if root.is_empty() || path.starts_with('/') {
        path.to_string()
    } else {
        format!("{}/{path}", root.trim_end_matches('/'))
    }
}

/// `root` is prefixed to evidence paths (which are relative to the input given) so that
/// annotations point at files in the workspace.
pub fn render(r: &Report, root: &str) -> String {
    render_in(r, root, Lang::En)
}

/// The workflow commands with their messages in `lang` (paths, lines and evidence as they are).
pub fn render_in(r: &Report, root: &str, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut out = String::new();
    let fp = r
        .fingerprint
        .as_ref()
        .map(|f| format!(" [{f}]"))
        .unwrap_or_default();
    match r.top() {
        Some(top) => {
            let title = prop(&format!("trainwreck: {} ({})", top.category, top.action));
            let msg = data(&tr.gh_message(top, &fp));
            match top.evidence.iter().find(|e| e.line.is_some()) {
                Some(e) => out.push_str(&format!(
                    "::error file={},line={},title={title}::{msg}\n",
                    prop(&join(root, &e.path)),
                    e.line.unwrap_or(1)
                )),
                None => out.push_str(&format!("::error title={title}::{msg}\n")),
            }
            for e in top
                .evidence
                .iter()
                .filter(|e| e.line.is_some())
                .skip(1)
                .take(20)
            {
                out.push_str(&format!(
                    "::warning file={},line={},title={}::{}\n",
                    prop(&join(root, &e.path)),
                    e.line.unwrap_or(1),
                    prop(&format!("{}: {}", tr.gh_evidence_title(), top.category)),
                    data(&e.text)
                ));
            }
        }
        None if r.verdict == Verdict::NoFailure => {
            out.push_str(&format!(
                "::notice title=trainwreck::{}\n",
                data(tr.gh_no_failure())
            ));
        }
        None => {
            out.push_str(&format!(
                "::error title={}::{}\n",
                prop(tr.gh_unknown_title()),
                data(&tr.gh_unknown(&fp))
            ));
            // What the evidence ruled out: a notice on each line against it, with why, what
            // else fits and that case's fix.
            for f in r.ruled_out_by_evidence() {
                let title = prop(&format!("{}: {}", tr.html_ruled_out(), f.category));
                let mut tail = String::new();
                if let Some(alt) = tr.alternatives(f) {
                    tail.push_str(&format!(
                        " {}{}{alt}",
                        tr.what_else_fits(),
                        tr.after_label()
                    ));
                }
                tail.push_str(&format!(" {}: {}", tr.fix_heading(), tr.fix(f)));
                for a in &f.against {
                    let msg = data(&format!("{} — {}{tail}", a.text, tr.against_why(a)));
                    match a.line {
                        Some(l) => out.push_str(&format!(
                            "::notice file={},line={l},title={title}::{msg}\n",
                            prop(&join(root, &a.path))
                        )),
                        None => out.push_str(&format!("::notice title={title}::{msg}\n")),
                    }
                }
            }
        }
    }
    for w in r.warnings.iter().take(10) {
        out.push_str(&format!(
            "::notice title={}::{}\n",
            prop(tr.gh_warning_title()),
            data(&tr.warning_line(w))
        ));
    }
    out
}

/// `triage --format github`: one `::error` per failing group (its runs, fingerprint, title
/// and an example run), a `::warning` per hardware suspect, a `::notice` for the runs that did
/// not fail and for the first warnings; escaped as a report's are.
pub fn render_triage(t: &crate::report::triage::Triage, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut out = String::new();
    for g in &t.groups {
        let runs = tr.triage_md_group_runs(g.count);
        if g.verdict == Verdict::NoFailure {
            out.push_str(&format!(
                "::notice title=trainwreck::{}\n",
                data(&format!("{runs}: {}", tr.gh_no_failure()))
            ));
            continue;
        }
        let what = g
            .category
            .map_or_else(|| g.verdict.to_string(), |c| c.to_string());
        let title = prop(&format!("trainwreck: {what} ({})", g.action));
        let msg = format!(
            "{runs} [{}]: {} ({})",
            g.fingerprint.as_deref().unwrap_or("-"),
            tr.group_title(g).unwrap_or(tr.triage_no_rule()),
            g.example
        );
        out.push_str(&format!("::error title={title}::{}\n", data(&msg)));
    }
    for r in &t.suspects {
        out.push_str(&format!(
            "::warning title={}::{}\n",
            prop(&format!("trainwreck: {}", tr.triage_suspect_label())),
            data(&tr.triage_suspect(r.kind.as_str(), &r.name, r.runs))
        ));
    }
    for w in t.warnings.iter().take(10) {
        out.push_str(&format!(
            "::notice title={}::{}\n",
            prop(tr.gh_warning_title()),
            data(&tr.warning_line(w))
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_and_data_are_escaped() {
        assert_eq!(prop("a:b,c%"), "a%3Ab%2Cc%25");
        assert_eq!(data("x\ny"), "x%0Ay");
    }
}
