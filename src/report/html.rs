//! The `html` format: one self-contained page for a run (`analyze --format html`), to keep as a
//! CI artifact or share by link. Inline CSS and inline SVG only: no script, no font, no image or
//! style fetched from anywhere (a Content-Security-Policy that forbids every fetch says so to
//! the browser too), so it works offline and from `file://`. The page shows the cause card
//! (category, confidence, action, fix, evidence with `file:line` and rank, what argues against
//! it, symptoms), what else was considered and what was ruled out with the reasons the report
//! gives (`Report::considered_why`), a per-rank timeline drawn as SVG lanes, the memory
//! `trainwreck run` sampled as curves against their limits, the core dump's frames, the facts
//! with where each was read, and the warnings; with `--baseline`, what changed since the good
//! run (`html::diff`, which also draws `diff --format html`'s own page).
//!
//! Every text from the report passes [`esc`], the one escaping path: markup characters become
//! character references and what XML/HTML forbid (controls, noncharacters such as U+FFFE)
//! becomes U+FFFD, so a hostile file name or log line stays text. The page is also well-formed
//! XML (void elements closed, only XML's five named references), so a test can parse it.
//! Renders only: it decides nothing the report has not decided.

use super::format::{Options, View};
use super::i18n::{Lang, Tr};
use super::{Report, cut};
use crate::correlate::Finding;
use crate::model::Verdict;
use crate::timeline::{Event, Kind, format_epoch};
use std::fmt::Write;

mod diff;
mod fleet;

pub struct Printer;

impl super::format::Printer for Printer {
    fn print(
        &self,
        view: View<'_>,
        o: &Options<'_>,
        _: Option<&mut crate::redact::Redactor>,
    ) -> Option<String> {
        match view {
            View::Run(r) => Some(page(r, o.term.lang)),
            View::Triage(t) => Some(triage_page(t, o.term.lang)),
            View::Diff(d) => Some(diff::page(d, o.term.lang)),
            View::FleetReport(f) => Some(fleet::page(f, o.term.lang)),
            _ => None,
        }
    }
}

/// Most evidence lines, facts and warnings listed; the rest are counted.
const MAX_EVIDENCE: usize = 40;
const MAX_FACTS: usize = 400;
const MAX_WARNINGS: usize = 50;
/// The timeline's lanes and the marks drawn in each.
const MAX_LANES: usize = 48;
const MAX_MARKS: usize = 40;

/// Text made safe inside an element or a quoted attribute: `& < > " '` as references, and
/// what XML 1.0 and HTML forbid or discourage (controls but tab and newline, DEL, C1,
/// noncharacters) as U+FFFD.
pub fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            '\r' => o.push('\u{FFFD}'),
            c if super::not_xml(c) || c == super::COLOUR => o.push('\u{FFFD}'),
            c => o.push(c),
        }
    }
    o
}

