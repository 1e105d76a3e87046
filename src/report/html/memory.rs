//! The run page's `#memory` section: the memory `trainwreck run` sampled, one line chart per
//! memory against its limit (/dev/shm's size, the cgroup's limit, the host's MemTotal, the
//! GPU's total). Renders only: the samples and the limits are read elsewhere.

use super::{P, Tr, axes, axis_labels, chart};
use crate::report::Report;
use maud::{Markup, html};

/// Sample sets drawn (one per `trainwreck run` folder read); the rest are not.
const MAX_SAMPLE_SETS: usize = 2;

/// `trainwreck run`'s memory samples as line charts, each against the limit a fact gives
/// (/dev/shm's size, the cgroup's limit, the host's MemTotal, the GPU's total).
pub(super) fn section(r: &Report, tr: Tr) -> Markup {
    if r.samples.is_empty() {
        return html! {};
    }
    let fact = |name: &str| {
        r.facts
            .iter()
            .filter(|f| f.name == name)
            .find_map(|f| f.value.as_i64())
            .filter(|v| *v > 0)
            .map(|v| v as u64)
    };
    let mut body = Vec::new();
    for (k, s) in r.samples.iter().take(MAX_SAMPLE_SETS).enumerate() {
        let mut charts: Vec<(String, Vec<Option<u64>>, Option<u64>)> = Vec::new();
        if let Some(c) = s.column("shm_used_bytes") {
            let name = tr.html_memory_series("shm", None);
            charts.push((name, c.values.clone(), fact("shm.size_bytes")));
        }
        if let Some(c) = s.column("cgroup_memory_bytes") {
            let name = tr.html_memory_series("cgroup", None);
            charts.push((name, c.values.clone(), fact("cgroup.memory_limit_bytes")));
        }
        if let (Some(c), Some(total)) = (
            s.column("host_mem_available_bytes"),
            fact("host.mem_total_bytes"),
        ) {
            let used = c
                .values
                .iter()
                .map(|v| v.map(|a| total.saturating_sub(a)))
                .collect();
            charts.push((tr.html_memory_series("host", None), used, Some(total)));
        }
        for c in &s.columns {
            if let Some(n) = c
                .name
                .strip_prefix("gpu")
                .and_then(|x| x.strip_suffix("_used_bytes"))
            {
                let limit = fact(&format!("gpu.{n}.memory_total_bytes"));
                charts.push((
                    tr.html_memory_series("gpu", Some(n)),
                    c.values.clone(),
                    limit,
                ));
            }
        }
        for (j, (name, values, limit)) in charts.iter().enumerate() {
            if values.iter().any(Option::is_some) {
                let id = format!("memory-{k}-{j}");
                body.push(line_chart(&id, name, &s.t_ms, values, *limit, tr));
            }
        }
        body.push(html! { p.note { (tr.html_memory_note(&s.path, s.t_ms.len())) } "\n" });
    }
    super::section("memory", tr.html_memory(), html! { @for m in body { (m) } })
}

/// One memory curve: time on x (seconds since the command started), bytes on y, the limit
/// dashed, the end of the command as the last vertical line; a gap in the samples breaks the
/// line.
fn line_chart(
    id: &str,
    name: &str,
    t_ms: &[u64],
    values: &[Option<u64>],
    limit: Option<u64>,
    tr: Tr,
) -> Markup {
    let (left, top, w, h) = (80.0, 12.0, 620.0, 140.0);
    let last = t_ms.last().copied().unwrap_or(0);
    let span = (last as f64 / 1000.0).max(0.001);
    let peak = values.iter().flatten().copied().max().unwrap_or(0);
    let y_max = (limit.unwrap_or(0).max(peak) as f64 * 1.08).max(1.0);
    let x = |t: u64| left + t as f64 / 1000.0 / span * w;
    let y = |v: u64| top + h - v as f64 / y_max * h;
    let hb = |v: u64| crate::rules::template::human_bytes(v as f64);
    let title = tr.html_memory_title(name, &hb(peak), limit.map(hb).as_deref());
    let [x_label, y_label] = tr.html_memory_axes();
    let [limit_label, end_label] = tr.html_memory_marks();
    let (width, height) = (left + w + 20.0, top + h + 44.0);
    let base = top + h;
    // The curve, one polyline per run of samples without a gap.
    let mut runs: Vec<Vec<String>> = vec![Vec::new()];
    for (t, v) in t_ms.iter().zip(values) {
        match v {
            Some(v) => {
                runs.last_mut()
                    .expect("never empty")
                    .push(format!("{},{}", P(x(*t)), P(y(*v))))
            }
            None if runs.last().is_some_and(|r| !r.is_empty()) => runs.push(Vec::new()),
            None => {}
        }
    }
    let ex = P(x(last));
    let body = html! {
        (axes(left, top, w, base))
        text x=(left - 4.0) y=(base) text-anchor="end" { "0" } "\n"
        // The peak's tick, where it does not sit on the zero's.
        @if base - y(peak) >= 14.0 {
            text x=(left - 4.0) y=(P(y(peak) + 4.0)) text-anchor="end" { (hb(peak)) } "\n"
        }
        @if let Some(l) = limit {
            line.limit x1=(left) y1=(P(y(l))) x2=(left + w) y2=(P(y(l))) {}
            text x=(left + w - 4.0) y=(P(y(l) - 4.0)) text-anchor="end" { (limit_label) " " (hb(l)) } "\n"
        }
        @for r in runs.iter().filter(|r| !r.is_empty()) {
            polyline.series points=(r.join(" ")) { title { (name) } } "\n"
        }
        line.end x1=(ex) y1=(top) x2=(ex) y2=(base) {}
        text x=(P(x(last) - 3.0)) y=(base - 4.0) text-anchor="end" { (end_label) } "\n"
        @for t in [0, last / 2, last] {
            text x=(P(x(t))) y=(base + 14.0) text-anchor="middle" { (format!("{:.1}", t as f64 / 1000.0)) } "\n"
        }
        (axis_labels(x_label, y_label, left, w, base + 34.0, top, h))
    };
    html! {
        figure {
            "\n"
            (chart(id, width, height, &title, body))
            figcaption { (title) } "\n"
        }
        "\n"
    }
}
