//! JUnit XML for CI systems that only read test reports (GitLab, Jenkins, Azure): the run is
//! one test case that fails with the cause as its message and the fix and evidence as its
//! body; a triage is one test case per run. Escaping only; no decisions.

use super::Report;
use crate::model::Verdict;

/// The `junit` format's printer: a run as one test case, a triage as one per run.
pub struct Printer;

impl super::format::Printer for Printer {
    fn print(
        &self,
        view: super::format::View<'_>,
        _: &super::format::Options<'_>,
        _: Option<&mut crate::redact::Redactor>,
    ) -> Option<String> {
        use super::format::View;
        match view {
            View::Run(r) => Some(render(r)),
            View::Triage(t) => Some(render_triage(t)),
            _ => None,
        }
    }
}

fn xml(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            // What XML 1.0 forbids or discourages (controls, U+FFFE/U+FFFF, noncharacters).
            c if super::not_xml(c) => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

pub fn render(r: &Report) -> String {
    let (failures, body) = match r.top() {
        Some(top) => {
            let mut text = format!("Fix: {}\n\nEvidence:\n", top.fix.en);
            for e in top.evidence.iter().take(20) {
                let loc = match e.line {
                    Some(l) => format!("{}:{l}", e.path),
                    None => e.path.clone(),
                };
                text.push_str(&format!("  {loc}  {}\n", e.text));
            }
            (
                1,
                format!(
                    "    <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                    xml(top.category.as_str()),
                    xml(&format!(
                        "{} — {} (confidence {:.2}, action {})",
                        top.category, top.title.en, top.confidence, top.action
                    )),
                    xml(&text)
                ),
            )
        }
        None if r.verdict == Verdict::NoFailure => (0, String::new()),
        None => (
            1,
            "    <failure type=\"unknown_failure\" message=\"The run failed, but no known signature explains it\"/>\n"
                .to_string(),
        ),
    };
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"trainwreck\" tests=\"1\" failures=\"{failures}\">\n  <testsuite name=\"trainwreck\" tests=\"1\" failures=\"{failures}\">\n  <testcase classname=\"trainwreck\" name=\"training run ({})\">\n{body}    <system-out>{}</system-out>\n  </testcase>\n  </testsuite>\n</testsuites>\n",
        xml(r.verdict.as_str()),
        xml(&format!(
            "verdict {}; fingerprint {}",
            r.verdict,
            r.fingerprint.as_deref().unwrap_or("none")
        ))
    )
}

/// `triage --format junit`: one test case per run, failing with its group's cause, so a CI
/// system counts the failed runs; escaped as a report's are.
pub fn render_triage(t: &crate::report::triage::Triage) -> String {
    let mut cases = String::new();
    let mut failures = 0;
    for g in &t.groups {
        let what = g
            .category
            .map_or_else(|| g.verdict.to_string(), |c| c.to_string());
        for run in &g.runs {
            cases.push_str(&format!(
                "    <testcase classname=\"trainwreck.triage\" name=\"{}\">\n",
                xml(run)
            ));
            if g.verdict != Verdict::NoFailure {
                failures += 1;
                cases.push_str(&format!(
                    "      <failure type=\"{}\" message=\"{}\"/>\n",
                    xml(&what),
                    xml(&format!(
                        "{what} — {} (action {}, fingerprint {})",
                        g.title
                            .as_ref()
                            .map_or("no rule explains it", |t| t.en.as_str()),
                        g.action,
                        g.fingerprint.as_deref().unwrap_or("none")
                    ))
                ));
            }
            cases.push_str("    </testcase>\n");
        }
    }
    let n = t.runs_total;
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"trainwreck\" tests=\"{n}\" failures=\"{failures}\">\n  <testsuite name=\"trainwreck triage\" tests=\"{n}\" failures=\"{failures}\">\n{cases}  </testsuite>\n</testsuites>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xml_special_characters_are_escaped() {
        assert_eq!(xml("<a & \"b\">"), "&lt;a &amp; &quot;b&quot;&gt;");
    }
}
