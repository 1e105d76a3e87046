//! The run page's `#memory` section: memory over time, one line chart per memory against its
//! limit (/dev/shm's size, the cgroup's limit, the host's MemTotal, each GPU's total), from
//! `trainwreck run`'s samples (seconds since the command started, its end marked) or from the
//! user's own polling nvidia-smi (seconds since its first sample, the failure marked where the
//! logs' time for it falls among the samples); then each memory no samples cover, from the
//! snapshots before and after the run, as two points. [`bytes_chart`] also draws the diff
//! page's memory of both runs. Renders only: the samples, the snapshots' values and the
//! limits are read elsewhere (`sources::samples::memories` pairs each memory with its limit).

use super::{P, Tr, axes, axis_labels, chart, location};
use crate::model::{Fact, Phase};
use crate::report::Report;
use crate::sources::samples::{Clock, Memory, Samples, memories};
use maud::{Markup, html};

/// Sample sets drawn (a `trainwreck run` folder, a polled nvidia-smi file); the rest are not.
const MAX_SAMPLE_SETS: usize = 4;
/// Snapshot charts drawn (a machine with many GPUs); the rest are not.
const MAX_SNAPSHOT_CHARTS: usize = 12;
/// Points drawn per line: past it each stretch of samples is drawn as its highest (an hour of
/// polls on eight GPUs stays within the page's size budget, and no peak is lost).
const MAX_POINTS: usize = 600;

/// One line on a chart of bytes over time: its class (`series`, `series good`, …), its name
/// (its tooltip), and its samples.
pub(super) struct Line<'a> {
    pub class: &'static str,
    pub name: &'a str,
    pub t_ms: &'a [u64],
    pub values: &'a [Option<u64>],
}

/// A vertical line across a chart: its class, where (milliseconds on the x axis), its label.
pub(super) struct Rule<'a> {
    pub class: &'static str,
    pub at_ms: u64,
    pub label: &'a str,
}

fn hb(v: u64) -> String {
    crate::rules::template::human_bytes(v as f64)
}

/// The first positive whole number of the fact `name` among `facts`.
fn first(facts: &[Fact], name: &str) -> Option<u64> {
    facts
        .iter()
        .filter(|f| f.name == name)
        .find_map(|f| f.value.as_i64())
        .filter(|v| *v > 0)
        .map(|v| v as u64)
}

pub(super) fn section(r: &Report, tr: Tr) -> Markup {
    let fact = |name: &str| first(&r.facts, name);
    let sets: Vec<&Samples> = r.samples.iter().take(MAX_SAMPLE_SETS).collect();
    let mut sampled: Vec<Memory> = Vec::new();
    let mut body = Vec::new();
    // When the logs say the failure happened (their clock, read as printed).
    let failed_at = crate::history::record::failure_time(r)
        .and_then(|t| crate::sources::units::epoch_from_iso(&t));
    for (k, s) in sets.iter().enumerate() {
        let last = s.t_ms.last().copied().unwrap_or(0);
        let (x_label, rules, note) = match &s.clock {
            Clock::Command => {
                let [x, _] = tr.html_memory_axes();
                let [_, end] = tr.html_memory_marks();
                let rules = vec![Rule {
                    class: "end",
                    at_ms: last,
                    label: end,
                }];
                (
                    x.to_string(),
                    rules,
                    tr.html_memory_note(&s.path, s.t_ms.len()),
                )
            }
            Clock::Wall { start, epoch } => {
                let [end, failure] = tr.html_memory_wall_marks();
                let mut rules = vec![Rule {
                    class: "end",
                    at_ms: last,
                    label: end,
                }];
                // On the chart only when it falls among the samples (a poll's interval after
                // the last one at most).
                let interval = last / (s.t_ms.len().max(2) as u64 - 1);
                let at = failed_at
                    .map(|t| ((t - epoch) * 1000.0).round())
                    .filter(|ms| *ms >= 0.0 && *ms <= (last + interval) as f64);
                if let Some(ms) = at {
                    rules.push(Rule {
                        class: "failure",
                        at_ms: ms as u64,
                        label: failure,
                    });
                }
                let note = tr.html_memory_wall_note(&s.path, s.t_ms.len(), start, at.is_some());
                (tr.html_memory_wall_axis(start), rules, note)
            }
        };
        for (j, m) in memories(s, &fact).iter().enumerate() {
            if !m.values.iter().any(Option::is_some) {
                continue;
            }
            sampled.push(m.what.clone());
            let name = tr.html_memory_series(m.what.kind(), m.what.gpu());
            let peak = m.values.iter().flatten().copied().max().unwrap_or(0);
            let title = tr.html_memory_title(&name, &hb(peak), m.limit.map(hb).as_deref());
            let [limit_label, _] = tr.html_memory_marks();
            let limits: Vec<(String, u64)> = m
                .limit
                .map(|l| (format!("{limit_label} {}", hb(l)), l))
                .into_iter()
                .collect();
            let line = Line {
                class: "series",
                name: &name,
                t_ms: &s.t_ms,
                values: &m.values,
            };
            body.push(bytes_chart(
                &format!("memory-{k}-{j}"),
                &title,
                &x_label,
                &[line],
                &limits,
                &rules,
                tr,
            ));
        }
        body.push(html! { p.note { (note) } "\n" });
    }
    let snapshots = snapshot_charts(r, &sampled, tr);
    if body.is_empty() && snapshots.is_none() {
        return html! {};
    }
    super::section(
        "memory",
        tr.html_memory(),
        html! {
            @for m in body { (m) }
            @if let Some(s) = snapshots { (s) }
        },
    )
}