const CSS: &str = "
:root{--fg:#1d1f23;--dim:#5b6270;--line:#d5d9e0;--bg:#fff;--card:#f6f7f9;--red:#b3261e;--amber:#9a6700;--green:#1a7f37;--blue:#0b57d0}
*{box-sizing:border-box}
body{font:15px/1.45 system-ui,-apple-system,'Segoe UI','Noto Sans','PingFang SC','Microsoft YaHei',sans-serif;color:var(--fg);background:var(--bg);margin:0 auto;max-width:1180px;padding:1.2rem}
h1{font-size:1.25rem;margin:0 0 .8rem}h2{font-size:1.15rem;margin:1.6rem 0 .5rem}h3{font-size:1rem;margin:1rem 0 .3rem}
.card{background:var(--card);border:1px solid var(--line);border-left:6px solid var(--red);border-radius:6px;padding:.8rem 1rem}
.card.unknown{border-left-color:var(--amber)}.card.ok{border-left-color:var(--green)}
.card h2{margin-top:.2rem}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:.15rem .8rem;margin:.4rem 0}
dl.meta dt{color:var(--dim)}dl.meta dd{margin:0}
code,pre,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,'Noto Sans Mono CJK SC',monospace;font-size:.86rem}
.fix{background:#fff;border:1px solid var(--line);border-radius:4px;padding:.5rem .7rem;white-space:pre-wrap}
table{border-collapse:collapse;width:100%;margin:.3rem 0}
th,td{border-bottom:1px solid var(--line);padding:.25rem .45rem;text-align:left;vertical-align:top}
th{background:#eef0f3;font-weight:600}
td.line{white-space:pre-wrap;word-break:break-all}
td details summary,td details li{word-break:break-all}
td.why{color:var(--green)}td.against{color:var(--amber)}
.dim{color:var(--dim)}
svg{display:block;max-width:100%;height:auto;background:#fff;border:1px solid var(--line);border-radius:4px}
svg text{font:11px ui-monospace,Menlo,Consolas,monospace;fill:var(--fg)}
svg .axis{stroke:var(--dim);stroke-width:1}svg .lane{fill:#f3f4f6}svg .lane.origin{fill:#fde8e6}
svg .series{fill:none;stroke:var(--blue);stroke-width:1.5}svg .limit{stroke:var(--red);stroke-width:1;stroke-dasharray:6 4}svg .end{stroke:var(--dim);stroke-width:1;stroke-dasharray:2 3}
svg .series.bad{stroke:var(--red);stroke-dasharray:6 3}svg .dot.good{fill:var(--blue)}svg .dot.bad{fill:var(--red)}svg .nonfinite{fill:#fff;stroke:var(--red);stroke-width:2}svg .part{stroke:var(--amber);stroke-width:1.5;stroke-dasharray:4 3}
svg .m-error{fill:var(--red)}svg .m-signal{fill:var(--amber)}svg .m-watchdog{fill:var(--blue)}svg .m-last{fill:var(--dim)}svg .m-root{fill:none;stroke:var(--red);stroke-width:2}
ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:1rem;margin:.3rem 0}
ul.legend li::before{content:'';display:inline-block;width:.7rem;height:.7rem;margin-right:.3rem;border-radius:50%;vertical-align:-1px}
ul.legend .l-good::before{background:var(--blue)}ul.legend .l-bad::before{background:var(--red)}ul.legend .l-nonfinite::before{background:#fff;border:2px solid var(--red)}
ul.legend .l-error::before{background:var(--red)}ul.legend .l-signal::before{background:var(--amber)}ul.legend .l-watchdog::before{background:var(--blue)}ul.legend .l-last::before{background:var(--dim)}ul.legend .l-root::before{border:2px solid var(--red)}
ul.heat-legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.4rem 1rem;margin:.4rem 0}ul.heat-legend svg{display:inline-block;border:none;background:none;vertical-align:-2px;margin-right:.3rem}
footer{margin-top:2rem;color:var(--dim);font-size:.85rem}
@media print{body{max-width:none;padding:0;font-size:11pt}.card{break-inside:avoid}svg{break-inside:avoid}th{background:none}}
";

/// The document's head and the opening of its body.
fn head(out: &mut String, title: &str, lang: Lang) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"{}\">\n<head>\n<meta charset=\"utf-8\"/>\n\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\"/>\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n\
         <meta name=\"generator\" content=\"trainwreck {}\"/>\n<title>{}</title>\n<style>{CSS}</style>\n</head>\n<body>\n",
        match lang {
            Lang::En => "en",
            Lang::Zh => "zh-CN",
        },
        env!("CARGO_PKG_VERSION"),
        esc(&cut(title, 200))
    );
}

/// A section's opening and its heading, labelled for screen readers.
fn section(out: &mut String, id: &str, heading: &str) {
    let _ = writeln!(
        out,
        "<section id=\"{id}\" aria-labelledby=\"{id}-h\">\n<h2 id=\"{id}-h\">{}</h2>",
        esc(heading)
    );
}

/// An SVG chart's opening, `width` × `height`, with its title.
fn svg_open(out: &mut String, id: &str, width: f64, height: f64, title: &str) {
    let _ = writeln!(
        out,
        "<svg viewBox=\"0 0 {width} {height}\" width=\"{width}\" height=\"{height}\" role=\"img\" aria-labelledby=\"{id}-title\">\n<title id=\"{id}-title\">{}</title>",
        esc(title)
    );
}

/// A chart's two axes: the x axis along `base` from `left` over `w`, the y axis from `top`
/// down to `base`.
fn axes(out: &mut String, left: f64, top: f64, w: f64, base: f64) {
    let _ = write!(
        out,
        "<line class=\"axis\" x1=\"{left}\" y1=\"{base}\" x2=\"{}\" y2=\"{base}\"/><line class=\"axis\" x1=\"{left}\" y1=\"{top}\" x2=\"{left}\" y2=\"{base}\"/>",
        left + w
    );
}

/// The whole page of a run.
pub fn page(r: &Report, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut out = String::with_capacity(32 * 1024);
    let title = match r.top() {
        Some(top) => format!("trainwreck: {} — {}", top.category, tr.title(top)),
        None if r.verdict == Verdict::NoFailure => format!("trainwreck: {}", r.verdict),
        None => format!("trainwreck: {}", tr.unknown_failure()),
    };
    head(&mut out, &title, lang);
    let _ = writeln!(
        out,
        "<header><h1>{}</h1></header>\n<main>",
        esc(&title_line(r, tr))
    );
    cause_card(&mut out, r, tr);
    if let Some(line) = r
        .history
        .as_ref()
        .map(|h| super::history::seen_line_in(h, lang))
    {
        let _ = writeln!(out, "<p id=\"history\"><strong>{}</strong></p>", esc(&line));
    }
    if let Some(d) = &r.diff {
        diff::run_section(&mut out, d, tr);
    }
    considered(&mut out, r, tr);
    timeline(&mut out, r, tr);
    memory(&mut out, r, tr);
    for (i, c) in r.cores.iter().enumerate() {
        core(&mut out, c, i, tr);
    }
    facts(&mut out, r, tr);
    warnings(&mut out, r, tr);
    let _ = writeln!(
        out,
        "</main>\n<footer><p>{}</p></footer>\n</body>\n</html>",
        esc(&tr.footer(
            r.inputs.len(),
            r.facts.len(),
            r.warnings.len(),
            r.fingerprint.as_deref()
        ))
    );
    out
}

/// `triage --format html`: the groups by fingerprint with their counts, bars of the runs by
/// category and by action class, the hardware suspects, and each group's runs.
pub fn triage_page(t: &super::triage::Triage, lang: Lang) -> String {
    let tr = Tr(lang);
    let mut out = String::with_capacity(16 * 1024);
    let title = format!(
        "trainwreck triage: {}",
        tr.triage_totals(t.runs_total, t.groups.len())
    );
    head(&mut out, &title, lang);
    let _ = writeln!(out, "<header><h1>{}</h1></header>\n<main>", esc(&title));
    let what = |g: &super::triage::Group| {
        g.category
            .map_or_else(|| g.verdict.to_string(), |c| c.to_string())
    };
    let mut by_category: std::collections::BTreeMap<String, usize> = Default::default();
    let mut by_action: std::collections::BTreeMap<String, usize> = Default::default();
    for g in &t.groups {
        *by_category.entry(what(g)).or_default() += g.count;
        *by_action.entry(g.action.to_string()).or_default() += g.count;
    }
    let [h_category, h_action] = tr.html_triage_charts();
    bars(&mut out, "by-category", h_category, &by_category, tr);
    bars(&mut out, "by-action", h_action, &by_action, tr);
    if !t.suspects.is_empty() {
        let _ = writeln!(
            out,
            "<section id=\"suspects\" aria-labelledby=\"suspects-h\">\n<h2 id=\"suspects-h\">{}</h2>\n<ul>",
            esc(tr.triage_suspect_label())
        );
        for r in &t.suspects {
            let _ = writeln!(
                out,
                "<li>{}</li>",
                esc(&tr.triage_suspect(r.kind.as_str(), &r.name, r.runs))
            );
        }
        out.push_str("</ul>\n</section>\n");
    }
    let h = tr.triage_header();
    let _ = writeln!(
        out,
        "<section id=\"groups\" aria-labelledby=\"groups-h\">\n<h2 id=\"groups-h\">{}</h2>\n<table>\n<thead><tr>",
        esc(tr.html_triage_groups())
    );
    for col in &h[..7] {
        let _ = write!(out, "<th scope=\"col\">{}</th>", esc(col));
    }
    let _ = writeln!(
        out,
        "<th scope=\"col\">{}</th></tr></thead>\n<tbody>",
        esc(tr.triage_md_runs())
    );
    for (i, g) in t.groups.iter().enumerate() {
        let hosts: Vec<String> = g.hosts.iter().map(|(h, n)| format!("{h}×{n}")).collect();
        let _ = writeln!(
            out,
            "<tr id=\"group-{i}\" class=\"group\"><td>{}</td><td class=\"mono\">{}</td><td><code>{}</code><br/>{}</td><td><code>{}</code></td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td><details><summary class=\"mono\">{}</summary><ul class=\"mono\">",
            g.count,
            esc(g.fingerprint.as_deref().unwrap_or("-")),
            esc(&what(g)),
            esc(tr.group_title(g).unwrap_or(tr.triage_no_rule())),
            esc(&g.action.to_string()),
            esc(g.first_seen.as_deref().unwrap_or("")),
            esc(g.last_seen.as_deref().unwrap_or("")),
            esc(&cut(&hosts.join(", "), 200)),
            esc(&g.example)
        );
        for run in g.runs.iter().take(200) {
            let _ = writeln!(out, "<li>{}</li>", esc(run));
        }
        if g.runs.len() > 200 {
            let _ = writeln!(out, "<li>+{}</li>", g.runs.len() - 200);
        }
        out.push_str("</ul></details></td></tr>\n");
    }
    out.push_str("</tbody>\n</table>\n</section>\n");
    if !t.warnings.is_empty() {
        let _ = writeln!(
            out,
            "<section id=\"warnings\" aria-labelledby=\"warnings-h\">\n<h2 id=\"warnings-h\">{} ({})</h2>\n<ul>",
            esc(tr.warnings()),
            t.warnings.len()
        );
        for w in t.warnings.iter().take(MAX_WARNINGS) {
            let _ = writeln!(out, "<li class=\"mono\">{}</li>", esc(&tr.warning_line(w)));
        }
        out.push_str("</ul>\n</section>\n");
    }
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// A horizontal bar chart of run counts, most first, as SVG with its title and axis label.
fn bars(
    out: &mut String,
    id: &str,
    heading: &str,
    counts: &std::collections::BTreeMap<String, usize>,
    tr: Tr,
) {
    let mut rows: Vec<(&String, &usize)> = counts.iter().collect();
    rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    rows.truncate(30);
    let max = rows.iter().map(|r| *r.1).max().unwrap_or(1).max(1) as f64;
    let (left, width, bar_h) = (220.0, 560.0, 20.0);
    let height = bar_h * rows.len() as f64 + 30.0;
    let _ = writeln!(
        out,
        "<section id=\"{id}\" aria-labelledby=\"{id}-h\">\n<h2 id=\"{id}-h\">{}</h2>\n<svg viewBox=\"0 0 {w} {height}\" width=\"{w}\" height=\"{height}\" role=\"img\" aria-labelledby=\"{id}-title\">\n<title id=\"{id}-title\">{}</title>",
        esc(heading),
        esc(heading),
        w = left + width + 60.0
    );
    for (i, (name, n)) in rows.iter().enumerate() {
        let y = bar_h * i as f64 + 4.0;
        let w = (**n as f64 / max * width).max(1.0);
        let _ = writeln!(
            out,
            "<g class=\"bar\"><text x=\"4\" y=\"{}\">{}</text><rect class=\"m-error\" x=\"{left}\" y=\"{y}\" width=\"{w:.1}\" height=\"{}\"><title>{}: {n}</title></rect><text x=\"{:.1}\" y=\"{}\">{n}</text></g>",
            y + bar_h - 8.0,
            esc(&cut(name, 30)),
            bar_h - 6.0,
            esc(name),
            left + w + 4.0,
            y + bar_h - 8.0
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{left}\" y=\"{}\">{}</text>\n</svg>\n</section>",
        bar_h * rows.len() as f64 + 22.0,
        esc(tr.html_axis_runs())
    );
}

/// The page's heading: the verdict and how much was read.
fn title_line(r: &Report, tr: Tr) -> String {
    format!(
        "trainwreck · {} · {}",
        r.verdict,
        tr.html_inputs_read(r.inputs.len())
    )
}

fn location(path: &str, line: Option<u64>) -> String {
    match line {
        Some(l) => format!("{path}:{l}"),
        None => path.to_string(),
    }
}

fn cause_card(out: &mut String, r: &Report, tr: Tr) {
    match r.top() {
        Some(top) => {
            let _ = writeln!(
                out,
                "<section id=\"cause\" class=\"card\" aria-labelledby=\"cause-h\">\n<h2 id=\"cause-h\">{} <code>{}</code> — {}</h2>",
                esc(tr.cause()),
                esc(top.category.as_str()),
                esc(tr.title(top))
            );
            meta(out, top, tr);
            fix_and_next_time(out, top, tr, "h3");
            evidence(out, top, tr, &Context::of(r));
            against(out, top, tr);
            let symptoms: Vec<&Finding> = r.symptoms_of(&top.rule).collect();
            if !symptoms.is_empty() {
                let _ = writeln!(out, "<h3>{}</h3>\n<ul>", esc(tr.symptoms_heading()));
                for s in symptoms {
                    let ranks: std::collections::BTreeSet<u32> =
                        s.evidence.iter().filter_map(|e| e.rank).collect();
                    let ranks: Vec<u32> = ranks.into_iter().collect();
                    let _ = writeln!(
                        out,
                        "<li><code>{}</code> — {}{}</li>",
                        esc(s.category.as_str()),
                        esc(tr.title(s)),
                        esc(&tr.symptom_count(s.evidence.len(), &ranks))
                    );
                }
                out.push_str("</ul>\n");
            }
            out.push_str("</section>\n");
        }
        None if r.verdict == Verdict::NoFailure => {
            let _ = writeln!(
                out,
                "<section id=\"cause\" class=\"card ok\" aria-labelledby=\"cause-h\">\n<h2 id=\"cause-h\">{}</h2>\n</section>",
                esc(&tr.no_failure(r.inputs.len()))
            );
        }
        None => {
            let _ = writeln!(
                out,
                "<section id=\"cause\" class=\"card unknown\" aria-labelledby=\"cause-h\">\n<h2 id=\"cause-h\">{}</h2>",
                esc(tr.unknown_failure())
            );
            if let Some(f) = r.findings.first() {
                let _ = writeln!(out, "<p>{}</p>", esc(&tr.closest(f)));
                evidence(out, f, tr, &Context::of(r));
            }
            // What the evidence ruled out, why, what else fits and what to look at instead.
            for f in r.ruled_out_by_evidence() {
                let _ = writeln!(
                    out,
                    "<h3 class=\"ruled-out\">{} <code>{}</code> — {}</h3>",
                    esc(tr.html_ruled_out()),
                    esc(f.category.as_str()),
                    esc(tr.title(f))
                );
                against(out, f, tr);
                fix_and_next_time(out, f, tr, "h4");
            }
            if !r.last_errors.is_empty() {
                let _ = writeln!(
                    out,
                    "<h3>{}</h3>\n<table>\n<thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead>\n<tbody>",
                    esc(tr.last_error_lines()),
                    esc(tr.html_evidence_header()[0]),
                    esc(tr.html_evidence_header()[2])
                );
                for e in &r.last_errors {
                    let _ = writeln!(
                        out,
                        "<tr><td class=\"mono\">{}</td><td class=\"line mono\">{}</td></tr>",
                        esc(&location(&e.path, Some(e.line))),
                        esc(&cut(&e.text, 300))
                    );
                }
                out.push_str("</tbody>\n</table>\n");
            }
            let _ = writeln!(
                out,
                "<p class=\"dim\">{}</p>\n</section>",
                esc(tr.capture_next_time())
            );
        }
    }
}

/// A finding's fix and what to capture next time, each under a heading of level `h`.
fn fix_and_next_time(out: &mut String, f: &Finding, tr: Tr, h: &str) {
    let _ = writeln!(
        out,
        "<{h}>{}</{h}>\n<p class=\"fix\">{}</p>",
        esc(tr.fix_heading()),
        esc(tr.fix(f))
    );
    if let Some(n) = tr.next_time(f) {
        let _ = writeln!(
            out,
            "<{h}>{}</{h}>\n<p>{}</p>",
            esc(tr.next_time_heading()),
            esc(n)
        );
    }
}

/// Confidence, action, rule and where it started, as a definition list.
fn meta(out: &mut String, f: &Finding, tr: Tr) {
    let [conf, action, rule, started] = tr.html_meta_labels();
    let _ = writeln!(
        out,
        "<dl class=\"meta\">\n<dt>{}</dt><dd>{:.2}</dd>\n<dt>{}</dt><dd><code>{}</code></dd>\n<dt>{}</dt><dd><code>{} {}</code></dd>",
        esc(conf),
        f.confidence,
        esc(action),
        esc(&f.action.to_string()),
        esc(rule),
        esc(&f.code),
        esc(&f.rule)
    );
    if let Some(o) = super::origin_text(f) {
        let _ = writeln!(out, "<dt>{}</dt><dd>{}</dd>", esc(started), esc(&o));
    }
    out.push_str("</dl>\n");
}

/// Lines around an evidence line that the report holds elsewhere (the timeline's events,
/// other evidence, facts, the last error lines), by file and line number.
struct Context<'a> {
    lines: std::collections::BTreeMap<(&'a str, u64), &'a str>,
}

/// How many lines either side of an evidence line count as its context.
const CONTEXT: u64 = 3;

impl<'a> Context<'a> {
    fn of(r: &'a Report) -> Context<'a> {
        let mut lines = std::collections::BTreeMap::new();
        let mut add = |path: &'a str, line: Option<u64>, text: &'a str| {
            if let Some(l) = line {
                lines.entry((path, l)).or_insert(text);
            }
        };
        for e in &r.timeline.events {
            add(&e.path, e.line, &e.text);
        }
        for f in &r.findings {
            for e in &f.evidence {
                add(&e.path, e.line, &e.text);
            }
        }
        for f in &r.facts {
            add(&f.path, f.line, &f.text);
        }
        for e in &r.last_errors {
            add(&e.path, Some(e.line), &e.text);
        }
        Context { lines }
    }

    /// The lines near `path:line` that the report has, but that line itself.
    fn around(&self, path: &'a str, line: u64) -> Vec<(u64, &'a str)> {
        let from = (path, line.saturating_sub(CONTEXT));
        let to = (path, line + CONTEXT);
        self.lines
            .range(from..=to)
            .filter(|((_, l), _)| *l != line)
            .map(|((_, l), t)| (*l, *t))
            .collect()
    }
}

fn evidence(out: &mut String, f: &Finding, tr: Tr, ctx: &Context<'_>) {
    if f.evidence.is_empty() {
        return;
    }
    let [place, rank, line] = tr.html_evidence_header();
    let _ = writeln!(
        out,
        "<h3>{}</h3>\n<table class=\"evidence\">\n<thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead>\n<tbody>",
        esc(tr.evidence()),
        esc(place),
        esc(rank),
        esc(line)
    );
    for e in f.evidence.iter().take(MAX_EVIDENCE) {
        let who = match (e.rank, &e.host) {
            (Some(r), Some(h)) => format!("{r} ({h})"),
            (Some(r), None) => r.to_string(),
            (None, Some(h)) => h.clone(),
            (None, None) => String::new(),
        };
        let _ = writeln!(
            out,
            "<tr><td class=\"mono\">{}</td><td>{}</td><td class=\"line mono\">{}</td></tr>",
            esc(&location(&e.path, e.line)),
            esc(&who),
            esc(&cut(&e.text, 400))
        );
        if let Some(line) = e.line {
            let near = ctx.around(&e.path, line);
            if !near.is_empty() {
                out.push_str(
                    "<tr class=\"context\"><td></td><td></td><td class=\"line mono dim\">",
                );
                for (i, (l, t)) in near.iter().enumerate() {
                    if i > 0 {
                        out.push_str("<br/>");
                    }
                    let _ = write!(out, "{l}: {}", esc(&cut(t, 200)));
                }
                out.push_str("</td></tr>\n");
            }
        }
        if let Some(why) = tr.why(e) {
            let _ = writeln!(
                out,
                "<tr><td></td><td></td><td class=\"why\">→ {}</td></tr>",
                esc(why)
            );
        }
    }
    out.push_str("</tbody>\n</table>\n");
    let more = f.evidence.len().saturating_sub(MAX_EVIDENCE) as u64 + f.more_lines;
    if more > 0 {
        let _ = writeln!(out, "<p class=\"dim\">{}</p>", esc(&tr.more_matching(more)));
    }
}

fn against(out: &mut String, f: &Finding, tr: Tr) {
    if f.against.is_empty() {
        return;
    }
    let [place, _, line] = tr.html_evidence_header();
    let _ = writeln!(
        out,
        "<h3>{}</h3>\n<table class=\"against\">\n<thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead>\n<tbody>",
        esc(tr.against()),
        esc(place),
        esc(line)
    );
    for a in &f.against {
        let _ = writeln!(
            out,
            "<tr><td class=\"mono\">{}</td><td class=\"line mono\">{}</td></tr>\n<tr><td></td><td class=\"against\">✗ {}</td></tr>",
            esc(&location(&a.path, a.line)),
            esc(&cut(&a.text, 300)),
            esc(tr.against_why(a))
        );
    }
    out.push_str("</tbody>\n</table>\n");
    if let Some(alt) = tr.alternatives(f) {
        let _ = writeln!(
            out,
            "<p><strong>{}</strong>{}{}</p>",
            esc(tr.what_else_fits()),
            esc(tr.after_label()),
            esc(alt)
        );
    }
}

/// "Also considered" and "ruled out", each with the report's reason it ranks lower.
fn considered(out: &mut String, r: &Report, tr: Tr) {
    let all = r.considered_why();
    let (ruled_out, kept): (Vec<&super::Considered<'_>>, Vec<_>) =
        all.iter().partition(|c| c.ruled_out());
    for (id, heading, list) in [
        ("considered", tr.also_considered(), kept),
        ("ruled-out", tr.html_ruled_out(), ruled_out),
    ] {
        if list.is_empty() {
            continue;
        }
        let h = tr.considered_header();
        let _ = writeln!(
            out,
            "<section id=\"{id}\" aria-labelledby=\"{id}-h\">\n<h2 id=\"{id}-h\">{}</h2>\n<table>\n<thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead>\n<tbody>",
            esc(heading),
            esc(h[0]),
            esc(h[1]),
            esc(h[2]),
            esc(h[3])
        );
        for c in list {
            let f = c.finding;
            let _ = writeln!(
                out,
                "<tr><td><code>{}</code></td><td>{:.2}</td><td>{}</td><td>{}</td></tr>",
                esc(f.category.as_str()),
                f.confidence,
                esc(&cut(tr.title(f), 160)),
                esc(&cut(tr.why_lower(c.why), 200))
            );
        }
        out.push_str("</tbody>\n</table>\n</section>\n");
    }
}

/// What a mark on the timeline is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Mark {
    Error,
    Signal,
    Watchdog,
    Last,
}

impl Mark {
    fn of(e: &Event) -> Mark {
        use crate::sources::launcher::What;
        match &e.kind {
            Kind::LastLine => Mark::Last,
            Kind::Hit { .. } => Mark::Error,
            Kind::Launch(What::Watchdog { .. }) => Mark::Watchdog,
            Kind::Launch(
                What::WorkerExit { .. } | What::WorkerKilled { .. } | What::Teardown { .. },
            )
            | Kind::Machine { .. } => Mark::Signal,
            Kind::Launch(_) => Mark::Last,
        }
    }
    fn class(self) -> &'static str {
        match self {
            Mark::Error => "m-error",
            Mark::Signal => "m-signal",
            Mark::Watchdog => "m-watchdog",
            Mark::Last => "m-last",
        }
    }
}

/// One lane of the timeline: a rank (with its host when known), or a host's machine events.
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Lane {
    rank: Option<u32>,
    host: Option<String>,
}

fn lane_of(e: &Event) -> Lane {
    Lane {
        rank: e.who.rank,
        host: e.who.host.clone(),
    }
}

/// The per-rank timeline as SVG: one lane per rank (or host), its first error, its signals
/// and exits, the watchdog, its last timed line, and the root cause ringed in its lane.
/// Sample sets drawn (one per `trainwreck run` folder read); the rest are not.
const MAX_SAMPLE_SETS: usize = 2;

/// `trainwreck run`'s memory samples as line charts, each against the limit a fact gives
/// (/dev/shm's size, the cgroup's limit, the host's MemTotal, the GPU's total).
fn memory(out: &mut String, r: &Report, tr: Tr) {
    if r.samples.is_empty() {
        return;
    }
    let fact = |name: &str| {
        r.facts
            .iter()
            .filter(|f| f.name == name)
            .find_map(|f| f.value.as_i64())
            .filter(|v| *v > 0)
            .map(|v| v as u64)
    };
    let _ = writeln!(
        out,
        "<section id=\"memory\" aria-labelledby=\"memory-h\">\n<h2 id=\"memory-h\">{}</h2>",
        esc(tr.html_memory())
    );
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
                line_chart(out, &id, name, &s.t_ms, values, *limit, tr);
            }
        }
        let _ = writeln!(
            out,
            "<p class=\"note\">{}</p>",
            esc(&tr.html_memory_note(&s.path, s.t_ms.len()))
        );
    }
    let _ = writeln!(out, "</section>");
}

/// One memory curve: time on x (seconds since the command started), bytes on y, the limit
/// dashed, the end of the command as the last vertical line; a gap in the samples breaks the
/// line.
fn line_chart(
    out: &mut String,
    id: &str,
    name: &str,
    t_ms: &[u64],
    values: &[Option<u64>],
    limit: Option<u64>,
    tr: Tr,
) {
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
    out.push_str("<figure>\n");
    svg_open(out, id, width, height, &title);
    let base = top + h;
    axes(out, left, top, w, base);
    out.push('\n');
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{base}\" text-anchor=\"end\">0</text>",
        left - 4.0
    );
    // The peak's tick, where it does not sit on the zero's.
    if base - y(peak) >= 14.0 {
        let _ = writeln!(
            out,
            "<text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
            left - 4.0,
            y(peak) + 4.0,
            esc(&hb(peak))
        );
    }
    if let Some(l) = limit {
        let _ = writeln!(
            out,
            "<line class=\"limit\" x1=\"{left}\" y1=\"{ly:.1}\" x2=\"{}\" y2=\"{ly:.1}\"/><text x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{} {}</text>",
            left + w,
            left + w - 4.0,
            y(l) - 4.0,
            esc(limit_label),
            esc(&hb(l)),
            ly = y(l)
        );
    }
    // The curve, one polyline per run of samples without a gap.
    let mut runs: Vec<Vec<String>> = vec![Vec::new()];
    for (t, v) in t_ms.iter().zip(values) {
        match v {
            Some(v) => {
                runs.last_mut()
                    .expect("never empty")
                    .push(format!("{:.1},{:.1}", x(*t), y(*v)))
            }
            None if runs.last().is_some_and(|r| !r.is_empty()) => runs.push(Vec::new()),
            None => {}
        }
    }
    for r in runs.iter().filter(|r| !r.is_empty()) {
        let _ = writeln!(
            out,
            "<polyline class=\"series\" points=\"{}\"><title>{}</title></polyline>",
            r.join(" "),
            esc(name)
        );
    }
    let ex = x(last);
    let _ = writeln!(
        out,
        "<line class=\"end\" x1=\"{ex:.1}\" y1=\"{top}\" x2=\"{ex:.1}\" y2=\"{base}\"/><text x=\"{:.1}\" y=\"{}\" text-anchor=\"end\">{}</text>",
        ex - 3.0,
        base - 4.0,
        esc(end_label)
    );
    for t in [0, last / 2, last] {
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">{:.1}</text>",
            x(t),
            base + 14.0,
            t as f64 / 1000.0
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"{}\" y=\"{}\" text-anchor=\"middle\">{}</text><text x=\"12\" y=\"{:.1}\" text-anchor=\"middle\" transform=\"rotate(-90 12 {:.1})\">{}</text>\n</svg>\n<figcaption>{}</figcaption>\n</figure>",
        left + w / 2.0,
        base + 34.0,
        esc(x_label),
        top + h / 2.0,
        top + h / 2.0,
        esc(y_label),
        esc(&title)
    );
}

