//! `diff --format html`: the page of a comparison of two runs (`diff::Diff`), and the same
//! parts as the `#diff` section of a run's page (`analyze --baseline … --format html`). The
//! verdict first (the headline and the differences ranked first, as `diff` ranked them), then
//! the changed settings, versions and environment, each before → after with where it was read
//! (`file:line`), and both runs' losses, grad norms and step times drawn on the same axes, with
//! where they part. Same rules as the other pages: inline CSS and SVG only, every text through
//! `esc`, and only what the Markdown shows of a difference (its cited lines' texts stay out:
//! the comparison's values were masked by their key before any format renders them). Renders
//! only: what differs, how relevant it is and where the runs part were decided by `diff`.

use super::{axes, esc, head, location, section, svg_open};
use crate::diff::trajectory::Curve;
use crate::diff::{Diff, Difference, Side};
use crate::model::Verdict;
use crate::report::cut;
use crate::report::diff::{band_text, compact, explains, verdict_line};
use crate::report::i18n::{Lang, Tr};
use std::fmt::Write;

/// Rows of a table before "… N more"; the JSON lists all.
const MAX_ROWS: usize = 500;
/// The differences the verdict names.
const RANKED: usize = 3;
/// Points drawn per run and metric (every n-th beyond it, the last and the non-finite kept).
const MAX_POINTS: usize = 400;

/// Where the parts go: their own page (`h2` sections) or a run's page (`h3`, ids prefixed).
#[derive(Clone, Copy)]
struct Level {
    h: &'static str,
    prefix: &'static str,
}

const PAGE: Level = Level {
    h: "h2",
    prefix: "",
};
const IN_RUN: Level = Level {
    h: "h3",
    prefix: "diff-",
};

/// The whole page.
pub fn page(d: &Diff, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut out = String::with_capacity(32 * 1024);
    let heading = tr.html_diff_heading(d.differences.len());
    let title = match tr.diff_headline(d) {
        Some(h) => format!("trainwreck diff: {h}"),
        None => format!("trainwreck diff: {heading}"),
    };
    head(&mut out, &title, lang);
    let _ = writeln!(out, "<header><h1>{}</h1></header>\n<main>", esc(&heading));
    parts(&mut out, d, tr, PAGE);
    let _ = writeln!(
        out,
        "</main>\n<footer><p>{}</p></footer>\n</body>\n</html>",
        esc(&tr.html_diff_footer(d.schema, d.differences.len()))
    );
    out
}

/// The run page's `#diff` section: what changed since the good run (`--baseline`).
pub fn run_section(out: &mut String, d: &Diff, tr: Tr) {
    section(out, "diff", tr.diff_section());
    parts(out, d, tr, IN_RUN);
    out.push_str("</section>\n");
}

fn parts(out: &mut String, d: &Diff, tr: Tr, lv: Level) {
    verdict(out, d, tr, lv);
    let h = tr.html_diff_sections();
    for (group, id) in [
        (1, "settings"),
        (2, "versions"),
        (3, "environment"),
        (4, "progress"),
    ] {
        let rows: Vec<&Difference> = d
            .differences
            .iter()
            .filter(|x| group_of(x.source) == group)
            .collect();
        table(out, &rows, id, h[group], tr, lv);
    }
    curves(out, d, tr, lv);
    warnings(out, d, tr, lv);
}

/// Which table a comparer's differences go in: 1 settings (the training configuration and
/// the launcher's), 2 versions, 3 environment (/dev/shm, memory limits, ulimits, GPUs,
/// environment variables), 4 how far each run got (the trajectory's values).
fn group_of(source: &str) -> usize {
    match source {
        "config" | "launch" => 1,
        "versions" => 2,
        "trajectory" => 4,
        _ => 3,
    }
}

/// A part's opening: a section with its heading at the level's depth.
fn open(out: &mut String, lv: Level, id: &str, heading: &str, class: &str) {
    let id = format!("{}{id}", lv.prefix);
    let class = if class.is_empty() {
        String::new()
    } else {
        format!(" class=\"{class}\"")
    };
    let _ = writeln!(
        out,
        "<section id=\"{id}\"{class} aria-labelledby=\"{id}-h\">\n<{h} id=\"{id}-h\">{}</{h}>",
        esc(heading),
        h = lv.h
    );
}

