//! First failure and cascades across ranks: watchdog arithmetic (who lagged, who ran a
//! different collective, who never reached it), flight-recorder gaps, ranks that went quiet
//! before the others timed out, launcher teardown as collateral, and the watchdog's own abort
//! (a `terminate` whose `what()` is the timeout) as the timeout's consequence. Picks the
//! initiating rank by evidence, not by time alone, and marks the rest `symptom_of` it.
//! Works on findings and the timeline as data; it never reads files or formats output.
//!
//! Synthetic findings it may add (no TOML rule behind them; codes TW99xx):
//! `watchdog-collective-mismatch` (TW9901, collective_mismatch; TW99xx are reserved for findings
//! the engine makes itself, never for rule files) and `watchdog-lagging-rank`
//! (TW9902, nccl_timeout), each with `origin` naming the rank.

use super::{Evidence, Finding, Origin, RULED_OUT_BELOW};
use crate::analyze::Analysis;
use crate::model::{Category, Text};
use crate::rules::{KnowledgeBase, Role};
use crate::sources::flight_recorder;
use crate::sources::launcher::What;
use crate::timeline::{Event, Kind, Timeline, format_epoch};
use std::collections::{BTreeMap, BTreeSet};

pub const MISMATCH_RULE: &str = "watchdog-collective-mismatch";
pub const LAGGING_RULE: &str = "watchdog-lagging-rank";

/// What `rules explain` says about TW9901.
pub const MISMATCH_WHAT: Text<&str> = Text {
    en: "Ranks ran different collectives at the same sequence number (from `CollectiveFingerPrint` \
     lines of TORCH_DISTRIBUTED_DEBUG=DETAIL, or watchdog `WorkNCCL(SeqNum=…, OpType=…)` lines \
     that disagree in op, or in element count for ops every rank sizes alike). A collective \
     called conditionally or in a different order on some ranks: a code bug. The odd rank out, when there is one, is the origin.",
    zh: "各 rank 在同一个序号上执行了不同的集合通信（依据 TORCH_DISTRIBUTED_DEBUG=DETAIL \
     的 `CollectiveFingerPrint` 行，或在操作上、或在各 rank 本应一致的元素个数上互相矛盾的 watchdog `WorkNCCL(SeqNum=…, OpType=…)` 行）。\
     说明某个集合通信只在部分 rank 上按条件调用，或调用顺序不同：这是代码 bug。\
     如果有唯一与众不同的 rank，它就是起点。",
};

/// What `rules explain` says about TW9902.
pub const LAGGING_WHAT: Text<&str> = Text {
    en: "One rank never reached the collective the others timed out in: its last enqueued work is \
     below the timed-out sequence number, the Flight Recorder shows it missing, or its log \
     stopped before the others' watchdogs fired. That rank is the origin; the timeouts are \
     its symptoms.",
    zh: "其他 rank 在某个集合通信上超时，而有一个 rank 根本没有走到这一步：\
     它最后入队的操作序号低于超时的序号，Flight Recorder 里缺少它，或者它的日志在其他 rank \
     的 watchdog 触发之前就停了。这个 rank 才是起点，其他 rank 的超时只是症状。",
};

/// A rank the evidence names as the one that started it.
#[derive(Debug, Clone, PartialEq)]
pub struct Culprit {
    pub rank: u32,
    /// Strong: its own counters or the flight recorder say it never reached the collective.
    /// Weak: only that its log stopped before the others timed out.
    pub strong: bool,
    pub why: Vec<Text>,
    pub evidence: Vec<Evidence>,
    pub time: Option<String>,
    t: Option<f64>,
}

/// Ranks running different collectives at one sequence number.
#[derive(Debug, Clone, PartialEq)]
pub struct Mismatch {
    pub seq: u64,
    /// (op, ranks running it).
    pub ops: Vec<(String, Vec<u32>)>,
    pub evidence: Vec<Evidence>,
}

/// What watchdog lines, work counters and flight-recorder dumps say about the ranks.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    pub mismatch: Option<Mismatch>,
    pub culprits: Vec<Culprit>,
    /// Ranks whose watchdog fired (they were waiting).
    pub waiters: BTreeSet<u32>,
    /// The collective they waited in: (seq, op).
    pub collective: Option<(u64, String)>,
}

fn ev(e: &Event, why: Option<Text>) -> Evidence {
    Evidence {
        path: e.path.clone(),
        line: e.line,
        rank: e.who.rank,
        host: e.who.host.clone(),
        time: e.time.clone(),
        text: e.text.clone(),
        why,
    }
}

fn when(e: &Event) -> Option<String> {
    e.t.map(format_epoch).or_else(|| e.time.clone())
}

/// Ranks that ran one op at one sequence number, and the lines that say so.
type OpRanks<'a> = (BTreeSet<u32>, Vec<&'a Event>);

/// Watchdog arithmetic over the timeline (and flight-recorder dumps when present).
pub fn verdict(tl: &Timeline, flight: &[flight_recorder::FrDump]) -> Verdict {
    let evs = &tl.events;
    let mut v = Verdict {
        mismatch: mismatch(evs, flight),
        ..Verdict::default()
    };

    // Timeouts: who waited, in which collective, since when.
    let dogs: Vec<&Event> = evs
        .iter()
        .filter(|e| matches!(e.kind, Kind::Launch(What::Watchdog { .. })))
        .collect();
    let seq_of = |e: &Event| match &e.kind {
        Kind::Launch(What::Watchdog { seq, op, .. }) => Some((*seq, op.clone())),
        _ => None,
    };
    v.collective = dogs.iter().filter_map(|e| seq_of(e)).min_by_key(|x| x.0);
    v.waiters = dogs.iter().filter_map(|e| e.who.rank).collect();
    let first_dog = dogs
        .iter()
        .find(|e| e.t.is_some())
        .or(dogs.first())
        .copied();

    let mut culprits = Culprits::default();
    behind_by_counters(evs, v.collective.as_ref(), &mut culprits);
    missing_from_flight_recorder(flight, &mut culprits);
    if let Some(d) = first_dog {
        quiet_before_watchdog(evs, d, &v.waiters, &mut culprits);
    }
    v.culprits = culprits.ranked();
    v
}

