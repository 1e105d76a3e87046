//! Launcher and NCCL watchdog lines → typed events: DeepSpeed's `exits with return code = -7`,
//! torchelastic's `failed (exitcode: -7) local_rank: 1` header and `Root Cause` blocks (host,
//! rank, exitcode, `Signal 7 (SIGBUS) received by PID`), torch.multiprocessing's `terminated
//! with signal SIGBUS`, the launcher's teardown (`Sending process N closing signal`, `Killing
//! subprocess N`), and ProcessGroupNCCL's watchdog, work-state and collective-fingerprint
//! lines. Each line shape is written once, in `LINES`, beside the code that reads it; the
//! analysis registers them with the one scanner pass and hands back their hits in line order.
//! Facts (`rank.N.exit_code`, `rank.N.exit_signal`) and the timeline's events are both derived
//! from the events here, so one line never has two meanings. It reads no files and decides
//! nothing about causes.

use crate::fact_names;
use crate::model::{Attribution, Fact};
use crate::scan::{FullRegex, Groups};
use crate::sources::prefix;
use regex::Regex;
use std::sync::OnceLock;

/// The line shapes this module reads. The scanner matches each regex as written (its capture
/// groups are ignored there); `read` applies the same regex again for the captures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Line {
    /// DeepSpeed launcher: `[…'--local_rank=1'…] exits with return code = -7`.
    DeepspeedExit,
    /// torchelastic: `failed (exitcode: -7) local_rank: 1 (pid: 4242) of binary: …`.
    ElasticHeader,
    /// torchelastic failure block: `  host      : node7`.
    BlockHost,
    /// torchelastic failure block: `  rank      : 1 (local_rank: 1)`.
    BlockRank,
    /// torchelastic failure block: `  exitcode  : -7 (pid: 4242)`.
    BlockExitcode,
    /// torchelastic failure block: `  traceback : Signal 7 (SIGBUS) received by PID 4242`.
    BlockSignal,
    /// torch.multiprocessing: `process 1 terminated with signal SIGBUS` / `with exit code 1`.
    SpawnExit,
    /// torchelastic: `Sending process 4242 closing signal SIGTERM`.
    SendingSignal,
    /// DeepSpeed launcher: `Killing subprocess 4242`.
    KillingSubprocess,
    /// ProcessGroupNCCL: `WorkNCCL(SeqNum=26, OpType=ALLREDUCE, NumelIn=…` (the watchdog's
    /// timeout line when it says `Watchdog caught`).
    WorkNccl,
    /// ProcessGroupNCCL: `Last enqueued NCCL work: 25, last completed NCCL work: 25`.
    WorkState,
    /// TORCH_DISTRIBUTED_DEBUG=DETAIL: `Rank 1 is running collective:
    /// CollectiveFingerPrint(SequenceNumber=153, OpType=BROADCAST …` (one line may name two ranks).
    CollectiveFingerprint,
    /// torch's DataLoader (main process): `DataLoader worker (pid 542) is killed by signal:
    /// Segmentation fault.` (torch/utils/data/_utils/signal_handling.py's message).
    DataloaderWorkerKilled,
    /// NCCL with NCCL_DEBUG=INFO: `host:PID:TID [dev] NCCL INFO comm 0x… rank 1 nRanks 2 …`
    /// or `… NCCL INFO ncclCommInitRankConfig comm 0x… rank 1 nranks 2 …` (its prefix names
    /// the pid of the process that is that rank).
    NcclCommRank,
}

impl Line {
    /// Shapes that only say which process is which (for tying cores to ranks): their first
    /// line per process says all that its later ones do (`Identities`).
    pub fn only_identifies(self) -> bool {
        matches!(self, Line::NcclCommRank)
    }
}