/// The headline, both runs and what the bad one died of, and the differences ranked first
/// that can explain a failure.
fn verdict(out: &mut String, d: &Diff, tr: Tr, lv: Level) {
    let top = d.bad.top.as_ref();
    let culprit = top.is_some_and(|t| {
        d.differences
            .first()
            .is_some_and(|x| x.explains.contains(&t.category))
    });
    let class = if culprit {
        "card"
    } else if d.bad.verdict == Some(Verdict::NoFailure) {
        "card ok"
    } else {
        "card unknown"
    };
    open(out, lv, "verdict", tr.html_diff_sections()[0], class);
    if let Some(h) = tr.diff_headline(d) {
        let _ = writeln!(out, "<p class=\"headline\"><strong>{}</strong></p>", esc(h));
    }
    let _ = writeln!(
        out,
        "<ul class=\"runs\">\n<li class=\"mono\">{}</li>\n<li class=\"mono\">{}</li>\n</ul>",
        esc(&verdict_line(tr, Side::Good, false, &d.good)),
        esc(&verdict_line(tr, Side::Bad, false, &d.bad))
    );
    if let Some(t) = top {
        let _ = writeln!(
            out,
            "<p>{}{}<code>{}</code> — {} <span class=\"dim\">({})</span></p>",
            esc(tr.cause()),
            esc(tr.after_label()),
            esc(t.category.as_str()),
            esc(tr.html_diff_top_title(t)),
            esc(&t.rule)
        );
    }
    if d.differences.is_empty() {
        let _ = writeln!(out, "<p>{}</p>", esc(tr.diff_no_differences()));
    }
    let ranked: Vec<&Difference> = d
        .differences
        .iter()
        .filter(|x| !x.explains.is_empty())
        .take(RANKED)
        .collect();
    if !ranked.is_empty() {
        let md = tr.diff_md_header();
        let sub = if lv.h == "h2" { "h3" } else { "h4" };
        let _ = writeln!(
            out,
            "<{sub}>{}</{sub}>\n<ol class=\"ranked\">",
            esc(tr.html_diff_ranked())
        );
        for x in ranked {
            let _ = writeln!(
                out,
                "<li><strong>{}</strong>{}<code>{}</code> → <code>{}</code> · {}{}{} · {} {:.2}</li>",
                esc(tr.diff_what(x)),
                esc(tr.html_diff_colon()),
                esc(&cut(&tr.diff_value(x, Side::Good), 200)),
                esc(&cut(&tr.diff_value(x, Side::Bad), 200)),
                esc(md[3]),
                esc(tr.html_diff_colon()),
                esc(&explains(x)),
                esc(md[4]),
                x.relevance
            );
        }
        out.push_str("</ol>\n");
    }
    out.push_str("</section>\n");
}

/// One table of differences, most relevant first: what, before → after, what it can explain,
/// its relevance, and where each side's value was read.
fn table(out: &mut String, rows: &[&Difference], id: &str, heading: &str, tr: Tr, lv: Level) {
    if rows.is_empty() {
        return;
    }
    open(out, lv, id, heading, "");
    let h = tr.html_diff_header();
    out.push_str("<table class=\"differences\">\n<thead><tr>");
    for col in h {
        let _ = write!(out, "<th scope=\"col\">{}</th>", esc(col));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for x in rows.iter().take(MAX_ROWS) {
        let wher: Vec<String> = x
            .evidence
            .iter()
            .map(|c| {
                esc(&format!(
                    "{} {}",
                    tr.diff_side(c.side),
                    location(&c.path, c.line)
                ))
            })
            .collect();
        let _ = writeln!(
            out,
            "<tr class=\"difference\" data-fact=\"{}\"><th scope=\"row\">{}</th><td class=\"mono before\">{}</td><td class=\"mono after\">{}</td><td><code>{}</code></td><td>{:.2}</td><td class=\"mono\">{}</td></tr>",
            esc(&x.key),
            esc(tr.diff_what(x)),
            esc(&cut(&tr.diff_value(x, Side::Good), 300)),
            esc(&cut(&tr.diff_value(x, Side::Bad), 300)),
            esc(&explains(x)),
            x.relevance,
            wher.join("<br/>")
        );
    }
    out.push_str("</tbody>\n</table>\n");
    if rows.len() > MAX_ROWS {
        let _ = writeln!(
            out,
            "<p class=\"dim\">{}</p>",
            esc(&tr.diff_more(rows.len() - MAX_ROWS, "--format json"))
        );
    }
    out.push_str("</section>\n");
}

/// Both runs' curves, one chart per metric either logged, and where they part with the bad
/// run's lines there.
fn curves(out: &mut String, d: &Diff, tr: Tr, lv: Level) {
    let c = &d.curves;
    if c.metrics.is_empty() && d.parting.is_none() {
        return;
    }
    open(out, lv, "curves", tr.html_diff_sections()[5], "");
    let part = d.parting.as_ref().map(|p| p.step);
    for curve in &c.metrics {
        let id = format!("{}curve-{}", lv.prefix, curve.metric);
        chart(out, &id, curve, part, tr);
    }
    if let Some(p) = &d.parting {
        let _ = writeln!(
            out,
            "<p class=\"parting\">{}</p>\n<pre>",
            esc(&tr.diff_parting(p.step, &band_text(p, tr)))
        );
        for e in &p.evidence {
            let _ = writeln!(
                out,
                "{}: {}",
                esc(&location(&e.path, e.line)),
                esc(&cut(&e.text, 400))
            );
        }
        out.push_str("</pre>\n");
    }
    if !c.metrics.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"note dim\">{}</p>",
            esc(&tr.html_diff_curves_note(&c.good_path, &c.bad_path))
        );
    }
    out.push_str("</section>\n");
}

