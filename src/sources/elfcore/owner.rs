//! Whose core it is: each core is tied by its pid to the process the run's own files name —
//! torchrun's failure table (`exitcode : -11 (pid: 4242)` under `rank : 1`), the DataLoader's
//! `DataLoader worker (pid 542) is killed by signal` in a rank's log, a rank's log prefix that
//! carries its pid (NCCL's `host:pid:tid`), a `core.PID` lying beside one rank's log — and
//! joined with the `coredumpctl info` entry of the same pid (and executable). Reads no file:
//! it gets the cores' summaries, the launcher lines the one scan read (`launcher::What`) and the
//! inputs' paths, and returns data (the owner and the entry, each with the lines that say so).
//! It never guesses: a core whose pid no line names and that lies beside no single rank's log
//! has no owner.

use super::CoreSummary;
use super::locate::CoredumpInfo;
use crate::model::{Attribution, Fact};
use crate::sources::launcher::{LaunchEvent, What};
use crate::sources::prefix;
use serde::Serialize;
use std::path::Path;

/// The process a core is of, as the run's files say.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CoreOwner {
    /// `rank` (a training process) or `dataloader-worker` (a DataLoader worker process of
    /// `rank`, the rank whose log reported it, when known).
    pub role: &'static str,
    /// Who the process was, as any line of the run attributes it: its rank, local rank and
    /// host, and the pid the evidence names (one of the core's pids: see `core_pids`). The
    /// JSON keeps these as the owner's own keys (`cores[].owner.rank`, `.pid`, …); a core's
    /// owner carries no time.
    #[serde(flatten)]
    pub who: Attribution,
    /// What the launcher said about that process's end (`exitcode -11`, `Segmentation fault`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exit: Option<String>,
    /// Each line (or file beside the core) that names the process, strongest first.
    pub evidence: Vec<OwnerEvidence>,
}

/// One line (or file) that names a core's process.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OwnerEvidence {
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
    pub text: String,
    /// `launcher-exit` (torchrun's or torch.multiprocessing's report of the process's end),
    /// `rank-pid` (a rank's line whose prefix names the pid), `dataloader-worker` (the main
    /// process's report of its worker's death), `beside-log` (the core lies beside the logs of
    /// one rank only, or in that rank's folder).
    pub says: &'static str,
}

/// A launcher line the scan read, with the input it came from.
pub struct Said<'a> {
    pub path: &'a str,
    pub event: &'a LaunchEvent,
}

/// The pids a core is known by: the one in NT_PRPSINFO (as the process's own pid namespace
/// saw it, which is what its logs print), systemd-coredump's (the host's namespace, from the
/// file's name or xattrs), and, only when the notes give none, a `core.PID` file name's (a
/// name's last number may be the command's: `core.python3.12`).
pub fn core_pids(path: &str, s: &CoreSummary) -> Vec<u32> {
    let name = Path::new(path)
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("");
    let name = [".gz", ".zst", ".xz", ".lz4", ".bz2"]
        .iter()
        .find_map(|x| name.strip_suffix(x))
        .unwrap_or(name);
    // `core.4242`, `core.python3.4242` (core_pattern `core.%e.%p`): the last dotted number.
    let from_name = name
        .strip_prefix("core.")
        .and_then(|r| r.rsplit('.').next())
        .and_then(|p| p.parse::<u32>().ok());
    let mut out: Vec<u32> = Vec::new();
    let cands = [
        s.pid.and_then(|p| u32::try_from(p).ok()),
        s.coredump
            .as_ref()
            .and_then(|m| m.pid)
            .and_then(|p| u32::try_from(p).ok()),
        from_name.filter(|_| s.pid.is_none()),
    ];
    for p in cands.into_iter().flatten() {
        if p > 0 && !out.contains(&p) {
            out.push(p);
        }
    }
    out
}

/// How strong one kind of evidence is: a launcher's report of that very pid first.
fn strength(says: &str) -> u8 {
    match says {
        "launcher-exit" => 0,
        "dataloader-worker" => 1,
        "rank-pid" => 2,
        _ => 3,
    }
}