/// Ranks that ran different collectives at one sequence number: fingerprints first, then
/// flight-recorder dumps, then watchdog lines that disagree.
fn mismatch(evs: &[Event], flight: &[flight_recorder::FrDump]) -> Option<Mismatch> {
    // Collective mismatch: fingerprints of one sequence number with different op types.
    let mut fps: BTreeMap<u64, BTreeMap<String, OpRanks>> = BTreeMap::new();
    for e in evs {
        if let Kind::Launch(What::Fingerprint { of, seq, op }) = &e.kind {
            let slot = fps.entry(*seq).or_default().entry(op.clone()).or_default();
            slot.0.insert(*of);
            slot.1.push(e);
        }
    }
    for g in flight_recorder::gaps(flight) {
        if g.mismatched.is_empty() {
            continue;
        }
        let seq = g.seq.max(0) as u64;
        let e = fps.entry(seq).or_default();
        for (r, op) in &g.mismatched {
            e.entry(op.to_uppercase()).or_default().0.insert(*r);
        }
    }
    if !fps.values().any(|ops| ops.len() > 1)
        && let Some((seq, ops)) = watchdogs_disagree(evs)
    {
        fps.insert(seq, ops);
    }
    let (seq, ops) = fps.iter().find(|(_, ops)| ops.len() > 1)?;
    let mut evidence: Vec<Evidence> = Vec::new();
    for (_, (_, es)) in ops.iter() {
        for e in es {
            if evidence.len() < 4 && !evidence.iter().any(|x| x.text == e.text) {
                evidence.push(ev(e, None));
            }
        }
    }
    Some(Mismatch {
        seq: *seq,
        ops: ops
            .iter()
            .map(|(op, (ranks, _))| (op.clone(), ranks.iter().copied().collect()))
            .collect(),
        evidence,
    })
}

/// Watchdog lines that disagree: ranks that timed out at one sequence number in different ops
/// (rank 0 gathering a ZeRO-3 model to save it while the others all-reduce) ran different
/// collectives there. Only past the process groups' start-up collectives (each group counts
/// from 1, so groups that hang together at start meet at small numbers in different ops);
/// within one process group when the lines name it (`[PG ID n …]`); and only when each rank
/// names one op: a rank in two groups can time out in two ops whose counters happen to meet.
///
/// The same op with different element counts disagrees too, for the ops whose input count
/// every rank must share (an all-reduce, a broadcast, an all-gather's or reduce-scatter's input):
/// ranks that all-reduced gradient buckets of different sizes built different gradients. The
/// op is then labelled with its count (`ALLREDUCE of 4096 elements`). All-to-all, send and
/// receive take per-rank sizes and never count.
fn watchdogs_disagree(evs: &[Event]) -> Option<(u64, BTreeMap<String, OpRanks<'_>>)> {
    let mut at: WatchdogsAt = BTreeMap::new();
    let mut sized: WatchdogsAt = BTreeMap::new();
    for e in evs {
        if let (Kind::Launch(What::Watchdog { seq, op, numel, .. }), Some(rank)) =
            (&e.kind, e.who.rank)
            && *seq > crate::rules::derive::STARTUP_COLLECTIVES
        {
            let key = (pg_id(&e.text), *seq);
            let slot = at.entry(key).or_default().entry(op.clone()).or_default();
            slot.0.insert(rank);
            slot.1.push(e);
            let label = match numel {
                Some(n) if same_count_op(op) => format!("{op} of {n} elements"),
                _ => op.clone(),
            };
            let slot = sized.entry(key).or_default().entry(label).or_default();
            slot.0.insert(rank);
            slot.1.push(e);
        }
    }
    first_disagreement(at).or_else(|| first_disagreement(sized))
}

/// Watchdog lines grouped by (process group, sequence number), then by the op they ran.
type WatchdogsAt<'a> = BTreeMap<(Option<u64>, u64), BTreeMap<String, OpRanks<'a>>>;

/// The first sequence number at which disjoint sets of ranks ran different ops.
fn first_disagreement(at: WatchdogsAt<'_>) -> Option<(u64, BTreeMap<String, OpRanks<'_>>)> {
    let disjoint = |ops: &BTreeMap<String, OpRanks>| {
        let all: BTreeSet<u32> = ops.values().flat_map(|(r, _)| r.iter().copied()).collect();
        all.len() == ops.values().map(|(r, _)| r.len()).sum::<usize>()
    };
    at.into_iter()
        .find(|(_, ops)| ops.len() > 1 && disjoint(ops))
        .map(|((_, seq), ops)| (seq, ops))
}

/// Collectives whose input element count is the same on every rank of the group.
fn same_count_op(op: &str) -> bool {
    let op = op.trim_start_matches('_').to_ascii_uppercase();
    [
        "ALLREDUCE",
        "BROADCAST",
        "REDUCE",
        "ALLGATHER",
        "REDUCE_SCATTER",
    ]
    .iter()
    .any(|p| op.starts_with(p))
}

/// The mismatch is one op run with different sizes on different ranks (the labels
/// `watchdogs_disagree` gives them), and that op reduces: gradient buckets that differ.
fn reduces_different_sizes(m: &Mismatch) -> bool {
    let base = |op: &str| op.split(" of ").next().unwrap_or(op).to_string();
    let first = match m.ops.first() {
        Some((op, _)) => base(op),
        None => return false,
    };
    m.ops.len() > 1
        && m.ops
            .iter()
            .all(|(op, _)| op.contains(" of ") && base(op) == first)
        && first
            .trim_start_matches('_')
            .to_ascii_uppercase()
            .contains("REDUCE")
}

/// The ranks suspected so far, each with every reason given for it.
#[derive(Default)]
struct Culprits(BTreeMap<u32, Culprit>);

impl Culprits {
    /// One more reason to suspect `rank`, with the line that shows it.
    fn add(&mut self, rank: u32, strong: bool, why: Text, e: Option<&Event>) {
        let c = self.0.entry(rank).or_insert_with(|| Culprit {
            rank,
            strong: false,
            why: Vec::new(),
            evidence: Vec::new(),
            time: None,
            t: None,
        });
        c.strong |= strong;
        if let Some(e) = e {
            c.evidence.push(ev(e, Some(why.clone())));
            // The origin time is the rank's earliest sign of trouble (its log stopping).
            let earlier = match (e.t, c.t) {
                (Some(a), Some(b)) => a < b,
                (Some(_), None) => true,
                _ => c.time.is_none(),
            };
            if earlier {
                c.time = when(e);
                c.t = e.t;
            }
        }
        c.why.push(why);
    }

    /// Strong first, then earliest; when there are strong culprits, the weak ones are dropped.
    fn ranked(self) -> Vec<Culprit> {
        let mut all: Vec<Culprit> = self.0.into_values().collect();
        all.sort_by(|a, b| b.strong.cmp(&a.strong).then(a.time.cmp(&b.time)));
        if all.iter().any(|c| c.strong) {
            all.retain(|c| c.strong);
        }
        all
    }
}

