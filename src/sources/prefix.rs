//! Prefix peeling: launchers and loggers (torchrun, DeepSpeed, Slurm, Kubernetes log viewers, …)
//! put rank, host and time in front of a message. Peeling them off gives a line's attribution and its bare message.
//! Runs only on lines that matter (hits, and candidate lines the scanner rereads, which use
//! the capture-free `message_start`), so clarity beats speed here. Never guesses a rank
//! from a bare number unless the form is unambiguous.

use crate::model::Attribution;
use regex::Regex;
use regex::bytes::{Captures, Regex as BytesRegex};
use regex_automata::{Input, MatchKind, PatternSet, meta};
use std::cell::RefCell;
use std::sync::OnceLock;

/// One prefix form: a regex anchored at the start of what is left of the line.
#[derive(Clone)]
struct Form {
    /// Over bytes with ASCII classes: prefixes are ASCII, every form ends on an ASCII byte
    /// (so its end is a char boundary of the line), and ASCII classes compile several times
    /// faster and smaller than Unicode ones.
    re: BytesRegex,
    apply: fn(&Captures, &mut Attribution),
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

fn month_num(m: &str) -> Option<u32> {
    MONTHS.iter().position(|x| *x == m).map(|i| i as u32 + 1)
}

/// The forms, and one set of all of them: a line's start is matched against every form in one
/// automaton pass, and only the forms the set says match are run on their own (most lines
/// have one prefix or none, and 18 separate anchored searches cost several times more).
#[derive(Clone)]
struct Forms {
    each: Vec<Form>,
    /// Every form's pattern, matched overlapping (`regex::bytes::RegexSet`'s configuration):
    /// asked through a `PatternSet` its caller reuses, not one allocated per question.
    set: meta::Regex,
}

/// Compile the forms now (from a spare thread while the rules load), so the first line peeled
/// does not wait for them.
pub(crate) fn warm_up() {
    all_forms();
}

fn all_forms() -> &'static Forms {
    static F: OnceLock<Forms> = OnceLock::new();
    F.get_or_init(|| {
        let each = form_list();
        // The same patterns with the same (ASCII) classes: the set says exactly which forms
        // match here.
        let set = meta::Builder::new()
            .configure(
                meta::Config::new()
                    .match_kind(MatchKind::All)
                    .utf8_empty(false)
                    .which_captures(regex_automata::nfa::thompson::WhichCaptures::None),
            )
            .syntax(
                regex_automata::util::syntax::Config::new()
                    .unicode(false)
                    .utf8(false),
            )
            .build_many(&each.iter().map(|f| f.re.as_str()).collect::<Vec<_>>())
            .expect("prefix regex set");
        Forms { each, set }
    })
}

