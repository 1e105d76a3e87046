//! The terminal report: readable in five seconds. The cause in one line, its confidence,
//! the evidence lines, the fix, then what else was considered and why it ranked lower.
//! Colour only when asked for (`--color`, see `table::Style`); never changes content.

use super::Report;
use super::i18n::{Lang, Tr};
use super::table::Tables;
use crate::correlate::Finding;
use crate::model::Verdict;
use std::fmt::Write;

pub struct Style {
    pub color: bool,
}

/// How the CLI wants the report: colour, language, tables.
#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub color: bool,
    pub lang: Lang,
    pub tables: Tables,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            let esc = super::COLOUR;
            format!("{esc}[{code}m{s}{esc}[0m")
        } else {
            s.to_string()
        }
    }
    fn bold(&self, s: &str) -> String {
        self.paint("1", s)
    }
    fn red(&self, s: &str) -> String {
        self.paint("1;31", s)
    }
    fn green(&self, s: &str) -> String {
        self.paint("32", s)
    }
    fn dim(&self, s: &str) -> String {
        self.paint("2", s)
    }
    fn yellow(&self, s: &str) -> String {
        self.paint("33", s)
    }
}

/// The `table` format's printer: this report for a run, and the aligned tables of the other
/// commands' views (their layouts live beside their data: `triage`, `diff`, `facts`, `history`).
pub struct Printer;

impl super::format::Printer for Printer {
    fn print(
        &self,
        view: super::format::View<'_>,
        o: &super::format::Options<'_>,
        _: Option<&mut crate::redact::Redactor>,
    ) -> Option<String> {
        use super::format::View;
        let (lang, tables) = (o.term.lang, o.term.tables);
        Some(match view {
            View::Run(r) => {
                let mut t = render_with(r, &o.term);
                if let Some(d) = &r.diff {
                    t.push_str(&format!("\n{}\n\n", Tr(lang).diff_section()));
                    t.push_str(&super::diff::terminal(d, lang));
                }
                if o.timeline {
                    t.push_str(&super::timeline::render(r, lang));
                }
                t
            }
            View::Facts { facts, warnings } => {
                super::facts::table(facts, warnings, tables, Tr(lang))
            }
            View::Triage(t) => super::triage::render_table(t, tables, lang),
            View::Diff(d) => super::diff::terminal(d, lang),
            View::Seen(s) => super::history::show(s, tables, lang),
            View::List(l) => super::history::list(l, tables, lang),
            View::Fleet(f) => super::history::fleet(f, tables, lang),
            View::FleetReport(f) => super::history::report(f, tables, lang),
        })
    }
}

const MAX_EVIDENCE: usize = 8;

fn location(path: &str, line: Option<u64>) -> String {
    match line {
        Some(l) => format!("{path}:{l}"),
        None => path.to_string(),
    }
}

/// The report in English with boxed tables (see [`render_with`]).
pub fn render(r: &Report, st: &Style) -> String {
    render_with(
        r,
        &Options {
            color: st.color,
            lang: Lang::En,
            tables: Tables::default(),
        },
    )
}

