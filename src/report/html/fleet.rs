//! `history report --format html`: the fleet's page, from the history's counts
//! (`history::Store::report`). Failures per day stacked by category, the top fingerprints day
//! by day, a host × GPU heat map of each one's rate of hardware-class and unexplained failures
//! against the fleet's with the suspects of the history's test outlined, and the latest runs.
//! Same rules as the run's page: inline CSS and SVG only, every text through `esc`. Renders
//! only: the counts and the test are the history's.

use super::{axes, esc, head, section, svg_open};
use crate::report::cut;
use crate::report::history::{FleetReport, FleetStats, p_value};
use crate::report::i18n::{Lang, Tr};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

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
    let mut out = String::with_capacity(32 * 1024);
    let title = tr.html_fleet_title(f.runs, f.failed, f.since.as_deref());
    head(&mut out, &format!("trainwreck: {title}"), lang);
    let _ = writeln!(out, "<header><h1>{}</h1></header>\n<main>", esc(&title));
    if f.runs == 0 {
        let _ = writeln!(out, "<p id=\"empty\">{}</p>", esc(tr.history_empty()));
    }
    let days = shown_days(f);
    per_day(&mut out, f, &days, tr);
    top(&mut out, f, &days, tr);
    heat_map(&mut out, f, tr);
    suspects(&mut out, f, tr);
    recent(&mut out, f, tr);
    let _ = writeln!(
        out,
        "</main>\n<footer><p>{}</p></footer>\n</body>\n</html>",
        esc(&tr.html_fleet_footer(&f.generated, f.hosts.alpha))
    );
    out
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

fn per_day(out: &mut String, f: &FleetReport, days: &[String], tr: Tr) {
    let [heading, ..] = tr.html_fleet_sections();
    section(out, "per-day", heading);
    if days.is_empty() {
        out.push_str("</section>\n");
        return;
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
    svg_open(out, "per-day", width, height, heading);
    axes(out, left, top, w, base);
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{base}\" text-anchor=\"end\">0</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{max}</text>",
        left - 4.0,
        left - 4.0,
        top + 4.0
    );
    for (i, day) in days.iter().enumerate() {
        let Some(d) = by_day.get(day.as_str()) else {
            continue;
        };
        let (x, step) = column(i, days.len(), left, w);
        let bw = (step * 0.8).max(1.0);
        let mut y = base;
        // Largest categories at the bottom, in the legend's order.
        for (c, _) in &order {
            let Some(n) = d.failures.get(*c).copied().filter(|n| *n > 0) else {
                continue;
            };
            let bh = n as f64 / max as f64 * h;
            y -= bh;
            let _ = writeln!(
                out,
                "<rect class=\"day\" x=\"{x:.1}\" y=\"{y:.1}\" width=\"{bw:.1}\" height=\"{bh:.1}\" fill=\"{}\"><title>{}</title></rect>",
                colour(c),
                esc(&format!("{day} {c}: {n}"))
            );
        }
    }
    let ticks: BTreeSet<usize> = [0, days.len() / 2, days.len() - 1].into();
    for i in ticks {
        let (x, step) = column(i, days.len(), left, w);
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{}</text>",
            x + step / 2.0,
            base + 14.0,
            esc(&days[i])
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text><text x=\"12\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 12 {:.1})\">{}</text>",
        left + w / 2.0,
        base + 32.0,
        esc(x_label),
        top + h / 2.0,
        top + h / 2.0,
        esc(y_label)
    );
    // The legend, beside the plot.
    let lx = left + w + 16.0;
    let shown = order.len().min(PALETTE.len());
    for (i, (c, n)) in order.iter().take(shown).enumerate() {
        let y = top + 16.0 * i as f64;
        let _ = writeln!(
            out,
            "<g class=\"key\"><rect x=\"{lx}\" y=\"{y}\" width=\"10\" height=\"10\" fill=\"{}\"/><text x=\"{}\" y=\"{}\">{} ({n})</text></g>",
            PALETTE[i],
            lx + 14.0,
            y + 9.0,
            esc(&cut(c, 26))
        );
    }
    if order.len() > shown {
        let rest: u64 = order[shown..].iter().map(|(_, n)| n).sum();
        let y = top + 16.0 * shown as f64;
        let _ = writeln!(
            out,
            "<g class=\"key\"><rect x=\"{lx}\" y=\"{y}\" width=\"10\" height=\"10\" fill=\"{OTHER}\"/><text x=\"{}\" y=\"{}\">{} ({rest})</text></g>",
            lx + 14.0,
            y + 9.0,
            esc(tr.html_fleet_other(order.len() - shown).as_str())
        );
    }
    out.push_str("</svg>\n");
    if f.days.len() > days.len() || days.len() == MAX_DAYS {
        let _ = writeln!(
            out,
            "<p class=\"dim\">{}</p>",
            esc(&tr.html_fleet_days_cut(days.len(), &days[0]))
        );
    }
    out.push_str("</section>\n");
}

