//! `history report --format html`: the fleet's page, from the history's counts
//! (`history::Store::report`). Failures per day stacked by category, the top fingerprints day
//! by day, a host × GPU heat map of each one's rate of hardware-class and unexplained failures
//! against the fleet's with the suspects of the history's test outlined, each top fingerprint's
//! latest runs with the lines their reports cite (its row and the latest runs link there), and
//! the latest runs.
//! Same rules as the run's page: maud templates (every text escaped), inline CSS and SVG only.
//! Renders only: the counts and the test are the history's.

use super::{P, axes, axis_labels, chart, cited, document, section};
use crate::report::cut;
use crate::report::history::{FleetReport, FleetStats, p_value};
use crate::report::i18n::{Lang, Tr};
use maud::{Markup, html};
use std::collections::{BTreeMap, BTreeSet};

/// Days drawn (the last ones of the window); the JSON has them all.
const MAX_DAYS: usize = 120;
/// Categories given a colour of their own; the rest are "other".
const PALETTE: [&str; 9] = [
    "#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
    "#9c755f",
];
const OTHER: &str = "#bab0ac";
/// Hosts (rows) and GPUs per host (columns) of the heat map.
const MAX_HOSTS: usize = 40;
const MAX_GPUS: usize = 16;
const MAX_RECENT: usize = 100;
/// The heat map's colours by rate against the fleet's: none, < 0.5×, < 1.5×, < 3×, < 6×, more.
const HEAT: [&str; 6] = [
    "#f3f4f6", "#fee5d9", "#fcbba1", "#fb6a4a", "#de2d26", "#a50f15",
];
const HEAT_BOUNDS: [f64; 4] = [0.5, 1.5, 3.0, 6.0];

fn heat(k: u64, ratio: f64) -> &'static str {
    if k == 0 {
        return HEAT[0];
    }
    HEAT[1 + HEAT_BOUNDS.iter().take_while(|b| ratio >= **b).count()]
}

/// The suspect-class failures per job over every unit of `s` (the colour scale's 1×).
fn fleet_rate(s: &FleetStats) -> f64 {
    let jobs: u64 = s.units.iter().map(|u| u.jobs).sum();
    let k: u64 = s.units.iter().map(|u| u.suspect_failures).sum();
    if jobs == 0 {
        0.0
    } else {
        k as f64 / jobs as f64
    }
}

fn ratio(k: u64, jobs: u64, base: f64) -> f64 {
    if jobs == 0 || base <= 0.0 {
        0.0
    } else {
        k as f64 / jobs as f64 / base
    }
}

/// The whole page.
pub fn page(f: &FleetReport, lang: Lang) -> String {
    let tr = Tr(lang);
    let title = tr.html_fleet_title(f.runs, f.failed, f.since.as_deref());
    let days = shown_days(f);
    let main = html! {
        @if f.runs == 0 {
            p #empty { (tr.history_empty()) } "\n"
        }
        (per_day(f, &days, tr))
        (top(f, &days, tr))
        (top_runs(f, tr))
        (heat_map(f, tr))
        (suspects(f, tr))
        (recent(f, tr))
    };
    let footer = tr.html_fleet_footer(&f.generated, f.hosts.alpha);
    document(
        &format!("trainwreck: {title}"),
        lang,
        &title,
        main,
        Some(&footer),
    )
}

/// The days on the x axis: every day from the first with a run to the last, the last
/// `MAX_DAYS` of them.
fn shown_days(f: &FleetReport) -> Vec<String> {
    let (Some(first), Some(last)) = (f.days.first(), f.days.last()) else {
        return Vec::new();
    };
    let num = |d: &str| crate::history::record::epoch(&format!("{d}T00:00:00")).map(|s| s / 86_400);
    let (Some(a), Some(b)) = (num(&first.day), num(&last.day)) else {
        return f.days.iter().map(|d| d.day.clone()).collect();
    };
    let a = a.max(b - MAX_DAYS as i64 + 1);
    (a..=b)
        .map(|d| {
            let t = crate::history::utc(d * 86_400);
            t.get(..10).unwrap_or(&t).to_string()
        })
        .collect()
}

/// The x position of day `i` of `n`, in a plot `w` wide starting at `left`, and a column's width.
fn column(i: usize, n: usize, left: f64, w: f64) -> (f64, f64) {
    let step = w / n.max(1) as f64;
    (left + step * i as f64, step)
}