fn timeline(out: &mut String, r: &Report, tr: Tr) {
    let tl = &r.timeline;
    let timed: Vec<&Event> = tl.events.iter().filter(|e| e.t.is_some()).collect();
    let _ = writeln!(
        out,
        "<section id=\"timeline\" aria-labelledby=\"timeline-h\">\n<h2 id=\"timeline-h\">{}</h2>",
        esc(&tr.timeline_heading(tl.year))
    );
    let from = super::timeline::window_start(&timed);
    let shown: Vec<&Event> = timed
        .into_iter()
        .filter(|e| e.t.unwrap_or(0.0) >= from)
        .collect();
    if shown.is_empty() {
        let _ = writeln!(
            out,
            "<p class=\"dim\">{}</p>\n</section>",
            esc(tr.timeline_empty())
        );
        return;
    }
    let mut lanes: Vec<Lane> = shown.iter().map(|e| lane_of(e)).collect();
    lanes.sort();
    lanes.dedup();
    let hidden = lanes.len().saturating_sub(MAX_LANES);
    lanes.truncate(MAX_LANES);
    let t0 = shown
        .iter()
        .filter_map(|e| e.t)
        .fold(f64::INFINITY, f64::min);
    let t1 = shown
        .iter()
        .filter_map(|e| e.t)
        .fold(f64::NEG_INFINITY, f64::max);
    let span = if t1 > t0 { t1 - t0 } else { 1.0 };
    let top = r.top();
    let origin = top.map(|f| (f.origin.rank, f.origin.host.clone()));
    let in_origin = |lane: &Lane| {
        origin.as_ref().is_some_and(|(rk, h)| {
            // The host only tells lanes apart when both sides name one.
            lane.rank.is_some()
                && *rk == lane.rank
                && (h.is_none() || lane.host.is_none() || *h == lane.host)
        })
    };
    // Where the root cause sits: its rule's first timed line, in the origin's lane when that
    // lane has one (a line that names no rank, tied to the rank by pid, stays in its own lane).
    let root_hits = || {
        shown.iter().copied().filter(
            |e| matches!(&e.kind, Kind::Hit { rule, .. } if top.is_some_and(|f| &f.rule == rule)),
        )
    };
    let root: Option<&Event> = root_hits()
        .find(|e| in_origin(&lane_of(e)))
        .or_else(|| root_hits().next());
    let (left, width, lane_h, head) = (150.0, 820.0, 22.0, 8.0);
    let height = head + lane_h * lanes.len() as f64 + 34.0;
    let x = |t: f64| left + (t - t0) / span * width;
    let [l_error, l_signal, l_watchdog, l_last, l_root] = tr.html_timeline_legend();
    let _ = writeln!(
        out,
        "<svg viewBox=\"0 0 {w} {height}\" width=\"{w}\" height=\"{height}\" role=\"img\" aria-labelledby=\"timeline-title\">\n<title id=\"timeline-title\">{}</title>",
        esc(&tr.timeline_heading(tl.year)),
        w = left + width + 20.0,
    );
    for (i, lane) in lanes.iter().enumerate() {
        let y = head + lane_h * i as f64;
        let is_origin = in_origin(lane);
        let name = match (&lane.rank, &lane.host) {
            (Some(r), Some(h)) => format!("rank {r} · {h}"),
            (Some(r), None) => format!("rank {r}"),
            (None, Some(h)) => h.clone(),
            (None, None) => tr.html_lane_other().to_string(),
        };
        let _ = writeln!(
            out,
            "<g class=\"lane-row\" data-lane=\"{}\"><rect class=\"lane{}\" x=\"{left}\" y=\"{y}\" width=\"{width}\" height=\"{}\"/><text x=\"4\" y=\"{}\">{}</text>",
            i,
            if is_origin { " origin" } else { "" },
            lane_h - 4.0,
            y + lane_h - 8.0,
            esc(&cut(&name, 22))
        );
        let mut seen_error = false;
        let mut marks = 0;
        let in_lane = shown.iter().filter(|e| lane_of(e) == *lane);
        let last_of_lane = shown
            .iter()
            .filter(|e| lane_of(e) == *lane && Mark::of(e) == Mark::Last)
            .filter_map(|e| e.t)
            .fold(f64::NEG_INFINITY, f64::max);
        for e in in_lane {
            let m = Mark::of(e);
            let t = e.t.unwrap_or(t0);
            // A lane's first error, every signal and watchdog, and its last sign of life.
            let is_root = root.is_some_and(|x| std::ptr::eq(x, *e));
            let keep = is_root
                || match m {
                    Mark::Error => !seen_error,
                    Mark::Signal | Mark::Watchdog => true,
                    Mark::Last => t == last_of_lane,
                };
            if !keep || marks >= MAX_MARKS {
                continue;
            }
            seen_error |= m == Mark::Error;
            marks += 1;
            let cy = y + (lane_h - 4.0) / 2.0;
            let tip = format!(
                "{} · {} · {}",
                format_epoch(t),
                location(&e.path, e.line),
                cut(&e.text, 200)
            );
            let _ = writeln!(
                out,
                "<circle class=\"{}\" cx=\"{:.1}\" cy=\"{cy}\" r=\"5\"><title>{}</title></circle>",
                m.class(),
                x(t),
                esc(&tip)
            );
            if is_root {
                let _ = writeln!(
                    out,
                    "<circle class=\"m-root\" cx=\"{:.1}\" cy=\"{cy}\" r=\"9\"><title>{}</title></circle>",
                    x(t),
                    esc(l_root)
                );
            }
        }
        out.push_str("</g>\n");
    }
    let axis_y = head + lane_h * lanes.len() as f64 + 4.0;
    let _ = writeln!(
        out,
        "<line class=\"axis\" x1=\"{left}\" y1=\"{axis_y}\" x2=\"{}\" y2=\"{axis_y}\"/>",
        left + width
    );
    for k in 0..=4 {
        let t = t0 + span * k as f64 / 4.0;
        let label = format_epoch(t);
        let label = label.get(11..).unwrap_or(&label);
        let anchor = match k {
            0 => "start",
            4 => "end",
            _ => "middle",
        };
        let _ = writeln!(
            out,
            "<text x=\"{:.1}\" y=\"{}\" text-anchor=\"{anchor}\">{}</text>",
            x(t),
            axis_y + 14.0,
            esc(label)
        );
    }
    let _ = writeln!(
        out,
        "<text x=\"4\" y=\"{}\">{}</text>\n</svg>",
        axis_y + 28.0,
        esc(&tr.html_axis_time(&format_epoch(t0), &format_epoch(t1)))
    );
    let _ = writeln!(
        out,
        "<ul class=\"legend\"><li class=\"l-error\">{}</li><li class=\"l-signal\">{}</li><li class=\"l-watchdog\">{}</li><li class=\"l-last\">{}</li><li class=\"l-root\">{}</li></ul>",
        esc(l_error),
        esc(l_signal),
        esc(l_watchdog),
        esc(l_last),
        esc(l_root)
    );
    if hidden > 0 {
        let _ = writeln!(
            out,
            "<p class=\"dim\">{}</p>",
            esc(&tr.html_more_lanes(hidden))
        );
    }
    if let Some(o) = top.and_then(|f| f.origin.rank) {
        let _ = writeln!(out, "<p>{}</p>", esc(&tr.html_timeline_origin(o)));
    }
    out.push_str("</section>\n");
}