/// Work counters: the latest `last enqueued / completed` line of each rank. With a timeout,
/// a rank that never enqueued the collective the others waited in; without one, the rank
/// furthest behind when several ranks report.
fn behind_by_counters(evs: &[Event], collective: Option<&(u64, String)>, out: &mut Culprits) {
    let mut state: BTreeMap<u32, (i64, i64, &Event)> = BTreeMap::new();
    for e in evs {
        if let (
            Kind::Launch(What::WorkState {
                enqueued,
                completed,
            }),
            Some(r),
        ) = (&e.kind, e.who.rank)
        {
            state.insert(r, (*enqueued, *completed, e));
        }
    }
    if let Some((seq, op)) = collective {
        for (&r, &(enq, done, e)) in &state {
            if (enq as i128) < *seq as i128 {
                out.add(
                    r,
                    true,
                    Text::new(
                        format!(
                            "rank {r} never enqueued collective #{seq} ({op}): last enqueued {enq}, last completed {done}"
                        ),
                        format!(
                            "rank {r} 根本没有把第 {seq} 号集合通信（{op}）放进队列：最后入队的是 {enq}，最后完成的是 {done}"
                        ),
                    ),
                    Some(e),
                );
            }
        }
    } else if state.len() > 1 {
        // No timeout line, but counters from several ranks: the one furthest behind lags.
        let max_done = state.values().map(|s| s.1).max().unwrap_or(0);
        let min_done = state.values().map(|s| s.1).min().unwrap_or(0);
        if min_done < max_done {
            for (&r, &(enq, done, e)) in &state {
                if done == min_done {
                    out.add(
                        r,
                        true,
                        Text::new(
                            format!(
                                "rank {r} lags: completed collective #{done} (enqueued {enq}) while others completed #{max_done}"
                            ),
                            format!(
                                "rank {r} 落后了：它只完成到第 {done} 号集合通信（入队到 {enq}），其他 rank 已完成到第 {max_done} 号"
                            ),
                        ),
                        Some(e),
                    );
                }
            }
        }
    }
}

/// Flight recorder: ranks missing from a collective the others started.
fn missing_from_flight_recorder(flight: &[flight_recorder::FrDump], out: &mut Culprits) {
    for g in flight_recorder::gaps(flight) {
        for r in &g.missing {
            out.add(
                *r,
                true,
                Text::new(
                    format!(
                        "flight recorder: rank {r} never recorded collective #{} ({}) of process group {}",
                        g.seq, g.op, g.pg
                    ),
                    format!(
                        "flight recorder：rank {r} 没有记录进程组 {} 的第 {} 号集合通信（{}）",
                        g.pg, g.seq, g.op
                    ),
                ),
                None,
            );
        }
    }
}

/// A rank that went quiet before the first watchdog fired (`dog`), and never timed out itself.
fn quiet_before_watchdog(evs: &[Event], dog: &Event, waiters: &BTreeSet<u32>, out: &mut Culprits) {
    let Some(t0) = dog.t else { return };
    let mut last: BTreeMap<u32, &Event> = BTreeMap::new();
    for e in evs {
        if let (Kind::LastLine, Some(r), Some(_)) = (&e.kind, e.who.rank, e.t) {
            let keep = last.get(&r).is_none_or(|p| p.t < e.t);
            if keep {
                last.insert(r, e);
            }
        }
    }
    // A rank's last line may be a reaction to the timeout (the dump signal); only lines
    // that are not NCCL/torch error chatter count as "last sign of work".
    for (&r, e) in &last {
        if waiters.contains(&r) {
            continue;
        }
        let t = e.t.unwrap_or(t0);
        if t < t0 {
            let at = when(e).unwrap_or_default();
            let who = dog.who.rank.map_or("?".into(), |x| x.to_string());
            out.add(
                r,
                false,
                Text::new(
                    format!(
                        "rank {r}'s log stops at {at} ({:.1} s before rank {who}'s watchdog fired) and it never timed out itself",
                        t0 - t,
                    ),
                    format!(
                        "rank {r} 的日志停在 {at}（比 rank {who} 的 watchdog 触发早 {:.1} 秒），而它自己从没超时",
                        t0 - t,
                    ),
                ),
                Some(e),
            );
        }
    }
}

/// Host and pid of each rank, from any line that says both (NCCL prefixes, launcher blocks).
fn rank_map(tl: &Timeline) -> BTreeMap<u32, (Option<String>, Option<u32>)> {
    let mut m: BTreeMap<u32, (Option<String>, Option<u32>)> = BTreeMap::new();
    for e in &tl.events {
        let Some(r) = e.who.rank else { continue };
        let slot = m.entry(r).or_default();
        if slot.0.is_none() {
            slot.0 = e.who.host.clone();
        }
        if slot.1.is_none() {
            slot.1 = e.who.pid;
        }
    }
    m
}

/// A line that says a process aborted (SIGABRT): a C++ `terminate`, the shell's or Python's
/// abort line, a launcher's exit code -6.
fn is_abort(text: &str) -> bool {
    let t = text.trim();
    t.contains("terminate called after throwing")
        || t.contains("SIGABRT")
        || t.contains("Fatal Python error: Aborted")
        || t.ends_with("Aborted (core dumped)")
        || t.ends_with("Aborted")
        || t.contains("exitcode: -6)")
        || t.contains("exitcode : -6")
        || t.contains("return code = -6")
}

/// What ProcessGroupNCCL throws when NCCL gave up (`torch/csrc/distributed/c10d/
/// ProcessGroupNCCL.cpp`): the watchdog's timeout, or a communicator aborted on an NCCL error
/// (`NCCL communicator was aborted on rank N. Original reason for failure was: NCCL error: …`).
/// In a `what():` after a `terminate`, this names the abort as NCCL's own.
fn is_watchdog_text(text: &str) -> bool {
    text.contains("Watchdog caught collective operation timeout")
        || text.contains("watchdog thread terminated with exception")
        || text.contains("Some NCCL operations have failed or timed out")
        || text.contains("NCCL communicator was aborted")
}

/// What ProcessGroupNCCL logs just before it rethrows the watchdog's exception (which ends in
/// `terminate`): the teardown announced.
fn is_watchdog_teardown(text: &str) -> bool {
    text.contains("watchdog thread terminated with exception")
        || text.contains("we are taking the entire process down")
}