/// The report in `o.lang`: interface strings from the catalog, the finding's own texts in
/// that language where analysis gave them; evidence lines, commands and numbers as they are.
pub fn render_with(r: &Report, o: &Options) -> String {
    let tr = Tr(o.lang);
    let st = &Style { color: o.color };
    let mut out = String::new();
    match r.top() {
        Some(top) => render_top(&mut out, r, top, st, tr, o.tables.width()),
        None => match r.verdict {
            Verdict::NoFailure => {
                let _ = writeln!(
                    out,
                    "{} {}",
                    st.green("trainwreck:"),
                    tr.no_failure(r.inputs.len())
                );
            }
            _ => {
                let _ = writeln!(out, "{} {}", st.yellow("trainwreck:"), tr.unknown_failure());
                if let Some(f) = r.findings.first() {
                    let _ = writeln!(out, "  {}", tr.closest(f));
                }
                if !r.last_errors.is_empty() {
                    let _ = writeln!(out, "\n{}", st.bold(tr.last_error_lines()));
                    for e in &r.last_errors {
                        let _ = writeln!(
                            out,
                            "  {}  {}",
                            st.dim(&location(&e.path, Some(e.line))),
                            super::cut(&e.text, 200)
                        );
                    }
                    let _ = writeln!(out);
                }
                // A cause the evidence ruled out is not the answer, but why it is not, what
                // else fits those lines and how to tell next time are.
                for f in r.ruled_out_by_evidence() {
                    let _ = writeln!(
                        out,
                        "{} — {}: {}",
                        st.bold(tr.against()),
                        f.category,
                        tr.title(f)
                    );
                    render_against(&mut out, f, st, tr);
                    // Its fix is the variant for the contradicted case: what to look at instead.
                    let _ = writeln!(out, "\n{}", st.bold(tr.fix_heading()));
                    let _ = writeln!(
                        out,
                        "{}",
                        super::table::paragraph(tr.fix(f), "  ", o.tables.width())
                    );
                    if let Some(n) = tr.next_time(f) {
                        let _ = writeln!(out, "\n{}", st.bold(tr.next_time_heading()));
                        let _ = writeln!(
                            out,
                            "{}",
                            super::table::paragraph(n, "  ", o.tables.width())
                        );
                    }
                    let _ = writeln!(out);
                }
                let _ = writeln!(out, "  {}", tr.capture_next_time());
            }
        },
    }
    if let Some(line) = r
        .history
        .as_ref()
        .map(|h| super::history::seen_line_in(h, o.lang))
    {
        let _ = writeln!(out, "\n{}", st.bold(&line));
    }
    let considered = r.considered_why();
    if !considered.is_empty() {
        let _ = writeln!(out, "\n{}", st.bold(tr.also_considered()));
        let mut t = o.tables.table();
        t.set_header(tr.considered_header().to_vec());
        for c in considered.iter().take(8) {
            let (f, why) = (c.finding, tr.why_lower(c.why));
            o.tables.row(
                &mut t,
                vec![
                    f.category.to_string(),
                    format!("{:.2}", f.confidence),
                    super::cut(tr.title(f), 60),
                    super::cut(why, 70),
                ],
            );
        }
        let _ = writeln!(out, "{}", o.tables.finish(t));
    }
    let _ = writeln!(
        out,
        "\n{}",
        st.dim(&tr.footer(
            r.inputs.len(),
            r.facts.len(),
            r.warnings.len(),
            r.fingerprint.as_deref()
        ))
    );
    for w in r.warnings.iter().take(10) {
        let _ = writeln!(
            out,
            "  {}{}{}",
            st.yellow(tr.warning()),
            tr.after_label(),
            tr.warning_line(w)
        );
    }
    if r.warnings.len() > 10 {
        let _ = writeln!(out, "  {}", tr.more_warnings(r.warnings.len() - 10));
    }
    out
}

/// The lines that argue against `f`, each with why, and what else fits them.
fn render_against(out: &mut String, f: &Finding, st: &Style, tr: Tr) {
    for a in &f.against {
        let _ = writeln!(
            out,
            "  {}  {}\n      {} {}",
            st.dim(&location(&a.path, a.line)),
            super::cut(&a.text, 160),
            st.yellow("✗"),
            tr.against_why(a)
        );
    }
    if let Some(alt) = tr.alternatives(f) {
        let _ = writeln!(
            out,
            "  {}{}{}",
            st.bold(tr.what_else_fits()),
            tr.after_label(),
            alt
        );
    }
}

fn render_top(
    out: &mut String,
    r: &Report,
    top: &Finding,
    st: &Style,
    tr: Tr,
    width: Option<usize>,
) {
    let _ = writeln!(
        out,
        "{}{}{} — {}",
        st.red(tr.cause()),
        tr.after_label(),
        st.bold(top.category.as_str()),
        tr.title(top)
    );
    let _ = writeln!(out, "  {}", tr.confidence_line(top));
    // Where it started, said once.
    if let Some(started) = tr.started(top) {
        let _ = writeln!(out, "  {started}");
    }
    let _ = writeln!(out, "\n{}", st.bold(tr.evidence()));
    for e in top.evidence.iter().take(MAX_EVIDENCE) {
        let rank = e.rank.map(|r| format!("[rank {r}] ")).unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}  {}{}",
            st.dim(&location(&e.path, e.line)),
            rank,
            super::cut(&e.text, 300)
        );
        if let Some(why) = tr.why(e) {
            let _ = writeln!(out, "      {} {}", st.green("→"), why);
        }
    }
    let more = top.evidence.len().saturating_sub(MAX_EVIDENCE) as u64 + top.more_lines;
    if more > 0 {
        let _ = writeln!(out, "  {}", st.dim(&tr.more_matching(more)));
    }
    if !top.against.is_empty() {
        let _ = writeln!(out, "\n{}", st.bold(tr.against()));
        render_against(out, top, st, tr);
    }
    for c in &r.cores {
        render_core(out, c, st, tr);
    }
    let _ = writeln!(out, "\n{}", st.bold(tr.fix_heading()));
    let _ = writeln!(out, "{}", super::table::paragraph(tr.fix(top), "  ", width));
    if let Some(n) = tr.next_time(top) {
        let _ = writeln!(out, "\n{}", st.bold(tr.next_time_heading()));
        let _ = writeln!(out, "{}", super::table::paragraph(n, "  ", width));
    }
    let symptoms: Vec<&Finding> = r.symptoms_of(&top.rule).collect();
    if !symptoms.is_empty() {
        let _ = writeln!(out, "\n{}", st.bold(tr.symptoms_heading()));
        for s in symptoms {
            let ranks: std::collections::BTreeSet<u32> =
                s.evidence.iter().filter_map(|e| e.rank).collect();
            let ranks: Vec<u32> = ranks.into_iter().collect();
            let _ = writeln!(
                out,
                "  {} — {}{}",
                s.category,
                tr.title(s),
                tr.symptom_count(s.evidence.len(), &ranks)
            );
        }
    }
}

