//! What a run's findings add up to: the verdict (diagnosed, unknown failure, no failure) and,
//! for an unknown failure, the last error lines of its logs to show instead of a diagnosis.
//! Decides from data; it never reads files or formats output.

use super::gated::Gated;
use super::{Against, Finding, RULED_OUT_BELOW};
use crate::analyze::{Analysis, InputInfo};
use crate::errtail::TailLine;
use crate::model::{Text, Verdict};
use serde::Serialize;

/// A line of a run's log cited as it is (an unknown failure's last errors).
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct ErrorLine {
    pub path: String,
    pub line: u64,
    pub text: String,
}

/// An error-word line counts as a fatal sign only this close to the end of its file: earlier
/// ones (a retried download, a caught exception) were evidently survived.
pub(super) const LAST_LINES: u64 = 20;

/// Why a line (from the error tail) is a sign that the run died, if it is one. Strong signs
/// count anywhere in a file unless a clean end follows them; an error word only among the
/// file's last lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sign {
    /// An uncaught exception, a fatal interpreter error, a terminate, a death by signal.
    Fatal,
    /// A line that is about an error (`error:`, `ERROR`, `FATAL`).
    ErrorWord,
}

/// The sign of a line, read whole and, for a message flattened with literal `\n`, line by
/// line (`tokens::pieces`): the strongest sign any piece gives.
fn sign_of(text: &str) -> Option<Sign> {
    let mut best = None;
    for p in crate::tokens::pieces(text) {
        match sign_of_piece(p) {
            Some(Sign::Fatal) => return Some(Sign::Fatal),
            Some(s) => best = Some(s),
            None => {}
        }
    }
    best
}

/// A line that says the process died (`Sign::Fatal`) or is about an error
/// (`Sign::ErrorWord`): each compiled only for a line holding one of its literals (`gated`).
pub(super) static FATAL: Gated = Gated::new(
    concat!(
        r"^(?:Fatal Python error: .*$|terminate called .*$",
        // The shell, a launcher or a scheduler reporting a death by signal.
        r"|(?:.*:\s*)?(?:Aborted|Segmentation fault|Bus error|Illegal instruction|Floating point exception|Killed)(?:\s*\(core dumped\))?\s*$",
        r"|.*\bcore dumped\b.*$",
        // zsh's job-control line: `[1]    4242 segmentation fault  python train.py`.
        r"|\[\d+\]\s*[+-]?\s*\d+\s+(?:killed|abort|segmentation fault|bus error|illegal hardware instruction|floating point exception)\s.*$",
        r"|srun: error: .*\btasks? [\d,\-\[\]]+: .*$",
        r"|.*(?:MPI_ABORT|exited on signal \d+).*$",
        // nvidia-smi cannot read a GPU.
        r"|.*\bERR!.*$",
        r")"
    ),
    &[
        ("Fatal Python error: ", false),
        ("terminate called ", false),
        ("Aborted", false),
        ("Segmentation fault", false),
        ("Bus error", false),
        ("Illegal instruction", false),
        ("Floating point exception", false),
        ("Killed", false),
        ("core dumped", false),
        ("killed", false),
        ("abort", false),
        ("segmentation fault", false),
        ("bus error", false),
        ("illegal hardware instruction", false),
        ("floating point exception", false),
        ("srun: error: ", false),
        ("MPI_ABORT", false),
        ("exited on signal ", false),
        ("ERR!", false),
    ],
);
pub(super) static WORD: Gated = Gated::new(
    r"^(?:(?i:\[?(?:error|fatal|critical)\]?)\b|.*\b(?:ERROR|FATAL|CRITICAL)\b|.*\b(?i:error|fatal):)",
    &[
        ("error", true),
        ("fatal", true),
        ("critical", true),
        ("ERROR", false),
        ("FATAL", false),
        ("CRITICAL", false),
        ("error", true),
        ("fatal", true),
    ],
);

/// Compile the sign and warning regexes now (see `correlate::warm_up`).
pub(crate) fn warm_up() {
    FATAL.get();
    WORD.get();
    is_warning("");
}

