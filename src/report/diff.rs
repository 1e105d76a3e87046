//! Renderings of a comparison of two runs (`diff::Diff`): the terminal text, Markdown for a
//! PR comment, and the JSON object (`trainwreck.diff/1`, on its own or under `diff` in a
//! report). Formats only: what differs and how relevant it is was decided by `diff`.

use crate::diff::{Diff, Difference, Side, display, short_num};
use crate::report::i18n::{Lang, Tr};

/// How many differences a rendering shows before "… N more" (JSON lists all).
pub const SHOWN: usize = 25;

pub(super) fn explains(d: &Difference) -> String {
    if d.explains.is_empty() {
        "-".to_string()
    } else {
        d.explains
            .iter()
            .map(|c| c.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

pub(super) fn cites(d: &Difference, tr: Tr) -> String {
    d.evidence
        .iter()
        .map(|c| {
            let side = tr.diff_side(c.side);
            match c.line {
                Some(l) => format!("{side} {}:{l}", c.path),
                None => format!("{side} {}", c.path),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn verdict_line(
    tr: Tr,
    side: Side,
    aligned: bool,
    s: &crate::diff::RunSummary,
) -> String {
    let about = s.verdict.map(|v| {
        let mut a = v.to_string();
        if let Some(t) = &s.top {
            a.push_str(&format!(": {}", t.category));
        }
        if let Some(n) = s.steps {
            a.push_str(tr.comma());
            a.push_str(&tr.diff_steps(n));
        }
        a
    });
    tr.diff_run_line(side, aligned, &s.paths.join(" "), about)
}

pub(super) fn band_text(p: &crate::diff::trajectory::Parting, tr: Tr) -> String {
    p.metrics
        .iter()
        .map(|m| {
            tr.diff_band(
                m.metric,
                &display(&m.bad, crate::diff::Unit::Count),
                &compact(m.band[0]),
                &compact(m.band[1]),
            )
        })
        .collect::<Vec<_>>()
        .join(tr.diff_band_separator())
}

/// A band's bound: short, whatever its size (`-3.880e8`).
pub(super) fn compact(n: f64) -> String {
    if n.abs() >= 1e5 {
        format!("{n:.3e}")
    } else {
        short_num(n)
    }
}

/// Columns a text takes on a terminal (a Chinese character takes two).
fn width(s: &str) -> usize {
    unicode_width::UnicodeWidthStr::width(s)
}

/// The comparison for a terminal (plain text; the caller neutralises input text).
pub fn terminal(d: &Diff, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut s = String::new();
    s.push_str(&verdict_line(tr, Side::Good, true, &d.good));
    s.push('\n');
    s.push_str(&verdict_line(tr, Side::Bad, true, &d.bad));
    s.push_str("\n\n");
    if let Some(h) = tr.diff_headline(d) {
        s.push_str(h);
        s.push_str("\n\n");
    }
    if d.differences.is_empty() {
        s.push_str(tr.diff_no_differences());
        s.push('\n');
    } else {
        let rows: Vec<[String; 4]> = d
            .differences
            .iter()
            .take(SHOWN)
            .map(|x| {
                [
                    super::cut(tr.diff_what(x), 48),
                    super::cut(&tr.diff_value(x, Side::Good), 48),
                    super::cut(&tr.diff_value(x, Side::Bad), 48),
                    explains(x),
                ]
            })
            .collect();
        let head = tr.diff_header().map(String::from);
        let mut w = head.each_ref().map(|h| width(h));
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(width(c));
            }
        }
        let fmt = |r: &[String; 4]| {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                line.push_str(c);
                if i + 1 < r.len() {
                    line.push_str(&" ".repeat(w[i].saturating_sub(width(c)) + 2));
                }
            }
            line.trim_end().to_string() + "\n"
        };
        s.push_str(&fmt(&head));
        for (r, x) in rows.iter().zip(&d.differences) {
            s.push_str(&fmt(r));
            if !x.evidence.is_empty() {
                s.push_str(&format!("    {}\n", cites(x, tr)));
            }
        }
        if d.differences.len() > SHOWN {
            s.push_str(&tr.diff_more(d.differences.len() - SHOWN, "--format json"));
            s.push('\n');
        }
    }
    if let Some(p) = &d.parting {
        s.push('\n');
        s.push_str(&tr.diff_parting(p.step, &band_text(p, tr)));
        s.push('\n');
        for c in &p.evidence {
            s.push_str(&format!(
                "  {}:{}: {}\n",
                c.path,
                c.line.unwrap_or(0),
                c.text
            ));
        }
    }
    match d.warnings.len() {
        0 => {}
        1 => s.push_str(&format!(
            "\n{}{}{}\n",
            tr.warning(),
            tr.after_label(),
            tr.diff_warning(d, 0)
        )),
        n => s.push_str(&format!("\n{}\n", tr.diff_warnings(n))),
    }
    s
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The comparison as Markdown (a section of its own, `###` headings).
pub fn markdown(d: &Diff, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut s = format!("### {}\n\n", tr.diff_section());
    s.push_str(&format!(
        "- {}\n",
        md_cell(&verdict_line(tr, Side::Good, false, &d.good))
    ));
    s.push_str(&format!(
        "- {}\n\n",
        md_cell(&verdict_line(tr, Side::Bad, false, &d.bad))
    ));
    if let Some(h) = tr.diff_headline(d) {
        s.push_str(&format!("**{}**\n\n", md_cell(h)));
    }
    if d.differences.is_empty() {
        s.push_str(tr.diff_no_differences());
        s.push('\n');
    } else {
        let head = tr.diff_md_header();
        s.push_str(&format!("| {} |\n", head.join(" | ")));
        s.push_str("|---|---|---|---|---|---|\n");
        for x in d.differences.iter().take(SHOWN) {
            s.push_str(&format!(
                "| {} | `{}` | `{}` | {} | {:.2} | {} |\n",
                md_cell(tr.diff_what(x)),
                md_cell(&tr.diff_value(x, Side::Good)).replace('`', "'"),
                md_cell(&tr.diff_value(x, Side::Bad)).replace('`', "'"),
                explains(x),
                x.relevance,
                md_cell(&cites(x, tr))
            ));
        }
        if d.differences.len() > SHOWN {
            s.push('\n');
            s.push_str(&tr.diff_more(d.differences.len() - SHOWN, "`--format json`"));
            s.push('\n');
        }
    }
    if let Some(p) = &d.parting {
        s.push('\n');
        s.push_str(&md_cell(&tr.diff_parting(p.step, &band_text(p, tr))));
        s.push_str("\n\n```\n");
        for c in &p.evidence {
            s.push_str(&format!(
                "{}:{}: {}\n",
                c.path,
                c.line.unwrap_or(0),
                c.text.replace("```", "'''")
            ));
        }
        s.push_str("```\n");
    }
    s
}

/// The comparison as its own JSON document.
pub fn json(d: &Diff) -> String {
    serde_json::to_string_pretty(d).unwrap_or_default() + "\n"
}
