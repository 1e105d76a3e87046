//! The `html` format: one self-contained page for a run (`analyze --format html`), to keep as a
//! CI artifact or share by link. Inline CSS and inline SVG only: no script, no font, no image or
//! style fetched from anywhere (a Content-Security-Policy that forbids every fetch says so to
//! the browser too), so it works offline and from `file://`. The page shows the cause card
//! (category, confidence, action, fix, evidence with `file:line` and rank, what argues against
//! it, symptoms), what else was considered and what was ruled out with the reasons the report
//! gives (`Report::considered_why`), a per-rank timeline drawn as SVG lanes, the memory charts
//! (`html::memory`), the core dump's frames, the facts with where each was read, and the
//! warnings; with `--baseline`, what changed since the good run (`html::diff`, which also draws
//! `diff --format html`'s own page). `html::fleet` draws `history report --html`.
//!
//! Every page is written with maud's `html!` templates, so a text can reach the page only
//! escaped (`& < > "` as references): markup is built by the macro, never by pasting strings.
//! The few pieces written as they are (`PreEscaped`) are this module's own constants: the
//! stylesheet, the `<meta>` lines and `<br/>` (closed for XML, which maud's void elements are
//! not). [`document`] then replaces what XML/HTML forbid (controls, noncharacters such as
//! U+FFFE) with U+FFFD over the whole page, so a hostile file name or log line stays text and
//! the page is well-formed XML as well as HTML, which a test parses. Renders only: it decides
//! nothing the report has not decided.

use super::format::{Options, View};
use super::i18n::{Lang, Tr};
use super::{Report, cut};
use crate::correlate::Finding;
use crate::model::Verdict;
use crate::timeline::{Event, Kind, format_epoch};
use maud::{DOCTYPE, Markup, PreEscaped, html};

mod diff;
mod fleet;
mod memory;

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

/// The markup written as it is: ours, never an input's. maud writes HTML's void elements
/// unclosed (`<br>`), which XML cannot parse; these are closed.
const BR: PreEscaped<&str> = PreEscaped("<br/>");
const META: PreEscaped<&str> = PreEscaped(concat!(
    "<meta charset=\"utf-8\"/>\n",
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\"/>\n",
    "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"/>\n",
    "<meta name=\"generator\" content=\"trainwreck ",
    env!("CARGO_PKG_VERSION"),
    "\"/>\n"
));

/// A coordinate or a length on a chart, one decimal.
#[derive(Clone, Copy)]
struct P(f64);

impl std::fmt::Display for P {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:.1}", self.0)
    }
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
svg .failure{stroke:var(--red);stroke-width:2}svg .point.before{fill:#fff;stroke:var(--blue);stroke-width:2}svg .point.after{fill:var(--blue)}figure.snapshot{display:inline-block;margin:0 1rem .6rem 0}
svg .m-error{fill:var(--red)}svg .m-signal{fill:var(--amber)}svg .m-watchdog{fill:var(--blue)}svg .m-last{fill:var(--dim)}svg .m-root{fill:none;stroke:var(--red);stroke-width:2}
ul.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:1rem;margin:.3rem 0}
ul.legend li::before{content:'';display:inline-block;width:.7rem;height:.7rem;margin-right:.3rem;border-radius:50%;vertical-align:-1px}
ul.legend .l-good::before{background:var(--blue)}ul.legend .l-bad::before{background:var(--red)}ul.legend .l-nonfinite::before{background:#fff;border:2px solid var(--red)}
ul.legend .l-error::before{background:var(--red)}ul.legend .l-signal::before{background:var(--amber)}ul.legend .l-watchdog::before{background:var(--blue)}ul.legend .l-last::before{background:var(--dim)}ul.legend .l-root::before{border:2px solid var(--red)}
ul.heat-legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.4rem 1rem;margin:.4rem 0}ul.heat-legend svg{display:inline-block;border:none;background:none;vertical-align:-2px;margin-right:.3rem}
footer{margin-top:2rem;color:var(--dim);font-size:.85rem}
@media print{body{max-width:none;padding:0;font-size:11pt}.card{break-inside:avoid}svg{break-inside:avoid}th{background:none}}
";

