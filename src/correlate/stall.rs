//! Runs that stop without an error line: a log whose output ends mid-run with the shell's
//! prompt back (the process vanished: a SIGKILL, most often the kernel's OOM killer), one the
//! user interrupted after it printed nothing more, one that ends repeating a failure warning
//! (stuck retrying it), or one that ends in distributed start-up (the first collective never
//! completed). Read from how each log stops (`sources::ending`); only asked when nothing else
//! says the run died. The second tier classifies these lines like any salient line; this
//! module adds what the ending itself says (its terms and fix). Returns data; never reads
//! files or formats output.

use super::ErrorLine;
use crate::analyze::Analysis;
use crate::model::Category;
use crate::sources::ending::Stop;

/// How a run stopped without an error line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Progress short of its total, then the shell's prompt: the process was gone.
    Vanished,
    /// No progress after the last line until the user interrupted it, or the log ends in
    /// distributed start-up.
    StalledStarting,
    /// Progress (or a line from inside the training loop), then nothing more until an
    /// interrupt.
    StalledTraining,
    /// The same failure warning, over and over, to the end.
    Retrying,
}

/// One line that says the run stopped, and how.
#[derive(Debug, Clone)]
pub struct Sign {
    pub line: ErrorLine,
    pub kind: Kind,
}

impl Kind {
    /// The ending's own weights, when its line holds no token of its own: what usually
    /// stops a run this way, with nothing printed.
    pub fn weights(self) -> &'static [(Category, f64)] {
        match self {
            // The OOM killer's SIGKILL leaves nothing in the program's own log.
            Kind::Vanished => &[
                (Category::HostOom, 0.35),
                (Category::PreemptedOrTimeLimit, 0.15),
            ],
            // A hang before the first step: NCCL's bootstrap or transport (a wrong interface
            // between nodes, peer-to-peer on cards without it).
            Kind::StalledStarting => &[(Category::NcclNetwork, 0.3), (Category::NcclTimeout, 0.15)],
            Kind::StalledTraining => &[(Category::NcclTimeout, 0.3), (Category::NcclNetwork, 0.15)],
            // Its tokens say what it retries.
            Kind::Retrying => &[],
        }
    }

    /// The term's name in a finding's score.
    pub fn id(self) -> &'static str {
        match self {
            Kind::Vanished => "ending: progress short of its total, then the shell prompt",
            Kind::StalledStarting => "ending: nothing after distributed start-up",
            Kind::StalledTraining => "ending: nothing after the last step until an interrupt",
            Kind::Retrying => "ending: one failure warning repeated to the end",
        }
    }

    /// `id` in Chinese.
    pub fn id_zh(self) -> &'static str {
        match self {
            Kind::Vanished => "结尾：进度没到总数，shell 提示符就回来了",
            Kind::StalledStarting => "结尾：分布式启动之后再无输出",
            Kind::StalledTraining => "结尾：最后一步之后再无输出，直到被中断",
            Kind::Retrying => "结尾：同一条失败警告一直重复到最后",
        }
    }

    /// The fix for `cat` when this ending is what points at it, in English and Chinese
    /// (`{line}`: the line, quoted); `None` leaves the category's own advice.
    pub fn fix(self, cat: Category) -> Option<(&'static str, &'static str)> {
        match (self, cat) {
            (Kind::Vanished, Category::HostOom) => Some((
                "Look for the kernel's OOM killer (`dmesg -T | grep -i -E 'killed process|out of memory'`) and watch the process's resident memory across steps: if it grows step after step, a leak in the data pipeline is filling host RAM (update the framework or its dataloader, or use fewer workers); if it is flat, give the job more host memory. Why: the log stops mid-run with no error and the shell's prompt back (`{line}`), the mark of a SIGKILL, which the OOM killer sends without a word.",
                "先查内核的 OOM killer（`dmesg -T | grep -i -E 'killed process|out of memory'`），并观察进程的常驻内存随步数的变化：如果一步步上涨，是数据管道在泄漏、占满主机内存（升级框架或它的 dataloader，或减少 worker）；如果平稳，就给任务更多主机内存。原因：日志在训练中途停下，没有任何报错，shell 提示符已经回来（`{line}`），这是 SIGKILL 的特征，而 OOM killer 发 SIGKILL 时什么也不会打印。",
            )),
            (Kind::StalledStarting, Category::NcclNetwork) => Some((
                "Rerun with `NCCL_DEBUG=INFO` and pin NCCL to the network interface that carries the nodes' addresses (`NCCL_SOCKET_IFNAME=<nic>` on every node), or, on one node of consumer GPUs (GeForce/RTX) without peer-to-peer support, set `NCCL_P2P_DISABLE=1`. Why: the run printed nothing after distributed start-up (`{line}`): its first collective never completed, which is how NCCL's bootstrap over the wrong interface, or P2P on cards that lack it, hangs.",
                "用 `NCCL_DEBUG=INFO` 重跑，并把 NCCL 固定到承载各节点地址的网卡上（每个节点设置 `NCCL_SOCKET_IFNAME=<网卡>`）；如果是单机多张不支持 P2P 的消费级显卡（GeForce/RTX），设置 `NCCL_P2P_DISABLE=1`。原因：分布式启动之后再无输出（`{line}`）：第一次集合通信一直没有完成，NCCL 走错网卡建连，或在不支持 P2P 的卡上用 P2P，都会这样卡住。",
            )),
            (Kind::StalledTraining, Category::NcclTimeout) => Some((
                "While it hangs, dump every rank's stack (`py-spy dump --pid <PID>` on each) to find the rank that is not in the collective, and rerun with `TORCH_NCCL_DUMP_ON_TIMEOUT=1` and a finite `timeout` in `init_process_group` so the hang ends in a Flight Recorder dump. Why: the run stopped printing after its last step until it was interrupted (`{line}`).",
                "在卡住时对每个 rank 抓调用栈（在各 rank 上 `py-spy dump --pid <PID>`），找出没有进入集合通信的那个 rank；重跑时设置 `TORCH_NCCL_DUMP_ON_TIMEOUT=1`，并在 `init_process_group` 里给一个有限的 `timeout`，让卡住以 Flight Recorder 转储结束。原因：最后一步之后再无输出，直到被手动中断（`{line}`）。",
            )),
            _ => None,
        }
    }
}