/// Native-crash findings that are NCCL's own abort: every line they cite is an abort, and a
/// `terminate called after throwing` among them is the watchdog's: the `what():` printed
/// right after it is the timeout or the communicator NCCL aborted on its error, or (a paste
/// cut after the terminate) the lines just before it announce the watchdog's teardown. The
/// watchdog throws to take the process down after a collective timed out or NCCL failed
/// (an IB completion error, a peer gone); that abort is the NCCL failure's consequence, never
/// a crash of its own. A finding that also cites a real crash (SIGSEGV, a fault in a library),
/// or whose `what()` names another error, is not one of these.
fn watchdog_aborts(a: &Analysis, findings: &[Finding]) -> BTreeSet<String> {
    let nccl_failed = findings.iter().any(|f| {
        matches!(f.category, Category::NcclTimeout | Category::NcclNetwork)
            && f.rule != LAGGING_RULE
    });
    if !nccl_failed {
        return BTreeSet::new();
    }
    // The lines of one file near an abort, as the error tail and the timeout findings'
    // citations keep them.
    let lines_near = |path: &str, lines: std::ops::RangeInclusive<u64>| -> Vec<&str> {
        let tail = a.error_tail.iter().filter_map(|l| {
            (lines.contains(&l.line) && a.inputs.get(l.input).is_some_and(|i| i.path == path))
                .then_some(l.text.as_str())
        });
        let cited = findings
            .iter()
            .filter(|f| matches!(f.category, Category::NcclTimeout | Category::NcclNetwork))
            .flat_map(|f| f.evidence.iter())
            .filter_map(|e| {
                (e.path == path && e.line.is_some_and(|l| lines.contains(&l)))
                    .then_some(e.text.as_str())
            });
        tail.chain(cited).collect()
    };
    let watchdog_at = |path: &str, line: u64| {
        let after = lines_near(path, line + 1..=line + 2);
        let what = after.iter().find(|t| t.contains("what():"));
        match what {
            Some(w) => is_watchdog_text(w),
            None => lines_near(path, line.saturating_sub(3)..=line.saturating_sub(1))
                .iter()
                .any(|t| is_watchdog_teardown(t)),
        }
    };
    findings
        .iter()
        .filter(|f| f.category == Category::SegfaultNative && !f.evidence.is_empty())
        .filter(|f| f.evidence.iter().all(|e| is_abort(&e.text)))
        .filter(|f| {
            f.evidence.iter().any(|e| {
                e.text.contains("terminate called after throwing")
                    && e.line.is_some_and(|l| watchdog_at(&e.path, l))
            })
        })
        .map(|f| f.rule.clone())
        .collect()
}

fn is_teardown(text: &str) -> bool {
    text.contains("closing signal SIG")
        || text.contains("Killing subprocess")
        || text.contains("death signal, shutting down workers")
}

/// What a synthetic finding says: (rule, code, category), title, confidence, evidence, fix, why.
/// The fix when some ranks all-gather while the others run another collective: a gather of
/// sharded parameters (what ZeRO-3 and FSDP issue before using a layer) on some ranks only.
const GATHER_FIX: Text<&str> = Text {
    en: "Some ranks were gathering sharded parameters (an all-gather, as ZeRO-3 and FSDP issue before a layer runs) while the others ran another collective: code that touches the sharded model on some ranks only (saving the 16-bit model or a `state_dict()`, evaluation or generation under `if rank == 0`) must run on every rank, or shard less — ZeRO stage 2 (FSDP's `SHARD_GRAD_OP`) keeps whole parameters on every rank, so nothing is gathered. TORCH_DISTRIBUTED_DEBUG=DETAIL names the call sites.",
    zh: "一部分 rank 在收集切分的参数（all-gather，ZeRO-3 和 FSDP 在某一层运行前会发起它），其余 rank 在执行别的集合通信：只在部分 rank 上触碰切分模型的代码（保存 16-bit 模型或 `state_dict()`、放在 `if rank == 0` 里的评估或生成）必须在所有 rank 上执行，或者少切分一些——ZeRO stage 2（FSDP 的 `SHARD_GRAD_OP`）在每个 rank 上保留完整参数，不需要收集。设置 TORCH_DISTRIBUTED_DEBUG=DETAIL 可以看到具体调用位置。",
};

/// The process group a ProcessGroupNCCL line names (`[PG ID 2 PG GUID 5 Rank 1]`, older
/// `[PG 2 Rank 1]`), if it names one.
fn pg_id(line: &str) -> Option<u64> {
    let at = line.find("[PG ")? + 4;
    let rest = line[at..].strip_prefix("ID ").unwrap_or(&line[at..]);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Some ranks all-gather and others do not, at the mismatched sequence number.
fn gathers_shards(m: &Mismatch) -> bool {
    let gather = |op: &str| {
        op.trim_start_matches('_')
            .to_ascii_uppercase()
            .starts_with("ALLGATHER")
    };
    m.ops.iter().any(|(op, _)| gather(op)) && m.ops.iter().any(|(op, _)| !gather(op))
}

struct Synth<'a> {
    id: (&'a str, &'a str, Category),
    title: Text,
    conf: f64,
    evidence: Vec<Evidence>,
    fix: Text<&'a str>,
    why: Vec<String>,
}

fn synthetic(x: Synth) -> Finding {
    let Synth {
        id: (rule, code, category),
        title,
        conf,
        evidence,
        fix,
        why,
    } = x;
    Finding {
        rule: rule.into(),
        code: code.into(),
        category,
        action: category.action(),
        title,
        confidence: conf,
        strength: conf,
        symptom_of: None,
        origin: Origin::default(),
        evidence,
        against: Vec::new(),
        fix: fix.owned(),
        role: Role::Root,
        merged_rules: Vec::new(),
        score: why
            .into_iter()
            .map(|what| super::Contribution { what, weight: conf })
            .collect(),
        more_lines: 0,
        next_time: None,
        alternatives: None,
        affected_ranks: Vec::new(),
    }
}

/// Find the initiating failure, set its origin, and mark the rest as its symptoms.
pub fn apply(kb: &KnowledgeBase, a: &Analysis, tl: &Timeline, findings: &mut Vec<Finding>) {
    let flight: Vec<_> = a.flight.iter().map(|(_, d)| d.clone()).collect();
    let v = verdict(tl, &flight);
    let map = rank_map(tl);
    // The watchdog's own abort follows from the timeout: what pointed at it as a root (the
    // first ranking, by confidence alone) points at the timeout's root instead.
    let aborts = watchdog_aborts(a, findings);
    for f in findings.iter_mut() {
        if f.symptom_of.as_ref().is_some_and(|r| aborts.contains(r)) {
            f.symptom_of = None;
        }
    }
    let follows = Follows {
        consequences: consequences(kb, findings),
        aborts,
    };

    let root = if let Some(m) = &v.mismatch {
        Some(mismatch_root(m, findings))
    } else if let Some(c) = v.culprits.first() {
        Some(culprit_root(c, &v, tl, &follows, findings))
    } else {
        findings
            .iter()
            .position(|f| live(f) && !follows.is_symptom(f))
            .map(|idx| Root {
                idx,
                rank: None,
                time: None,
            })
    };
    let Some(Root {
        idx: ri,
        rank: origin_rank,
        time: origin_time,
    }) = root
    else {
        // No cause: collateral teardown still is not a cause, and the watchdog's abort is a
        // symptom of the timeout it reports.
        if let Some(dog) = findings
            .iter()
            .find(|f| f.category == Category::NcclTimeout && f.symptom_of.is_none())
            .map(|f| f.rule.clone())
        {
            for f in findings
                .iter_mut()
                .filter(|f| follows.aborts.contains(&f.rule))
            {
                f.symptom_of = Some(dog.clone());
            }
        }
        return;
    };
    set_origin(a, &v, &map, origin_rank, origin_time, &mut findings[ri]);
    mark_symptoms(kb, &v, &follows, ri, findings);

    // The order is `rank`'s alone (applied once all findings are made).
    super::rank(findings);
}