/// What XML 1.0 and HTML forbid or discourage (controls but tab and newline, DEL, C1,
/// noncharacters), a carriage return and the terminal colour marker: U+FFFD on the page.
fn forbidden(c: char) -> bool {
    c == '\r' || c == super::COLOUR || super::not_xml(c)
}

/// The whole page: the head (its title, the policy that forbids every fetch, the stylesheet),
/// the page's heading, its main part and its footer; forbidden characters replaced.
fn document(title: &str, lang: Lang, h1: &str, main: Markup, footer: Option<&str>) -> String {
    let lang = match lang {
        Lang::En => "en",
        Lang::Zh => "zh-CN",
    };
    let page = html! {
        (DOCTYPE) "\n"
        html lang=(lang) {
            "\n"
            head {
                "\n" (META)
                title { (cut(title, 200)) } "\n"
                style { (PreEscaped(CSS)) } "\n"
            }
            "\n"
            body {
                "\n"
                header { h1 { (h1) } } "\n"
                main { "\n" (main) } "\n"
                @if let Some(f) = footer {
                    footer { p { (f) } } "\n"
                }
            }
            "\n"
        }
        "\n"
    };
    let page = page.into_string();
    if !page.chars().any(forbidden) {
        return page;
    }
    page.chars()
        .map(|c| if forbidden(c) { '\u{FFFD}' } else { c })
        .collect()
}

/// A section with its heading, labelled for screen readers.
fn section(id: &str, heading: &str, body: Markup) -> Markup {
    html! {
        section id=(id) aria-labelledby={ (id) "-h" } {
            "\n" h2 id={ (id) "-h" } { (heading) } "\n"
            (body)
        }
        "\n"
    }
}

/// An SVG chart `width` × `height` with its title (what a screen reader says of it).
fn chart(id: &str, width: f64, height: f64, title: &str, body: Markup) -> Markup {
    html! {
        svg viewBox={ "0 0 " (width) " " (height) } width=(width) height=(height) role="img"
            aria-labelledby={ (id) "-title" } {
            "\n" title id={ (id) "-title" } { (title) } "\n"
            (body)
        }
        "\n"
    }
}

/// A chart's two axes: the x axis along `base` from `left` over `w`, the y axis from `top`
/// down to `base`.
fn axes(left: f64, top: f64, w: f64, base: f64) -> Markup {
    html! {
        line.axis x1=(left) y1=(base) x2=(left + w) y2=(base) {}
        line.axis x1=(left) y1=(top) x2=(left) y2=(base) {}
        "\n"
    }
}

/// The labels of a chart's two axes: `x` centred under the plot (`left`…`left + w`) at `y_x`,
/// `y` turned along the y axis (`top`…`top + h`).
fn axis_labels(x: &str, y: &str, left: f64, w: f64, y_x: f64, top: f64, h: f64) -> Markup {
    let mid = top + h / 2.0;
    html! {
        text.axis-label x=(left + w / 2.0) y=(y_x) text-anchor="middle" { (x) }
        text.axis-label x="12" y=(P(mid)) text-anchor="middle"
            transform={ "rotate(-90 12 " (P(mid)) ")" } { (y) }
        "\n"
    }
}