fn sign_of_piece(text: &str) -> Option<Sign> {
    let (_, at) = crate::sources::prefix::peel(text);
    let t = text[at..].trim();
    if t.contains("Warning") && !t.contains("Error") {
        return None;
    }
    // Python: the exception line that ends a traceback (the shape `traceback` reads), or a
    // traceback's header when the paste is cut before its end.
    let exception = super::traceback::EXCEPTION.is_match(t)
        || t.starts_with("Traceback (most recent call last)");
    // Any layer's death word (an NCCL result code, an IB completion status, a CUDA error
    // enum, an errno text, a kill reason, a scheduler's end state: `tokens`), unless the
    // line is logged as a warning (handled, by its own account).
    let token = crate::tokens::table().fatal(t) && !is_warning(t);
    if exception || token || FATAL.is_match(t) {
        Some(Sign::Fatal)
    } else if WORD.is_match(t) {
        Some(Sign::ErrorWord)
    } else {
        None
    }
}

/// The error-tail lines of the run's own logs (not of a snapshot taken before it, nor of a
/// file that is not scanned), with the input each comes from.
pub fn run_tail(a: &Analysis) -> impl Iterator<Item = (&TailLine, &InputInfo)> {
    a.error_tail.iter().filter_map(|t| {
        let input = a.inputs.get(t.input)?;
        (input.phase != crate::model::Phase::Before && input.kind.is_scanned())
            .then_some((t, input))
    })
}

/// The process reported its exit status, and every status it reported is 0.
pub fn exited_cleanly(a: &Analysis) -> bool {
    let mut exits = a
        .facts
        .all()
        .iter()
        .filter(|f| f.name.ends_with(".exit_code"))
        .filter_map(|f| f.value.as_i64())
        .peekable();
    exits.peek().is_some() && exits.all(|c| c == 0)
}

/// The lines that say the run died: every strong sign not followed by a clean end in the same
/// file, and error words among a file's last lines, from the run's own inputs (not a snapshot
/// taken before it). A clean process exit (an exit status 0 and none other) outweighs them all.
pub fn death_signs(a: &Analysis) -> Vec<ErrorLine> {
    if exited_cleanly(a) {
        return Vec::new();
    }
    let ignored = super::traceback::ignored_reports(a);
    let mut out: Vec<ErrorLine> = Vec::new();
    for (t, input) in run_tail(a) {
        if super::traceback::in_ignored(ignored, t.input, t.line) {
            continue;
        }
        let survived = a
            .clean_end
            .iter()
            .any(|(i, l)| *i == t.input && *l > t.line);
        let counts = match sign_of(&t.text) {
            Some(Sign::Fatal) => !survived,
            Some(Sign::ErrorWord) => !survived && t.line + LAST_LINES > input.lines,
            None => false,
        };
        if counts && !out.iter().any(|e| e.text == t.text) {
            out.push(ErrorLine {
                path: input.path.clone(),
                line: t.line,
                text: t.text.clone(),
            });
        }
    }
    out
}

/// The last error-ish lines of the run's logs (not of before-run snapshots), newest last:
/// what an unknown failure shows instead of a diagnosis.
pub fn last_errors(a: &Analysis) -> Vec<ErrorLine> {
    let mut out: Vec<ErrorLine> = Vec::new();
    for (t, input) in run_tail(a) {
        if out.iter().any(|e| e.text == t.text) {
            continue;
        }
        out.push(ErrorLine {
            path: input.path.clone(),
            line: t.line,
            text: t.text.clone(),
        });
    }
    let keep = out.len().saturating_sub(8);
    out.drain(..keep);
    // Every line that made the run count as dead is shown, even when older than the last 8,
    // and, where none did, the line at which it stopped.
    let mut dead = death_signs(a);
    if dead.is_empty() {
        dead.extend(super::stall::signs(a).into_iter().map(|s| s.line));
    }
    for d in dead {
        if !out.iter().any(|e| e.text == d.text) {
            out.push(d);
        }
    }
    let pos = |e: &ErrorLine| {
        let input = a.inputs.iter().position(|i| i.path == e.path);
        (input, e.line)
    };
    out.sort_by_key(pos);
    out
}

/// Did the inputs show that something failed, even if no rule explains it?
fn failure_signs(a: &Analysis) -> bool {
    !death_signs(a).is_empty()
        || !super::stall::signs(a).is_empty()
        || !a.cores.is_empty()
        || a.facts.all().iter().any(|f| {
            (f.name.ends_with(".exit_code") && f.value.as_i64().is_some_and(|c| c != 0))
                || f.name.ends_with(".exit_signal")
        })
}