fn core(out: &mut String, c: &crate::analyze::CoreReport, i: usize, tr: Tr) {
    let s = &c.summary;
    let _ = writeln!(
        out,
        "<section id=\"core-{i}\" class=\"core\" aria-labelledby=\"core-{i}-h\">\n<h2 id=\"core-{i}-h\">{} <code>{}</code></h2>",
        esc(tr.core_dump()),
        esc(&c.path)
    );
    let head = super::core_headline(s);
    if !head.is_empty() {
        let _ = writeln!(out, "<p class=\"mono\">{}</p>", esc(&head));
    }
    if let Some(exe) = s.exe.as_ref().or(s.execfn.as_ref()) {
        let pid = s.pid.map(|p| format!(" pid {p}")).unwrap_or_default();
        let _ = writeln!(out, "<p class=\"mono\">process {}{pid}</p>", esc(exe));
    }
    if let Some(o) = &s.owner {
        let _ = writeln!(
            out,
            "<p>{}</p>",
            esc(&tr.core_owner(&o.describe(), o.exit.as_deref()))
        );
    }
    if !s.frames.is_empty() {
        let h = tr.html_frames_header();
        let _ = writeln!(
            out,
            "<table class=\"frames\">\n<thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead>\n<tbody>",
            esc(h[0]),
            esc(h[1]),
            esc(h[2]),
            esc(h[3])
        );
        for f in s.frames.iter().take(64) {
            for inl in &f.inlined {
                let at = source(&inl.file, inl.line);
                let _ = writeln!(
                    out,
                    "<tr><td>#{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td class=\"dim\">inlined</td></tr>",
                    f.index,
                    esc(&inl.function),
                    esc(&at)
                );
            }
            let place = match (&f.symbol, &f.module, &f.offset) {
                (Some(sym), Some(m), _) => format!("{sym} in {}", short(m)),
                (None, Some(m), Some(o)) => format!("{}+{o}", short(m)),
                _ => f.pc.clone(),
            };
            let _ = writeln!(
                out,
                "<tr><td>#{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td class=\"dim\">{}</td></tr>",
                f.index,
                esc(&place),
                esc(&source(&f.file, f.line)),
                esc(f.how)
            );
        }
        out.push_str("</tbody>\n</table>\n");
        if s.frames.len() > 64 {
            let _ = writeln!(
                out,
                "<p class=\"dim\">{}</p>",
                esc(&tr.more_frames(s.frames.len() - 64))
            );
        }
    }
    if let Some(py) = &s.python {
        for t in py.threads.iter().take(8) {
            let tid = t
                .tid
                .map(|t| format!("thread {t}"))
                .unwrap_or_else(|| format!("thread {}", t.thread_id));
            let mark = if t.crashed { " (crashed)" } else { "" };
            let _ = writeln!(
                out,
                "<h3>Python {} {}{mark}</h3>\n<pre>",
                esc(&py.version),
                esc(&tid)
            );
            for f in t.frames.iter().take(if t.crashed { 30 } else { 6 }) {
                let line = f.line.map(|l| format!(", line {l}")).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "File \"{}\"{line}, in {}",
                    esc(&f.file),
                    esc(&f.function)
                );
            }
            out.push_str("</pre>\n");
        }
    }
    out.push_str("</section>\n");
}