/// Bytes over time: time on x (seconds), bytes on y from 0, each limit dashed and labelled,
/// each rule a vertical line, each line a polyline broken where its samples have a gap. Its
/// title is its accessible name and its caption.
pub(super) fn bytes_chart(
    id: &str,
    title: &str,
    x_label: &str,
    lines: &[Line<'_>],
    limits: &[(String, u64)],
    rules: &[Rule<'_>],
    tr: Tr,
) -> Markup {
    let (left, top, w, h) = (80.0, 12.0, 620.0, 140.0);
    let last = lines
        .iter()
        .filter_map(|l| l.t_ms.last())
        .copied()
        .chain(rules.iter().map(|r| r.at_ms))
        .max()
        .unwrap_or(0);
    let span = (last as f64 / 1000.0).max(0.001);
    let peak = lines
        .iter()
        .flat_map(|l| l.values.iter().flatten())
        .copied()
        .max()
        .unwrap_or(0);
    let top_limit = limits.iter().map(|l| l.1).max().unwrap_or(0);
    let y_max = (top_limit.max(peak) as f64 * 1.08).max(1.0);
    let x = |t: u64| left + t as f64 / 1000.0 / span * w;
    let y = |v: u64| top + h - v as f64 / y_max * h;
    let [_, y_label] = tr.html_memory_axes();
    let (width, height) = (left + w + 20.0, top + h + 44.0);
    let base = top + h;
    // Each line as polylines, one per run of samples without a gap.
    let polylines = |l: &Line<'_>| {
        let mut runs: Vec<Vec<String>> = vec![Vec::new()];
        for (t, v) in thinned(l.t_ms, l.values) {
            match v {
                Some(v) => {
                    runs.last_mut()
                        .expect("never empty")
                        .push(format!("{},{}", P(x(t)), P(y(v))))
                }
                None if runs.last().is_some_and(|r| !r.is_empty()) => runs.push(Vec::new()),
                None => {}
            }
        }
        runs.retain(|r| !r.is_empty());
        runs
    };
    let body = html! {
        (axes(left, top, w, base))
        text x=(left - 4.0) y=(base) text-anchor="end" { "0" } "\n"
        // The peak's tick, where it does not sit on the zero's.
        @if base - y(peak) >= 14.0 {
            text x=(left - 4.0) y=(P(y(peak) + 4.0)) text-anchor="end" { (hb(peak)) } "\n"
        }
        @for (i, (label, l)) in limits.iter().enumerate() {
            line.limit x1=(left) y1=(P(y(*l))) x2=(left + w) y2=(P(y(*l))) {}
            text x=(left + w - 4.0 - 200.0 * i as f64) y=(P(y(*l) - 4.0)) text-anchor="end" { (label) } "\n"
        }
        @for l in lines {
            @for points in polylines(l) {
                polyline class=(l.class) points=(points.join(" ")) { title { (l.name) } } "\n"
            }
        }
        @for r in rules {
            line class=(r.class) x1=(P(x(r.at_ms))) y1=(top) x2=(P(x(r.at_ms))) y2=(base) {}
            text x=(P(x(r.at_ms) - 3.0)) y=(base - 4.0) text-anchor="end" { (r.label) } "\n"
        }
        @for t in [0, last / 2, last] {
            text x=(P(x(t))) y=(base + 14.0) text-anchor="middle" { (format!("{:.1}", t as f64 / 1000.0)) } "\n"
        }
        (axis_labels(x_label, y_label, left, w, base + 34.0, top, h))
    };
    html! {
        figure {
            "\n"
            (chart(id, width, height, title, body))
            // Two lines or more: which is which (`series good` → the legend's `l-good`).
            @if lines.len() > 1 {
                ul.legend {
                    @for l in lines {
                        li class={ "l-" (l.class.rsplit(' ').next().unwrap_or(l.class)) } { (l.name) }
                    }
                }
                "\n"
            }
            figcaption { (title) } "\n"
        }
        "\n"
    }
}

/// At most `MAX_POINTS` of the samples: each stretch of `n` as its highest value at its time
/// (a stretch with no value is a gap).
fn thinned(t_ms: &[u64], values: &[Option<u64>]) -> Vec<(u64, Option<u64>)> {
    let n = t_ms.len().div_ceil(MAX_POINTS).max(1);
    t_ms.chunks(n)
        .zip(values.chunks(n))
        .map(|(ts, vs)| {
            let best = ts
                .iter()
                .zip(vs)
                .filter_map(|(t, v)| Some((*t, (*v)?)))
                .max_by_key(|(_, v)| *v);
            match best {
                Some((t, v)) => (t, Some(v)),
                None => (ts[0], None),
            }
        })
        .collect()
}

/// A memory's value in the snapshot of `phase`: the first fact that gives it (the host's is
/// MemTotal less MemAvailable), with the fact it was read from.
fn snapshot_value<'a>(r: &'a Report, what: &Memory, phase: Phase) -> Option<(u64, &'a Fact)> {
    let of = |name: &str| {
        r.facts
            .iter()
            .filter(|f| f.phase == phase && f.name == name)
            .find_map(|f| Some((u64::try_from(f.value.as_i64()?).ok()?, f)))
    };
    let (v, f) = of(&what.snapshot_fact())?;
    match what {
        Memory::Host => {
            let (total, _) = of(&what.limit_fact())?;
            Some((total.saturating_sub(v), f))
        }
        _ => Some((v, f)),
    }
}