/// A finding that still counts as a cause: not ruled out, not advice.
fn live(f: &Finding) -> bool {
    f.confidence >= RULED_OUT_BELOW && f.role != Role::Advice
}

/// Consequences: a rule may say its finding follows from a cause of another category (a
/// peer's "remote process exited" after a rank's CUDA OOM; a corrupt checkpoint read after
/// the disk filled during the save). When such a cause is found too, it is the root and
/// this finding its symptom, whatever their confidences. The rules whose finding is one.
fn consequences(kb: &KnowledgeBase, findings: &[Finding]) -> BTreeSet<String> {
    findings
        .iter()
        .filter(|f| {
            kb.find(&f.rule).is_some_and(|r| {
                findings
                    .iter()
                    .any(|g| g.rule != f.rule && live(g) && r.consequence_of.contains(&g.category))
            })
        })
        .map(|f| f.rule.clone())
        .collect()
}

/// What makes a finding a symptom rather than a cause, besides its rule's own role.
struct Follows {
    /// Rules whose finding is a consequence of another finding's category.
    consequences: BTreeSet<String>,
    /// Rules whose finding is the watchdog's own abort.
    aborts: BTreeSet<String>,
}

impl Follows {
    fn is_symptom(&self, f: &Finding) -> bool {
        f.role == Role::Symptom
            || f.category == Category::NcclTimeout
            || self.consequences.contains(&f.rule)
            || self.aborts.contains(&f.rule)
            || (!f.evidence.is_empty() && f.evidence.iter().all(|e| is_teardown(&e.text)))
    }
}

/// The initiating failure: its finding's index, and the rank and time it started at when the
/// ranks' arithmetic tells them.
struct Root {
    idx: usize,
    rank: Option<u32>,
    time: Option<String>,
}

/// Ranks ran different collectives: the mismatch is the root (a rule's finding of the category
/// when there is one, retitled; else a TW9901 finding), started by the odd rank out if any.
fn mismatch_root(m: &Mismatch, findings: &mut Vec<Finding>) -> Root {
    let minority = m
        .ops
        .iter()
        .min_by_key(|(_, r)| r.len())
        .filter(|(_, r)| m.ops.iter().filter(|(_, x)| x.len() == r.len()).count() == 1)
        .and_then(|(_, r)| (r.len() == 1).then(|| r[0]));
    let f = mismatch_finding(m);
    let idx = match findings
        .iter()
        .position(|f| f.category == Category::CollectiveMismatch && live(f))
    {
        Some(i) => {
            findings[i].title = f.title.clone();
            i
        }
        None => {
            findings.push(f);
            findings.len() - 1
        }
    };
    Root {
        idx,
        rank: minority,
        time: m.evidence.first().and_then(|e| e.time.clone()),
    }
}

/// Ranks reduced different amounts in one collective: each rank's gradient buckets hold the
/// parameters that got gradients there, so a part of the model ran on some ranks only.
const SIZES_FIX: Text<&str> = Text {
    en: "Make every rank produce gradients for the same parameters on every step: run the part of the model that some batches skip on every rank (a dummy input, e.g. a blank image for text-only samples, so a vision tower always runs) or freeze it (`requires_grad_(False)`, the trainer's freeze option for that tower); the ranks reduced gradient buckets of different sizes at the same collective, so a branch, tower or loss term ran on some ranks only. With uneven batch counts per rank, give every rank the same number of batches (`drop_last=True`); `TORCH_DISTRIBUTED_DEBUG=DETAIL` names the call.",
    zh: "让每个 rank 在每一步都为同一组参数产生梯度：把某些 batch 会跳过的那部分模型在每个 rank 上都跑一遍（给一个占位输入，例如给纯文本样本一张空白图片，让视觉塔总会执行），或者把它冻结（`requires_grad_(False)`，或训练框架冻结该模块的选项）；各 rank 在同一个集合通信里归约的梯度桶大小不同，说明某个分支、某个塔或某个 loss 项只在部分 rank 上执行了。如果各 rank 的 batch 数不同，让每个 rank 的 batch 数一样（`drop_last=True`）；`TORCH_DISTRIBUTED_DEBUG=DETAIL` 会指出具体的调用。",
};

/// A collective called conditionally or out of order: the mismatch's usual fix.
const ORDER_FIX: Text<&str> = Text {
    en: "A collective is called conditionally or in a different order on some ranks (rank-dependent `if` around all_reduce/broadcast, early exit on one rank). Make every rank call the same collectives in the same order; TORCH_DISTRIBUTED_DEBUG=DETAIL names the call sites.",
    zh: "有的 rank 是有条件地或按不同顺序调用集合通信的（all_reduce/broadcast 外面包了依赖 rank 的 `if`，或某个 rank 提前退出）。让所有 rank 按相同顺序调用相同的集合通信；设置 TORCH_DISTRIBUTED_DEBUG=DETAIL 可以看到具体调用位置。",
};