/// Every line shape with its regex. Each regex holds a rare literal for the prefilter.
pub static LINES: &[(Line, &str)] = &[
    (Line::DeepspeedExit, r"exits with return code = (-?\d+)"),
    (
        Line::ElasticHeader,
        r"failed \(exitcode: (-?\d+)\) local_rank: (\d+) \(pid: (\d+)\)",
    ),
    (Line::BlockHost, r"^\s*host\s*: ([\w.-]+)\s*$"),
    (Line::BlockRank, r"rank\s*: (\d+) \(local_rank: (\d+)\)"),
    (Line::BlockExitcode, r"exitcode\s*: (-?\d+) \(pid: (\d+)\)"),
    (
        Line::BlockSignal,
        r"Signal (\d+) \((SIG[A-Z]+)\) received by PID (\d+)",
    ),
    (
        Line::SpawnExit,
        r"process (\d+) terminated with (?:exit code (-?\d+)|signal (SIG[A-Z]+))",
    ),
    (
        Line::SendingSignal,
        r"Sending process (\d+) closing signal (SIG[A-Z]+)",
    ),
    (Line::KillingSubprocess, r"Killing subprocess (\d+)"),
    (
        Line::WorkNccl,
        r"WorkNCCL\(SeqNum=(\d+), OpType=([A-Za-z0-9_]+)(?:, NumelIn=(\d+))?",
    ),
    (
        Line::WorkState,
        r"[Ll]ast enqueued (?:NCCL )?work: (-?\d+), last completed (?:NCCL )?work: (-?\d+)",
    ),
    (
        Line::CollectiveFingerprint,
        r"(?:Rank (\d+) is running collective: )?CollectiveFingerPrint\(SequenceNumber=(\d+), OpType=([A-Za-z0-9_]+)",
    ),
    (
        Line::DataloaderWorkerKilled,
        r"DataLoader worker \(pid (\d+)\) is killed by signal: ([A-Za-z][A-Za-z ]*[A-Za-z])",
    ),
    (
        Line::NcclCommRank,
        r"NCCL INFO (?:ncclCommInitRank\w* )?comm 0x[0-9a-fA-F]+ rank (\d+) n[Rr]anks (\d+)",
    ),
];

/// A block line belongs to the `rank : N` line at most this many lines above it.
const BLOCK_RANK_SPAN: u64 = 4;
/// … and to the `host : H` line at most this many lines above it.
const BLOCK_HOST_SPAN: u64 = 6;

/// The regex of one line shape, compiled the first time a line of that shape is read: most
/// runs hold a few of the shapes, and each compiled regex costs memory until the process ends.
/// Its search caches are shared by the scan threads (`FullRegex`).
fn regex(line: Line) -> &'static FullRegex {
    static R: [OnceLock<FullRegex>; LINES.len()] = [const { OnceLock::new() }; LINES.len()];
    let ix = LINES
        .iter()
        .position(|(l, _)| *l == line)
        .expect("every Line has a regex in LINES");
    R[ix].get_or_init(|| FullRegex::text(LINES[ix].1))
}

fn ran_for() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"ran for (\d+) milliseconds").expect("launcher regex"))
}

fn local_rank_arg() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| Regex::new(r"--local_rank=(\d+)").expect("launcher regex"))
}

/// One scanner hit on a line shape: which shape, where, and the line's text.
pub struct LineHit<'a> {
    pub line: Line,
    pub lineno: u64,
    pub text: &'a str,
}

/// Which launcher reported a worker's end (they differ in what "rank" means).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitVia {
    /// DeepSpeed's launcher; the rank is the worker's `--local_rank` argument, when shown.
    Deepspeed,
    /// torchelastic's one-line header: a local rank only.
    ElasticHeader,
    /// torchelastic's failure block: the global rank, local rank, host and pid.
    ElasticBlock,
    /// torch.multiprocessing: the process index, which is the rank.
    Spawn,
}