/// Each memory the snapshots give a value for before or after the run, and no samples cover:
/// a chart of its two points against its limit. `None` when there is none (or every value is
/// zero: an idle card before and after says nothing).
fn snapshot_charts(r: &Report, sampled: &[Memory], tr: Tr) -> Option<Markup> {
    let mut whats = vec![Memory::Shm, Memory::Cgroup, Memory::Host];
    let mut gpus: Vec<u32> = r
        .facts
        .iter()
        .filter(|f| f.phase != Phase::During)
        .filter_map(|f| {
            f.name
                .strip_prefix("gpu.")?
                .strip_suffix(".memory_used_bytes")?
                .parse()
                .ok()
        })
        .collect();
    gpus.sort_unstable();
    gpus.dedup();
    whats.extend(gpus.iter().map(|g| Memory::Gpu(g.to_string())));
    let charts: Vec<Markup> = whats
        .iter()
        .filter(|w| !sampled.contains(w))
        .filter_map(|what| {
            let before = snapshot_value(r, what, Phase::Before);
            let after = snapshot_value(r, what, Phase::After);
            let any = [before, after].iter().flatten().any(|(v, _)| *v > 0);
            any.then_some((what, [before, after]))
        })
        .take(MAX_SNAPSHOT_CHARTS)
        .enumerate()
        .map(|(j, (what, points))| {
            let limit = first(&r.facts, &what.limit_fact());
            snapshot_chart(&format!("memory-snap-{j}"), what, points, limit, tr)
        })
        .collect();
    if charts.is_empty() {
        return None;
    }
    Some(html! {
        h3 #memory-snapshots { (tr.html_memory_snapshots()) } "\n"
        @for c in charts { (c) }
        p.note { (tr.html_memory_snapshot_note()) } "\n"
    })
}