fn form_list() -> Vec<Form> {
    {
        let f = |re: &str, apply: fn(&Captures, &mut Attribution)| Form {
            re: regex::bytes::RegexBuilder::new(&format!("^(?:{re})"))
                .unicode(false)
                .build()
                .expect("prefix regex"),
            apply,
        };
        vec![
            // ISO / DeepSpeed / python logging timestamps: `2024-01-10 10:02:13,123` or `[2024-...]`
            f(
                r"\[?(\d{4}-\d\d-\d\d)[ T](\d\d:\d\d:\d\d)(?:[.,](\d+))?(?:Z|[+-]\d\d:?\d\d)?\]?\s*",
                |c, a| {
                    set_time(a, format!("{}T{}{}", txt(c, 1), txt(c, 2), frac(c.get(3))));
                },
            ),
            // dmesg -T: `[Sun Nov 29 18:54:18 2026] `
            f(
                r"\[[A-Z][a-z]{2} ([A-Z][a-z]{2}) +(\d+) (\d\d:\d\d:\d\d) (\d{4})\]\s*",
                |c, a| {
                    if let Some(m) = month_num(txt(c, 1)) {
                        let d: u32 = txt(c, 2).parse().unwrap_or(0);
                        set_time(a, format!("{}-{m:02}-{d:02}T{}", txt(c, 4), txt(c, 3)));
                    }
                },
            ),
            // raw dmesg: `[ 1843.308145] `
            f(r"\[\s*(\d+\.\d+)\]\s*", |c, a| {
                set_time(a, format!("boot+{}", txt(c, 1)));
            }),
            // torch >= 2.2: `[rank3]:`
            f(r"\[rank(\d+)\]:\s?", |c, a| a.rank = txt(c, 1).parse().ok()),
            // torchrun --tee: `[default3]:` (local rank)
            f(r"\[default(\d+)\]:\s?", |c, a| {
                a.local_rank = txt(c, 1).parse().ok()
            }),
            // Open MPI: `[1,12]<stderr>:`
            f(r"\[\d+,(\d+)\]<std(?:out|err)>:\s?", |c, a| {
                a.rank = txt(c, 1).parse().ok()
            }),
            // DeepSpeed: `[Rank 0] `
            f(r"\[Rank (\d+)\]\s*", |c, a| a.rank = txt(c, 1).parse().ok()),
            // glog: `[E1129 19:00:04.020587669 ProcessGroupNCCL.cpp:689] ` or `E1129 19:00:04.020 1234 file.py:9] `
            f(
                r"\[?[IWEF](\d\d)(\d\d) (\d\d:\d\d:\d\d)(?:\.(\d+))?(?: +(\d+))? [^\]\s]+:\d+\]\s*",
                |c, a| {
                    // glog has no year: keep month-day-time so ordering within a run works.
                    set_time(
                        a,
                        format!(
                            "--{}-{}T{}{}",
                            txt(c, 1),
                            txt(c, 2),
                            txt(c, 3),
                            frac(c.get(4))
                        ),
                    );
                    if let Some(pid) = c.get(5) {
                        a.pid = std::str::from_utf8(pid.as_bytes())
                            .ok()
                            .and_then(|p| p.parse().ok());
                    }
                },
            ),
            // syslog: `Dec  2 10:43:35 host kernel: `
            f(
                r"([A-Z][a-z]{2}) +(\d+) (\d\d:\d\d:\d\d) (\S+) kernel:\s*",
                |c, a| {
                    if let Some(m) = month_num(txt(c, 1)) {
                        let d: u32 = txt(c, 2).parse().unwrap_or(0);
                        set_time(a, format!("--{m:02}-{d:02}T{}", txt(c, 3)));
                    }
                    a.host = Some(txt(c, 4).to_string());
                },
            ),
            // NCCL: `host:pid:tid [dev] `
            f(r"([A-Za-z0-9][\w.-]*):(\d+):\d+ \[\d+\]\s*", |c, a| {
                a.host = Some(txt(c, 1).to_string());
                a.pid = txt(c, 2).parse().ok();
            }),
            // UCX: `[host:pid:n:tid] `
            f(
                r"\[([A-Za-z0-9][\w.-]*):(\d+) *:\d+(?::\d+)?\]\s*",
                |c, a| {
                    a.host = Some(txt(c, 1).to_string());
                    a.pid = txt(c, 2).parse().ok();
                },
            ),
            // python logging `[rank0]` inside the message: `[rank0] INFO name: `
            f(r"\[rank(\d+)\]\s+", |c, a| a.rank = txt(c, 1).parse().ok()),
            // Ray: `(RayTrainWorker pid=4242) `, `(pid=4242, ip=10.0.0.6) `
            f(r"\((?:\w+ )?pid=(\d+)(?:, ip=[\d.]+)?\)\s*", |c, a| {
                a.pid = txt(c, 1).parse().ok()
            }),
            // A log viewer's row number column, `123 | `, and its other columns' `| `.
            f(r"\d+ +\| +", |_, _| {}),
            f(r"\| +", |_, _| {}),
            // A job runner that tags each captured line with its stream, the elapsed clock,
            // the seconds since start and the host: `[err, 00:21, 29s, node-4] `.
            f(
                r"\[(?:out|err), \d+(?::\d\d)+, \d+(?:\.\d+)?s, ([A-Za-z0-9][\w.-]*)\]\s*",
                |c, a| a.host = Some(txt(c, 1).to_string()),
            ),
            // torch_xla's `xla_dist` (after its timestamp): the worker's address and its index,
            // `10.164.0.21 [3] ` (an IP, or a host name with a digit, as for pdsh).
            f(
                r"((?:\d{1,3}\.){3}\d{1,3}|[a-z][\w-]*\d[\w.-]*) \[\d+\] ",
                |c, a| a.host = Some(txt(c, 1).to_string()),
            ),
            // pdsh: `worker02: ` / `10.0.0.6: ` (host names with a digit, to avoid `Error: `)
            f(
                r"((?:[a-z][\w-]*\d[\w-]*)|(?:\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})): ",
                |c, a| a.host = Some(txt(c, 1).to_string()),
            ),
            // srun --label: `3: ` (only digits then colon-space at the very start)
            f(r"(\d{1,5}): ", |c, a| a.rank = txt(c, 1).parse().ok()),
        ]
    }
}

