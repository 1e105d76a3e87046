//! Runs that stop without an error line: a log whose output ends mid-run with the shell's
//! prompt back (the process vanished: a SIGKILL, most often the kernel's OOM killer), one the
//! user interrupted after it printed nothing more, one that printed nothing more while
//! `nvidia-smi` typed afterwards shows its GPUs held (alive and silent), one that ends repeating a failure warning
//! (stuck retrying it), one that ends in distributed start-up (the first collective never
//! completed), or one whose end holds stack dumps of its live processes (py-spy, faulthandler,
//! gdb: someone dumped a run that stopped printing), read for where each process stands: ranks
//! standing in different collectives, or some in one and some not, never meet; all in one
//! collective wait on its transport. Read from how each log stops (`sources::ending`); only
//! asked when nothing else says the run died. The second tier classifies these lines like any salient line; this
//! module adds what the ending itself says (its terms and fix). Returns data; never reads
//! files or formats output.

use super::ErrorLine;
use super::gated::Gated;
use crate::analyze::Analysis;
use crate::model::{Category, Text};
use crate::sources::ending::{EndLine, Stop};
use crate::sources::stackdump::Dump;

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
    /// Nothing more printed, while `nvidia-smi` typed afterwards shows the GPUs still held
    /// (busy, or their memory in use): the processes are alive and silent.
    HeldSilent,
    /// The same failure warning, over and over, to the end.
    Retrying,
    /// Stack dumps of two or more processes standing in different collectives (or some in
    /// one, some in none): their collective sequences diverged.
    RanksApart,
    /// Stack dumps whose processes all stand in the same collective (or one process's, in
    /// one): it never completed.
    InCollective,
    /// Stack dumps of a stuck run, none in a collective.
    DumpedElsewhere,
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
            // Processes alive on busy GPUs that print nothing wait in a collective that never
            // completes: its transport (peer-to-peer on PCIe cards, the wrong interface), or
            // a rank that never joined it.
            Kind::HeldSilent => &[(Category::NcclNetwork, 0.25), (Category::NcclTimeout, 0.2)],
            // Its tokens say what it retries.
            Kind::Retrying => &[],
            // One rank in a collective the others never reach: the mismatch itself; the
            // watchdog's timeout is what a user would see next.
            Kind::RanksApart => &[
                (Category::CollectiveMismatch, 0.4),
                (Category::NcclTimeout, 0.2),
            ],
            // Every dumped rank waits in the same collective: its transport never delivered
            // (broken peer-to-peer, a wrong interface), or a rank not dumped is elsewhere.
            Kind::InCollective => &[
                (Category::NcclNetwork, 0.3),
                (Category::NcclTimeout, 0.25),
                (Category::CollectiveMismatch, 0.15),
            ],
            // A main thread blocked outside any collective is most often waiting on the GPU
            // stream (`.item()`, a synchronize) behind a collective kernel that never ends.
            Kind::DumpedElsewhere => &[(Category::NcclTimeout, 0.2), (Category::Other, 0.15)],
        }
    }

    /// The term's name in a finding's score, in both languages; its English is the term's id.
    pub fn name(self) -> Text<&'static str> {
        match self {
            Kind::Vanished => Text {
                en: "ending: progress short of its total, then the shell prompt",
                zh: "结尾：进度没到总数，shell 提示符就回来了",
            },
            Kind::StalledStarting => Text {
                en: "ending: nothing after distributed start-up",
                zh: "结尾：分布式启动之后再无输出",
            },
            Kind::StalledTraining => Text {
                en: "ending: nothing after the last step until an interrupt",
                zh: "结尾：最后一步之后再无输出，直到被中断",
            },
            Kind::HeldSilent => Text {
                en: "ending: nothing more printed while nvidia-smi shows the GPUs held",
                zh: "结尾：之后再无输出，而 nvidia-smi 显示 GPU 仍被占用",
            },
            Kind::Retrying => Text {
                en: "ending: one failure warning repeated to the end",
                zh: "结尾：同一条失败警告一直重复到最后",
            },
            Kind::RanksApart => Text {
                en: "stack dumps: the ranks stand in different collectives",
                zh: "调用栈转储：各 rank 停在不同的集合通信里",
            },
            Kind::InCollective => Text {
                en: "stack dumps: the processes wait in one collective",
                zh: "调用栈转储：各进程都在等同一个集合通信",
            },
            Kind::DumpedElsewhere => Text {
                en: "stack dumps: the processes are stuck outside any collective",
                zh: "调用栈转储：进程卡在集合通信之外",
            },
        }
    }

    /// The score term's id: the name's English.
    pub fn id(self) -> &'static str {
        self.name().en
    }

    /// The fix for `cat` when this ending is what points at it (`{line}`: the line, quoted);
    /// `None` leaves the category's own advice.
    pub fn fix(self, cat: Category) -> Option<Text<&'static str>> {
        match (self, cat) {
            (Kind::Vanished, Category::HostOom) => Some(Text {
                en: "Look for the kernel's OOM killer (`dmesg -T | grep -i -E 'killed process|out of memory'`) and watch the process's resident memory across steps: if it grows step after step, a leak in the data pipeline is filling host RAM (update the framework or its dataloader, or use fewer workers); if it is flat, give the job more host memory. Why: the log stops mid-run with no error and the shell's prompt back (`{line}`), the mark of a SIGKILL, which the OOM killer sends without a word.",
                zh: "先查内核的 OOM killer（`dmesg -T | grep -i -E 'killed process|out of memory'`），并观察进程的常驻内存随步数的变化：如果一步步上涨，是数据管道在泄漏、占满主机内存（升级框架或它的 dataloader，或减少 worker）；如果平稳，就给任务更多主机内存。原因：日志在训练中途停下，没有任何报错，shell 提示符已经回来（`{line}`），这是 SIGKILL 的特征，而 OOM killer 发 SIGKILL 时什么也不会打印。",
            }),
            (Kind::StalledStarting, Category::NcclNetwork) => Some(Text {
                en: "Rerun with `NCCL_DEBUG=INFO` and pin NCCL to the network interface that carries the nodes' addresses (`NCCL_SOCKET_IFNAME=<nic>` on every node), or, on one node of consumer GPUs (GeForce/RTX) without peer-to-peer support, set `NCCL_P2P_DISABLE=1`. Why: the run printed nothing after distributed start-up (`{line}`): its first collective never completed, which is how NCCL's bootstrap over the wrong interface, or P2P on cards that lack it, hangs.",
                zh: "用 `NCCL_DEBUG=INFO` 重跑，并把 NCCL 固定到承载各节点地址的网卡上（每个节点设置 `NCCL_SOCKET_IFNAME=<网卡>`）；如果是单机多张不支持 P2P 的消费级显卡（GeForce/RTX），设置 `NCCL_P2P_DISABLE=1`。原因：分布式启动之后再无输出（`{line}`）：第一次集合通信一直没有完成，NCCL 走错网卡建连，或在不支持 P2P 的卡上用 P2P，都会这样卡住。",
            }),
            (Kind::StalledTraining, Category::NcclTimeout) => Some(Text {
                en: "While it hangs, dump every rank's stack (`py-spy dump --pid <PID>` on each) to find the rank that is not in the collective, and rerun with `TORCH_NCCL_DUMP_ON_TIMEOUT=1` and a finite `timeout` in `init_process_group` so the hang ends in a Flight Recorder dump. Why: the run stopped printing after its last step until it was interrupted (`{line}`).",
                zh: "在卡住时对每个 rank 抓调用栈（在各 rank 上 `py-spy dump --pid <PID>`），找出没有进入集合通信的那个 rank；重跑时设置 `TORCH_NCCL_DUMP_ON_TIMEOUT=1`，并在 `init_process_group` 里给一个有限的 `timeout`，让卡住以 Flight Recorder 转储结束。原因：最后一步之后再无输出，直到被手动中断（`{line}`）。",
            }),
            (Kind::HeldSilent, Category::NcclNetwork) => Some(Text {
                en: "Dump every rank's stack while it hangs (`py-spy dump --pid <PID>`): if all wait in the same collective, test the GPUs' transport by rerunning with `NCCL_P2P_DISABLE=1` (if it then runs, peer-to-peer between the cards is broken: check `nvidia-smi topo -m`, PCIe ACS or the IOMMU in the BIOS) and, across nodes, pin `NCCL_SOCKET_IFNAME=<nic>`. Why: the log stops (`{line}`) while nvidia-smi, typed afterwards, shows the GPUs still held: the processes are alive and print nothing, the mark of a collective that never completes.",
                zh: "在卡住时抓每个 rank 的调用栈（`py-spy dump --pid <PID>`）：如果都在等同一个集合通信，就用 `NCCL_P2P_DISABLE=1` 重跑来检查 GPU 之间的通信通道（如果这样能跑，说明卡间 P2P 坏了：查看 `nvidia-smi topo -m`、BIOS 里的 PCIe ACS 或 IOMMU）；多机时用 `NCCL_SOCKET_IFNAME=<网卡>` 固定网卡。原因：日志停在（`{line}`），而之后运行的 nvidia-smi 显示 GPU 仍被占用：进程还活着却不再输出，这是一次集合通信一直没有完成的特征。",
            }),
            (Kind::RanksApart, Category::CollectiveMismatch) => Some(Text {
                en: "Make every rank call the same collectives in the same order: find the collective in the dump (`{line}`) and the condition under which only some ranks reach it (a branch on the rank, a path or object that exists on rank 0 alone, a callback, checkpoint or logging step that calls a broadcast or barrier on some ranks only), and take it out of the branch or run it on every rank. Why: the stack dumps show the ranks standing in different places, one in this collective and another elsewhere, so neither can ever complete.",
                zh: "让每个 rank 以相同的顺序调用相同的集合通信：在转储里找到这个集合通信（`{line}`），以及只有部分 rank 会走到它的条件（按 rank 分支、只在 rank 0 上存在的路径或对象、只在部分 rank 上调用 broadcast 或 barrier 的回调、保存 checkpoint 或记录日志的步骤），把它移出分支或让每个 rank 都执行。原因：调用栈转储显示各 rank 停在不同的位置，一个在这个集合通信里，另一个在别处，谁都无法完成。",
            }),
            (Kind::InCollective, Category::NcclNetwork) => Some(Text {
                en: "Test the GPUs' transport: rerun with `NCCL_DEBUG=INFO` and `NCCL_P2P_DISABLE=1` on one host (if it then runs, peer-to-peer between the GPUs is broken: check `nvidia-smi topo -m`, PCIe ACS or the IOMMU in the BIOS, or the driver), and across nodes pin `NCCL_SOCKET_IFNAME=<nic>` to the interface that carries the nodes' addresses. Why: the stack dump shows the process waiting inside a collective (`{line}`) that never completed, with nothing printed.",
                zh: "检查 GPU 之间的通信通道：在单机上用 `NCCL_DEBUG=INFO` 和 `NCCL_P2P_DISABLE=1` 重跑（如果这样能跑，说明 GPU 之间的 P2P 坏了：查看 `nvidia-smi topo -m`、BIOS 里的 PCIe ACS 或 IOMMU，或者驱动），多机时用 `NCCL_SOCKET_IFNAME=<网卡>` 把 NCCL 固定到承载节点地址的网卡上。原因：调用栈转储显示进程在一个一直没有完成的集合通信里等待（`{line}`），没有任何输出。",
            }),
            (
                Kind::RanksApart | Kind::InCollective | Kind::DumpedElsewhere,
                Category::NcclTimeout,
            ) => Some(Text {
                en: "Dump the stack of every rank while it hangs (`py-spy dump --pid <PID>` on each), not only some, to find the rank that is not in the collective, and rerun with `TORCH_NCCL_DUMP_ON_TIMEOUT=1` and a finite `timeout` in `init_process_group` so the hang ends in a Flight Recorder dump that names it. Why: the stack dump shows a process stuck (`{line}`) with nothing printed: a collective that never completed.",
                zh: "在卡住时对每个 rank 都抓调用栈（在每个 rank 上 `py-spy dump --pid <PID>`），而不只是部分 rank，找出没有进入集合通信的那个 rank；重跑时设置 `TORCH_NCCL_DUMP_ON_TIMEOUT=1`，并在 `init_process_group` 里给一个有限的 `timeout`，让卡住以指明它的 Flight Recorder 转储结束。原因：调用栈转储显示进程卡住（`{line}`），没有任何输出：一个集合通信一直没有完成。",
            }),
            _ => None,
        }
    }
}

