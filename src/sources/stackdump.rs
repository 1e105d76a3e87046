//! Stack dumps of live processes at a log's end: `py-spy dump`, Python's `faulthandler`
//! (`dump_traceback`, `dump_traceback_later`'s `Timeout (…)!`) and gdb's `thread apply all bt`.
//! A user dumps the stacks of a run that stopped printing, so each dump is one process as it
//! stood while stuck. This reads the dump formats only: per process, its frames and the
//! collective it stands in (the innermost frame of a collective operation of a communication
//! library: `torch.distributed`, DeepSpeed's comm, Horovod, Paddle's, or a native NCCL/Gloo
//! frame), and where that collective was called from (the first frame outside the library).
//! It reads the lines `ending` already holds, never the file; it decides nothing
//! (`correlate::stall` does).

use super::ending::EndLine;
use super::prefix;
use regex::Regex;
use std::sync::OnceLock;

/// Where one process stands: the collective operation and the call site outside the
/// communication library (`function (file)`, no line number), when a frame names one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stand {
    pub op: String,
    pub site: Option<String>,
}

/// One process's dump.
#[derive(Debug, Clone, PartialEq)]
pub struct Dump {
    /// The line cited for it: the collective's frame, or else its first frame.
    pub at: EndLine,
    /// The collective it stands in, if any of its threads is in one.
    pub stands: Option<Stand>,
    /// The rank its lines are prefixed with (`[rank1]:`), if they are.
    pub rank: Option<u32>,
}

/// A frame as read: function and file (a Python file, or a native library).
struct Frame {
    func: String,
    file: String,
    back: u64,
    text: String,
}

/// A process being read: its threads' frames, innermost first.
#[derive(Default)]
struct Proc {
    threads: Vec<Vec<Frame>>,
    main_seen: bool,
    rank: Option<u32>,
}

/// Collective operations, as the libraries name their Python functions and NCCL its entry
/// points (case-insensitive, `nccl` prefix and `_` taken out before the lookup).
const OPS: &[&str] = &[
    "allreduce",
    "allgather",
    "allgatherintotensor",
    "allgatherbase",
    "allgatherobject",
    "broadcast",
    "broadcastobjectlist",
    "reduce",
    "reducescatter",
    "reducescattertensor",
    "reducescatterbase",
    "barrier",
    "monitoredbarrier",
    "storebasedbarrier",
    "alltoall",
    "alltoallsingle",
    "gather",
    "gatherobject",
    "scatter",
    "scatterobjectlist",
    "send",
    "recv",
    "isend",
    "irecv",
    "groupend",
];

/// A file of a communication library (Python module or native library).
fn comm_file(file: &str) -> bool {
    [
        "torch/distributed/",
        "torch\\distributed\\",
        "distributed_c10d",
        "c10d_logger",
        "deepspeed/comm/",
        "horovod/",
        "paddle/distributed/",
        "libnccl",
        "librccl",
        "libgloo",
        "ProcessGroupNCCL",
        "ProcessGroupGloo",
    ]
    .iter()
    .any(|m| file.contains(m))
}

/// The operation a frame runs, if it is a collective of a communication library. A native
/// NCCL frame (its library, or a function NCCL names `nccl…`) counts as NCCL's, whatever it is
/// (a proxy thread in `socketRecv` is inside NCCL's transport).
fn op_of(f: &Frame) -> Option<String> {
    let name = f.func.rsplit(['.', ':']).next().unwrap_or(&f.func);
    let key: String = name
        .trim_start_matches("nccl")
        .chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    if comm_file(&f.file) && OPS.contains(&key.as_str()) {
        return Some(name.trim_start_matches('_').to_string());
    }
    let native = f.file.contains("libnccl") || f.file.contains("librccl");
    (native || (name.starts_with("nccl") && OPS.contains(&key.as_str()))).then(|| name.to_string())
}

/// The process's stand: the first thread (in dump order) with a collective frame, its
/// innermost one, and the first caller outside the library.
fn stand_of(p: &Proc) -> Option<(Stand, &Frame)> {
    p.threads.iter().find_map(|t| {
        let i = t.iter().position(|f| op_of(f).is_some())?;
        let site = t[i + 1..]
            .iter()
            .find(|f| !comm_file(&f.file))
            .map(|f| format!("{} ({})", f.func, f.file));
        Some((
            Stand {
                op: op_of(&t[i])?,
                site,
            },
            &t[i],
        ))
    })
}