/// The whole page of a run.
pub fn page(r: &Report, lang: Lang) -> String {
    let tr = Tr(lang);
    let title = match r.top() {
        Some(top) => format!("trainwreck: {} — {}", top.category, tr.title(top)),
        None if r.verdict == Verdict::NoFailure => format!("trainwreck: {}", r.verdict),
        None => format!("trainwreck: {}", tr.unknown_failure()),
    };
    let history = r
        .history
        .as_ref()
        .map(|h| super::history::seen_line_in(h, lang));
    let main = html! {
        (cause_card(r, tr))
        @if let Some(line) = history {
            p #history { strong { (line) } } "\n"
        }
        @if let Some(d) = &r.diff {
            (diff::run_section(d, tr))
        }
        (considered(r, tr))
        (timeline(r, tr))
        (memory::section(r, tr))
        @for (i, c) in r.cores.iter().enumerate() {
            (core(c, i, tr))
        }
        (facts(r, tr))
        (warnings(&r.warnings, tr))
    };
    let footer = tr.footer(
        r.inputs.len(),
        r.facts.len(),
        r.warnings.len(),
        r.fingerprint.as_deref(),
    );
    document(&title, lang, &title_line(r, tr), main, Some(&footer))
}

/// `triage --format html`: the groups by fingerprint with their counts, bars of the runs by
/// category and by action class, the hardware suspects, and each group's runs.
pub fn triage_page(t: &super::triage::Triage, lang: Lang) -> String {
    let tr = Tr(lang);
    let title = format!(
        "trainwreck triage: {}",
        tr.triage_totals(t.runs_total, t.groups.len())
    );
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
    let h = tr.triage_header();
    let groups = html! {
        table {
            thead { tr {
                @for col in &h[..7] { th scope="col" { (col) } }
                th scope="col" { (tr.triage_md_runs()) }
            } } "\n"
            tbody {
                "\n"
                @for (i, g) in t.groups.iter().enumerate() {
                    @let hosts: Vec<String> = g.hosts.iter().map(|(h, n)| format!("{h}×{n}")).collect();
                    tr.group id={ "group-" (i) } {
                        td { (g.count) }
                        td.mono { (g.fingerprint.as_deref().unwrap_or("-")) }
                        td { code { (what(g)) } (BR) (tr.group_title(g).unwrap_or(tr.triage_no_rule())) }
                        td { code { (g.action.to_string()) } }
                        td.mono { (g.first_seen.as_deref().unwrap_or("")) }
                        td.mono { (g.last_seen.as_deref().unwrap_or("")) }
                        td.mono { (cut(&hosts.join(", "), 200)) }
                        td { details {
                            summary.mono { (g.example) }
                            ul.mono {
                                @for (j, run) in g.runs.iter().take(200).enumerate() {
                                    li id={ "group-" (i) "-run-" (j) } {
                                        (run)
                                        @if let Some(ev) = g.evidence.iter().find(|e| &e.run == run) {
                                            (cited(&ev.lines))
                                        }
                                    }
                                }
                                @if g.runs.len() > 200 { li { "+" (g.runs.len() - 200) } }
                            }
                        } }
                    }
                    "\n"
                }
            }
        }
        "\n"
    };
    let main = html! {
        (bars("by-category", h_category, &by_category, tr))
        (bars("by-action", h_action, &by_action, tr))
        @if !t.suspects.is_empty() {
            (section("suspects", tr.triage_suspect_label(), html! {
                ul { @for r in &t.suspects {
                    li { (tr.triage_suspect(r.kind.as_str(), &r.name, r.runs)) }
                } }
            }))
        }
        (section("groups", tr.html_triage_groups(), groups))
        (warning_list(t.warnings.iter().map(|w| tr.warning_line(w)), t.warnings.len(), tr))
    };
    document(&title, lang, &title, main, None)
}

/// A horizontal bar chart of run counts, most first, as SVG with its title and axis label.
fn bars(
    id: &str,
    heading: &str,
    counts: &std::collections::BTreeMap<String, usize>,
    tr: Tr,
) -> Markup {
    let mut rows: Vec<(&String, &usize)> = counts.iter().collect();
    rows.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    rows.truncate(30);
    let max = rows.iter().map(|r| *r.1).max().unwrap_or(1).max(1) as f64;
    let (left, width, bar_h) = (220.0, 560.0, 20.0);
    let height = bar_h * rows.len() as f64 + 30.0;
    let body = html! {
        @for (i, (name, n)) in rows.iter().enumerate() {
            @let y = bar_h * i as f64 + 4.0;
            @let w = (**n as f64 / max * width).max(1.0);
            g.bar {
                text x="4" y=(y + bar_h - 8.0) { (cut(name, 30)) }
                rect.m-error x=(left) y=(y) width=(P(w)) height=(bar_h - 6.0) { title { (name) ": " (n) } }
                text x=(P(left + w + 4.0)) y=(y + bar_h - 8.0) { (n) }
            }
            "\n"
        }
        text x=(left) y=(bar_h * rows.len() as f64 + 22.0) { (tr.html_axis_runs()) } "\n"
    };
    section(
        id,
        heading,
        chart(id, left + width + 60.0, height, heading, body),
    )
}