/// A line of distributed start-up: a communicator being made, a rendezvous or store barrier.
fn starting_up(text: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(concat!(
            // NCCL's INFO chatter is printed while communicators are made.
            r"(?i:init nccl context|ncclCommInit|NCCL INFO ",
            r"|Initializing (?:torch\.distributed|TorchBackend)|init_process_group|store.based.barrier",
            r"|Rendezvous'ing|waiting for (?:all )?(?:peers|ranks|workers|nodes))"
        ))
        .expect("start-up regex")
    })
    .is_match(text)
}

/// A line from inside the training loop (a step, a forward or backward pass), not from
/// setting it up.
fn in_training(text: &str) -> bool {
    static RE: std::sync::OnceLock<regex::Regex> = std::sync::OnceLock::new();
    RE.get_or_init(|| {
        regex::Regex::new(r"(?i)\b(?:step|iter(?:ation)?|forward|backward)\b")
            .expect("training-line regex")
    })
    .is_match(text)
}

/// The lines that say the run stopped without an error line, one per log at most. Empty
/// when a log shows a clean end or the process exited 0, or when there is no such stop.
pub fn signs(a: &Analysis) -> Vec<Sign> {
    if super::verdict::exited_cleanly(a) {
        return Vec::new();
    }
    let table = crate::tokens::table();
    let mut out = Vec::new();
    for (i, e) in &a.endings {
        let Some(input) = a.inputs.get(*i) else {
            continue;
        };
        if input.phase == crate::model::Phase::Before
            || !input.kind.is_scanned()
            || a.clean_end.iter().any(|(ci, _)| ci == i)
        {
            continue;
        }
        let Some(last) = &e.last else { continue };
        // A bar that finished says its phase ended, the run only when nothing came after it
        // (a dataset's preprocessing bar at 100 %, then the hang).
        let short = e
            .progress
            .as_ref()
            .filter(|(p, s)| *s || p.back == last.back)
            .map(|(_, s)| *s);
        let kind = match (e.stop, short) {
            // A finished bar, or counters at their totals: the run reached its end.
            (_, Some(false)) => None,
            (Stop::Prompt, Some(true)) => Some(Kind::Vanished),
            (Stop::Interrupted, Some(true)) => Some(Kind::StalledTraining),
            (Stop::Interrupted, None) if in_training(&last.text) => Some(Kind::StalledTraining),
            (Stop::Interrupted, None) => Some(Kind::StalledStarting),
            _ if e.repeats >= 3 && table.fatal(&last.text) => Some(Kind::Retrying),
            (_, None) if starting_up(&last.text) => Some(Kind::StalledStarting),
            _ => None,
        };
        let Some(kind) = kind else { continue };
        // A vanished run is cited at its last progress line (where it was), the rest at the
        // last line it printed.
        let at = match (kind, &e.progress) {
            (Kind::Vanished, Some((p, _))) => p,
            _ => last,
        };
        out.push(Sign {
            line: ErrorLine {
                path: input.path.clone(),
                line: at.line,
                text: at.text.clone(),
            },
            kind,
        });
    }
    out
}