fn regexes() -> &'static [Regex; 5] {
    static RE: OnceLock<[Regex; 5]> = OnceLock::new();
    RE.get_or_init(|| {
        let r = |s: &str| Regex::new(s).expect("stack dump regex");
        [
            // py-spy's thread header: `Thread 53211 (active): "MainThread"`, `Thread 0x7F…
            // (idle+gil)`.
            r(r#"^Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:active|idle)[^)]*\)(?:: "([^"]*)")?\s*$"#),
            // faulthandler's: `Current thread 0x00007f… (most recent call first):`.
            r(r"^(Current thread|Thread) 0x[0-9A-Fa-f]+ \(most recent call first\):\s*$"),
            // gdb's: `Thread 7 (Thread 0x7f2b… (LWP 21931)):`, with a name after it or not.
            r(r"^Thread \d+ \(Thread 0x[0-9A-Fa-f]+ \(LWP \d+\)\)"),
            // A frame: py-spy `broadcast (torch/distributed/distributed_c10d.py:863)`,
            // faulthandler `File "x.py", line 10 in main`, gdb `#2  0x… in socketRecv () from
            // /usr/lib/libnccl.so.2`.
            r(concat!(
                r#"^(?:File "(?P<ff>[^"]+)", line \d+ in (?P<fn>\S+)"#,
                r"|#\d+\s+(?:0x[0-9A-Fa-f]+ in )?(?P<gn>[^\s(]+)(?:\([^)]*\))? \(.*?\)(?: (?:from|at) (?P<gf>\S+))?",
                r"|(?P<pn>[\w<>.$-]+) \((?P<pf>[^()]+?)(?::[\d.]+)?\s*\))\s*$"
            )),
            // py-spy's process header.
            r(r"^Process \d+: "),
        ]
    })
}

/// Does the end of a log hold a stack dump? Cheap words first: most logs hold none.
fn may_hold(lines: &[&str]) -> bool {
    lines.iter().any(|l| {
        // `Thread …` (py-spy, gdb) or faulthandler's `Current thread …`.
        l.contains("hread ")
            && (l.contains("(active")
                || l.contains("(idle")
                || l.contains("most recent call first")
                || l.contains("(LWP "))
    })
}