/// One memory's snapshots: before and after the run as two points, bytes on y from 0, the
/// limit dashed; each point's tooltip gives its value and where it was read.
fn snapshot_chart(
    id: &str,
    what: &Memory,
    points: [Option<(u64, &Fact)>; 2],
    limit: Option<u64>,
    tr: Tr,
) -> Markup {
    let (left, top, w, h) = (80.0, 12.0, 300.0, 110.0);
    let (width, height) = (left + w + 20.0, top + h + 44.0);
    let base = top + h;
    let peak = points.iter().flatten().map(|p| p.0).max().unwrap_or(0);
    let y_max = (limit.unwrap_or(0).max(peak) as f64 * 1.08).max(1.0);
    let y = |v: u64| top + h - v as f64 / y_max * h;
    let name = tr.html_memory_series(what.kind(), what.gpu());
    let shown = points.map(|p| p.map(|(v, _)| hb(v)));
    let title = tr.html_memory_snapshot_title(
        &name,
        shown[0].as_deref(),
        shown[1].as_deref(),
        limit.map(hb).as_deref(),
    );
    let [before, after, x_label] = tr.html_memory_snapshot_axis();
    let [_, y_label] = tr.html_memory_axes();
    let [limit_label, _] = tr.html_memory_marks();
    let body = html! {
        (axes(left, top, w, base))
        text x=(left - 4.0) y=(base) text-anchor="end" { "0" } "\n"
        @if base - y(peak) >= 14.0 {
            text x=(left - 4.0) y=(P(y(peak) + 4.0)) text-anchor="end" { (hb(peak)) } "\n"
        }
        @if let Some(l) = limit {
            line.limit x1=(left) y1=(P(y(l))) x2=(left + w) y2=(P(y(l))) {}
            text x=(left + w - 4.0) y=(P(y(l) - 4.0)) text-anchor="end" { (limit_label) " " (hb(l)) } "\n"
        }
        @for (i, (class, label, p)) in [("point before", before, points[0]), ("point after", after, points[1])].into_iter().enumerate() {
            @let cx = left + w * (0.25 + 0.5 * i as f64);
            text x=(cx) y=(base + 14.0) text-anchor="middle" { (label) } "\n"
            @if let Some((v, f)) = p {
                circle class=(class) cx=(cx) cy=(P(y(v))) r="5" {
                    title { (label) ": " (hb(v)) " · " (location(&f.path, f.line)) }
                }
                "\n"
            }
        }
        (axis_labels(x_label, y_label, left, w, base + 34.0, top, h))
    };
    html! {
        figure.snapshot {
            "\n"
            (chart(id, width, height, &title, body))
            figcaption { (title) } "\n"
        }
        "\n"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long series is drawn as at most `MAX_POINTS` points, each stretch by its highest
    /// sample (a one-sample spike survives), a stretch without values as a gap.
    #[test]
    fn thinning_keeps_each_stretchs_peak_and_gaps() {
        let t: Vec<u64> = (0..6000).collect();
        let mut v: Vec<Option<u64>> = (0..6000).map(|i| Some(i % 7)).collect();
        v[4321] = Some(1 << 40);
        for x in &mut v[100..200] {
            *x = None;
        }
        let th = thinned(&t, &v);
        assert!(th.len() <= MAX_POINTS, "{}", th.len());
        assert!(th.contains(&(4321, Some(1 << 40))));
        assert!(th.iter().any(|p| p.1.is_none()), "the gap stays");
        assert_eq!(
            thinned(&t[..5], &v[..5]).len(),
            5,
            "a short series as it is"
        );
    }
}