fn per_day(f: &FleetReport, days: &[String], tr: Tr) -> Markup {
    let [heading, ..] = tr.html_fleet_sections();
    if days.is_empty() {
        return section("per-day", heading, html! {});
    }
    // Categories by their total, the first PALETTE.len() with a colour of their own.
    let mut totals: BTreeMap<&str, u64> = BTreeMap::new();
    for d in &f.days {
        for (c, n) in &d.failures {
            *totals.entry(c).or_default() += n;
        }
    }
    let mut order: Vec<(&str, u64)> = totals.into_iter().collect();
    order.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let colour = |c: &str| {
        order
            .iter()
            .take(PALETTE.len())
            .position(|(o, _)| *o == c)
            .map_or(OTHER, |i| PALETTE[i])
    };
    let by_day: BTreeMap<&str, &crate::report::history::DayCount> =
        f.days.iter().map(|d| (d.day.as_str(), d)).collect();
    let max = days
        .iter()
        .filter_map(|d| by_day.get(d.as_str()))
        .map(|d| d.failures.values().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let (left, top, w, h, legend) = (50.0, 12.0, 700.0, 200.0, 240.0);
    let (width, height) = (left + w + legend, top + h + 40.0);
    let base = top + h;
    let [x_label, y_label] = tr.html_fleet_day_axes();
    // Each day's segments, largest categories at the bottom, in the legend's order.
    let segments = |d: &crate::report::history::DayCount| {
        let mut y = base;
        let mut out = Vec::new();
        for (c, _) in &order {
            let Some(n) = d.failures.get(*c).copied().filter(|n| *n > 0) else {
                continue;
            };
            let bh = n as f64 / max as f64 * h;
            y -= bh;
            out.push((*c, n, y, bh));
        }
        out
    };
    let ticks: BTreeSet<usize> = [0, days.len() / 2, days.len() - 1].into();
    let shown = order.len().min(PALETTE.len());
    let lx = left + w + 16.0;
    let body = html! {
        (axes(left, top, w, base))
        text x=(left - 4.0) y=(base) text-anchor="end" { "0" }
        text x=(left - 4.0) y=(top + 4.0) text-anchor="end" { (max) } "\n"
        @for (i, day) in days.iter().enumerate() {
            @if let Some(d) = by_day.get(day.as_str()) {
                @let (x, step) = column(i, days.len(), left, w);
                @for (c, n, y, bh) in segments(d) {
                    rect.day x=(P(x)) y=(P(y)) width=(P((step * 0.8).max(1.0))) height=(P(bh)) fill=(colour(c)) {
                        title { (day) " " (c) ": " (n) }
                    }
                    "\n"
                }
            }
        }
        @for i in ticks {
            @let (x, step) = column(i, days.len(), left, w);
            text x=(P(x + step / 2.0)) y=(base + 14.0) text-anchor="middle" { (days[i]) } "\n"
        }
        (axis_labels(x_label, y_label, left, w, base + 32.0, top, h))
        // The legend, beside the plot.
        @for (i, (c, n)) in order.iter().take(shown).enumerate() {
            @let y = top + 16.0 * i as f64;
            g.key {
                rect x=(lx) y=(y) width="10" height="10" fill=(PALETTE[i]) {}
                text x=(lx + 14.0) y=(y + 9.0) { (cut(c, 26)) " (" (n) ")" }
            }
            "\n"
        }
        @if order.len() > shown {
            @let rest: u64 = order[shown..].iter().map(|(_, n)| n).sum();
            @let y = top + 16.0 * shown as f64;
            g.key {
                rect x=(lx) y=(y) width="10" height="10" fill=(OTHER) {}
                text x=(lx + 14.0) y=(y + 9.0) { (tr.html_fleet_other(order.len() - shown)) " (" (rest) ")" }
            }
            "\n"
        }
    };
    section(
        "per-day",
        heading,
        html! {
            (chart("per-day", width, height, heading, body))
            @if f.days.len() > days.len() || days.len() == MAX_DAYS {
                p.dim { (tr.html_fleet_days_cut(days.len(), &days[0])) } "\n"
            }
        },
    )
}

fn top(f: &FleetReport, days: &[String], tr: Tr) -> Markup {
    let [_, heading, ..] = tr.html_fleet_sections();
    if f.top.is_empty() || days.is_empty() {
        return section("top", heading, html! {});
    }
    // One row per fingerprint on the per-day chart's axis: a dot per day it failed, its area
    // the day's count.
    let max = f
        .top_per_day
        .iter()
        .flat_map(|m| m.values())
        .copied()
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let (left, top, w, row) = (50.0, 8.0, 700.0, 22.0);
    let height = top + row * f.top.len() as f64 + 24.0;
    let width = left + w + 240.0;
    let index: BTreeMap<&str, usize> = days
        .iter()
        .enumerate()
        .map(|(i, d)| (d.as_str(), i))
        .collect();
    let body = html! {
        @for (r, (t, per)) in f.top.iter().zip(&f.top_per_day).enumerate() {
            @let y = top + row * r as f64 + row / 2.0;
            line.axis x1=(left) y1=(y) x2=(left + w) y2=(y) {}
            text x="4" y=(y + 4.0) { "#" (r + 1) }
            text x=(left + w + 8.0) y=(y + 4.0) { (cut(t.category.as_deref().unwrap_or(t.fingerprint.as_str()), 30)) } "\n"
            @for (day, n) in per {
                @if let Some(i) = index.get(day.as_str()) {
                    @let (x, step) = column(*i, days.len(), left, w);
                    // Its area the count, never wider than its day's column.
                    @let rad = (*n as f64 / max).sqrt() * (row / 2.0 - 1.0).min(step / 2.0);
                    circle.m-error cx=(P(x + step / 2.0)) cy=(y) r=(P(rad.max(1.5))) {
                        title { (day) " " (t.fingerprint) ": " (n) }
                    }
                    "\n"
                }
            }
        }
    };
    let table = html! {
        table {
            thead { tr { @for col in tr.html_fleet_top_header() { th scope="col" { (col) } } } } "\n"
            tbody {
                "\n"
                @for (r, t) in f.top.iter().enumerate() {
                    @let title = t.title.as_ref().map(|t| t.get(tr.0));
                    tr.fingerprint {
                        td { "#" (r + 1) }
                        td { (t.count) }
                        td.mono { a href={ "#" (anchor(&t.fingerprint)) } { (t.fingerprint) } }
                        td { code { (t.category.as_deref().unwrap_or("-")) } (super::BR) (cut(title.unwrap_or(""), 200)) }
                        td { (t.hosts.len()) }
                        td.mono { (t.first_seen.as_deref().unwrap_or("")) }
                        td.mono { (t.last_seen.as_deref().unwrap_or("")) }
                        td { (cut(t.note.as_ref().map_or("", |n| n.text.as_str()), 300)) }
                    }
                    "\n"
                }
            }
        }
        "\n"
    };
    section(
        "top",
        heading,
        html! { (chart("top", width, height, heading, body)) (table) },
    )
}

/// The id of a fingerprint's runs on the page: `fp-` and the fingerprint, anything but
/// letters and digits made `-` (a fingerprint is `fp1:` and hex digits, but an imported history
/// may hold any text).
fn anchor(fp: &str) -> String {
    let tail: String = fp
        .chars()
        .take(80)
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    format!("fp-{tail}")
}

/// Each top fingerprint's latest runs, each with the lines its report cites for the cause:
/// where a fingerprint's row and the latest runs link to.
fn top_runs(f: &FleetReport, tr: Tr) -> Markup {
    if f.top_runs.iter().all(Vec::is_empty) {
        return html! {};
    }
    let (heading, none) = tr.html_fleet_top_runs();
    let body = html! {
        "\n"
        @for (r, (t, runs)) in f.top.iter().zip(&f.top_runs).enumerate() {
            div.fingerprint-runs id=(anchor(&t.fingerprint)) {
                h3 {
                    "#" (r + 1) " " span.mono { (t.fingerprint) } " — "
                    code { (t.category.as_deref().unwrap_or("-")) } " · " (tr.html_fleet_runs_shown(runs.len(), t.count))
                }
                "\n"
                ul.runs {
                    "\n"
                    @for run in runs {
                        li {
                            span.mono { (run.at) } " "
                            (cut(run.job.as_deref().unwrap_or(""), 80)) " "
                            span.dim { (cut(run.host.as_deref().unwrap_or(""), 80)) }
                            @if run.lines.is_empty() {
                                " " span.dim { (none) }
                            } @else {
                                (cited(&run.lines))
                            }
                        }
                        "\n"
                    }
                }
            }
            "\n"
        }
    };
    section("top-runs", heading, body)
}

/// One cell of the heat map: its colour by `rate` against the fleet's, outlined and marked
/// `!` when a suspect, its counts, rate and p-value as its tooltip.
struct Cell<'a> {
    x: f64,
    y: f64,
    failures: u64,
    jobs: u64,
    rate: f64,
    p: Option<f64>,
    suspect: bool,
    what: &'a str,
}