fn top(out: &mut String, f: &FleetReport, days: &[String], tr: Tr) {
    let [_, heading, ..] = tr.html_fleet_sections();
    section(out, "top", heading);
    if f.top.is_empty() || days.is_empty() {
        out.push_str("</section>\n");
        return;
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
    svg_open(out, "top", width, height, heading);
    let index: BTreeMap<&str, usize> = days
        .iter()
        .enumerate()
        .map(|(i, d)| (d.as_str(), i))
        .collect();
    for (r, (t, per)) in f.top.iter().zip(&f.top_per_day).enumerate() {
        let y = top + row * r as f64 + row / 2.0;
        let _ = writeln!(
            out,
            "<line class=\"axis\" x1=\"{left}\" y1=\"{y}\" x2=\"{}\" y2=\"{y}\"/><text x=\"4\" y=\"{}\">#{}</text><text x=\"{}\" y=\"{}\">{}</text>",
            left + w,
            y + 4.0,
            r + 1,
            left + w + 8.0,
            y + 4.0,
            esc(&cut(
                t.category.as_deref().unwrap_or(t.fingerprint.as_str()),
                30
            ))
        );
        for (day, n) in per {
            let Some(i) = index.get(day.as_str()) else {
                continue;
            };
            let (x, step) = column(*i, days.len(), left, w);
            // Its area the count, never wider than its day's column.
            let rad = (*n as f64 / max).sqrt() * (row / 2.0 - 1.0).min(step / 2.0);
            let _ = writeln!(
                out,
                "<circle class=\"m-error\" cx=\"{:.1}\" cy=\"{y}\" r=\"{:.1}\"><title>{}</title></circle>",
                x + step / 2.0,
                rad.max(1.5),
                esc(&format!("{day} {}: {n}", t.fingerprint))
            );
        }
    }
    out.push_str("</svg>\n<table>\n<thead><tr>");
    for col in tr.html_fleet_top_header() {
        let _ = write!(out, "<th scope=\"col\">{}</th>", esc(col));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for (r, t) in f.top.iter().enumerate() {
        let title = match tr.0 {
            Lang::Zh => t.title_zh.as_deref().or(t.title.as_deref()),
            Lang::En => t.title.as_deref(),
        };
        let _ = writeln!(
            out,
            "<tr class=\"fingerprint\"><td>#{}</td><td>{}</td><td class=\"mono\">{}</td><td><code>{}</code><br/>{}</td><td>{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td>{}</td></tr>",
            r + 1,
            t.count,
            esc(&t.fingerprint),
            esc(t.category.as_deref().unwrap_or("-")),
            esc(&cut(title.unwrap_or(""), 200)),
            t.hosts.len(),
            esc(t.first_seen.as_deref().unwrap_or("")),
            esc(t.last_seen.as_deref().unwrap_or("")),
            esc(&cut(t.note.as_ref().map_or("", |n| n.text.as_str()), 300))
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
}

fn heat_map(out: &mut String, f: &FleetReport, tr: Tr) {
    let [_, _, heading, ..] = tr.html_fleet_sections();
    section(out, "heat-map", heading);
    if f.hosts.units.is_empty() {
        out.push_str("</section>\n");
        return;
    }
    let (host_base, gpu_base) = (fleet_rate(&f.hosts), fleet_rate(&f.gpus));
    let gpu_stat: BTreeMap<&str, &crate::report::history::UnitStat> =
        f.gpus.units.iter().map(|u| (u.id.as_str(), u)).collect();
    let mut gpus_of: BTreeMap<&str, Vec<&crate::report::history::GpuCell>> = BTreeMap::new();
    for c in &f.cells {
        gpus_of.entry(c.host.as_str()).or_default().push(c);
    }
    // Hosts in the order of their test (most significant first), as `history hosts`.
    let hosts: Vec<_> = f.hosts.units.iter().take(MAX_HOSTS).collect();
    let cols = hosts
        .iter()
        .map(|h| gpus_of.get(h.id.as_str()).map_or(0, |g| g.len()))
        .max()
        .unwrap_or(0)
        .min(MAX_GPUS);
    let (left, top, cell, gap) = (150.0, 24.0, 26.0, 8.0);
    let width = left + cell + gap + cell * cols as f64 + 20.0;
    let height = top + cell * hosts.len() as f64 + 10.0;
    let [host_col, gpu_cols] = tr.html_fleet_heat_columns();
    svg_open(out, "heat", width, height, heading);
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"14\" text-anchor=\"middle\">{}</text><text x=\"{}\" y=\"14\">{}</text>",
        left + cell / 2.0,
        esc(host_col),
        left + cell + gap,
        esc(gpu_cols)
    );
    let cell_svg = |out: &mut String,
                    x: f64,
                    y: f64,
                    k: u64,
                    jobs: u64,
                    r: f64,
                    p: Option<f64>,
                    suspect: bool,
                    what: &str| {
        let tip = tr.html_fleet_cell(what, k, jobs, r, p.map(p_value).as_deref(), suspect);
        let _ = writeln!(
            out,
            "<g class=\"cell{}\"><rect x=\"{x}\" y=\"{y}\" width=\"{}\" height=\"{}\" fill=\"{}\"{}><title>{}</title></rect>{}</g>",
            if suspect { " suspect" } else { "" },
            cell - 2.0,
            cell - 2.0,
            heat(k, r),
            if suspect {
                " stroke=\"#000\" stroke-width=\"3\""
            } else {
                " stroke=\"#d5d9e0\" stroke-width=\"1\""
            },
            esc(&tip),
            if suspect {
                format!(
                    "<text x=\"{:.1}\" y=\"{:.1}\" text-anchor=\"middle\" font-weight=\"bold\">!</text>",
                    x + cell / 2.0 - 1.0,
                    y + cell / 2.0 + 3.0
                )
            } else {
                String::new()
            }
        );
    };
    for (i, h) in hosts.iter().enumerate() {
        let y = top + cell * i as f64;
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 6.0,
            y + cell / 2.0 + 3.0,
            esc(&cut(&h.id, 22))
        );
        cell_svg(
            out,
            left,
            y,
            h.suspect_failures,
            h.jobs,
            ratio(h.suspect_failures, h.jobs, host_base),
            Some(h.p_value),
            h.suspect,
            &h.id,
        );
        let mut gpus = gpus_of.get(h.id.as_str()).cloned().unwrap_or_default();
        gpus.sort_by(|a, b| a.uuid.cmp(&b.uuid));
        for (j, g) in gpus.iter().take(cols).enumerate() {
            let stat = gpu_stat.get(g.uuid.as_str());
            cell_svg(
                out,
                left + cell + gap + cell * j as f64,
                y,
                g.suspect_failures,
                g.jobs,
                ratio(g.suspect_failures, g.jobs, gpu_base),
                stat.map(|s| s.p_value),
                stat.is_some_and(|s| s.suspect),
                &format!("{} · {}", h.id, g.uuid),
            );
        }
    }
    out.push_str("</svg>\n<ul class=\"heat-legend\">\n");
    for (i, label) in tr.html_fleet_heat_legend().iter().enumerate() {
        let swatch = if i < HEAT.len() {
            format!("fill=\"{}\" stroke=\"#d5d9e0\"", HEAT[i])
        } else {
            "fill=\"#fff\" stroke=\"#000\" stroke-width=\"3\"".to_string()
        };
        let _ = writeln!(
            out,
            "<li><svg class=\"swatch\" viewBox=\"0 0 14 14\" width=\"14\" height=\"14\" aria-hidden=\"true\"><rect x=\"1.5\" y=\"1.5\" width=\"11\" height=\"11\" {swatch}/></svg>{}</li>",
            esc(label)
        );
    }
    out.push_str("</ul>\n");
    let _ = writeln!(
        out,
        "<p class=\"dim\">{}</p>",
        esc(&tr.html_fleet_heat_note(
            host_base,
            gpu_base,
            f.hosts.units.len().saturating_sub(MAX_HOSTS)
        ))
    );
    out.push_str("</section>\n");
}

fn suspects(out: &mut String, f: &FleetReport, tr: Tr) {
    let [_, _, _, heading, _] = tr.html_fleet_sections();
    section(out, "suspects", heading);
    for s in [&f.hosts, &f.gpus] {
        let tested = s.units.iter().filter(|u| u.jobs > 0).count();
        let _ = writeln!(
            out,
            "<p class=\"dim\">{}</p>",
            esc(&tr.fleet_summary(s, tested))
        );
        let suspects: Vec<_> = s.units.iter().filter(|u| u.suspect).collect();
        if suspects.is_empty() {
            let _ = writeln!(out, "<p>{}</p>", esc(tr.fleet_no_suspects()));
            continue;
        }
        let _ = writeln!(out, "<ul class=\"suspects {}\">", s.unit);
        for u in suspects {
            let _ = writeln!(
                out,
                "<li class=\"suspect\">{}</li>",
                esc(&tr.fleet_suspect(u, &p_value(u.p_value)))
            );
        }
        out.push_str("</ul>\n");
    }
    out.push_str("</section>\n");
}

fn recent(out: &mut String, f: &FleetReport, tr: Tr) {
    let [_, _, _, _, heading] = tr.html_fleet_sections();
    section(out, "recent", heading);
    out.push_str("<table>\n<thead><tr>");
    for col in tr.html_fleet_recent_header() {
        let _ = write!(out, "<th scope=\"col\">{}</th>", esc(col));
    }
    out.push_str("</tr></thead>\n<tbody>\n");
    for r in f.recent.iter().take(MAX_RECENT) {
        let what = r.category.as_deref().unwrap_or(r.verdict.as_str());
        let title = match tr.0 {
            Lang::Zh => r.title_zh.as_deref().or(r.title.as_deref()),
            Lang::En => r.title.as_deref(),
        };
        let _ = writeln!(
            out,
            "<tr class=\"run\"><td class=\"mono\">{}</td><td>{}</td><td>{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td><td>{}</td><td class=\"mono\">{}</td></tr>",
            esc(&r.at),
            esc(&cut(r.job.as_deref().unwrap_or(""), 80)),
            esc(&cut(r.host.as_deref().unwrap_or(""), 80)),
            esc(what),
            esc(&cut(title.unwrap_or(""), 200)),
            esc(&r.action),
            r.confidence.map(|c| format!("{c:.2}")).unwrap_or_default(),
            esc(r.fingerprint.as_deref().unwrap_or(""))
        );
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
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