/// Tie one core (read from `path`) to its process: `said` is every launcher line of the run,
/// `logs` the paths of its log inputs, `entries` the `coredumpctl info` entries given
/// (`coredumpctl_entries`). Sets `s.owner` and `s.coredumpctl`.
pub fn tie(
    path: &str,
    s: &mut CoreSummary,
    said: &[Said],
    logs: &[&str],
    entries: &[CoredumpInfo],
) {
    let pids = core_pids(path, s);
    let exe = s.exe.clone().or_else(|| s.execfn.clone());
    let same_exe = |e: &CoredumpInfo| match (&e.exe, &exe) {
        (Some(a), Some(b)) => a == b || Path::new(a).file_name() == Path::new(b).file_name(),
        _ => true,
    };
    s.coredumpctl = entries
        .iter()
        .find(|e| pids.contains(&e.pid) && same_exe(e))
        .cloned();
    let mut found: Vec<(OwnerEvidence, &'static str, Attribution, Option<String>)> = Vec::new();
    for x in said {
        let e = x.event;
        let ev = |says: &'static str| OwnerEvidence {
            path: x.path.to_string(),
            line: Some(e.line),
            text: e.text.clone(),
            says,
        };
        match &e.what {
            What::WorkerExit {
                pid: Some(p),
                rank,
                local_rank,
                code,
                signal,
                ..
            } if pids.contains(p) => {
                let mut who = e.who.clone();
                who.pid = Some(*p);
                who.rank = rank.or(who.rank);
                who.local_rank = local_rank.or(who.local_rank);
                let exit = match (code, signal) {
                    (Some(c), _) => Some(format!("exitcode {c}")),
                    (None, Some(sig)) => Some(sig.clone()),
                    _ => None,
                };
                found.push((ev("launcher-exit"), "rank", who, exit));
            }
            What::WorkerKilled { pid, signal } if pids.contains(pid) => {
                // The line is the owning rank's (its prefix or file say which); the pid is
                // its worker's.
                let mut who = e.who.clone();
                who.pid = Some(*pid);
                found.push((
                    ev("dataloader-worker"),
                    "dataloader-worker",
                    who,
                    Some(signal.clone()),
                ));
            }
            What::RankPid { rank, pid } if pids.contains(pid) => {
                let mut who = e.who.clone();
                who.rank = Some(*rank);
                who.pid = Some(*pid);
                found.push((ev("rank-pid"), "rank", who, None));
            }
            _ => {}
        }
    }
    // Where the core lies: in one rank's folder, or beside the logs of one rank only.
    let place = prefix::from_path(path);
    let dir = Path::new(path).parent();
    if place.rank.is_some() || place.local_rank.is_some() {
        found.push((
            OwnerEvidence {
                path: path.to_string(),
                line: None,
                text: format!(
                    "the core lies in {}",
                    dir.map(|d| d.display().to_string()).unwrap_or_default()
                ),
                says: "beside-log",
            },
            "rank",
            place,
            None,
        ));
    } else {
        let beside: Vec<(&str, Attribution)> = logs
            .iter()
            .filter(|l| Path::new(l).parent() == dir && **l != path)
            .map(|l| (*l, prefix::from_path(l)))
            .filter(|(_, a)| a.rank.is_some() || a.local_rank.is_some())
            .collect();
        let one_rank = beside
            .iter()
            .all(|(_, a)| (a.rank, a.local_rank) == (beside[0].1.rank, beside[0].1.local_rank));
        if let Some((log, a)) = beside.first().filter(|_| one_rank) {
            found.push((
                OwnerEvidence {
                    path: log.to_string(),
                    line: None,
                    text: format!("the core lies beside {log}"),
                    says: "beside-log",
                },
                "rank",
                a.clone(),
                None,
            ));
        }
    }
    found.sort_by_key(|(e, ..)| strength(e.says));
    let Some((_, role, ..)) = found.first() else {
        return;
    };
    let role = *role;
    let mut o = CoreOwner {
        role,
        who: Attribution::default(),
        exit: None,
        evidence: Vec::new(),
    };
    for (ev, _, who, exit) in found {
        // Weaker evidence that names another rank is left out, not mixed in.
        let differs = |a: Option<u32>, b: Option<u32>| a.is_some() && b.is_some() && a != b;
        if differs(o.who.rank, who.rank) || differs(o.who.local_rank, who.local_rank) {
            continue;
        }
        o.who.fill_from(who);
        o.exit = o.exit.or(exit);
        if !o.evidence.contains(&ev) {
            o.evidence.push(ev);
        }
    }
    // The owner is a process, not a moment: a time a line carried stays with that line.
    o.who.time = None;
    if o.who.pid.is_none() {
        o.who.pid = pids.first().copied();
    }
    s.owner = Some(o);
}

