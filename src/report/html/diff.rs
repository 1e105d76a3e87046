//! `diff --format html`: the page of a comparison of two runs (`diff::Diff`), and the same
//! parts as the `#diff` section of a run's page (`analyze --baseline … --format html`). The
//! verdict first (the headline and the differences ranked first, as `diff` ranked them), then
//! the changed settings, versions and environment, each before → after with where it was read
//! (`file:line`), and both runs' losses, grad norms and step times drawn on the same axes, with
//! where they part. Same rules as the other pages: maud templates (every text escaped), inline
//! CSS and SVG only, and only what the Markdown shows of a difference (its cited lines' texts
//! stay out: the comparison's values were masked by their key before any format renders them).
//! Renders only: what differs, how relevant it is and where the runs part were decided by
//! `diff`.

use super::memory::{Line, bytes_chart};
use super::{BR, P, axes, axis_labels, chart, document, location};
use crate::diff::trajectory::Curve;
use crate::diff::{Diff, Difference, Side};
use crate::model::Verdict;
use crate::report::cut;
use crate::report::diff::{band_text, compact, explains, verdict_line};
use crate::report::i18n::{Lang, Tr};
use maud::{Markup, html};

/// Rows of a table before "… N more"; the JSON lists all.
const MAX_ROWS: usize = 500;
/// The differences the verdict names.
const RANKED: usize = 3;
/// Points drawn per run and metric (every n-th beyond it, the last and the non-finite kept).
const MAX_POINTS: usize = 400;

/// Where the parts go: their own page (`h2` sections) or a run's page (`h3`, ids prefixed).
#[derive(Clone, Copy)]
struct Level {
    /// The parts' heading level; theirs are one deeper.
    h: u8,
    prefix: &'static str,
}

const PAGE: Level = Level { h: 2, prefix: "" };
const IN_RUN: Level = Level {
    h: 3,
    prefix: "diff-",
};

/// A heading of level `level` (2 to 4), with its id when given.
fn heading(level: u8, id: Option<&str>, text: &str) -> Markup {
    html! {
        @match level {
            2 => h2 id=[id] { (text) },
            3 => h3 id=[id] { (text) },
            _ => h4 id=[id] { (text) },
        }
        "\n"
    }
}

/// The whole page.
pub fn page(d: &Diff, lang: Lang) -> String {
    let tr = Tr(lang);
    let heading = tr.html_diff_heading(d.differences.len());
    let title = match tr.diff_headline(d) {
        Some(h) => format!("trainwreck diff: {h}"),
        None => format!("trainwreck diff: {heading}"),
    };
    let footer = tr.html_diff_footer(d.schema, d.differences.len());
    document(&title, lang, &heading, parts(d, tr, PAGE), Some(&footer))
}

/// The run page's `#diff` section: what changed since the good run (`--baseline`).
pub fn run_section(d: &Diff, tr: Tr) -> Markup {
    super::section("diff", tr.diff_section(), parts(d, tr, IN_RUN))
}