fn cell(c: &Cell<'_>, size: f64, tr: Tr) -> Markup {
    let tip = tr.html_fleet_cell(
        c.what,
        c.failures,
        c.jobs,
        c.rate,
        c.p.map(p_value).as_deref(),
        c.suspect,
    );
    let (stroke, stroke_width) = if c.suspect {
        ("#000", "3")
    } else {
        ("#d5d9e0", "1")
    };
    html! {
        g.cell.suspect[c.suspect] {
            rect x=(c.x) y=(c.y) width=(size - 2.0) height=(size - 2.0) fill=(heat(c.failures, c.rate))
                stroke=(stroke) stroke-width=(stroke_width) { title { (tip) } }
            @if c.suspect {
                text x=(P(c.x + size / 2.0 - 1.0)) y=(P(c.y + size / 2.0 + 3.0)) text-anchor="middle" font-weight="bold" { "!" }
            }
        }
        "\n"
    }
}

fn heat_map(f: &FleetReport, tr: Tr) -> Markup {
    let [_, _, heading, ..] = tr.html_fleet_sections();
    if f.hosts.units.is_empty() {
        return section("heat-map", heading, html! {});
    }
    let (host_base, gpu_base) = (fleet_rate(&f.hosts), fleet_rate(&f.gpus));
    let gpu_stat: BTreeMap<&str, &crate::report::history::UnitStat> =
        f.gpus.units.iter().map(|u| (u.id.as_str(), u)).collect();
    let mut gpus_of: BTreeMap<&str, Vec<&crate::report::history::GpuCell>> = BTreeMap::new();
    for c in &f.cells {
        gpus_of.entry(c.host.as_str()).or_default().push(c);
    }
    for gpus in gpus_of.values_mut() {
        gpus.sort_by(|a, b| a.uuid.cmp(&b.uuid));
    }
    // Hosts in the order of their test (most significant first), as `history hosts`.
    let hosts: Vec<_> = f.hosts.units.iter().take(MAX_HOSTS).collect();
    let cols = hosts
        .iter()
        .map(|h| gpus_of.get(h.id.as_str()).map_or(0, |g| g.len()))
        .max()
        .unwrap_or(0)
        .min(MAX_GPUS);
    let (left, top, size, gap) = (150.0, 24.0, 26.0, 8.0);
    let width = left + size + gap + size * cols as f64 + 20.0;
    let height = top + size * hosts.len() as f64 + 10.0;
    let [host_col, gpu_cols] = tr.html_fleet_heat_columns();
    let body = html! {
        text x=(left + size / 2.0) y="14" text-anchor="middle" { (host_col) }
        text x=(left + size + gap) y="14" { (gpu_cols) } "\n"
        @for (i, h) in hosts.iter().enumerate() {
            @let y = top + size * i as f64;
            text x=(left - 6.0) y=(P(y + size / 2.0 + 3.0)) text-anchor="end" { (cut(&h.id, 22)) } "\n"
            (cell(&Cell {
                x: left,
                y,
                failures: h.suspect_failures,
                jobs: h.jobs,
                rate: ratio(h.suspect_failures, h.jobs, host_base),
                p: Some(h.p_value),
                suspect: h.suspect,
                what: &h.id,
            }, size, tr))
            @for (j, g) in gpus_of.get(h.id.as_str()).map_or(&[][..], |g| g.as_slice()).iter().take(cols).enumerate() {
                @let stat = gpu_stat.get(g.uuid.as_str());
                (cell(&Cell {
                    x: left + size + gap + size * j as f64,
                    y,
                    failures: g.suspect_failures,
                    jobs: g.jobs,
                    rate: ratio(g.suspect_failures, g.jobs, gpu_base),
                    p: stat.map(|s| s.p_value),
                    suspect: stat.is_some_and(|s| s.suspect),
                    what: &format!("{} · {}", h.id, g.uuid),
                }, size, tr))
            }
        }
    };
    section(
        "heat-map",
        heading,
        html! {
            (chart("heat", width, height, heading, body))
            ul.heat-legend {
                "\n"
                @for (i, label) in tr.html_fleet_heat_legend().iter().enumerate() {
                    li {
                        svg.swatch viewBox="0 0 14 14" width="14" height="14" aria-hidden="true" {
                            @if i < HEAT.len() {
                                rect x="1.5" y="1.5" width="11" height="11" fill=(HEAT[i]) stroke="#d5d9e0" {}
                            } @else {
                                rect x="1.5" y="1.5" width="11" height="11" fill="#fff" stroke="#000" stroke-width="3" {}
                            }
                        }
                        (label)
                    }
                    "\n"
                }
            }
            "\n"
            p.dim { (tr.html_fleet_heat_note(host_base, gpu_base, f.hosts.units.len().saturating_sub(MAX_HOSTS))) } "\n"
        },
    )
}