/// The TW9901 finding that says which ranks ran which collective.
fn mismatch_finding(m: &Mismatch) -> Finding {
    let desc = m
        .ops
        .iter()
        .map(|(op, r)| {
            format!(
                "rank{} {} ran {op}",
                if r.len() == 1 { "" } else { "s" },
                r.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let desc_zh = m
        .ops
        .iter()
        .map(|(op, r)| {
            format!(
                "rank {} 执行的是 {op}",
                r.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        })
        .collect::<Vec<_>>()
        .join("，");
    synthetic(Synth {
        id: (MISMATCH_RULE, "TW9901", Category::CollectiveMismatch),
        title: Text::new(
            format!(
                "Ranks ran different collectives at sequence number {}: {desc}",
                m.seq
            ),
            format!(
                "各 rank 在第 {} 号集合通信上执行的操作不一致：{desc_zh}",
                m.seq
            ),
        ),
        conf: 0.95,
        evidence: m.evidence.clone(),
        fix: if gathers_shards(m) {
            GATHER_FIX
        } else if reduces_different_sizes(m) {
            SIZES_FIX
        } else {
            ORDER_FIX
        },
        why: vec![format!(
            "collective fingerprints differ at sequence number {}: {desc}",
            m.seq
        )],
    })
}

/// A culprit rank: an existing cause seen on that rank stays the root; otherwise a
/// lagging-rank finding leads and the watchdog lines follow from it.
fn culprit_root(
    c: &Culprit,
    v: &Verdict,
    tl: &Timeline,
    follows: &Follows,
    findings: &mut Vec<Finding>,
) -> Root {
    let own = findings.iter().position(|f| {
        live(f) && !follows.is_symptom(f) && f.evidence.iter().any(|e| e.rank == Some(c.rank))
    });
    let idx = own.unwrap_or_else(|| {
        findings.push(lagging_finding(c, v, tl));
        findings.len() - 1
    });
    Root {
        idx,
        rank: Some(c.rank),
        time: c.time.clone(),
    }
}

/// The TW9902 finding: rank `c` never reached the collective the others waited in, or lags.
fn lagging_finding(c: &Culprit, v: &Verdict, tl: &Timeline) -> Finding {
    let (seq, op) = v.collective.clone().unwrap_or((0, "?".into()));
    let title = if v.collective.is_some() {
        Text::new(
            format!(
                "Rank {} never reached collective #{seq} ({op}); {} waiting rank{} timed out",
                c.rank,
                v.waiters.len(),
                if v.waiters.len() == 1 { "" } else { "s" }
            ),
            format!(
                "rank {} 一直没有走到第 {seq} 号集合通信（{op}），{} 个在等它的 rank 超时了",
                c.rank,
                v.waiters.len()
            ),
        )
    } else {
        Text::new(
            format!("Rank {} lags behind the other ranks' collectives", c.rank),
            format!("rank {} 的集合通信进度落后于其他 rank", c.rank),
        )
    };
    let mut evidence = c.evidence.clone();
    if let Some(d) = tl
        .events
        .iter()
        .find(|e| matches!(e.kind, Kind::Launch(What::Watchdog { .. })))
    {
        evidence.push(ev(
            d,
            Some(Text::new(
                "the peers' watchdog fired here",
                "其他 rank 的 watchdog 在这里触发",
            )),
        ));
    }
    let conf = if c.strong { 0.9 } else { 0.75 };
    synthetic(Synth {
        id: (LAGGING_RULE, "TW9902", Category::NcclTimeout),
        title,
        conf,
        evidence,
        fix: LAGGING_FIX,
        why: c.why.iter().map(|w| w.en.clone()).collect(),
    })
}

/// What to do about a rank that never reached the collective.
const LAGGING_FIX: Text<&str> = Text {
    en: "Look at what this rank was doing when its log stopped: rank-0-only work (evaluation, checkpoint upload, logging) longer than the process-group timeout, a hang (deadlock, I/O), or a crash without a message. Run such work on all ranks or follow it with a barrier; raise the timeout only if the long step is legitimate.",
    zh: "看看这个 rank 在日志停下时在做什么：只在 rank 0 上做、耗时超过进程组 timeout 的工作（评估、上传 checkpoint、写日志），卡死（死锁、I/O），或者没留下任何信息就崩了。这类工作要么所有 rank 一起做，要么后面跟一个 barrier；只有这一步确实就要那么久时，才去调大 timeout。",
};

/// Origin of the root finding `f`: the culprit when there is one; fill host/pid from what
/// other lines say.
fn set_origin(
    a: &Analysis,
    v: &Verdict,
    map: &BTreeMap<u32, (Option<String>, Option<u32>)>,
    origin_rank: Option<u32>,
    origin_time: Option<String>,
    f: &mut Finding,
) {
    if v.mismatch.is_some() && origin_rank.is_none() {
        // A tie (one rank per collective): no single rank started it.
        f.origin.rank = None;
        f.origin.pid = None;
    }
    if let Some(r) = origin_rank {
        if f.origin.rank != Some(r) {
            f.origin = Origin {
                rank: Some(r),
                host: None,
                pid: None,
                time: origin_time.clone(),
            };
        }
    } else if v.mismatch.is_none()
        && let Some((r, pid, time)) = killed_first(a, f)
    {
        // The kernel's record of whom it killed first outranks the launcher's view of who
        // failed first (it only saw exits in the order it polled them).
        f.origin.rank = Some(r);
        f.origin.pid = Some(pid);
        f.origin.host = None;
        if time.is_some() {
            f.origin.time = time;
        }
    } else if f.origin.rank.is_none() && v.mismatch.is_none() {
        let ranks: BTreeSet<u32> = f.evidence.iter().filter_map(|e| e.rank).collect();
        if ranks.len() == 1 {
            f.origin.rank = ranks.into_iter().next();
        } else if ranks.is_empty() {
            // The cause's own lines name no rank (a segfault, a kernel OOM kill): the one
            // rank the launcher saw fail by itself — not by its teardown SIGTERM — is where
            // it happened.
            if let Some(r) = lone_failed_rank(a) {
                // The pid on the cause's line is whoever logged it (often the launcher).
                f.origin.rank = Some(r);
                f.origin.pid = None;
            }
        }
    }
    if let Some(r) = f.origin.rank
        && let Some((h, p)) = map.get(&r)
    {
        if f.origin.host.is_none() {
            f.origin.host = h.clone();
        }
        if f.origin.pid.is_none() {
            f.origin.pid = *p;
        }
    }
    if f.origin.host.is_none() {
        // One host in the whole input: that is where it happened.
        let hosts: BTreeSet<&String> = map.values().filter_map(|x| x.0.as_ref()).collect();
        if hosts.len() == 1 {
            f.origin.host = hosts.into_iter().next().cloned();
        }
    }
    if f.origin.time.is_none() {
        f.origin.time = origin_time;
    }
}

/// Symptoms: timeouts, aborts, teardown — they follow from the root (`findings[ri]`), which
/// learns the ranks they were seen on.
fn mark_symptoms(
    kb: &KnowledgeBase,
    v: &Verdict,
    follows: &Follows,
    ri: usize,
    findings: &mut [Finding],
) {
    let root_rule = findings[ri].rule.clone();
    let root_cat = findings[ri].category;
    let mut affected: BTreeSet<u32> = v.waiters.clone();
    for (i, f) in findings.iter_mut().enumerate() {
        if i == ri || f.symptom_of.is_some() && f.symptom_of.as_deref() != Some(&root_rule) {
            continue;
        }
        if i != ri && follows.is_symptom(f) {
            let allowed = kb.find(&f.rule).is_none_or(|r| {
                if follows.consequences.contains(&r.name) {
                    r.consequence_of.contains(&root_cat)
                } else {
                    r.symptom_of.is_empty() || r.symptom_of.contains(&root_cat)
                }
            }) || f.category == Category::NcclTimeout
                || root_rule == LAGGING_RULE
                || root_rule == MISMATCH_RULE;
            if allowed {
                f.symptom_of = Some(root_rule.clone());
                affected.extend(f.evidence.iter().filter_map(|e| e.rank));
            }
        }
    }
    let origin = findings[ri].origin.rank;
    findings[ri].affected_ranks = affected
        .into_iter()
        .filter(|r| Some(*r) != origin)
        .collect();
}

/// Every finding's `origin.time` in the contract's form, ISO 8601 with the date, whatever the
/// log wrote: a glog/syslog time (`--11-29T19:47:44.123`, no year) takes its year from the
/// earliest fully dated line of the run, else from the modification time of the file it was
/// read from; raw dmesg (`boot+1843.3`) takes the boot time the timeline aligned. A time that
/// cannot be dated is dropped (the evidence keeps it as logged) rather than published
/// without its date. Runs after the cascade, for symptoms too.
pub fn date_origins(a: &Analysis, tl: &Timeline, findings: &mut [Finding]) {
    for f in findings.iter_mut() {
        let Some(t) = f.origin.time.take() else {
            continue;
        };
        let path = f
            .evidence
            .iter()
            .find(|e| e.time.as_deref() == Some(t.as_str()))
            .or(f.evidence.first())
            .map(|e| e.path.as_str());
        f.origin.time = dated(&t, tl, || modified(a, path));
    }
}

/// `t` with its date, in ISO form (`T` between date and time).
fn dated(t: &str, tl: &Timeline, modified: impl Fn() -> Option<i64>) -> Option<String> {
    if let Some(md) = t.strip_prefix("--") {
        let month: u32 = md.get(0..2)?.parse().ok()?;
        let day: u32 = md.get(3..5)?.parse().ok()?;
        let year = tl.year.or_else(|| {
            // The file was last written after its lines: a day later in the year than the
            // file's is last year's.
            let (y, m, d) = crate::sources::units::civil_from_days(modified()?.div_euclid(86_400));
            Some(y as i32 - i32::from((month, day) > (m, d)))
        })?;
        return Some(format!("{year:04}-{md}"));
    }
    if t.starts_with("boot+") {
        let epoch = crate::timeline::resolve(t, None, tl.boot_epoch)?;
        return Some(crate::timeline::format_epoch(epoch).replacen(' ', "T", 1));
    }
    let b = t.as_bytes();
    let has_date =
        b.len() >= 10 && b[4] == b'-' && b[7] == b'-' && b[..4].iter().all(u8::is_ascii_digit);
    if !has_date {
        return None;
    }
    let mut t = t.to_string();
    if t.as_bytes().get(10) == Some(&b' ') {
        t.replace_range(10..11, "T");
    }
    Some(t)
}

/// The modification time of the input at `path`, else the latest of all inputs'.
fn modified(a: &Analysis, path: Option<&str>) -> Option<i64> {
    path.and_then(|p| a.inputs.iter().find(|i| i.path == p))
        .and_then(|i| i.modified)
        .or_else(|| a.inputs.iter().filter_map(|i| i.modified).max())
}

/// The rank whose process the kernel (or a cgroup, or systemd-oomd) killed first, or that
/// faulted first, joined by pid: a machine record names the pid, a launcher's report of its
/// workers (torchelastic's header and failure blocks) names the pid with the rank. Only
/// records the finding cites count, or any kill when the finding is a host OOM.
fn killed_first(a: &Analysis, f: &Finding) -> Option<(u32, u32, Option<String>)> {
    use crate::sources::EventKind;
    let mut rank_of: BTreeMap<u32, u32> = BTreeMap::new();
    for (_, e) in &a.launch {
        if let What::WorkerExit {
            rank,
            local_rank,
            pid: Some(pid),
            ..
        } = &e.what
            && let Some(r) = rank.or(*local_rank)
        {
            // A failure block's global rank wins over a header's local rank.
            if rank.is_some() || !rank_of.contains_key(pid) {
                rank_of.insert(*pid, r);
            }
        }
    }
    if rank_of.is_empty() {
        return None;
    }
    let cited: BTreeSet<&str> = f.evidence.iter().map(|e| e.text.as_str()).collect();
    a.events
        .iter()
        .filter(|(i, _)| a.inputs[*i].phase != crate::model::Phase::Before)
        .map(|(_, e)| e)
        .filter(|e| {
            matches!(
                e.kind,
                EventKind::OomKill | EventKind::OomdKill | EventKind::Segfault
            )
        })
        .filter(|e| {
            cited
                .iter()
                .any(|c| c.contains(e.text.trim()) || e.text.contains(c.trim()))
                || (f.category == Category::HostOom && e.kind != EventKind::Segfault)
        })
        .find_map(|e| {
            let pid = e.pid?;
            rank_of.get(&pid).map(|r| (*r, pid, e.time.clone()))
        })
}

/// The single rank whose launcher-reported exit was a failure of its own (non-zero, and not
/// the SIGTERM/-15 the launcher sends survivors during teardown), if exactly one.
fn lone_failed_rank(a: &Analysis) -> Option<u32> {
    let mut failed = BTreeSet::new();
    for f in a.facts.matching(crate::fact_names::ANY_RANK_EXIT_CODE) {
        let code = f.value.as_i64().unwrap_or(0);
        if code != 0
            && code != -15
            && code != 143
            && let Some(r) = f.name.split('.').nth(1).and_then(|r| r.parse::<u32>().ok())
        {
            failed.insert(r);
        }
    }
    (failed.len() == 1)
        .then(|| failed.into_iter().next())
        .flatten()
}

#[cfg(test)]
mod tests {
    use crate::model::{Category, Verdict};
    use crate::rules::KnowledgeBase;

    /// The run's top cause (first finding that is no symptom) and each finding's link.
    fn diagnose(log: &str) -> (Verdict, Vec<(Category, Option<String>)>) {
        let kb = KnowledgeBase::load(&[]).expect("built-in rules load");
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("train.log");
        std::fs::write(&p, log).unwrap();
        let r = crate::diagnose(&kb, &[p.to_string_lossy().into_owned()], 1);
        let f = r
            .findings
            .iter()
            .map(|f| (f.category, f.symptom_of.clone()))
            .collect();
        (r.verdict, f)
    }

    fn top(f: &[(Category, Option<String>)]) -> Option<Category> {
        f.iter().find(|(_, s)| s.is_none()).map(|(c, _)| *c)
    }

    #[test]
    fn the_watchdogs_own_abort_is_a_symptom_of_the_timeout() {
        let log = "\
step 40 loss 1.93
[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600317 milliseconds before timing out.
terminate called after throwing an instance of 'std::runtime_error'
  what():  [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600317 milliseconds before timing out.
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 2 (pid: 7123) of binary: /usr/bin/python3
";
        let (v, f) = diagnose(log);
        assert_eq!(v, Verdict::Diagnosed);
        assert_eq!(top(&f), Some(Category::NcclTimeout), "{f:?}");
        let abort = f
            .iter()
            .find(|(c, _)| *c == Category::SegfaultNative)
            .expect("the abort is still reported");
        assert!(abort.1.is_some(), "the abort points at the timeout: {f:?}");
    }

    #[test]
    fn a_terminate_right_after_the_watchdogs_teardown_is_its_abort() {
        // The paste ends at the terminate: the line before it is the watchdog rethrowing.
        let log = "\
[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88012, OpType=ALLREDUCE, NumelIn=2048, NumelOut=2048, Timeout(ms)=1800000) ran for 1800377 milliseconds before timing out.
[E ProcessGroupNCCL.cpp:916] [Rank 1] NCCL watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=88012, OpType=ALLREDUCE, NumelIn=2048, NumelOut=2048, Timeout(ms)=1800000) ran for 1800377 milliseconds before timing out.
terminate called after throwing an instance of 'std::runtime_error'
";
        let (_, f) = diagnose(log);
        assert_eq!(top(&f), Some(Category::NcclTimeout), "{f:?}");
    }

    #[test]
    fn an_abort_with_its_own_reason_stays_a_cause() {
        // The same timeout lines, but the terminate's what() is not the watchdog's: the
        // aborting process failed by itself.
        let log = "\
[E ProcessGroupNCCL.cpp:475] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=5, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600317 milliseconds before timing out.
terminate called after throwing an instance of 'std::runtime_error'
  what():  decoder: corrupt frame header in shard 17
ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: -6) local_rank: 0 (pid: 7121) of binary: /usr/bin/python3
";
        let (_, f) = diagnose(log);
        assert_eq!(top(&f), Some(Category::SegfaultNative), "{f:?}");
    }

    #[test]
    fn a_segfault_beside_a_timeout_is_not_the_watchdogs_abort() {
        let log = "\
[E ProcessGroupNCCL.cpp:475] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) ran for 600104 milliseconds before timing out.
Fatal Python error: Segmentation fault
";
        let (_, f) = diagnose(log);
        assert_eq!(top(&f), Some(Category::SegfaultNative), "{f:?}");
    }

    #[test]
    fn watchdogs_of_one_sequence_number_in_different_ops_are_a_mismatch() {
        // Rank 0 gathers parameters to save while ranks 1-3 all-reduce, at one SeqNum.
        let log = "\
[rank1]:[E1003 04:10:11.100000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4410, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.
[rank2]:[E1003 04:10:11.100000000 ProcessGroupNCCL.cpp:632] [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4410, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.
[rank0]:[E1003 04:10:11.100000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4410, OpType=_ALLGATHER_BASE, NumelIn=6553600, NumelOut=26214400, Timeout(ms)=600000) ran for 600015 milliseconds before timing out.
[rank3]:[E1003 04:10:11.100000000 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4410, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600011 milliseconds before timing out.
";
        let (_, f) = diagnose(log);
        assert_eq!(top(&f), Some(Category::CollectiveMismatch), "{f:?}");
    }

    #[test]
    fn ranks_that_reduce_different_sizes_at_one_sequence_number_are_a_mismatch() {
        use super::{Mismatch, reduces_different_sizes};
        // Text-only batches skip a vision tower on ranks 0 and 6: their gradient buckets differ.
        let log = "\
[rank3]:[E711 16:52:37.217804512 ProcessGroupNCCL.cpp:632] [Rank 3] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=418, OpType=ALLREDUCE, NumelIn=53452800, NumelOut=53452800, Timeout(ms)=1800000) ran for 1800093 milliseconds before timing out.
[rank5]:[E711 16:52:37.220119367 ProcessGroupNCCL.cpp:632] [Rank 5] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=418, OpType=ALLREDUCE, NumelIn=53452800, NumelOut=53452800, Timeout(ms)=1800000) ran for 1800088 milliseconds before timing out.
[rank0]:[E711 16:52:37.231504417 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=418, OpType=ALLREDUCE, NumelIn=39845888, NumelOut=39845888, Timeout(ms)=1800000) ran for 1800101 milliseconds before timing out.
[rank6]:[E711 16:52:37.233781024 ProcessGroupNCCL.cpp:632] [Rank 6] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=418, OpType=ALLREDUCE, NumelIn=39845888, NumelOut=39845888, Timeout(ms)=1800000) ran for 1800097 milliseconds before timing out.
";
        let (_, f) = diagnose(log);
        assert_eq!(top(&f), Some(Category::CollectiveMismatch), "{f:?}");
        // All-to-all takes per-rank sizes: counts alone are no mismatch there.
        let (_, f) = diagnose(&log.replace("ALLREDUCE", "ALLTOALL_BASE"));
        assert_ne!(top(&f), Some(Category::CollectiveMismatch), "{f:?}");
        let sized = |ops: &[(&str, u32)]| Mismatch {
            seq: 418,
            ops: ops.iter().map(|(o, r)| (o.to_string(), vec![*r])).collect(),
            evidence: Vec::new(),
        };
        assert!(reduces_different_sizes(&sized(&[
            ("ALLREDUCE of 39845888 elements", 0),
            ("ALLREDUCE of 53452800 elements", 3)
        ])));
        assert!(!reduces_different_sizes(&sized(&[
            ("ALLREDUCE", 0),
            ("BROADCAST", 3)
        ])));
    }

    #[test]
    fn one_rank_in_two_ops_at_one_sequence_number_is_no_mismatch() {
        // Rank 0 belongs to two process groups whose counters meet: no two ranks disagree.
        let log = "\
[rank0]:[E1003 04:10:11.100000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.
[rank0]:[E1003 04:10:11.200000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=77, OpType=BROADCAST, NumelIn=8, NumelOut=8, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.
";
        let (_, f) = diagnose(log);
        assert_eq!(top(&f), Some(Category::NcclTimeout), "{f:?}");
    }

    #[test]
    fn process_groups_that_hang_at_start_in_different_ops_are_no_mismatch() {
        // Two process groups on disjoint ranks, each at its own second collective.
        let log = "\
[rank0]:[E1003 04:10:11.100000000 ProcessGroupNCCL.cpp:632] [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=BROADCAST, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.
[rank1]:[E1003 04:10:11.100000000 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=2, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.
";
        let (_, f) = diagnose(log);
        assert_ne!(top(&f), Some(Category::CollectiveMismatch), "{f:?}");
        // Past start-up, lines that name different process groups do not meet either.
        let log = "\
[rank0]:[E1003 04:10:11.100000000 ProcessGroupNCCL.cpp:632] [PG ID 1 PG GUID 1 Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600012 milliseconds before timing out.
[rank1]:[E1003 04:10:11.100000000 ProcessGroupNCCL.cpp:632] [PG ID 2 PG GUID 2 Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=812, OpType=_ALLGATHER_BASE, NumelIn=8, NumelOut=16, Timeout(ms)=600000) ran for 600013 milliseconds before timing out.
";
        let (_, f) = diagnose(log);
        assert_ne!(top(&f), Some(Category::CollectiveMismatch), "{f:?}");
    }

    #[test]
    fn the_process_group_of_a_watchdog_line() {
        assert_eq!(super::pg_id("[PG ID 2 PG GUID 5 Rank 1] Watchdog"), Some(2));
        assert_eq!(super::pg_id("[PG 3 Rank 1] Watchdog"), Some(3));
        assert_eq!(super::pg_id("[Rank 1] Watchdog"), None);
    }
}
