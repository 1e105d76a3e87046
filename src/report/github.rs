//! GitHub Actions workflow commands (`::error file=…,line=…::…`) so the cause and its
//! evidence show inline in the job's annotations. One command per line, escaped as the
//! runner requires; it prints, it never decides the exit status.

use super::Report;
use crate::model::Verdict;

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
    let mut out = String::new();
    let fp = r
        .fingerprint
        .as_ref()
        .map(|f| format!(" [{f}]"))
        .unwrap_or_default();
    match r.top() {
        Some(top) => {
            let title = prop(&format!("trainwreck: {} ({})", top.category, top.action));
            let msg = data(&format!(
                "{} (confidence {:.2}, rule {} {}){fp}\nFix: {}",
                top.title, top.confidence, top.code, top.rule, top.fix
            ));
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
                    prop(&format!("trainwreck evidence: {}", top.category)),
                    data(&e.text)
                ));
            }
        }
        None if r.verdict == Verdict::NoFailure => {
            out.push_str("::notice title=trainwreck::no failure found\n");
        }
        None => {
            out.push_str(&format!(
                "::error title=trainwreck%3A unknown failure::{}\n",
                data(&format!(
                    "The run failed, but no known signature explains it; investigate{fp}"
                ))
            ));
        }
    }
    for w in r.warnings.iter().take(10) {
        out.push_str(&format!(
            "::notice title=trainwreck warning::{}\n",
            data(&w.to_string())
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