fn suspects(f: &FleetReport, tr: Tr) -> Markup {
    let [_, _, _, heading, _] = tr.html_fleet_sections();
    let body = html! {
        @for s in [&f.hosts, &f.gpus] {
            @let tested = s.units.iter().filter(|u| u.jobs > 0).count();
            @let suspects: Vec<_> = s.units.iter().filter(|u| u.suspect).collect();
            p.dim { (tr.fleet_summary(s, tested)) } "\n"
            @if suspects.is_empty() {
                p { (tr.fleet_no_suspects()) } "\n"
            } @else {
                ul class={ "suspects " (s.unit) } {
                    "\n"
                    @for u in suspects {
                        li.suspect { (tr.fleet_suspect(u, &p_value(u.p_value))) } "\n"
                    }
                }
                "\n"
            }
        }
    };
    section("suspects", heading, body)
}

fn recent(f: &FleetReport, tr: Tr) -> Markup {
    let [_, _, _, _, heading] = tr.html_fleet_sections();
    let body = html! {
        table {
            thead { tr { @for col in tr.html_fleet_recent_header() { th scope="col" { (col) } } } } "\n"
            tbody {
                "\n"
                @for r in f.recent.iter().take(MAX_RECENT) {
                    @let title = r.title.as_ref().map(|t| t.get(tr.0));
                    tr.run {
                        td.mono { (r.at) }
                        td { (cut(r.job.as_deref().unwrap_or(""), 80)) }
                        td { (cut(r.host.as_deref().unwrap_or(""), 80)) }
                        td { code { (r.category.as_deref().unwrap_or(r.verdict.as_str())) } }
                        td { (cut(title.unwrap_or(""), 200)) }
                        td { code { (r.action) } }
                        td { (r.confidence.map(|c| format!("{c:.2}")).unwrap_or_default()) }
                        td.mono {
                            @match r.fingerprint.as_deref() {
                                Some(fp) if f.top.iter().any(|t| t.fingerprint == fp) => {
                                    a href={ "#" (anchor(fp)) } { (fp) }
                                }
                                fp => { (fp.unwrap_or("")) }
                            }
                        }
                    }
                    "\n"
                }
            }
        }
        "\n"
    };
    section("recent", heading, body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heat_colours_step_at_the_bounds() {
        assert_eq!(heat(0, 9.0), HEAT[0]);
        assert_eq!(heat(1, 0.2), HEAT[1]);
        assert_eq!(heat(1, 1.0), HEAT[2]);
        assert_eq!(heat(1, 1.5), HEAT[3]);
        assert_eq!(heat(1, 5.9), HEAT[4]);
        assert_eq!(heat(3, 40.0), HEAT[5]);
    }

    #[test]
    fn columns_tile_the_plot() {
        let (x0, s) = column(0, 4, 50.0, 400.0);
        let (x3, _) = column(3, 4, 50.0, 400.0);
        assert_eq!((x0, s, x3 + s), (50.0, 100.0, 450.0));
    }
}
