//! A failure that hides: a worker ended by SIGTERM that nothing in the run sent. Its launcher did
//! not tear it down (no `Sending process <pid> closing signal`), no scheduler record cancelled or
//! preempted the job, no OOM killer ran: something outside the job sent it (a `timeout`, a
//! health check, a person, a scheduler whose log is not here). The finding it makes
//! (`terminated-from-outside`, TW9904) says so and what to check. Works on the analysis and the
//! findings as data; it never reads files or formats output.

use super::{Contribution, Evidence, Finding, Origin, RULED_OUT_BELOW};
use crate::analyze::Analysis;
use crate::model::{Category, Phase, Text, text};
use crate::rules::Role;
use crate::sources::EventKind;
use crate::sources::launcher::What;
use std::collections::BTreeSet;

pub const RULE: &str = "terminated-from-outside";
pub const CODE: &str = "TW9904";

/// What `rules explain terminated-from-outside` says.
pub const WHAT: Text<&str> = Text {
    en: "A worker ended by SIGTERM that nothing in the inputs sent: its launcher did not tear it \
     down, no scheduler record cancelled or preempted the job, no OOM killer ran. Something \
     outside the job sent it (a `timeout` wrapper, a health check, a person, a scheduler whose \
     record is not among the inputs). Made only when no rule explains the failure.",
    zh: "某个 worker 被 SIGTERM 结束，但输入里找不到发送者：启动器没有关停它，\
     调度器的记录里没有取消或抢占这个作业，也没有 OOM killer 出手。是作业之外的东西发的信号\
     （`timeout` 包装、健康检查、某个人，或者其记录不在输入中的调度器）。只在没有任何规则能解释这次失败时给出。",
};

const FIX: Text<&str> = Text {
    en: "Find who sent SIGTERM: the scheduler's record (`sacct -j <jobid> -o JobID,State,Reason,Elapsed,Timelimit`; `kubectl describe pod <pod>` for eviction or preemption), a `timeout` or watchdog wrapper around the command, the node's log around that time (`journalctl --since '<time>'`; to catch the sender next time, an audit rule `auditctl -a always,exit -F arch=b64 -S kill -S tgkill`). Then resume from the last checkpoint.",
    zh: "先查清是谁发的 SIGTERM：调度器的记录（`sacct -j <jobid> -o JobID,State,Reason,Elapsed,Timelimit`；被驱逐或抢占看 `kubectl describe pod <pod>`）、套在命令外面的 `timeout` 或 watchdog 脚本、节点在那个时间点的日志（`journalctl --since '<time>'`；想下次抓到发送者，可以加一条 audit 规则 `auditctl -a always,exit -F arch=b64 -S kill -S tgkill`）。然后从最近的 checkpoint 恢复。",
};

const NEXT_TIME: Text<&str> = Text {
    en: "Keep the scheduler's record of the job (`sacct`, `kubectl describe pod`) and the node's journal beside the logs.",
    zh: "把调度器对这个任务的记录（`sacct`、`kubectl describe pod`）和节点的 journal 跟日志放在一起保留。",
};

/// The finding, when a rank's process ended by SIGTERM and nothing in the run sent it.
pub fn finding(a: &Analysis, findings: &[Finding]) -> Option<Finding> {
    if findings
        .iter()
        .any(|f| f.symptom_of.is_none() && f.confidence >= RULED_OUT_BELOW)
    {
        return None;
    }
    let run_events = || {
        a.events
            .iter()
            .filter(|(i, _)| a.inputs[*i].phase != Phase::Before)
            .map(|(_, e)| e)
    };
    if run_events().any(|e| {
        matches!(
            e.kind,
            EventKind::OomKill | EventKind::OomdKill | EventKind::SlurmCancel
        )
    }) {
        return None;
    }
    let torn_down: BTreeSet<u32> = a
        .launch
        .iter()
        .filter_map(|(_, e)| match &e.what {
            What::Teardown { pid, .. } => Some(*pid),
            _ => None,
        })
        .collect();
    // Workers the launcher tore down are its victims, not this.
    let victims: BTreeSet<u32> = a
        .launch
        .iter()
        .filter_map(|(_, e)| match &e.what {
            What::WorkerExit {
                rank,
                local_rank,
                pid: Some(pid),
                ..
            } if torn_down.contains(pid) => rank.or(*local_rank),
            _ => None,
        })
        .collect();
    if !torn_down.is_empty() && victims.is_empty() {
        // A teardown whose pids we cannot tie to ranks: do not guess.
        return None;
    }
    let fact = a
        .facts
        .matching("rank.*.exit_signal")
        .filter(|f| f.phase != Phase::Before)
        .find(|f| {
            f.value.to_string() == "SIGTERM"
                && f.name
                    .split('.')
                    .nth(1)
                    .and_then(|r| r.parse::<u32>().ok())
                    .is_some_and(|r| !victims.contains(&r))
        })?;
    let rank: Option<u32> = fact.name.split('.').nth(1).and_then(|r| r.parse().ok());
    let pid = a.launch.iter().find_map(|(_, e)| match &e.what {
        What::WorkerExit {
            rank: r,
            local_rank,
            pid,
            ..
        } if r.or(*local_rank) == rank => *pid,
        _ => None,
    });
    let why = Text::new(
        "no launcher teardown, scheduler record or OOM kill in the inputs sent it",
        "输入里没有启动器的清理、调度器的记录或 OOM kill 能解释它",
    );
    let who = match rank {
        Some(r) => text!("Rank {r}", "rank {r} "),
        None => Text::new("A worker", "某个 worker "),
    };
    let title = text!(
        "{who} was terminated from outside (SIGTERM): {why}",
        "{who}被外部终止（SIGTERM）：{why}";
        who = who,
        why = why
    );
    let ev_why = text!("SIGTERM, and {why}", "SIGTERM，且{why}"; why = why);
    Some(Finding {
        rule: RULE.into(),
        code: CODE.into(),
        category: Category::PreemptedOrTimeLimit,
        action: Category::PreemptedOrTimeLimit.action(),
        title,
        confidence: 0.4,
        strength: 0.4,
        symptom_of: None,
        origin: Origin {
            rank,
            host: None,
            pid,
            time: None,
        },
        evidence: vec![Evidence {
            path: fact.path.clone(),
            line: fact.line,
            rank,
            host: None,
            time: None,
            text: fact.text.clone(),
            why: Some(ev_why),
        }],
        against: Vec::new(),
        fix: FIX.owned(),
        role: Role::Root,
        merged_rules: Vec::new(),
        score: vec![Contribution {
            what: format!("a rank's process ended with SIGTERM; {}", why.en),
            weight: 0.4,
        }],
        more_lines: 0,
        next_time: Some(NEXT_TIME.owned()),
        alternatives: None,
        affected_ranks: Vec::new(),
    })
}