/// What a launcher or NCCL line says.
#[derive(Debug, Clone, PartialEq)]
pub enum What {
    /// A worker ended: with an exit status (negative: killed by that signal), or with the
    /// signal only (`Signal 6 (SIGABRT) received by PID`).
    WorkerExit {
        via: ExitVia,
        rank: Option<u32>,
        local_rank: Option<u32>,
        pid: Option<u32>,
        code: Option<i64>,
        signal: Option<String>,
    },
    /// The launcher sending a signal to a worker while tearing the job down.
    Teardown { pid: u32, signal: String },
    /// `Watchdog caught collective operation timeout: WorkNCCL(SeqNum=26, OpType=ALLREDUCE …)`.
    Watchdog {
        seq: u64,
        op: String,
        numel: Option<u64>,
        ran_ms: Option<u64>,
    },
    /// `Last enqueued NCCL work: 25, last completed NCCL work: 25`.
    WorkState { enqueued: i64, completed: i64 },
    /// A collective fingerprint: `of` is the rank it belongs to (may differ from who printed it).
    Fingerprint { of: u32, seq: u64, op: String },
    /// A DataLoader worker of the process that printed the line died by a signal (its name as
    /// Python's `strsignal` spells it: `Segmentation fault`, `Bus error`).
    WorkerKilled { pid: u32, signal: String },
    /// The process `pid` is rank `rank` of an NCCL communicator (`host:pid:tid … comm … rank`).
    RankPid { rank: u32, pid: u32 },
}

/// One event read from a line: what it says, who said it (prefixes peeled, the file's own
/// rank/host filled in; for a failure block, the rank and host the block names), where.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchEvent {
    pub what: What,
    pub who: Attribution,
    pub line: u64,
    /// The line as read, trimmed and bounded.
    pub text: String,
}

/// A torchelastic failure block being read: its host line, then its rank line.
#[derive(Default)]
struct Block {
    host: Option<(String, u64)>,
    rank: Option<(u32, u32, u64)>,
}

impl Block {
    fn rank_near(&self, lineno: u64) -> Option<(u32, u32)> {
        self.rank
            .filter(|(_, _, at)| lineno.saturating_sub(*at) <= BLOCK_RANK_SPAN)
            .map(|(r, lr, _)| (r, lr))
    }
    fn host_near(&self, lineno: u64) -> Option<String> {
        self.host
            .as_ref()
            .filter(|(_, at)| lineno.saturating_sub(*at) <= BLOCK_HOST_SPAN)
            .map(|(h, _)| h.clone())
    }
}

/// The process-identity lines one input has already handed over. NCCL prints its `comm …
/// rank … nRanks` line once per communicator and per phase (init, `Init COMPLETE`, destroy):
/// thousands of lines in a long NCCL_DEBUG=INFO run that all say one thing per process, so
/// only the first of each process is kept (the scan would otherwise hold every one).
#[derive(Default)]
pub struct Identities(std::collections::HashSet<(Option<String>, u32)>);

impl Identities {
    /// Whether a hit of `line` on `text` says something not yet said: always, except an
    /// identity line of a process (host, pid) already seen, or one whose prefix names no pid
    /// (it ties nothing).
    pub fn keep(&mut self, line: Line, text: &str) -> bool {
        if !line.only_identifies() {
            return true;
        }
        let (who, _) = prefix::peel(text);
        match who.pid {
            Some(pid) => self.0.insert((who.host, pid)),
            None => false,
        }
    }
}