/// A line of distributed start-up: a communicator being made, a rendezvous or store barrier.
/// Compiled only for a line holding one of its literals (`gated`), as `IN_TRAINING`.
pub(super) static STARTING_UP: Gated = Gated::new(
    concat!(
        // NCCL's INFO chatter is printed while communicators are made.
        r"(?i:init nccl context|ncclCommInit|NCCL INFO ",
        r"|Initializing (?:torch\.distributed|TorchBackend)|init_process_group|store.based.barrier",
        r"|Rendezvous'ing|waiting for (?:all )?(?:peers|ranks|workers|nodes))"
    ),
    &[
        ("init nccl context", true),
        ("ncclcomminit", true),
        ("nccl info ", true),
        ("initializing torch", true),
        ("init_process_group", true),
        ("barrier", true),
        ("rendezvous'ing", true),
        ("waiting for ", true),
    ],
);

fn starting_up(text: &str) -> bool {
    STARTING_UP.is_match(text)
}

/// A line from inside the training loop (a step, a forward or backward pass), not from
/// setting it up.
pub(super) static IN_TRAINING: Gated = Gated::new(
    r"(?i)\b(?:step|iter(?:ation)?|forward|backward)\b",
    &[
        ("step", true),
        ("iter", true),
        ("forward", true),
        ("backward", true),
    ],
);

fn in_training(text: &str) -> bool {
    IN_TRAINING.is_match(text)
}

/// How a log's stack dumps say the run stood, and the frame to cite: ranks apart when two
/// processes stand differently (cited at a collective's frame), all in one collective, or
/// stuck outside any. `None` without a dump.
fn from_dumps(dumps: &[Dump]) -> Option<(Kind, &EndLine)> {
    let first = dumps.first()?;
    let held = dumps.iter().find(|d| d.stands.is_some());
    let kind = if dumps.iter().any(|d| d.stands != first.stands) {
        Kind::RanksApart
    } else if held.is_some() {
        Kind::InCollective
    } else {
        Kind::DumpedElsewhere
    };
    Some((kind, &held.unwrap_or(first).at))
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
        // Stack dumps of its processes say where the run stood, whatever came after them.
        if let Some((kind, at)) = from_dumps(&e.dumps) {
            out.push(Sign {
                line: ErrorLine {
                    path: input.path.clone(),
                    line: at.line,
                    text: at.text.clone(),
                },
                kind,
            });
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
            (Stop::GpusHeld, _) => Some(Kind::HeldSilent),
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