fn render_core(out: &mut String, c: &crate::analyze::CoreReport, st: &Style, tr: Tr) {
    let s = &c.summary;
    let _ = writeln!(out, "\n{} {}", st.bold(tr.core_dump()), st.dim(&c.path));
    let _ = writeln!(out, "  {}", super::core_headline(s));
    if let Some(exe) = s.exe.as_ref().or(s.execfn.as_ref()) {
        let _ = writeln!(
            out,
            "  process {}{}{}",
            exe,
            s.pid.map(|p| format!(" pid {p}")).unwrap_or_default(),
            if s.thread_count > 1 {
                format!(", {} threads", s.thread_count)
            } else {
                String::new()
            }
        );
    }
    if let Some(o) = &s.owner {
        let _ = writeln!(out, "  {}", tr.core_owner(&o.describe(), o.exit.as_deref()));
        if let Some(ev) = o.evidence.first() {
            let at = match ev.line {
                Some(l) => location(&ev.path, Some(l)),
                None => ev.path.clone(),
            };
            let _ = writeln!(out, "    {}  {}", st.dim(&at), super::cut(&ev.text, 160));
        }
    }
    if let Some(j) = &s.coredumpctl {
        let _ = writeln!(
            out,
            "  {}  {}",
            tr.core_coredumpctl(
                j.signal.as_deref(),
                j.time.as_deref(),
                j.command_line.as_deref()
            ),
            st.dim(&location(&j.path, j.line))
        );
    }
    for f in s.frames.iter().take(12) {
        // Inlined functions first (innermost first), as a debugger lists them.
        for i in &f.inlined {
            let at = source_at(&i.file, i.line);
            let _ = writeln!(
                out,
                "  #{:<2} {}{at}  {}",
                f.index,
                i.function,
                st.dim("(inlined)")
            );
        }
        let place = match (&f.symbol, &f.module, &f.offset) {
            (Some(sym), Some(m), _) => format!("{sym} in {}", short(m)),
            (None, Some(m), Some(o)) => format!("{}+{o}", short(m)),
            _ => f.pc.clone(),
        };
        let at = source_at(&f.file, f.line);
        let _ = writeln!(
            out,
            "  #{:<2} {}{at}  {}",
            f.index,
            place,
            st.dim(&format!("({})", f.how))
        );
    }
    if s.frames.len() > 12 {
        let _ = writeln!(out, "  {}", st.dim(&tr.more_frames(s.frames.len() - 12)));
    }
    if let Some(py) = &s.python {
        render_python(out, py, st, tr);
    }
}

/// The Python stacks beside the native one: the crashing thread in full (up to 20 frames),
/// the others shortly; innermost first, as the native frames are.
fn render_python(
    out: &mut String,
    py: &crate::sources::elfcore::python::PythonStacks,
    st: &Style,
    tr: Tr,
) {
    for (i, t) in py.threads.iter().enumerate() {
        let mut marks = Vec::new();
        if t.crashed {
            marks.push("crashed");
        }
        if t.holds_gil {
            marks.push("holds the GIL");
        }
        let tid = t
            .tid
            .map(|t| format!("thread {t}"))
            .unwrap_or_else(|| format!("thread {}", t.thread_id));
        let _ = writeln!(
            out,
            "  {} {}{}",
            st.bold(&format!("Python {}", py.version)),
            tid,
            if marks.is_empty() {
                String::new()
            } else {
                format!(" ({})", marks.join(", "))
            }
        );
        let keep = if i == 0 && t.crashed { 20 } else { 4 };
        for f in t.frames.iter().take(keep) {
            let line = f.line.map(|l| format!(", line {l}")).unwrap_or_default();
            let _ = writeln!(out, "    File \"{}\"{line}, in {}", f.file, f.function);
        }
        if t.frames.len() > keep {
            let _ = writeln!(
                out,
                "    {}",
                st.dim(&tr.more_frames(t.frames.len() - keep))
            );
        }
        if i >= 7 && py.threads.len() > 8 {
            let _ = writeln!(
                out,
                "  {}",
                st.dim(&tr.more_python_threads(py.threads.len() - 8))
            );
            break;
        }
    }
}

/// ` at file:line` of a frame with debug info (the file shortened as modules are), else nothing.
fn source_at(file: &Option<String>, line: Option<u32>) -> String {
    match (file, line) {
        (Some(file), Some(l)) => format!(" at {}:{l}", short(file)),
        _ => String::new(),
    }
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