/// Read one file's hits (in line order) into events. `base` is what the file's path says
/// about who wrote it (`rank3.log`, `node7/…`).
pub fn read(hits: &[LineHit], base: &Attribution) -> Vec<LaunchEvent> {
    let mut out = Vec::new();
    let mut block = Block::default();
    for h in hits {
        let Some(c) = regex(h.line).captures(h.text) else {
            continue;
        };
        let (mut who, _) = prefix::peel(h.text);
        who.rank = who.rank.or(base.rank);
        who.local_rank = who.local_rank.or(base.local_rank);
        who.host = who.host.or_else(|| base.host.clone());
        let mut push = |what: What, who: Attribution| {
            out.push(LaunchEvent {
                what,
                who,
                line: h.lineno,
                text: h.text.trim().chars().take(2000).collect(),
            })
        };
        match h.line {
            Line::DeepspeedExit
            | Line::ElasticHeader
            | Line::BlockExitcode
            | Line::BlockSignal
            | Line::SpawnExit => {
                if let Some((what, who)) = worker_exit(h, &c, &block, who) {
                    push(what, who);
                }
            }
            Line::BlockHost => block.host = Some((c[1].to_string(), h.lineno)),
            Line::BlockRank => {
                if let (Some(r), Some(lr)) = (unum(&c, 1), unum(&c, 2)) {
                    block.rank = Some((r, lr, h.lineno));
                }
            }
            Line::CollectiveFingerprint => {
                for c in regex(h.line).captures_all(h.text) {
                    let of = unum(&c, 1).or(who.rank);
                    let seq = c.get(2).and_then(|x| x.parse::<u64>().ok());
                    if let (Some(of), Some(seq)) = (of, seq) {
                        let op = c[3].to_string();
                        push(What::Fingerprint { of, seq, op }, who.clone());
                    }
                }
            }
            Line::SendingSignal
            | Line::KillingSubprocess
            | Line::WorkNccl
            | Line::WorkState
            | Line::DataloaderWorkerKilled
            | Line::NcclCommRank => {
                if let Some(what) = process_event(h, &c, &who) {
                    push(what, who);
                }
            }
        }
    }
    out
}

/// Capture `i` as a signed number (an exit code, a count).
fn num(c: &Groups, i: usize) -> Option<i64> {
    c.get(i).and_then(|x| x.parse::<i64>().ok())
}

/// Capture `i` as an unsigned number (a rank, a pid).
fn unum(c: &Groups, i: usize) -> Option<u32> {
    c.get(i).and_then(|x| x.parse::<u32>().ok())
}

/// A worker's exit as one of the launchers reports it, and who exited; `None` for a block's
/// exit line with no rank line near it. `block` is the torchelastic failure block being read.
fn worker_exit(
    h: &LineHit,
    c: &Groups,
    block: &Block,
    mut who: Attribution,
) -> Option<(What, Attribution)> {
    let exit = |via, rank, local_rank, pid, code, signal| What::WorkerExit {
        via,
        rank,
        local_rank,
        pid,
        code,
        signal,
    };
    let what = match h.line {
        Line::DeepspeedExit => {
            let local_rank = local_rank_arg()
                .captures(h.text)
                .and_then(|c| c[1].parse().ok());
            exit(ExitVia::Deepspeed, None, local_rank, None, num(c, 1), None)
        }
        Line::ElasticHeader => {
            let (local_rank, pid) = (unum(c, 2), unum(c, 3));
            who.local_rank = local_rank.or(who.local_rank);
            who.pid = pid.or(who.pid);
            exit(
                ExitVia::ElasticHeader,
                None,
                local_rank,
                pid,
                num(c, 1),
                None,
            )
        }
        Line::BlockExitcode | Line::BlockSignal => {
            let (rank, lr) = block.rank_near(h.lineno)?;
            let (pid, code, signal) = if h.line == Line::BlockExitcode {
                (unum(c, 2), num(c, 1), None)
            } else {
                (unum(c, 3), None, Some(c[2].to_string()))
            };
            who.rank = Some(rank);
            who.local_rank = Some(lr);
            who.pid = pid;
            if let Some(host) = block.host_near(h.lineno) {
                who.host = Some(host);
            }
            exit(
                ExitVia::ElasticBlock,
                Some(rank),
                Some(lr),
                pid,
                code,
                signal,
            )
        }
        Line::SpawnExit => {
            let rank = unum(c, 1)?;
            let signal = c.get(3).map(str::to_string);
            exit(ExitVia::Spawn, Some(rank), None, None, num(c, 2), signal)
        }
        _ => return None,
    };
    Some((what, who))
}