/// Diagnosed when a cause that is not a symptom is confident enough; an unknown failure
/// when there are findings or signs of failure but no such cause; otherwise no failure.
pub fn verdict(findings: &[Finding], a: &Analysis) -> Verdict {
    // The second tier's candidates name kinds of failure, not the failure: never diagnosed.
    let has_cause = findings.iter().any(|f| {
        f.symptom_of.is_none()
            && f.confidence >= RULED_OUT_BELOW
            && f.rule != super::second_tier::RULE
    });
    if has_cause {
        Verdict::Diagnosed
    } else if findings.iter().any(|f| {
        !f.score
            .iter()
            .any(|c| [SURVIVED, IGNORED, DETACHED, WENT_ON].contains(&c.what.as_str()))
    }) || failure_signs(a)
    {
        Verdict::UnknownFailure
    } else {
        Verdict::NoFailure
    }
}

/// The score term that marks a finding the program went on past (see `discount_went_on`).
pub const WENT_ON: &str = "went on: the program printed more of its own output after every line cited, and nothing says the run died";

/// A log goes on for at least this many lines after a finding's last cited line before the
/// finding counts as one the program went on past.
const WENT_ON_LINES: u64 = 3;

/// A checkpoint that does not fit the model (missing or unexpected keys, size mismatches) stops
/// a strict load with a raise; the same report printed by a non-strict load, not logged as a
/// warning and not a death sign itself, in a run where nothing says it died — no death sign,
/// no stall, no core, no non-zero exit (`failure_signs`) — and with the program's own output
/// going on after it, was survived: the finding names no failure. Only the checkpoint kind is
/// read this way: a failure of other kinds (weights left newly initialised, NaN metrics, a
/// driver's refusal followed by its stack) is shown by lines a run prints as it goes on or as
/// it dies in a shape the death signs do not read (measured: those flipped four real threads).
pub fn discount_went_on(a: &Analysis, findings: &mut [Finding]) {
    use crate::model::Category;
    if findings.is_empty() || failure_signs(a) {
        return;
    }
    let lines_of = |path: &str| a.inputs.iter().find(|x| x.path == path).map(|x| x.lines);
    for f in findings.iter_mut() {
        if f.evidence.is_empty()
            || f.symptom_of.is_some()
            || f.confidence < RULED_OUT_BELOW
            || f.category != Category::CheckpointError
        {
            continue;
        }
        let went_on = f.evidence.iter().all(|e| {
            let (Some(line), Some(total)) = (e.line, lines_of(&e.path)) else {
                return false;
            };
            // A line cut around its match (`…` first) hides its level: not read as survived.
            !e.text.starts_with('…')
                && sign_of(&e.text) != Some(Sign::Fatal)
                && !is_warning(&e.text)
                && f.evidence
                    .iter()
                    .filter(|o| o.path == e.path)
                    .filter_map(|o| o.line)
                    .max()
                    .is_some_and(|last| last.max(line) + WENT_ON_LINES <= total)
        });
        if went_on {
            let last = f.evidence.iter().filter_map(|e| e.line).max();
            rule_out(
                f,
                last,
                "the run went on after these lines",
                Text::new(
                    "the program went on printing its own output after every line cited, and nothing in the logs says the run died",
                    "引用的每一行之后程序都还在继续输出，日志里也没有任何训练中止的迹象",
                ),
                WENT_ON,
            );
        }
    }
}

/// A line logged at warning level: glog's `W1204 …` / `[W1204 …]`, `WARNING`/`[WARN]`, Python's
/// `…Warning:`. Such a line says something went wrong and was handled.
fn is_warning(text: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(
            r"^\s*(?:\[?W\d{4} \d|\[?WARN(?:ING)?\b|\[W [\w./-]+:\d+\]|.*\b[A-Z]\w*Warning:|.*\[(?:WARN(?:ING)?|W)\])",
        )
        .expect("warning-line regex")
    })
    .is_match(text)
}

/// The score term that marks a finding as ignored by Python (see `discount_ignored`).
pub const IGNORED: &str =
    "ignored: Python reported this exception and went on (`Exception ignored …`)";

/// The score term that marks a finding as a thread's or child process's exception in a run
/// that completed (see `discount_ignored`).
pub const DETACHED: &str =
    "not fatal: a thread or a child process raised it, and the run reports its own completion";