/// The `coredumpctl info` entries of the core-text inputs, from the facts `text` read: each
/// `core.pid` fact opens an entry, the `core.signal`, `core.time`, `core.args` and `core.exe`
/// facts after it (same file, before the next `core.pid`) fill it.
pub fn coredumpctl_entries(facts: &[Fact], text_inputs: &[&str]) -> Vec<CoredumpInfo> {
    let mut out = Vec::new();
    for input in text_inputs {
        let mut fs: Vec<&Fact> = facts.iter().filter(|f| f.path == *input).collect();
        fs.sort_by_key(|f| f.line);
        let mut cur: Option<CoredumpInfo> = None;
        for f in fs {
            let v = f.value.to_string();
            if f.name == "core.pid" {
                out.extend(cur.take());
                cur = v.parse().ok().map(|pid| CoredumpInfo {
                    pid,
                    path: f.path.clone(),
                    line: f.line,
                    ..CoredumpInfo::default()
                });
                continue;
            }
            let Some(e) = cur.as_mut() else { continue };
            match f.name.as_str() {
                "core.signal" => e.signal = e.signal.take().or(Some(v)),
                "core.time" => e.time = e.time.take().or(Some(v)),
                "core.args" => e.command_line = e.command_line.take().or(Some(v)),
                "core.exe" => e.exe = e.exe.take().or(Some(v)),
                _ => {}
            }
        }
        out.extend(cur);
    }
    out
}

impl CoreOwner {
    /// `rank 1 (local rank 1, host node7) pid 4242`, `DataLoader worker pid 542 of rank 0`.
    pub fn describe(&self) -> String {
        let pid = self
            .who
            .pid
            .map(|p| format!(" pid {p}"))
            .unwrap_or_default();
        let mut rank = match (self.who.rank, self.who.local_rank) {
            (Some(r), Some(l)) if r != l => format!("rank {r} (local rank {l}"),
            (Some(r), _) => format!("rank {r} ("),
            (None, Some(l)) => format!("local rank {l} ("),
            (None, None) => String::new(),
        };
        if let Some(h) = &self.who.host {
            if !rank.ends_with('(') {
                rank.push_str(", ");
            }
            rank.push_str(&format!("host {h}"));
        }
        let rank = rank.trim_end_matches(" (").to_string();
        let rank = if rank.contains('(') {
            format!("{rank})")
        } else {
            rank
        };
        match self.role {
            "dataloader-worker" if rank.is_empty() => format!("DataLoader worker{pid}"),
            "dataloader-worker" => format!("DataLoader worker{pid} of {rank}"),
            _ if rank.is_empty() => format!("process{pid}"),
            _ => format!("{rank}{pid}"),
        }
    }

    /// The `core.owner` fact, citing the strongest line (the core's own path when the tie is
    /// by where it lies).
    pub fn fact(&self, core_path: &str) -> Option<crate::model::Fact> {
        let ev = self.evidence.first()?;
        let mut f = crate::model::Fact::new("core.owner", self.describe());
        f.path = match ev.line {
            Some(_) => ev.path.clone(),
            None => core_path.to_string(),
        };
        f.line = ev.line;
        f.text = ev.text.clone();
        Some(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_core_is_known_by_its_notes_pid_systemds_and_its_file_name() {
        let mut s = CoreSummary {
            pid: Some(12),
            ..CoreSummary::default()
        };
        assert_eq!(core_pids("run/core.4242.gz", &s), [12]);
        let systemd =
            "coredump/core.python3.0.8c1f0c3c6f6c4a8e9d2b7a1e5f3c9d10.777.1700000000123456.zst";
        s.coredump =
            super::super::locate::parse_systemd_name(systemd.rsplit('/').next().unwrap_or(systemd));
        assert_eq!(core_pids(systemd, &s), [12, 777]);
        // `core.%e` of python3.12: the name's last number is no pid when the notes give one.
        s.coredump = None;
        assert_eq!(core_pids("run/core.python3.12", &s), [12]);
        s.pid = Some(4000);
        assert_eq!(core_pids("run/core.python3.12", &s), [4000]);
        s.pid = None;
        assert_eq!(core_pids("run/core.4242", &s), [4242]);
        assert!(core_pids("logs/core", &s).is_empty());
    }

    #[test]
    fn owners_read_as_people_say_them() {
        let o = |role, rank, local_rank, host: Option<&str>| CoreOwner {
            role,
            who: Attribution {
                rank,
                local_rank,
                host: host.map(str::to_string),
                pid: Some(4242),
                time: None,
            },
            exit: None,
            evidence: Vec::new(),
        };
        assert_eq!(
            o("rank", Some(1), Some(1), Some("node7")).describe(),
            "rank 1 (host node7) pid 4242"
        );
        assert_eq!(
            o("rank", Some(9), Some(1), None).describe(),
            "rank 9 (local rank 1) pid 4242"
        );
        assert_eq!(
            o("dataloader-worker", Some(0), None, None).describe(),
            "DataLoader worker pid 4242 of rank 0"
        );
        assert_eq!(
            o("dataloader-worker", None, None, None).describe(),
            "DataLoader worker pid 4242"
        );
    }
}