/// The processes dumped in a log's end (`rev`: its lines, last first, as `ending` holds
/// them), oldest first. Empty when it holds no dump.
pub fn read(rev: &[&str], prompt: impl Fn(&str) -> bool) -> Vec<Dump> {
    if !may_hold(rev) {
        return Vec::new();
    }
    let [pyspy, fault, gdb, frame, process] = regexes();
    let mut out = Vec::new();
    let mut cur = Proc::default();
    // In a thread (its frames follow), not between dumps.
    let mut in_thread = false;
    fn finish(p: &mut Proc, out: &mut Vec<Dump>) {
        let p = std::mem::take(p);
        let first = p.threads.iter().find_map(|t| t.first());
        let Some(first) = first else { return };
        let (stands, at) = match stand_of(&p) {
            Some((s, f)) => (Some(s), f),
            None => (None, first),
        };
        out.push(Dump {
            at: EndLine {
                back: at.back,
                line: 0,
                text: at.text.clone(),
            },
            stands,
            rank: p.rank,
        });
    }
    for (back, raw) in rev.iter().enumerate().rev() {
        let (attr, at) = prefix::peel(raw);
        let t = raw[at.min(raw.len())..].trim();
        let new_rank = attr.rank.is_some() && attr.rank != cur.rank && !cur.threads.is_empty();
        if prompt(raw.trim()) || process.is_match(t) || new_rank {
            finish(&mut cur, &mut out);
            in_thread = false;
        }
        let main = pyspy
            .captures(t)
            .map(|c| c.get(1).is_some_and(|m| m.as_str() == "MainThread"))
            .or_else(|| fault.captures(t).map(|c| &c[1] == "Current thread"))
            .or_else(|| gdb.is_match(t).then_some(false));
        if let Some(main) = main {
            if main && cur.main_seen {
                finish(&mut cur, &mut out);
            }
            cur.main_seen |= main;
            cur.rank = cur.rank.or(attr.rank);
            cur.threads.push(Vec::new());
            in_thread = true;
            continue;
        }
        if !in_thread || t.is_empty() {
            continue;
        }
        match frame.captures(t) {
            Some(c) => {
                let pick = |a: &str, b: &str, d: &str| {
                    c.name(a)
                        .or(c.name(b))
                        .or(c.name(d))
                        .map_or("", |m| m.as_str())
                };
                let f = Frame {
                    func: pick("fn", "gn", "pn").to_string(),
                    file: pick("ff", "gf", "pf").to_string(),
                    back: back as u64,
                    text: t.chars().take(300).collect(),
                };
                if let Some(th) = cur.threads.last_mut() {
                    th.push(f);
                }
            }
            // Anything else (py-spy's `Python v3.8` header, a locals line) ends no dump;
            // prose does end the thread.
            None if t.starts_with("Python v") || raw.starts_with("        ") => {}
            None => in_thread = false,
        }
    }
    finish(&mut cur, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dumps(text: &str) -> Vec<Dump> {
        let rev: Vec<&str> = text.lines().rev().collect();
        read(&rev, |t| t.starts_with("$ "))
    }

    #[test]
    fn two_py_spy_dumps_of_ranks_in_different_places() {
        let d = dumps(concat!(
            "step 40 loss 1.1\n",
            "$ py-spy dump --pid 700\n",
            "Process 700: python fit.py\n",
            "Python v3.10.4 (/usr/bin/python3)\n",
            "\n",
            "Thread 700 (active): \"MainThread\"\n",
            "    barrier (torch/distributed/distributed_c10d.py:3401)\n",
            "    wrapper (torch/distributed/c10d_logger.py:75)\n",
            "    export_eval (trainer/hooks.py:52)\n",
            "    fit (trainer/loop.py:310)\n",
            "Thread 0x7F11AA (idle): \"Thread-3 (pin_memory)\"\n",
            "    wait (threading.py:324)\n",
            "$ py-spy dump --pid 701\n",
            "Process 701: python fit.py\n",
            "Thread 701 (active): \"MainThread\"\n",
            "    _wait_for_data (dataset/stream.py:88)\n",
            "    fit (trainer/loop.py:301)\n",
        ));
        assert_eq!(d.len(), 2, "{d:?}");
        let s = d[0].stands.as_ref().unwrap();
        assert_eq!(s.op, "barrier");
        assert_eq!(s.site.as_deref(), Some("export_eval (trainer/hooks.py)"));
        assert!(d[0].at.text.starts_with("barrier ("));
        assert_eq!(d[0].at.back, 10);
        assert_eq!(d[1].stands, None);
        assert!(d[1].at.text.starts_with("_wait_for_data"));
    }

    #[test]
    fn faulthandler_dumps_per_rank_and_gdb_in_nccl() {
        let d = dumps(concat!(
            "Timeout (0:20:00)!\n",
            "[rank0]:Current thread 0x00007f00aa (most recent call first):\n",
            "[rank0]:  File \"/opt/torch/distributed/distributed_c10d.py\", line 2050 in all_reduce\n",
            "[rank0]:  File \"/srv/job/train.py\", line 90 in step\n",
            "[rank1]:Current thread 0x00007f00bb (most recent call first):\n",
            "[rank1]:  File \"/opt/torch/distributed/distributed_c10d.py\", line 2050 in all_reduce\n",
            "[rank1]:  File \"/srv/job/train.py\", line 90 in step\n",
        ));
        assert_eq!(d.len(), 2, "{d:?}");
        assert_eq!(d[0].rank, Some(0));
        assert_eq!(d[1].rank, Some(1));
        assert_eq!(d[0].stands, d[1].stands);
        assert_eq!(d[0].stands.as_ref().unwrap().op, "all_reduce");
        let g = dumps(concat!(
            "Thread 4 (Thread 0x7f00cc (LWP 31)):\n",
            "#0  0x00007f00 in poll () from /lib/x86_64-linux-gnu/libc.so.6\n",
            "#1  0x00007f01 in ncclProxyProgress(void*) () from /opt/nccl/lib/libnccl.so.2\n",
            "#2  0x00007f02 in start_thread () from /lib/x86_64-linux-gnu/libc.so.6\n",
        ));
        assert_eq!(g.len(), 1);
        assert_eq!(g[0].stands.as_ref().unwrap().op, "ncclProxyProgress");
    }

    #[test]
    fn a_traceback_and_thread_prose_are_no_dump() {
        for text in [
            "Traceback (most recent call last):\n  File \"t.py\", line 3 in main\nValueError: x\n",
            "Thread 3 started (active workers: 4)\n    loading shard (data/a.bin)\n",
            "INFO Thread pool idle (idle=8)\nstep 3 loss 1.0\n",
        ] {
            assert!(dumps(text).is_empty(), "{text:?}");
        }
    }
}