/// A finding whose every cited line lies in a report of an exception that did not end the
/// run (`traceback::ignored_reports`: one Python ignored in a `__del__` or at exit, or a
/// thread's or child process's in a run that reports its completion) names no failure: the
/// program went on. Its confidence drops below the floor and `against` says why. A finding
/// with other lines too keeps them only.
pub fn discount_ignored(a: &Analysis, findings: &mut [Finding]) {
    use super::traceback::NotFatal;
    let spans = super::traceback::ignored_reports(a);
    if spans.is_empty() {
        return;
    }
    let inside = |path: &str, line: Option<u64>| {
        let input = a.inputs.iter().position(|x| x.path == path);
        matches!((input, line), (Some(i), Some(l)) if super::traceback::in_ignored(spans, i, l))
    };
    for f in findings.iter_mut() {
        if f.evidence.is_empty() || f.symptom_of.is_some() {
            continue;
        }
        // A line of an ignored report is no evidence of the failure the others show.
        if f.evidence.iter().any(|e| !inside(&e.path, e.line)) {
            f.evidence.retain(|e| !inside(&e.path, e.line));
        } else {
            // The report's header line, as the tail kept it.
            let (path, line) = (f.evidence[0].path.clone(), f.evidence[0].line);
            let span = a.inputs.iter().position(|x| x.path == path).and_then(|i| {
                spans
                    .iter()
                    .find(|s| line.is_some_and(|l| s.0 == i && (s.1..=s.2).contains(&l)))
            });
            let header = span.and_then(|&(i, first, _, _)| {
                a.error_tail
                    .iter()
                    .find(|t| t.input == i && t.line == first)
                    .map(|t| (first, t.text.clone()))
            });
            let (line, text) = match header {
                Some((l, t)) => (Some(l), t),
                None => (line, f.evidence[0].text.clone()),
            };
            let (why, what) = match span.map(|s| s.3) {
                Some(NotFatal::Detached) => (
                    Text::new(
                        "a thread or a child process raised this exception and ended there; the run reports its own completion: it did not end the run",
                        "这个异常是某个线程或子进程抛出的，它在那里结束了；训练本身报告了完成：它没有终止训练",
                    ),
                    DETACHED,
                ),
                _ => (
                    Text::new(
                        "Python printed this exception as one it ignored (in a __del__ or at exit) and went on: it did not end the run",
                        "Python 把这个异常当作已忽略的异常打印出来（发生在 __del__ 或退出时）然后继续运行：它没有终止训练",
                    ),
                    IGNORED,
                ),
            };
            f.confidence = f.confidence.min(RULED_OUT_BELOW * 0.5);
            f.against.push(Against {
                path,
                line,
                text,
                why,
            });
            f.score.push(super::Contribution {
                what: what.into(),
                weight: -1.0,
            });
        }
    }
}

/// The score term that marks a finding as survived (see `discount_survived`).
pub const SURVIVED: &str = "survived: a clean end follows every warning cited";

/// A finding whose every cited line is a warning the run survived — a clean end (the
/// training's own "finished", HF Trainer's final metrics) comes after it in the same file — is
/// history, not the cause: its confidence drops below the floor and `against` says why. A
/// warning with nothing after it (the run died there) keeps its weight.
pub fn discount_survived(a: &Analysis, findings: &mut [Finding]) {
    let clean_after = |path: &str, line: u64| {
        let i = a.inputs.iter().position(|x| x.path == path)?;
        a.clean_end
            .iter()
            .find(|(ci, cl)| *ci == i && *cl > line)
            .map(|(_, cl)| *cl)
    };
    for f in findings.iter_mut() {
        if f.evidence.is_empty() || f.symptom_of.is_some() {
            continue;
        }
        let mut last_clean = None;
        let survived = f.evidence.iter().all(|e| {
            let Some(line) = e.line else { return false };
            if !is_warning(&e.text) {
                return false;
            }
            let c = clean_after(&e.path, line);
            last_clean = last_clean.max(c);
            c.is_some()
        });
        if survived {
            rule_out(
                f,
                last_clean,
                "the run went on and ended cleanly after these warnings",
                Text::new(
                    "every line cited is a warning, and the log shows the run finishing after it",
                    "引用的每一行都只是警告，而且日志显示训练在那之后正常结束了",
                ),
                SURVIVED,
            );
        }
    }
}

/// A finding the run outlived: its confidence below the ruled-out floor, the reason as an
/// `Against` at `line` of its first evidence's file, and the term `what` in its score.
fn rule_out(f: &mut Finding, line: Option<u64>, text: &str, why: Text, what: &str) {
    f.confidence = f.confidence.min(RULED_OUT_BELOW * 0.5);
    f.against.push(Against {
        path: f.evidence[0].path.clone(),
        line,
        text: text.into(),
        why,
    });
    f.score.push(super::Contribution {
        what: what.into(),
        weight: -1.0,
    });
}