/// What a line about one process says: a teardown signal, the NCCL watchdog's timeout, a
/// collective's state, a data-loader worker killed, or which pid a rank is.
fn process_event(h: &LineHit, c: &Groups, who: &Attribution) -> Option<What> {
    Some(match h.line {
        Line::SendingSignal => What::Teardown {
            pid: unum(c, 1)?,
            signal: c[2].to_string(),
        },
        Line::KillingSubprocess => What::Teardown {
            pid: unum(c, 1)?,
            signal: "SIGKILL".into(),
        },
        Line::WorkNccl => {
            // Other lines quote WorkNCCL too (dumps, aborts): only the watchdog's own
            // timeout line is a timeout.
            if !h.text.contains("Watchdog caught") {
                return None;
            }
            What::Watchdog {
                seq: num(c, 1).unwrap_or(0) as u64,
                op: c[2].to_string(),
                numel: num(c, 3).map(|x| x as u64),
                ran_ms: ran_for().captures(h.text).and_then(|c| c[1].parse().ok()),
            }
        }
        Line::WorkState => What::WorkState {
            enqueued: num(c, 1).unwrap_or(-1),
            completed: num(c, 2).unwrap_or(-1),
        },
        Line::DataloaderWorkerKilled => What::WorkerKilled {
            pid: unum(c, 1)?,
            signal: c[2].to_string(),
        },
        Line::NcclCommRank => {
            // The prefix's pid is the process; the rank is the file's or the prefix's
            // when known (a sub-communicator numbers its ranks from 0), else the comm's.
            let (pid, rank) = (who.pid?, who.rank.or(unum(c, 1))?);
            What::RankPid { rank, pid }
        }
        _ => return None,
    })
}

/// The signal a negative exit status (or 128 + n) names, e.g. -7 → `SIGBUS`.
pub(crate) fn signal_name(n: i64) -> Option<&'static str> {
    i32::try_from(n)
        .ok()
        .and_then(crate::sources::elfcore::signals::signal_name)
}