/// Group `i` of a form's match as text (forms capture ASCII: digits, names, times).
fn txt<'a>(c: &Captures<'a>, i: usize) -> &'a str {
    c.get(i)
        .and_then(|m| std::str::from_utf8(m.as_bytes()).ok())
        .unwrap_or("")
}

fn frac(m: Option<regex::bytes::Match>) -> String {
    match m.and_then(|m| std::str::from_utf8(m.as_bytes()).ok()) {
        Some(f) => format!(".{}", &f[..f.len().min(6)]),
        None => String::new(),
    }
}

fn set_time(a: &mut Attribution, t: String) {
    if a.time.is_none() {
        a.time = Some(t);
    }
}

/// Peel every recognised prefix off `line`. Returns the attribution and the byte offset
/// where the bare message starts.
pub(crate) fn peel(line: &str) -> (Attribution, usize) {
    peel_with(line, true)
}

/// Where the bare message of `line` starts, as `peel` says, without reading the prefixes'
/// fields (no capture groups: several times cheaper, for the scanner's rereads).
pub(crate) fn message_start(line: &str) -> usize {
    peel_with(line, false).1
}

fn peel_with(line: &str, attribute: bool) -> (Attribution, usize) {
    thread_local! {
        /// This thread's clone of the forms. A regex shared by many threads lends its search
        /// caches from a pool that, when several threads want one at once, builds a throwaway
        /// cache per search (regex-automata's `Pool`): on 16 scan threads peeling every NCCL
        /// identity line, that tripled the CPU time. A clone has its own pool.
        static FORMS: (Forms, RefCell<PatternSet>) = {
            let forms = all_forms().clone();
            let here = PatternSet::new(forms.set.pattern_len());
            (forms, RefCell::new(here))
        };
    }
    FORMS.with(|(all, here)| peel_forms(line, attribute, all, &mut here.borrow_mut()))
}

/// `here`: a set of the forms' size, reused from line to line.
fn peel_forms(
    line: &str,
    attribute: bool,
    all: &Forms,
    here: &mut PatternSet,
) -> (Attribution, usize) {
    let mut a = Attribution::default();
    let mut pos = 0;
    // Each form may apply once; forms can come in any order (`[rank0]:[E1129 …]`). A form's
    // prefix repeated verbatim is one prefix: a relay that tags each line with the rank the
    // program already printed (`[rank15]:[rank15]: Traceback …`) says nothing new.
    let mut used: [Option<&str>; 32] = [None; 32];
    'outer: loop {
        let rest = &line[pos..];
        here.clear();
        all.set
            .which_overlapping_matches(&Input::new(rest.as_bytes()), here);
        for i in here.iter().map(|p| p.as_usize()) {
            let form = &all.each[i];
            // Attributing, the captures' whole match is the match: one search, not two.
            let (end, caps) = if attribute {
                let Some(c) = form.re.captures(rest.as_bytes()) else {
                    continue;
                };
                (c.get(0).map_or(0, |m| m.end()), Some(c))
            } else {
                let Some(m) = form.re.find(rest.as_bytes()) else {
                    continue;
                };
                (m.end(), None)
            };
            // (Every form ends on an ASCII byte; the check keeps a slip from splitting a char.)
            if end == 0 || !rest.is_char_boundary(end) {
                continue;
            }
            let text = rest[..end].trim_end();
            if used[i].is_some_and(|before| before != text) {
                continue;
            }
            // The srun form is ambiguous after other prefixes (`exitcode: 1`): only at 0.
            if i == all.each.len() - 1 && pos != 0 {
                continue;
            }
            if let Some(c) = caps {
                (form.apply)(&c, &mut a);
            }
            used[i] = Some(text);
            pos += end;
            continue 'outer;
        }
        break;
    }
    (a, pos)
}