/// The page's heading: the verdict and how much was read.
fn title_line(r: &Report, tr: Tr) -> String {
    format!(
        "trainwreck · {} · {}",
        r.verdict,
        tr.html_inputs_read(r.inputs.len())
    )
}

/// A run's cited lines (triage groups, the fleet's fingerprints), each with its `file:line`.
/// Each item on its own line: the page-wide redaction reads a value up to white space, and
/// markup glued to a line's last word would look like one random token to it.
fn cited(lines: &[crate::report::triage::CitedLine]) -> Markup {
    html! {
        ul.cited {
            "\n"
            @for l in lines {
                li {
                    span.dim { (location(&l.path, l.line)) }
                    " " code { (l.text) }
                }
                "\n"
            }
        }
    }
}

fn location(path: &str, line: Option<u64>) -> String {
    match line {
        Some(l) => format!("{path}:{l}"),
        None => path.to_string(),
    }
}

/// The cause card: the top finding with its fix and evidence; for no failure, that; for an
/// unknown failure, the closest candidate, what the evidence ruled out, the last error lines.
fn cause_card(r: &Report, tr: Tr) -> Markup {
    let ctx = Context::of(r);
    let (class, body) = match r.top() {
        Some(top) => {
            let symptoms: Vec<&Finding> = r.symptoms_of(&top.rule).collect();
            let body = html! {
                h2 #cause-h { (tr.cause()) " " code { (top.category.as_str()) } " — " (tr.title(top)) } "\n"
                (meta(top, tr))
                (fix_and_next_time(top, tr, 3))
                (evidence(top, tr, &ctx))
                (against(top, tr))
                @if !symptoms.is_empty() {
                    h3 { (tr.symptoms_heading()) } "\n"
                    ul { @for s in symptoms {
                        @let ranks: std::collections::BTreeSet<u32> = s.evidence.iter().filter_map(|e| e.rank).collect();
                        @let ranks: Vec<u32> = ranks.into_iter().collect();
                        li { code { (s.category.as_str()) } " — " (tr.title(s)) (tr.symptom_count(s.evidence.len(), &ranks)) } "\n"
                    } }
                    "\n"
                }
            };
            ("card", body)
        }
        None if r.verdict == Verdict::NoFailure => (
            "card ok",
            html! { h2 #cause-h { (tr.no_failure(r.inputs.len())) } "\n" },
        ),
        None => {
            let [place, _, line] = tr.html_evidence_header();
            let body = html! {
                h2 #cause-h { (tr.unknown_failure()) } "\n"
                @if let Some(f) = r.findings.first() {
                    p { (tr.closest(f)) } "\n"
                    (evidence(f, tr, &ctx))
                }
                // What the evidence ruled out, why, what else fits and what to look at instead.
                @for f in r.ruled_out_by_evidence() {
                    h3.ruled-out { (tr.html_ruled_out()) " " code { (f.category.as_str()) } " — " (tr.title(f)) } "\n"
                    (against(f, tr))
                    (fix_and_next_time(f, tr, 4))
                }
                @if !r.last_errors.is_empty() {
                    h3 { (tr.last_error_lines()) } "\n"
                    table {
                        thead { tr { th scope="col" { (place) } th scope="col" { (line) } } } "\n"
                        tbody { "\n" @for e in &r.last_errors {
                            tr { td.mono { (location(&e.path, Some(e.line))) } td.line.mono { (cut(&e.text, 300)) } } "\n"
                        } }
                    }
                    "\n"
                }
                p.dim { (tr.capture_next_time()) } "\n"
            };
            ("card unknown", body)
        }
    };
    html! {
        section #cause class=(class) aria-labelledby="cause-h" { "\n" (body) }
        "\n"
    }
}

/// A heading of level `level` (3 or 4).
fn heading(level: u8, text: &str) -> Markup {
    html! {
        @if level == 3 { h3 { (text) } } @else { h4 { (text) } }
        "\n"
    }
}

/// A finding's fix and what to capture next time, each under a heading of level `level`.
fn fix_and_next_time(f: &Finding, tr: Tr, level: u8) -> Markup {
    html! {
        (heading(level, tr.fix_heading()))
        p.fix { (tr.fix(f)) } "\n"
        @if let Some(n) = tr.next_time(f) {
            (heading(level, tr.next_time_heading()))
            p { (n) } "\n"
        }
    }
}

/// Confidence, action, rule and where it started, as a definition list.
fn meta(f: &Finding, tr: Tr) -> Markup {
    let [conf, action, rule, started] = tr.html_meta_labels();
    html! {
        dl.meta {
            "\n" dt { (conf) } dd { (format!("{:.2}", f.confidence)) }
            "\n" dt { (action) } dd { code { (f.action.to_string()) } }
            "\n" dt { (rule) } dd { code { (f.code) " " (f.rule) } }
            @if let Some(o) = super::origin_text(f) {
                "\n" dt { (started) } dd { (o) }
            }
            "\n"
        }
        "\n"
    }
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

fn evidence(f: &Finding, tr: Tr, ctx: &Context<'_>) -> Markup {
    if f.evidence.is_empty() {
        return html! {};
    }
    let [place, rank, line] = tr.html_evidence_header();
    let more = f.evidence.len().saturating_sub(MAX_EVIDENCE) as u64 + f.more_lines;
    html! {
        h3 { (tr.evidence()) } "\n"
        table.evidence {
            thead { tr { th scope="col" { (place) } th scope="col" { (rank) } th scope="col" { (line) } } } "\n"
            tbody {
                "\n"
                @for e in f.evidence.iter().take(MAX_EVIDENCE) {
                    @let who = match (e.rank, &e.host) {
                        (Some(r), Some(h)) => format!("{r} ({h})"),
                        (Some(r), None) => r.to_string(),
                        (None, Some(h)) => h.clone(),
                        (None, None) => String::new(),
                    };
                    tr { td.mono { (location(&e.path, e.line)) } td { (who) } td.line.mono { (cut(&e.text, 400)) } } "\n"
                    @let near = e.line.map(|l| ctx.around(&e.path, l)).unwrap_or_default();
                    @if !near.is_empty() {
                        tr.context { td {} td {} td.line.mono.dim {
                            @for (i, (l, t)) in near.iter().enumerate() {
                                @if i > 0 { (BR) }
                                (l) ": " (cut(t, 200))
                            }
                        } }
                        "\n"
                    }
                    @if let Some(why) = tr.why(e) {
                        tr { td {} td {} td.why { "→ " (why) } } "\n"
                    }
                }
            }
        }
        "\n"
        @if more > 0 {
            p.dim { (tr.more_matching(more)) } "\n"
        }
    }
}

fn against(f: &Finding, tr: Tr) -> Markup {
    if f.against.is_empty() {
        return html! {};
    }
    let [place, _, line] = tr.html_evidence_header();
    html! {
        h3 { (tr.against()) } "\n"
        table.against {
            thead { tr { th scope="col" { (place) } th scope="col" { (line) } } } "\n"
            tbody {
                "\n"
                @for a in &f.against {
                    tr { td.mono { (location(&a.path, a.line)) } td.line.mono { (cut(&a.text, 300)) } } "\n"
                    tr { td {} td.against { "✗ " (tr.against_why(a)) } } "\n"
                }
            }
        }
        "\n"
        @if let Some(alt) = tr.alternatives(f) {
            p { strong { (tr.what_else_fits()) } (tr.after_label()) (alt) } "\n"
        }
    }
}

/// "Also considered" and "ruled out", each with the report's reason it ranks lower.
fn considered(r: &Report, tr: Tr) -> Markup {
    let all = r.considered_why();
    let (ruled_out, kept): (Vec<&super::Considered<'_>>, Vec<_>) =
        all.iter().partition(|c| c.ruled_out());
    let h = tr.considered_header();
    html! {
        @for (id, heading, list) in [
            ("considered", tr.also_considered(), kept),
            ("ruled-out", tr.html_ruled_out(), ruled_out),
        ] {
            @if !list.is_empty() {
                (section(id, heading, html! {
                    table {
                        thead { tr { @for col in &h[..4] { th scope="col" { (col) } } } } "\n"
                        tbody { "\n" @for c in list {
                            @let f = c.finding;
                            tr {
                                td { code { (f.category.as_str()) } }
                                td { (format!("{:.2}", f.confidence)) }
                                td { (cut(tr.title(f), 160)) }
                                td { (cut(tr.why_lower(c.why), 200)) }
                            }
                            "\n"
                        } }
                    }
                    "\n"
                }))
            }
        }
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
fn timeline(r: &Report, tr: Tr) -> Markup {
    let tl = &r.timeline;
    let heading = tr.timeline_heading(tl.year);
    let timed: Vec<&Event> = tl.events.iter().filter(|e| e.t.is_some()).collect();
    let from = super::timeline::window_start(&timed);
    let shown: Vec<&Event> = timed
        .into_iter()
        .filter(|e| e.t.unwrap_or(0.0) >= from)
        .collect();
    if shown.is_empty() {
        return section(
            "timeline",
            &heading,
            html! { p.dim { (tr.timeline_empty()) } "\n" },
        );
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
    let x = |t: f64| P(left + (t - t0) / span * width);
    let [l_error, l_signal, l_watchdog, l_last, l_root] = tr.html_timeline_legend();
    // Each lane's marks: its first error, every signal and watchdog, its last sign of life,
    // and the root cause; at most MAX_MARKS.
    let marks = |lane: &Lane| -> Vec<(&Event, Mark, bool)> {
        let last_of_lane = shown
            .iter()
            .filter(|e| lane_of(e) == *lane && Mark::of(e) == Mark::Last)
            .filter_map(|e| e.t)
            .fold(f64::NEG_INFINITY, f64::max);
        let mut seen_error = false;
        let mut out = Vec::new();
        for e in shown.iter().copied().filter(|e| lane_of(e) == *lane) {
            let m = Mark::of(e);
            let t = e.t.unwrap_or(t0);
            let is_root = root.is_some_and(|x| std::ptr::eq(x, e));
            let keep = is_root
                || match m {
                    Mark::Error => !seen_error,
                    Mark::Signal | Mark::Watchdog => true,
                    Mark::Last => t == last_of_lane,
                };
            if !keep || out.len() >= MAX_MARKS {
                continue;
            }
            seen_error |= m == Mark::Error;
            out.push((e, m, is_root));
        }
        out
    };
    let axis_y = head + lane_h * lanes.len() as f64 + 4.0;
    let body = html! {
        @for (i, lane) in lanes.iter().enumerate() {
            @let y = head + lane_h * i as f64;
            @let name = match (&lane.rank, &lane.host) {
                (Some(r), Some(h)) => format!("rank {r} · {h}"),
                (Some(r), None) => format!("rank {r}"),
                (None, Some(h)) => h.clone(),
                (None, None) => tr.html_lane_other().to_string(),
            };
            @let cy = y + (lane_h - 4.0) / 2.0;
            g.lane-row data-lane=(i) {
                rect.lane.origin[in_origin(lane)] x=(left) y=(y) width=(width) height=(lane_h - 4.0) {}
                text x="4" y=(y + lane_h - 8.0) { (cut(&name, 22)) }
                "\n"
                @for (e, m, is_root) in marks(lane) {
                    @let t = e.t.unwrap_or(t0);
                    circle class=(m.class()) cx=(x(t)) cy=(cy) r="5" {
                        title { (format_epoch(t)) " · " (location(&e.path, e.line)) " · " (cut(&e.text, 200)) }
                    }
                    "\n"
                    @if is_root {
                        circle.m-root cx=(x(t)) cy=(cy) r="9" { title { (l_root) } } "\n"
                    }
                }
            }
            "\n"
        }
        line.axis x1=(left) y1=(axis_y) x2=(left + width) y2=(axis_y) {} "\n"
        @for k in 0..=4 {
            @let t = t0 + span * k as f64 / 4.0;
            @let label = format_epoch(t);
            @let anchor = match k { 0 => "start", 4 => "end", _ => "middle" };
            text x=(x(t)) y=(axis_y + 14.0) text-anchor=(anchor) { (label.get(11..).unwrap_or(&label)) } "\n"
        }
        text x="4" y=(axis_y + 28.0) { (tr.html_axis_time(&format_epoch(t0), &format_epoch(t1))) } "\n"
    };
    section(
        "timeline",
        &heading,
        html! {
            (chart("timeline", left + width + 20.0, height, &heading, body))
            ul.legend {
                li.l-error { (l_error) } li.l-signal { (l_signal) } li.l-watchdog { (l_watchdog) }
                li.l-last { (l_last) } li.l-root { (l_root) }
            }
            "\n"
            @if hidden > 0 { p.dim { (tr.html_more_lanes(hidden)) } "\n" }
            @if let Some(o) = top.and_then(|f| f.origin.rank) {
                p { (tr.html_timeline_origin(o)) } "\n"
            }
        },
    )
}

/// A core dump: its headline, process, owner, the crashing thread's frames (inlined ones
/// included) and the Python stacks.
fn core(c: &crate::analyze::CoreReport, i: usize, tr: Tr) -> Markup {
    let s = &c.summary;
    let id = format!("core-{i}");
    let head = super::core_headline(s);
    let h = tr.html_frames_header();
    html! {
        section.core id=(id) aria-labelledby={ (id) "-h" } {
            "\n"
            h2 id={ (id) "-h" } { (tr.core_dump()) " " code { (c.path) } } "\n"
            @if !head.is_empty() { p.mono { (head) } "\n" }
            @if let Some(exe) = s.exe.as_ref().or(s.execfn.as_ref()) {
                p.mono { "process " (exe) @if let Some(p) = s.pid { " pid " (p) } } "\n"
            }
            @if let Some(o) = &s.owner {
                p { (tr.core_owner(&o.describe(), o.exit.as_deref())) } "\n"
            }
            @if !s.frames.is_empty() {
                table.frames {
                    thead { tr { @for col in h { th scope="col" { (col) } } } } "\n"
                    tbody { "\n" @for f in s.frames.iter().take(64) {
                        @for inl in &f.inlined {
                            tr { td { "#" (f.index) } td.mono { (inl.function) } td.mono { (source(&inl.file, inl.line)) } td.dim { "inlined" } } "\n"
                        }
                        @let place = match (&f.symbol, &f.module, &f.offset) {
                            (Some(sym), Some(m), _) => format!("{sym} in {}", short(m)),
                            (None, Some(m), Some(o)) => format!("{}+{o}", short(m)),
                            _ => f.pc.clone(),
                        };
                        tr { td { "#" (f.index) } td.mono { (place) } td.mono { (source(&f.file, f.line)) } td.dim { (f.how) } } "\n"
                    } }
                }
                "\n"
                @if s.frames.len() > 64 { p.dim { (tr.more_frames(s.frames.len() - 64)) } "\n" }
            }
            @if let Some(py) = &s.python {
                @for t in py.threads.iter().take(8) {
                    @let tid = t.tid.map(|t| format!("thread {t}")).unwrap_or_else(|| format!("thread {}", t.thread_id));
                    h3 { "Python " (py.version) " " (tid) @if t.crashed { " (crashed)" } } "\n"
                    pre {
                        "\n"
                        @for f in t.frames.iter().take(if t.crashed { 30 } else { 6 }) {
                            "File \"" (f.file) "\"" @if let Some(l) = f.line { ", line " (l) } ", in " (f.function) "\n"
                        }
                    }
                    "\n"
                }
            }
        }
        "\n"
    }
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

/// Every fact, its value, where it was read (`file:line`) and the line itself. A polled file
/// (one whose samples `#memory` draws) gives the same facts at every poll: each is one row,
/// its last reading, with how many there were.
fn facts(r: &Report, tr: Tr) -> Markup {
    if r.facts.is_empty() {
        return html! {};
    }
    let polled: std::collections::BTreeSet<&str> =
        r.samples.iter().map(|s| s.path.as_str()).collect();
    let mut rows: Vec<(&crate::model::Fact, usize)> = Vec::new();
    let mut row_of: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
    for f in &r.facts {
        if !polled.contains(f.path.as_str()) {
            rows.push((f, 1));
            continue;
        }
        match row_of.get(&(f.path.as_str(), f.name.as_str())) {
            Some(&i) => rows[i] = (f, rows[i].1 + 1),
            None => {
                row_of.insert((f.path.as_str(), f.name.as_str()), rows.len());
                rows.push((f, 1));
            }
        }
    }
    let h = tr.html_facts_header();
    section(
        "facts",
        tr.html_facts_heading(),
        html! {
            table {
                thead { tr { @for col in h { th scope="col" { (col) } } } } "\n"
                tbody { "\n" @for (f, n) in rows.iter().take(MAX_FACTS) {
                    tr {
                        td { code { (f.name) } }
                        td.mono {
                            (cut(&f.value.to_string(), 200))
                            @if *n > 1 { " " span.dim.readings { (tr.html_fact_readings(*n)) } }
                        }
                        td.mono { (location(&f.path, f.line)) }
                        td.line.mono.dim { (cut(&f.text, 200)) }
                    }
                    "\n"
                } }
            }
            "\n"
            @if rows.len() > MAX_FACTS { p.dim { "+" (rows.len() - MAX_FACTS) } "\n" }
        },
    )
}

fn warnings(w: &[crate::model::Warning], tr: Tr) -> Markup {
    warning_list(w.iter().map(|w| tr.warning_line(w)), w.len(), tr)
}

/// The `#warnings` section: the first `MAX_WARNINGS` of `lines` (of `n`), the rest counted.
fn warning_list(lines: impl Iterator<Item = String>, n: usize, tr: Tr) -> Markup {
    if n == 0 {
        return html! {};
    }
    section(
        "warnings",
        &format!("{} ({n})", tr.warnings()),
        html! {
            ul { "\n" @for l in lines.take(MAX_WARNINGS) { li.mono { (l) } "\n" } }
            "\n"
            @if n > MAX_WARNINGS { p.dim { (tr.more_warnings(n - MAX_WARNINGS)) } "\n" }
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// maud escapes markup; the page pass turns what XML forbids into U+FFFD.
    #[test]
    fn markup_and_forbidden_characters_become_text() {
        let t = "<script>a&b</script>\"'\u{FFFE}\u{1b}[2J\r";
        let page = document(t, Lang::En, t, html! { p { (t) } }, None);
        let want = "&lt;script&gt;a&amp;b&lt;/script&gt;&quot;'\u{FFFD}\u{FFFD}[2J\u{FFFD}";
        assert!(page.contains(&format!("<title>{want}</title>")), "{page}");
        assert!(page.contains(&format!("<h1>{want}</h1>")), "{page}");
        assert!(page.contains(&format!("<p>{want}</p>")), "{page}");
        assert!(!page.contains("<script>"));
    }
}