/// The exit facts the events give: `rank.N.exit_code` and `rank.N.exit_signal` (from the
/// signal named, or the one a negative or >128 status implies), and `launcher.exit_code` for a
/// DeepSpeed exit that names no rank. A worker known only by its local rank (torchelastic's
/// header, DeepSpeed's `--local_rank`) is counted under that number: on one node it is the rank.
pub(crate) fn exit_facts(events: &[LaunchEvent]) -> Vec<Fact> {
    let mut out = Vec::new();
    for e in events {
        let What::WorkerExit {
            rank,
            local_rank,
            code,
            signal,
            ..
        } = &e.what
        else {
            continue;
        };
        let Some(rank) = rank.or(*local_rank) else {
            if let Some(code) = code {
                out.push(Fact::new("launcher.exit_code", *code).at(e.line, &e.text));
            }
            continue;
        };
        if let Some(code) = *code {
            out.push(Fact::new(fact_names::rank_exit_code(rank), code).at(e.line, &e.text));
            let implied = if code < 0 {
                signal_name(-code)
            } else if code > 128 {
                signal_name(code - 128)
            } else {
                None
            };
            if let Some(sig) = implied {
                out.push(Fact::new(fact_names::rank_exit_signal(rank), sig).at(e.line, &e.text));
            }
        }
        if let Some(sig) = signal {
            out.push(
                Fact::new(fact_names::rank_exit_signal(rank), sig.as_str()).at(e.line, &e.text),
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scan::compile_pattern;

    /// The build lints the line shapes and the error-tail marks from their tables' text
    /// (`build.rs`), so that the scanner does not parse them at start-up: each is there, with
    /// what the run-time lint says of it.
    #[test]
    fn launcher_lines_and_marks_are_prepared() {
        let marks = (crate::errtail::LITERALS.iter())
            .chain(crate::errtail::CLEAN_END)
            .map(|m| regex::escape(m));
        for src in LINES.iter().map(|(_, re)| re.to_string()).chain(marks) {
            let row = crate::prepared::regex(&src);
            let hir = crate::scan::literals::parse(&src).unwrap();
            let lint = crate::scan::literals::prepare(&hir).ok();
            assert_eq!(row.map(|r| r.0), Some(lint.map(|l| l.0)), "{src}");
        }
    }

    fn events(lines: &[&str]) -> Vec<LaunchEvent> {
        let mut hits = Vec::new();
        for (i, l) in lines.iter().enumerate() {
            for (line, src) in LINES {
                if Regex::new(src).unwrap().is_match(l) {
                    hits.push(LineHit {
                        line: *line,
                        lineno: i as u64 + 1,
                        text: l,
                    });
                }
            }
        }
        read(&hits, &Attribution::default())
    }

    #[test]
    fn a_dead_dataloader_worker_and_an_nccl_rank_name_their_pids() {
        let ev = events(&[
            "[rank1]: RuntimeError: DataLoader worker (pid 4229) is killed by signal: Bus error. It is possible that dataloader's workers are out of shared memory.",
            "vm:5294:5294 [1] NCCL INFO comm 0x13dec9e0 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0",
            "vm:5293:5293 [0] NCCL INFO comm 0x2995f280 rank 0 nranks 2 cudaDev 0 busId 60 - Destroy COMPLETE",
            // No prefix, so no pid: nothing to tie.
            "NCCL INFO comm 0x2995f280 rank 0 nranks 2 cudaDev 0 busId 60 - Init COMPLETE",
        ]);
        let what: Vec<&What> = ev.iter().map(|e| &e.what).collect();
        assert_eq!(
            what,
            [
                &What::WorkerKilled {
                    pid: 4229,
                    signal: "Bus error".into()
                },
                &What::RankPid { rank: 1, pid: 5294 },
                &What::RankPid { rank: 0, pid: 5293 },
            ]
        );
        // The worker's line is its owner's: rank 1 printed it.
        assert_eq!(ev[0].who.rank, Some(1));
    }

    #[test]
    fn one_identity_line_per_process_is_kept() {
        let mut seen = Identities::default();
        let init = "vm:5294:5294 [1] NCCL INFO comm 0x13dec9e0 rank 1 nRanks 2 nNodes 1 localRanks 2 localRank 1 MNNVL 0";
        let done = "vm:5294:5301 [1] NCCL INFO comm 0x13dec9e0 rank 1 nranks 2 cudaDev 1 busId 70 - Init COMPLETE";
        let other = "vm:5293:5293 [0] NCCL INFO comm 0x2995f280 rank 0 nRanks 2 nNodes 1 localRanks 2 localRank 0 MNNVL 0";
        assert!(seen.keep(Line::NcclCommRank, init));
        assert!(
            !seen.keep(Line::NcclCommRank, done),
            "same process, another thread"
        );
        assert!(seen.keep(Line::NcclCommRank, other));
        assert!(!seen.keep(
            Line::NcclCommRank,
            "NCCL INFO comm 0x2995f280 rank 0 nranks 2 cudaDev 0 busId 60 - Init COMPLETE"
        ));
        // Every other shape is kept each time.
        let killed = "DataLoader worker (pid 4229) is killed by signal: Bus error.";
        assert!(seen.keep(Line::DataloaderWorkerKilled, killed));
        assert!(seen.keep(Line::DataloaderWorkerKilled, killed));
    }

    fn facts(lines: &[&str]) -> Vec<(String, String)> {
        exit_facts(&events(lines))
            .into_iter()
            .map(|f| (f.name, f.value.to_string()))
            .collect()
    }

    #[test]
    fn lines_are_scannable() {
        for (_, p) in LINES {
            compile_pattern(p).unwrap();
        }
    }

    #[test]
    fn deepspeed_exit() {
        let f = facts(&[
            "[2026-11-29 18:57:00,219] [ERROR] [launch.py:259:sigkill_handler] ['python', '-u', 'train.py', '--local_rank=1'] exits with return code = -7",
        ]);
        assert_eq!(
            f,
            vec![
                ("rank.1.exit_code".into(), "-7".into()),
                ("rank.1.exit_signal".into(), "SIGBUS".into())
            ]
        );
        assert_eq!(
            facts(&[
                "[launch.py:319:sigkill_handler] ['python', 'train.py'] exits with return code = 1"
            ]),
            vec![("launcher.exit_code".into(), "1".into())]
        );
    }

    #[test]
    fn torchrun_root_cause_block_names_rank_host_and_pid() {
        let lines = [
            "Root Cause (first observed failure):",
            "[0]:",
            "  time      : 2026-11-29_19:01:05",
            "  host      : vm",
            "  rank      : 1 (local_rank: 1)",
            "  exitcode  : -6 (pid: 10646)",
            "  error_file: <N/A>",
            "  traceback : Signal 6 (SIGABRT) received by PID 10646",
        ];
        let f = facts(&lines);
        assert!(
            f.contains(&("rank.1.exit_code".into(), "-6".into())),
            "{f:?}"
        );
        assert!(
            f.contains(&("rank.1.exit_signal".into(), "SIGABRT".into())),
            "{f:?}"
        );
        let ev = events(&lines);
        let exit = ev
            .iter()
            .find(|e| matches!(e.what, What::WorkerExit { code: Some(-6), .. }))
            .unwrap();
        assert_eq!(exit.who.rank, Some(1));
        assert_eq!(exit.who.pid, Some(10646));
        assert_eq!(exit.who.host.as_deref(), Some("vm"));
    }

    #[test]
    fn exitcode_without_rank_block_is_ignored() {
        assert!(facts(&["  exitcode  : -6 (pid: 10646)"]).is_empty());
    }

    #[test]
    fn elastic_header_is_a_local_rank_not_a_rank() {
        let ev = events(&[
            "torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -7) local_rank: 2 (pid: 4242) of binary: /usr/bin/python3",
        ]);
        assert_eq!(
            ev[0].what,
            What::WorkerExit {
                via: ExitVia::ElasticHeader,
                rank: None,
                local_rank: Some(2),
                pid: Some(4242),
                code: Some(-7),
                signal: None
            }
        );
        assert_eq!(ev[0].who.pid, Some(4242));
    }

    #[test]
    fn fingerprint_mismatch_line_gives_both_ranks() {
        let ev = events(&[
            "[rank1]: RuntimeError: Detected mismatch between collectives on ranks. Rank 1 is running collective: CollectiveFingerPrint(SequenceNumber=153, OpType=BROADCAST, TensorShape=[2]), but Rank 0 is running collective: CollectiveFingerPrint(SequenceNumber=153, OpType=ALLREDUCE, TensorShape=[2])",
        ]);
        let k: Vec<_> = ev.into_iter().map(|e| e.what).collect();
        assert_eq!(
            k,
            vec![
                What::Fingerprint {
                    of: 1,
                    seq: 153,
                    op: "BROADCAST".into()
                },
                What::Fingerprint {
                    of: 0,
                    seq: 153,
                    op: "ALLREDUCE".into()
                }
            ]
        );
    }

    #[test]
    fn only_the_watchdog_line_is_a_timeout() {
        let ev = events(&[
            "[rank0]:[E1129 19:00:04.0205 ProcessGroupNCCL.cpp:689] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=100, OpType=ALLREDUCE, NumelIn=84618, NumelOut=84618, Timeout(ms)=30000) ran for 30049 milliseconds before timing out.",
            "[rank0]: Exception raised from run at WorkNCCL(SeqNum=100, OpType=ALLREDUCE, NumelIn=84618",
        ]);
        assert_eq!(ev.len(), 1);
        assert_eq!(
            ev[0].what,
            What::Watchdog {
                seq: 100,
                op: "ALLREDUCE".into(),
                numel: Some(84618),
                ran_ms: Some(30049)
            }
        );
        assert_eq!(ev[0].who.rank, Some(0));
    }
}
