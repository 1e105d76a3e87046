//! The terminal report: readable in five seconds. The cause in one line, its confidence,
//! the evidence lines, the fix, then what else was considered and why it ranked lower.
//! Colour only when asked for (a terminal without NO_COLOR); never changes content.

use super::Report;
use crate::correlate::{Finding, RULED_OUT_BELOW};
use crate::model::Verdict;
use comfy_table::{Table, presets::UTF8_BORDERS_ONLY};
use std::fmt::Write;

pub struct Style {
    pub color: bool,
}

impl Style {
    fn paint(&self, code: &str, s: &str) -> String {
        if self.color {
            format!("\x1b[{code}m{s}\x1b[0m")
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

const MAX_EVIDENCE: usize = 8;

fn location(path: &str, line: Option<u64>) -> String {
    match line {
        Some(l) => format!("{path}:{l}"),
        None => path.to_string(),
    }
}

pub fn render(r: &Report, st: &Style) -> String {
    let mut out = String::new();
    match r.top() {
        Some(top) => render_top(&mut out, r, top, st),
        None => match r.verdict {
            Verdict::NoFailure => {
                let _ = writeln!(
                    out,
                    "{} no failure found in {} input{}.",
                    st.green("trainwreck:"),
                    r.inputs.len(),
                    if r.inputs.len() == 1 { "" } else { "s" }
                );
            }
            _ => {
                let _ = writeln!(
                    out,
                    "{} the run failed, but no known signature explains it.",
                    st.yellow("trainwreck:")
                );
                if let Some(f) = r.findings.first() {
                    let _ = writeln!(
                        out,
                        "  closest: {} ({}, confidence {:.2})",
                        f.title, f.category, f.confidence
                    );
                }
                if !r.last_errors.is_empty() {
                    let _ = writeln!(out, "\n{}", st.bold("Last error lines"));
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
                let _ = writeln!(
                    out,
                    "  Next time capture: `dmesg -T | tail -n 200`, `df -h /dev/shm`, NCCL_DEBUG=INFO, TORCHELASTIC_ERROR_FILE, `ulimit -c unlimited` (or wrap the run in `trainwreck run`)."
                );
            }
        },
    }
    if let Some(line) = r.history.as_ref().map(super::history::seen_line) {
        let _ = writeln!(out, "\n{}", st.bold(&line));
    }
    let considered: Vec<&Finding> = r.considered().collect();
    if !considered.is_empty() {
        let _ = writeln!(out, "\n{}", st.bold("Also considered"));
        let mut t = Table::new();
        t.load_style(UTF8_BORDERS_ONLY);
        t.set_header(vec!["category", "conf", "hypothesis", "why it ranks lower"]);
        for f in considered.iter().take(8) {
            let why = if let Some(a) = f.against.first() {
                a.why.clone()
            } else if f.confidence < RULED_OUT_BELOW {
                "weak evidence".to_string()
            } else {
                "less evidence than the top cause".to_string()
            };
            t.add_row(vec![
                f.category.to_string(),
                format!("{:.2}", f.confidence),
                super::cut(&f.title, 60),
                super::cut(&why, 70),
            ]);
        }
        let _ = writeln!(out, "{t}");
    }
    let logs = r.inputs.len();
    let _ = writeln!(
        out,
        "\n{}",
        st.dim(&format!(
            "{logs} input{} read, {} fact{}, {} warning{}{}",
            if logs == 1 { "" } else { "s" },
            r.facts.len(),
            if r.facts.len() == 1 { "" } else { "s" },
            r.warnings.len(),
            if r.warnings.len() == 1 { "" } else { "s" },
            r.fingerprint
                .as_ref()
                .map(|f| format!(" · fingerprint {f}"))
                .unwrap_or_default()
        ))
    );
    for w in r.warnings.iter().take(10) {
        let _ = writeln!(out, "  {} {w}", st.yellow("warning:"));
    }
    if r.warnings.len() > 10 {
        let _ = writeln!(
            out,
            "  … {} more warnings (see --format json)",
            r.warnings.len() - 10
        );
    }
    out
}

fn render_top(out: &mut String, r: &Report, top: &Finding, st: &Style) {
    let _ = writeln!(
        out,
        "{} {} — {}",
        st.red("Cause:"),
        st.bold(top.category.as_str()),
        top.title
    );
    let _ = writeln!(
        out,
        "  confidence {:.2} · action {} · rule {} {}{}",
        top.confidence,
        top.action,
        top.code,
        top.rule,
        super::origin_text(top)
            .map(|o| format!(" · started: {o}"))
            .unwrap_or_default()
    );
    if let Some(r) = top.origin.rank {
        let n = top.affected_ranks.len();
        let _ = writeln!(
            out,
            "  initiated by rank {r}{}{}",
            top.origin
                .host
                .as_ref()
                .map(|h| format!(" on host {h}"))
                .unwrap_or_default(),
            if n > 0 {
                format!(
                    "; {n} other rank{} affected as symptom{}",
                    if n == 1 { "" } else { "s" },
                    if n == 1 { "" } else { "s" }
                )
            } else {
                String::new()
            }
        );
    }
    let _ = writeln!(out, "\n{}", st.bold("Evidence"));
    for e in top.evidence.iter().take(MAX_EVIDENCE) {
        let rank = e.rank.map(|r| format!("[rank {r}] ")).unwrap_or_default();
        let _ = writeln!(
            out,
            "  {}  {}{}",
            st.dim(&location(&e.path, e.line)),
            rank,
            super::cut(&e.text, 300)
        );
        if let Some(why) = &e.why {
            let _ = writeln!(out, "      {} {}", st.green("→"), why);
        }
    }
    let more = top.evidence.len().saturating_sub(MAX_EVIDENCE) as u64 + top.more_lines;
    if more > 0 {
        let _ = writeln!(
            out,
            "  {}",
            st.dim(&format!("… and {more} more matching lines"))
        );
    }
    if !top.against.is_empty() {
        let _ = writeln!(out, "\n{}", st.bold("Against"));
        for a in &top.against {
            let _ = writeln!(
                out,
                "  {}  {}\n      {} {}",
                st.dim(&location(&a.path, a.line)),
                super::cut(&a.text, 160),
                st.yellow("✗"),
                a.why
            );
        }
        if let Some(alt) = &top.alternatives {
            let _ = writeln!(out, "  {} {}", st.bold("What else fits:"), alt);
        }
    }
    for c in &r.cores {
        render_core(out, c, st);
    }
    let _ = writeln!(out, "\n{}", st.bold("Fix"));
    let _ = writeln!(out, "  {}", top.fix);
    if let Some(n) = &top.next_time {
        let _ = writeln!(out, "\n{}", st.bold("To be sure next time"));
        let _ = writeln!(out, "  {n}");
    }
    let symptoms: Vec<&Finding> = r.symptoms_of(&top.rule).collect();
    if !symptoms.is_empty() {
        let _ = writeln!(out, "\n{}", st.bold("Symptoms of this cause"));
        for s in symptoms {
            let ranks: std::collections::BTreeSet<u32> =
                s.evidence.iter().filter_map(|e| e.rank).collect();
            let _ = writeln!(
                out,
                "  {} — {} ({} line{}{})",
                s.category,
                s.title,
                s.evidence.len(),
                if s.evidence.len() == 1 { "" } else { "s" },
                if ranks.is_empty() {
                    String::new()
                } else {
                    format!(
                        ", rank{} {}",
                        if ranks.len() == 1 { "" } else { "s" },
                        ranks
                            .iter()
                            .map(|r| r.to_string())
                            .collect::<Vec<_>>()
                            .join(",")
                    )
                }
            );
        }
    }
}

fn render_core(out: &mut String, c: &crate::analyze::CoreReport, st: &Style) {
    let s = &c.summary;
    let _ = writeln!(out, "\n{} {}", st.bold("Core dump"), st.dim(&c.path));
    let mut head = Vec::new();
    if let Some(sig) = &s.signal {
        head.push(sig.clone());
    }
    if let Some(code) = &s.code {
        head.push(match &s.meaning {
            Some(m) => format!("{code} ({m})"),
            None => code.clone(),
        });
    }
    if let Some(a) = &s.fault_addr {
        head.push(format!("at {a}"));
    }
    if let Some(m) = &s.fault_mapping {
        head.push(format!("in {m}"));
    }
    let _ = writeln!(out, "  {}", head.join(" "));
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
    for f in s.frames.iter().take(12) {
        let place = match (&f.symbol, &f.module, &f.offset) {
            (Some(sym), Some(m), _) => format!("{sym} in {}", short(m)),
            (None, Some(m), Some(o)) => format!("{}+{o}", short(m)),
            _ => f.pc.clone(),
        };
        let _ = writeln!(
            out,
            "  #{:<2} {}  {}",
            f.index,
            place,
            st.dim(&format!("({})", f.how))
        );
    }
    if s.frames.len() > 12 {
        let _ = writeln!(
            out,
            "  {}",
            st.dim(&format!(
                "… {} more frames (see --format json)",
                s.frames.len() - 12
            ))
        );
    }
    if let Some(py) = &s.python {
        render_python(out, py, st);
    }
}

/// The Python stacks beside the native one: the crashing thread in full (up to 20 frames),
/// the others shortly; innermost first, as the native frames are.
fn render_python(out: &mut String, py: &crate::sources::elfcore::python::PythonStacks, st: &Style) {
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
                st.dim(&format!(
                    "… {} more frames (see --format json)",
                    t.frames.len() - keep
                ))
            );
        }
        if i >= 7 && py.threads.len() > 8 {
            let _ = writeln!(
                out,
                "  {}",
                st.dim(&format!(
                    "… {} more Python threads (see --format json)",
                    py.threads.len() - 8
                ))
            );
            break;
        }
    }
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}