fn parts(d: &Diff, tr: Tr, lv: Level) -> Markup {
    let h = tr.html_diff_sections();
    let warnings = (0..d.warnings.len()).map(|i| cut(tr.diff_warning(d, i), 600));
    html! {
        (verdict(d, tr, lv))
        @for (group, id) in [(1, "settings"), (2, "versions"), (3, "environment"), (4, "progress")] {
            @let rows: Vec<&Difference> = d.differences.iter().filter(|x| group_of(x.source) == group).collect();
            (table(&rows, id, h[group], tr, lv))
        }
        (curves(d, tr, lv))
        (memory(d, tr, lv))
        @if !d.warnings.is_empty() {
            (open(lv, "warnings", &format!("{} ({})", tr.warnings(), d.warnings.len()), "", html! {
                ul { "\n" @for l in warnings.take(super::MAX_WARNINGS) { li.mono { (l) } "\n" } }
                "\n"
                @if d.warnings.len() > super::MAX_WARNINGS {
                    p.dim { (tr.more_warnings(d.warnings.len() - super::MAX_WARNINGS)) } "\n"
                }
            }))
        }
    }
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

/// A part: a section with its heading at the level's depth.
fn open(lv: Level, id: &str, heading_text: &str, class: &str, body: Markup) -> Markup {
    let id = format!("{}{id}", lv.prefix);
    let class = (!class.is_empty()).then_some(class);
    html! {
        section id=(id) class=[class] aria-labelledby={ (id) "-h" } {
            "\n"
            (heading(lv.h, Some(&format!("{id}-h")), heading_text))
            (body)
        }
        "\n"
    }
}

/// The headline, both runs and what the bad one died of, and the differences ranked first
/// that can explain a failure.
fn verdict(d: &Diff, tr: Tr, lv: Level) -> Markup {
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
    let ranked: Vec<&Difference> = d
        .differences
        .iter()
        .filter(|x| !x.explains.is_empty())
        .take(RANKED)
        .collect();
    let md = tr.diff_md_header();
    let colon = tr.html_diff_colon();
    let body = html! {
        @if let Some(h) = tr.diff_headline(d) {
            p.headline { strong { (h) } } "\n"
        }
        ul.runs {
            "\n" li.mono { (verdict_line(tr, Side::Good, false, &d.good)) }
            "\n" li.mono { (verdict_line(tr, Side::Bad, false, &d.bad)) }
            "\n"
        }
        "\n"
        @if let Some(t) = top {
            p { (tr.cause()) (tr.after_label()) code { (t.category.as_str()) } " — " (tr.html_diff_top_title(t)) " " span.dim { "(" (t.rule) ")" } } "\n"
        }
        @if d.differences.is_empty() {
            p { (tr.diff_no_differences()) } "\n"
        }
        @if !ranked.is_empty() {
            (heading(lv.h + 1, None, tr.html_diff_ranked()))
            ol.ranked {
                "\n"
                @for x in ranked {
                    li {
                        strong { (tr.diff_what(x)) } (colon)
                        code { (cut(&tr.diff_value(x, Side::Good), 200)) } " → " code { (cut(&tr.diff_value(x, Side::Bad), 200)) }
                        " · " (md[3]) (colon) (explains(x)) " · " (md[4]) " " (format!("{:.2}", x.relevance))
                    }
                    "\n"
                }
            }
            "\n"
        }
    };
    open(lv, "verdict", tr.html_diff_sections()[0], class, body)
}

/// One table of differences, most relevant first: what, before → after, what it can explain,
/// its relevance, and where each side's value was read.
fn table(rows: &[&Difference], id: &str, heading_text: &str, tr: Tr, lv: Level) -> Markup {
    if rows.is_empty() {
        return html! {};
    }
    let body = html! {
        table.differences {
            thead { tr { @for col in tr.html_diff_header() { th scope="col" { (col) } } } } "\n"
            tbody {
                "\n"
                @for x in rows.iter().take(MAX_ROWS) {
                    tr.difference data-fact=(x.key) {
                        th scope="row" { (tr.diff_what(x)) }
                        td.mono.before { (cut(&tr.diff_value(x, Side::Good), 300)) }
                        td.mono.after { (cut(&tr.diff_value(x, Side::Bad), 300)) }
                        td { code { (explains(x)) } }
                        td { (format!("{:.2}", x.relevance)) }
                        td.mono {
                            @for (i, c) in x.evidence.iter().enumerate() {
                                @if i > 0 { (BR) }
                                (tr.diff_side(c.side)) " " (location(&c.path, c.line))
                            }
                        }
                    }
                    "\n"
                }
            }
        }
        "\n"
        @if rows.len() > MAX_ROWS {
            p.dim { (tr.diff_more(rows.len() - MAX_ROWS, "--format json")) } "\n"
        }
    };
    open(lv, id, heading_text, "", body)
}

/// Both runs' curves, one chart per metric either logged, and where they part with the bad
/// run's lines there.
fn curves(d: &Diff, tr: Tr, lv: Level) -> Markup {
    let c = &d.curves;
    if c.metrics.is_empty() && d.parting.is_none() {
        return html! {};
    }
    let part = d.parting.as_ref().map(|p| p.step);
    let body = html! {
        @for curve in &c.metrics {
            (metric_chart(&format!("{}curve-{}", lv.prefix, curve.metric), curve, part, tr))
        }
        @if let Some(p) = &d.parting {
            p.parting { (tr.diff_parting(p.step, &band_text(p, tr))) } "\n"
            pre {
                "\n"
                @for e in &p.evidence {
                    (location(&e.path, e.line)) ": " (cut(&e.text, 400)) "\n"
                }
            }
            "\n"
        }
        @if !c.metrics.is_empty() {
            p.note.dim { (tr.html_diff_curves_note(&c.good_path, &c.bad_path)) } "\n"
        }
    };
    open(lv, "curves", tr.html_diff_sections()[5], "", body)
}

/// Both runs' memory over time, one chart per memory both sampled: the good run solid blue,
/// the bad run dashed red, each from its own first sample, the limits dashed (one line when
/// the runs share it).
fn memory(d: &Diff, tr: Tr, lv: Level) -> Markup {
    let m = &d.memory;
    if m.memories.is_empty() {
        return html! {};
    }
    let hb = |v: u64| crate::rules::template::human_bytes(v as f64);
    let [l_good, l_bad, _] = tr.html_diff_legend();
    let [limit_word, _] = tr.html_memory_marks();
    let body = html! {
        @for (j, c) in m.memories.iter().enumerate() {
            @let name = tr.html_memory_series(c.what.kind(), c.what.gpu());
            @let peak = |v: &[Option<u64>]| hb(v.iter().flatten().copied().max().unwrap_or(0));
            @let title = tr.html_diff_memory_title(&name, &peak(&c.good.1), &peak(&c.bad.1));
            @let limits: Vec<(String, u64)> = match (c.good_limit, c.bad_limit) {
                (Some(g), Some(b)) if g == b => vec![(format!("{limit_word} {}", hb(g)), g)],
                (g, b) => [(Side::Good, g), (Side::Bad, b)]
                    .into_iter()
                    .filter_map(|(side, l)| Some((tr.html_diff_memory_limit(side, &hb(l?)), l?)))
                    .collect(),
            };
            @let lines = [
                Line { class: "series good", name: l_good, t_ms: &c.good.0, values: &c.good.1 },
                Line { class: "series bad", name: l_bad, t_ms: &c.bad.0, values: &c.bad.1 },
            ];
            (bytes_chart(&format!("{}memory-{j}", lv.prefix), &title, tr.html_diff_memory_axis(), &lines, &limits, &[], tr))
        }
        p.note.dim { (tr.html_diff_memory_note(&m.good_path, &m.bad_path)) } "\n"
    };
    open(lv, "memory", tr.html_diff_memory(), "", body)
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
fn metric_chart(id: &str, c: &Curve, part: Option<u64>, tr: Tr) -> Markup {
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
    let step = tr.html_diff_step_axis();
    let comma = tr.comma();
    let sides = [("good", &c.good, l_good), ("bad", &c.bad, l_bad)].map(|(side, pts, label)| {
        // One polyline per stretch of finite values (a lone point is a dot); the values that
        // are not finite apart.
        let pts = thinned(pts);
        let mut runs: Vec<Vec<(u64, f64)>> = vec![Vec::new()];
        let mut nonfinite = Vec::new();
        for &(s, v) in &pts {
            if v.is_finite() {
                runs.last_mut().expect("never empty").push((s, v));
            } else {
                if runs.last().is_some_and(|r| !r.is_empty()) {
                    runs.push(Vec::new());
                }
                nonfinite.push((s, v));
            }
        }
        runs.retain(|r| !r.is_empty());
        (side, label, runs, nonfinite)
    });
    let body = html! {
        (axes(left, top, w, base))
        @for v in [lo, (lo + hi) / 2.0, hi] {
            text.tick x=(left - 4.0) y=(P(y(v) + 4.0)) text-anchor="end" { (compact(v)) } "\n"
        }
        @for s in [s0, s0 + (s1 - s0) / 2, s1] {
            text.tick x=(P(x(s))) y=(base + 14.0) text-anchor="middle" { (s) } "\n"
        }
        @if let Some(p) = part.filter(|p| (s0..=s1).contains(p)) {
            line.part x1=(P(x(p))) y1=(top) x2=(P(x(p))) y2=(base) {}
            text x=(P(x(p) + 3.0)) y=(base - 6.0) { (tr.html_diff_part_mark(p)) } "\n"
        }
        @for (side, label, runs, nonfinite) in &sides {
            @for (s, v) in nonfinite {
                circle class={ "nonfinite " (side) } cx=(P(x(*s))) cy=(top + 4.0) r="4" {
                    title { (label) (comma) (step) " " (s) ": " (v) }
                }
                "\n"
            }
            @for r in runs {
                @if let [(s, v)] = r.as_slice() {
                    circle class={ "dot " (side) } cx=(P(x(*s))) cy=(P(y(*v))) r="3" {
                        title { (label) (comma) (step) " " (s) ": " (compact(*v)) }
                    }
                } @else {
                    @let points: Vec<String> = r.iter().map(|(s, v)| format!("{},{}", P(x(*s)), P(y(*v)))).collect();
                    polyline class={ "series " (side) } points=(points.join(" ")) {
                        title { (label) (comma) (step) " " (r[0].0) "–" (r[r.len() - 1].0) }
                    }
                }
                "\n"
            }
        }
        (axis_labels(step, y_label, left, w, base + 34.0, top, h))
    };
    let nonfinite = all().any(|p| !p.1.is_finite());
    html! {
        figure {
            "\n"
            (chart(id, width, height, &title, body))
            ul.legend {
                li.l-good { (l_good) } li.l-bad { (l_bad) }
                @if nonfinite { li.l-nonfinite { (l_nonfinite) } }
            }
            "\n"
            figcaption { (title) } "\n"
        }
        "\n"
    }
}
