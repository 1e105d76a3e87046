//! Renderings of a comparison of two runs (`diff::Diff`): the terminal text, Markdown for a
//! PR comment, and the JSON object (`trainwreck.diff/1`, on its own or under `diff` in a
//! report). Formats only: what differs and how relevant it is was decided by `diff`.

use crate::diff::{Diff, Difference, Side, display, short_num};

/// How many differences a rendering shows before "… N more" (JSON lists all).
pub const SHOWN: usize = 25;

fn explains(d: &Difference) -> String {
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

fn cites(d: &Difference) -> String {
    d.evidence
        .iter()
        .map(|c| {
            let side = match c.side {
                Side::Good => "good",
                Side::Bad => "bad",
            };
            match c.line {
                Some(l) => format!("{side} {}:{l}", c.path),
                None => format!("{side} {}", c.path),
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn verdict_line(label: &str, s: &crate::diff::RunSummary) -> String {
    let mut line = format!("{label}: {}", s.paths.join(" "));
    if let Some(v) = s.verdict {
        line.push_str(&format!(" ({v}"));
        if let Some(t) = &s.top {
            line.push_str(&format!(": {}", t.category));
        }
        match s.steps {
            Some(1) => line.push_str(", 1 step"),
            Some(n) => line.push_str(&format!(", {n} steps")),
            None => {}
        }
        line.push(')');
    }
    line
}

fn band_text(p: &crate::diff::trajectory::Parting) -> Vec<String> {
    p.metrics
        .iter()
        .map(|m| {
            format!(
                "{} {} (good run's band {} .. {})",
                m.metric,
                display(&m.bad, crate::diff::Unit::Count),
                compact(m.band[0]),
                compact(m.band[1])
            )
        })
        .collect()
}

/// A band's bound: short, whatever its size (`-3.880e8`).
fn compact(n: f64) -> String {
    if n.abs() >= 1e5 {
        format!("{n:.3e}")
    } else {
        short_num(n)
    }
}

/// The comparison for a terminal (plain text; the caller neutralises input text).
pub fn terminal(d: &Diff) -> String {
    let mut s = String::new();
    s.push_str(&verdict_line("good", &d.good));
    s.push('\n');
    s.push_str(&verdict_line("bad ", &d.bad));
    s.push_str("\n\n");
    if let Some(h) = &d.headline {
        s.push_str(h);
        s.push_str("\n\n");
    }
    if d.differences.is_empty() {
        s.push_str("No differences: everything both runs tell is the same.\n");
    } else {
        let rows: Vec<[String; 4]> = d
            .differences
            .iter()
            .take(SHOWN)
            .map(|x| {
                [
                    x.what.clone(),
                    display(&x.good, x.unit),
                    display(&x.bad, x.unit),
                    explains(x),
                ]
            })
            .collect();
        let head = ["what", "good", "bad", "can explain"];
        let mut w = head.map(|h| h.chars().count());
        for r in &rows {
            for (i, c) in r.iter().enumerate() {
                w[i] = w[i].max(c.chars().count().min(48));
            }
        }
        let fmt = |r: &[String; 4]| {
            let mut line = String::new();
            for (i, c) in r.iter().enumerate() {
                let c = super::cut(c, 48);
                if i + 1 < r.len() {
                    line.push_str(&format!("{c:<width$}  ", width = w[i]));
                } else {
                    line.push_str(&c);
                }
            }
            line.trim_end().to_string() + "\n"
        };
        s.push_str(&fmt(&head.map(String::from)));
        for (r, x) in rows.iter().zip(&d.differences) {
            s.push_str(&fmt(r));
            if !x.evidence.is_empty() {
                s.push_str(&format!("    {}\n", cites(x)));
            }
        }
        if d.differences.len() > SHOWN {
            s.push_str(&format!(
                "… {} more (--format json lists all)\n",
                d.differences.len() - SHOWN
            ));
        }
    }
    if let Some(p) = &d.parting {
        s.push_str(&format!(
            "\nThe runs part at step {}: {}\n",
            p.step,
            band_text(p).join("; ")
        ));
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
        1 => s.push_str(&format!("\nwarning: {}\n", d.warnings[0])),
        n => s.push_str(&format!(
            "\n{n} warnings from reading the two runs (--format json lists them)\n"
        )),
    }
    s
}

fn md_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// The comparison as Markdown (a section of its own, `###` headings).
pub fn markdown(d: &Diff) -> String {
    let mut s = String::from("### What changed since the good run\n\n");
    s.push_str(&format!("- {}\n", md_cell(&verdict_line("good", &d.good))));
    s.push_str(&format!("- {}\n\n", md_cell(&verdict_line("bad", &d.bad))));
    if let Some(h) = &d.headline {
        s.push_str(&format!("**{}**\n\n", md_cell(h)));
    }
    if d.differences.is_empty() {
        s.push_str("No differences: everything both runs tell is the same.\n");
    } else {
        s.push_str("| what | good | bad | can explain | relevance | where |\n");
        s.push_str("|---|---|---|---|---|---|\n");
        for x in d.differences.iter().take(SHOWN) {
            s.push_str(&format!(
                "| {} | `{}` | `{}` | {} | {:.2} | {} |\n",
                md_cell(&x.what),
                md_cell(&display(&x.good, x.unit)).replace('`', "'"),
                md_cell(&display(&x.bad, x.unit)).replace('`', "'"),
                explains(x),
                x.relevance,
                md_cell(&cites(x))
            ));
        }
        if d.differences.len() > SHOWN {
            s.push_str(&format!(
                "\n… {} more (`--format json` lists all)\n",
                d.differences.len() - SHOWN
            ));
        }
    }
    if let Some(p) = &d.parting {
        s.push_str(&format!(
            "\nThe runs part at step {}: {}\n\n```\n",
            p.step,
            md_cell(&band_text(p).join("; "))
        ));
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