/// At most `MAX_POINTS` of `pts`: every n-th, the last, and every value that is not finite.
fn thinned(pts: &[(u64, f64)]) -> Vec<(u64, f64)> {
    let every = pts.len().div_ceil(MAX_POINTS).max(1);
    pts.iter()
        .enumerate()
        .filter(|(i, p)| i % every == 0 || *i + 1 == pts.len() || !p.1.is_finite())
        .map(|(_, p)| *p)
        .collect()
}

/// One metric of both runs on the same axes: step on x, the value on y, the good run solid
/// blue, the bad run dashed red, a value that is not finite as a ring at the top, the step
/// where the runs part as a vertical line.
fn chart(out: &mut String, id: &str, c: &Curve, part: Option<u64>, tr: Tr) {
    let (left, top, w, h) = (80.0, 16.0, 640.0, 180.0);
    let (width, height) = (left + w + 20.0, top + h + 44.0);
    let all = || c.good.iter().chain(&c.bad);
    let finite: Vec<f64> = all().map(|p| p.1).filter(|v| v.is_finite()).collect();
    let (mut lo, mut hi) = finite
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| {
            (a.min(*v), b.max(*v))
        });
    if finite.is_empty() {
        (lo, hi) = (0.0, 1.0);
    }
    let pad = if hi > lo {
        (hi - lo) * 0.05
    } else {
        (hi.abs() * 0.1).max(1.0)
    };
    // A quantity that is never negative (every one charted) keeps its axis at or above 0.
    (lo, hi) = (
        if lo >= 0.0 {
            (lo - pad).max(0.0)
        } else {
            lo - pad
        },
        hi + pad,
    );
    let s0 = all().map(|p| p.0).min().unwrap_or(0);
    let s1 = all().map(|p| p.0).max().unwrap_or(1).max(s0 + 1);
    let x = |s: u64| left + (s - s0) as f64 / (s1 - s0) as f64 * w;
    let y = |v: f64| top + h - (v - lo) / (hi - lo) * h;
    let base = top + h;
    let title = tr.html_diff_chart_title(c.metric, c.good.len(), c.bad.len());
    let [_, y_label] = tr.html_diff_metric(c.metric);
    let [l_good, l_bad, l_nonfinite] = tr.html_diff_legend();
    out.push_str("<figure>\n");
    svg_open(out, id, width, height, &title);
    axes(out, left, top, w, base);
    out.push('\n');
    for v in [lo, (lo + hi) / 2.0, hi] {
        let _ = writeln!(
            out,
            "<text class=\"tick\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 4.0,
            y(v) + 4.0,
            esc(&compact(v))
        );
    }
    for s in [s0, s0 + (s1 - s0) / 2, s1] {
        let _ = writeln!(
            out,
            "<text class=\"tick\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{s}</text>",
            x(s),
            base + 14.0
        );
    }
    if let Some(p) = part.filter(|p| (s0..=s1).contains(p)) {
        let px = x(p);
        let _ = writeln!(
            out,
            "<line class=\"part\" x1=\"{px:.1}\" y1=\"{top}\" x2=\"{px:.1}\" y2=\"{base}\"/><text x=\"{:.1}\" y=\"{}\">{}</text>",
            px + 3.0,
            base - 6.0,
            esc(&tr.html_diff_part_mark(p))
        );
    }
    for (side, pts, label) in [("good", &c.good, l_good), ("bad", &c.bad, l_bad)] {
        let pts = thinned(pts);
        // One polyline per stretch of finite values; a lone point is a dot.
        let mut runs: Vec<Vec<(u64, f64)>> = vec![Vec::new()];
        for &(s, v) in &pts {
            if v.is_finite() {
                runs.last_mut().expect("never empty").push((s, v));
            } else {
                if runs.last().is_some_and(|r| !r.is_empty()) {
                    runs.push(Vec::new());
                }
                let _ = writeln!(
                    out,
                    "<circle class=\"nonfinite {side}\" cx=\"{:.1}\" cy=\"{}\" r=\"4\"><title>{}</title></circle>",
                    x(s),
                    top + 4.0,
                    esc(&format!(
                        "{label}{}{} {s}: {v}",
                        tr.comma(),
                        tr.html_diff_step_axis()
                    ))
                );
            }
        }
        for r in runs.iter().filter(|r| !r.is_empty()) {
            let tip = esc(&format!(
                "{label}{}{} {}–{}",
                tr.comma(),
                tr.html_diff_step_axis(),
                r[0].0,
                r[r.len() - 1].0
            ));
            if let [(s, v)] = r.as_slice() {
                let _ = writeln!(
                    out,
                    "<circle class=\"dot {side}\" cx=\"{:.1}\" cy=\"{:.1}\" r=\"3\"><title>{}</title></circle>",
                    x(*s),
                    y(*v),
                    esc(&format!(
                        "{label}{}{} {s}: {}",
                        tr.comma(),
                        tr.html_diff_step_axis(),
                        compact(*v)
                    ))
                );
                continue;
            }
            let points: Vec<String> = r
                .iter()
                .map(|(s, v)| format!("{:.1},{:.1}", x(*s), y(*v)))
                .collect();
            let _ = writeln!(
                out,
                "<polyline class=\"series {side}\" points=\"{}\"><title>{tip}</title></polyline>",
                points.join(" ")
            );
        }
    }
    let _ = writeln!(
        out,
        "<text class=\"axis-label\" x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text><text class=\"axis-label\" x=\"12\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 12 {:.1})\">{}</text>\n</svg>",
        left + w / 2.0,
        base + 34.0,
        esc(tr.html_diff_step_axis()),
        top + h / 2.0,
        top + h / 2.0,
        esc(y_label)
    );
    let nonfinite = all().any(|p| !p.1.is_finite());
    let _ = write!(
        out,
        "<ul class=\"legend\"><li class=\"l-good\">{}</li><li class=\"l-bad\">{}</li>",
        esc(l_good),
        esc(l_bad)
    );
    if nonfinite {
        let _ = write!(out, "<li class=\"l-nonfinite\">{}</li>", esc(l_nonfinite));
    }
    let _ = writeln!(
        out,
        "</ul>\n<figcaption>{}</figcaption>\n</figure>",
        esc(&title)
    );
}

fn warnings(out: &mut String, d: &Diff, tr: Tr, lv: Level) {
    if d.warnings.is_empty() {
        return;
    }
    let heading = format!("{} ({})", tr.warnings(), d.warnings.len());
    open(out, lv, "warnings", &heading, "");
    out.push_str("<ul>\n");
    for i in 0..d.warnings.len().min(super::MAX_WARNINGS) {
        let _ = writeln!(
            out,
            "<li class=\"mono\">{}</li>",
            esc(&cut(tr.diff_warning(d, i), 600))
        );
    }
    out.push_str("</ul>\n");
    if d.warnings.len() > super::MAX_WARNINGS {
        let _ = writeln!(
            out,
            "<p class=\"dim\">{}</p>",
            esc(&tr.more_warnings(d.warnings.len() - super::MAX_WARNINGS))
        );
    }
    out.push_str("</section>\n");
}