/// Rank (or local rank) and host from a file's path: torchrun `--log-dir` layouts
/// (`attempt_0/3/stderr.log`), `rank3.log`, `*_rank3_*`, `node-x/…`.
pub(crate) fn from_path(path: &str) -> Attribution {
    // Each regex is compiled only for a path holding its literal (a few ms each: start-up on
    // a small input must not pay for the layouts its paths do not have).
    static RANK: OnceLock<Regex> = OnceLock::new();
    static ATTEMPT: OnceLock<Regex> = OnceLock::new();
    static NODE: OnceLock<Regex> = OnceLock::new();
    let lower = path.to_ascii_lowercase();
    let has = |w: &str| lower.contains(w);
    let mut a = Attribution::default();
    if has("rank") {
        let re = RANK
            .get_or_init(|| Regex::new(r"(?i)(?:^|[/_.-])rank[-_]?0*(\d+)(?:[/_.-]|$)").unwrap());
        if let Some(c) = re.captures_iter(path).last() {
            a.rank = c[1].parse().ok();
        }
    }
    if path.contains("attempt_") {
        let re = ATTEMPT.get_or_init(|| {
            Regex::new(r"attempt_\d+/(\d+)/(?:std(?:out|err)\.log|error\.json)$").unwrap()
        });
        if let Some(c) = re.captures(path) {
            a.local_rank = c[1].parse().ok();
        }
    }
    if has("node") || has("host") || has("worker") {
        let re = NODE.get_or_init(|| {
            Regex::new(r"(?i)(?:^|/)((?:node|host|worker)[-_]?[\w-]*\d+[\w-]*)/").unwrap()
        });
        if let Some(c) = re.captures(path) {
            a.host = Some(c[1].to_string());
        }
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(line: &str) -> (Attribution, &str) {
        let (a, pos) = peel(line);
        (a, &line[pos..])
    }

    #[test]
    fn torch_rank_then_glog() {
        let (a, rest) = p(
            "[rank1]:[E1129 19:00:04.020587669 ProcessGroupNCCL.cpp:689] [Rank 1] Watchdog caught",
        );
        assert_eq!(a.rank, Some(1));
        assert_eq!(a.time.as_deref(), Some("--11-29T19:00:04.020587"));
        assert_eq!(rest, "Watchdog caught");
    }

    #[test]
    fn a_prefix_repeated_verbatim_is_one_prefix_and_a_different_one_stays() {
        let (a, rest) = p("[rank15]:[rank15]:   File \"/ws/train.py\", line 431, in <module>");
        assert_eq!(a.rank, Some(15));
        assert_eq!(rest, "  File \"/ws/train.py\", line 431, in <module>");
        // Two different ranks on one line are not one prefix: the second is the message's.
        let (a, rest) = p("[rank1]:[rank2]: loss 0.5");
        assert_eq!(a.rank, Some(1));
        assert_eq!(rest, "[rank2]: loss 0.5");
    }

    #[test]
    fn deepspeed_timestamp() {
        let (a, rest) = p("[2026-11-29 18:57:00,219] [ERROR] [launch.py:259:sigkill_handler] x");
        assert_eq!(a.time.as_deref(), Some("2026-11-29T18:57:00.219"));
        assert!(rest.starts_with("[ERROR]"));
    }

    #[test]
    fn nccl_host_pid() {
        let (a, rest) = p("vm:6361:6378 [0] misc/shmutils.cc:87 NCCL WARN Error");
        assert_eq!(a.host.as_deref(), Some("vm"));
        assert_eq!(a.pid, Some(6361));
        assert!(rest.starts_with("misc/"));
    }

    #[test]
    fn ucx_host_pid_with_padding() {
        let (a, rest) = p(
            "[c0a8f1e2d4b5:2383 :0:2419] Caught signal 7 (Bus error: nonexistent physical address)",
        );
        assert_eq!(a.host.as_deref(), Some("c0a8f1e2d4b5"));
        assert_eq!(a.pid, Some(2383));
        assert!(rest.starts_with("Caught"));
    }

    #[test]
    fn dmesg_forms() {
        let (a, _) = p("[Sun Nov 29 19:10:17 2026] Memory cgroup out of memory");
        assert_eq!(a.time.as_deref(), Some("2026-11-29T19:10:17"));
        let (a, _) = p("[ 1843.308145] NVRM: Xid");
        assert_eq!(a.time.as_deref(), Some("boot+1843.308145"));
    }

    #[test]
    fn mpi_and_srun_and_pdsh() {
        assert_eq!(p("[1,12]<stderr>: boom").0.rank, Some(12));
        assert_eq!(p("3: boom").0.rank, Some(3));
        assert_eq!(p("worker02: boom").0.host.as_deref(), Some("worker02"));
        assert_eq!(p("Error: boom").0.host, None);
    }

    #[test]
    fn xla_dist_worker_address_and_index() {
        let (a, rest) = p("2020-10-21 19:14:59 10.164.0.21 [3] Exception in device=TPU:26: x");
        assert_eq!(a.host.as_deref(), Some("10.164.0.21"));
        assert_eq!(a.time.as_deref(), Some("2020-10-21T19:14:59"));
        assert_eq!(rest, "Exception in device=TPU:26: x");
        let (a, rest) = p("tpu-vm-7 [0]   File \"train.py\", line 3, in main");
        assert_eq!(a.host.as_deref(), Some("tpu-vm-7"));
        assert_eq!(rest, "  File \"train.py\", line 3, in main");
        assert_eq!(p("Error [3] boom").0.host, None);
    }

    #[test]
    fn ray_and_log_viewer_columns() {
        let (a, rest) = p("(RayTrainWorker pid=4242, ip=10.0.0.6) KeyError: 'x'");
        assert_eq!(a.pid, Some(4242));
        assert_eq!(rest, "KeyError: 'x'");
        let (a, rest) = p("123 | 2026-11-29 18:57:00 | Killed");
        assert_eq!(a.time.as_deref(), Some("2026-11-29T18:57:00"));
        assert_eq!(rest, "Killed");
    }

    #[test]
    fn job_runner_stream_columns() {
        let (a, rest) = p("[err, 00:21, 29s, gpu-n12] ValueError: boom");
        assert_eq!(a.host.as_deref(), Some("gpu-n12"));
        assert_eq!(rest, "ValueError: boom");
        let (_, rest) = p("[out, 1:02:10, 3730s, h7]   File \"x.py\", line 3, in f");
        assert_eq!(rest, "File \"x.py\", line 3, in f");
        // A bracketed word list that is not the runner's columns stays in the message.
        let (a, rest) = p("[err, warn] not a prefix");
        assert_eq!(a.host, None);
        assert_eq!(rest, "[err, warn] not a prefix");
    }

    #[test]
    fn ranks_from_paths() {
        assert_eq!(from_path("logs/rank3.log").rank, Some(3));
        assert_eq!(from_path("x/attempt_0/1/stderr.log").local_rank, Some(1));
        assert_eq!(
            from_path("node-07/rank-012.log").host.as_deref(),
            Some("node-07")
        );
        assert_eq!(from_path("logs/node-07/rank-012.log").rank, Some(12));
        assert_eq!(from_path("console.log").rank, None);
    }
}