fn source(file: &Option<String>, line: Option<u32>) -> String {
    match (file, line) {
        (Some(file), Some(l)) => format!("{}:{l}", short(file)),
        _ => String::new(),
    }
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

/// Every fact, its value, where it was read (`file:line`) and the line itself.
fn facts(out: &mut String, r: &Report, tr: Tr) {
    if r.facts.is_empty() {
        return;
    }
    let h = tr.html_facts_header();
    let _ = writeln!(
        out,
        "<section id=\"facts\" aria-labelledby=\"facts-h\">\n<h2 id=\"facts-h\">{}</h2>\n<table>\n<thead><tr><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th><th scope=\"col\">{}</th></tr></thead>\n<tbody>",
        esc(tr.html_facts_heading()),
        esc(h[0]),
        esc(h[1]),
        esc(h[2]),
        esc(h[3])
    );
    for f in r.facts.iter().take(MAX_FACTS) {
        let _ = writeln!(
            out,
            "<tr><td><code>{}</code></td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td class=\"line mono dim\">{}</td></tr>",
            esc(&f.name),
            esc(&cut(&f.value.to_string(), 200)),
            esc(&location(&f.path, f.line)),
            esc(&cut(&f.text, 200))
        );
    }
    out.push_str("</tbody>\n</table>\n");
    if r.facts.len() > MAX_FACTS {
        let _ = writeln!(out, "<p class=\"dim\">+{}</p>", r.facts.len() - MAX_FACTS);
    }
    out.push_str("</section>\n");
}

fn warnings(out: &mut String, r: &Report, tr: Tr) {
    if r.warnings.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "<section id=\"warnings\" aria-labelledby=\"warnings-h\">\n<h2 id=\"warnings-h\">{} ({})</h2>\n<ul>",
        esc(tr.warnings()),
        r.warnings.len()
    );
    for w in r.warnings.iter().take(MAX_WARNINGS) {
        let _ = writeln!(out, "<li class=\"mono\">{}</li>", esc(&tr.warning_line(w)));
    }
    out.push_str("</ul>\n");
    if r.warnings.len() > MAX_WARNINGS {
        let _ = writeln!(
            out,
            "<p class=\"dim\">{}</p>",
            esc(&tr.more_warnings(r.warnings.len() - MAX_WARNINGS))
        );
    }
    out.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_forbidden_characters_become_text() {
        assert_eq!(
            esc("<script>a&b</script>\"'\u{FFFE}\u{1b}[2J\r"),
            "&lt;script&gt;a&amp;b&lt;/script&gt;&quot;&#39;\u{FFFD}\u{FFFD}[2J\u{FFFD}"
        );
    }
}
