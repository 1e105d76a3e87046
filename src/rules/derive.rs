//! Derived values for fix templates: numbers computed from the run's own facts and the
//! captures of a rule's hits (a `--shm-size` from the observed peak and the host's memory;
//! how far a batch must shrink from a CUDA OOM message). Pure functions of their inputs;
//! the rule loader checks template variables against `DERIVED`. A value is a `Text` in every
//! report language at once, so a Chinese fix carries the same numbers and a value cannot
//! exist in one language only; the template being rendered picks its language.

use crate::fact_names as names;
use crate::facts::{FactSet, Unit};
use crate::model::{Text, text};

/// A derived variable: its name, unit and meaning, and the function that computes it.
pub struct Derived {
    pub name: &'static str,
    pub unit: Unit,
    pub doc: &'static str,
    /// `None` when the finding lacks what the value needs (the template falls back).
    pub compute: fn(&DeriveCtx) -> Option<Text>,
}

/// Every derived variable, with its function: one table, so a name cannot lack a function.
/// Sorted; a test keeps it so.
pub static DERIVED: &[Derived] = &[
    Derived {
        name: "derive.assert_hint",
        unit: Unit::Text,
        doc: "what a device-side assertion's condition means (embedding index, class label, gather index)",
        compute: assert_hint,
    },
    Derived {
        name: "derive.attention_backend",
        unit: Unit::Text,
        doc: "only when the faulting kernel's traceback passes through an attention backend an engine or model library picked at start-up (vLLM, SGLang, transformers' FlashAttention integration): switch the backend, or update the kernel's package",
        compute: attention_backend,
    },
    Derived {
        name: "derive.batch_plan",
        unit: Unit::Text,
        doc: "consistent DeepSpeed batch settings from the assertion's train/micro/accumulation/world figures",
        compute: batch_plan,
    },
    Derived {
        name: "derive.c10d_static_plan",
        unit: Unit::Text,
        doc: "only when the launch used the c10d rendezvous backend (the confirmation `rendezvous-c10d-backend`'s capture `rdzv_c10d`): the static rendezvous with an address every node reaches",
        compute: c10d_static_plan,
    },
    Derived {
        name: "derive.collate_allocation",
        unit: Unit::Text,
        doc: "only when a host allocation failed inside the DataLoader's collation (its traceback's frames): the collating function",
        compute: |c| collate_allocation(c).map(Text::plain),
    },
    Derived {
        name: "derive.colocated_rollout",
        unit: Unit::Text,
        doc: "only when the job's own vLLM engine shares the cards (its `gpu_memory_utilization` printed or passed): lower that share, with a value from the run's",
        compute: colocated_rollout,
    },
    Derived {
        name: "derive.cpu_offload",
        unit: Unit::Text,
        doc: "where a host-OOM run's log shows parameters or optimizer states offloaded to CPU memory (a confirming line's text: `offload_params=True`, `enable_cpu_offload: true`, `offload_optimizer: true`)",
        compute: |c| cpu_offload(c).map(Text::plain),
    },
    Derived {
        name: "derive.crash_package",
        unit: Unit::Text,
        doc: "the installed Python package whose bundled native library holds the crashing pc (`site-packages/cv2/.libs/…`), from a core or a pasted gdb backtrace",
        compute: crash_package,
    },
    Derived {
        name: "derive.crash_release",
        unit: Unit::Text,
        doc: "only when the run's own package listing (a `pip list` row, a `pip freeze` pin, merged in by a confirmation) shows a release `CRASHING_RELEASES` lists as crashing the process upstream: pin the release that does not",
        compute: crash_release,
    },
    Derived {
        name: "derive.crashing_extension",
        unit: Unit::Text,
        doc: "the installed package whose import the crash's Python stack is in (a compiled extension built for another torch or CUDA)",
        compute: crashing_extension,
    },
    Derived {
        name: "derive.crashing_framework",
        unit: Unit::Text,
        doc: "as derive.crashing_extension, when that package is another framework with a native runtime of its own (TensorFlow, JAX, Paddle, MXNet, ONNX Runtime, TensorRT): a load-order clash with torch, not a build for another torch",
        compute: crashing_framework,
    },
    Derived {
        name: "derive.data_parallel",
        unit: Unit::Text,
        doc: "only when the failing traceback passes through `torch.nn.DataParallel` (one process driving several GPUs): launch one process per GPU",
        compute: data_parallel,
    },
    Derived {
        name: "derive.disk_full_plan",
        unit: Unit::Text,
        doc: "which path or mount filled up and how big it is, from the error and a df row",
        compute: disk_full_plan,
    },
    Derived {
        name: "derive.eval_off_plan",
        unit: Unit::Text,
        doc: "only when `load_best_model_at_end` found evaluation off: turn it on (under `eval_strategy` when the command line used the old `--evaluation_strategy`) or drop the best-model reload",
        compute: eval_off_plan,
    },
    Derived {
        name: "derive.firewall_plan",
        unit: Unit::Text,
        doc: "only when a host firewall's state (`firewall-cmd --state`: running, `ufw status`: active) is in the same run as a failed socket connect: open the ports between the nodes",
        compute: firewall_plan,
    },
    Derived {
        name: "derive.fused_attention",
        unit: Unit::Text,
        doc: "where a NaN run's log names the fused scaled-dot-product attention path (a confirming line's text: `attn_implementation` set to `sdpa`, `cudnn_sdp_enabled` True)",
        compute: |c| fused_attention(c).map(Text::plain),
    },
    Derived {
        name: "derive.gpu_memory_climb",
        unit: Unit::Text,
        doc: "only for a GPU OOM in a run whose sampled GPU memory climbed through the whole run (a fact of the samples), outside a load: find what is kept across steps",
        compute: gpu_memory_climb,
    },
    Derived {
        name: "derive.gpu_oom_foreign",
        unit: Unit::Text,
        doc: "only when PyTorch holds under half the card: how much another process holds",
        compute: gpu_oom_foreign,
    },
    Derived {
        name: "derive.gpu_oom_phase",
        unit: Unit::Text,
        doc: "the step for a CUDA OOM whose traceback frames name its phase (a VAE's encode/decode: tiling; the evaluation loop: the eval batch, eval_accumulation_steps; the optimizer step: ZeRO-3/offload; FSDP/ZeRO wrapping: LoRA/offload; an inference engine starting: gpu_memory_utilization; a save: gather on the CPU)",
        compute: gpu_oom_phase,
    },
    Derived {
        name: "derive.gpu_oom_plan",
        unit: Unit::Text,
        doc: "what to change after a CUDA OOM, from the message's tried/free/total/allocated figures",
        compute: gpu_oom_plan,
    },
    Derived {
        name: "derive.half_precision",
        unit: Unit::Text,
        doc: "where the run says it trains in fp16: a confirming line's text (Lightning's AMP banner, `dtype = 'float16'`, `--fp16`), else the fp16 setting among the facts",
        compute: |c| half_precision(c).map(Text::plain),
    },
    Derived {
        name: "derive.host_oom_loading",
        unit: Unit::Text,
        doc: "only when the kill came while a model's checkpoint shards were loading (transformers' `Loading checkpoint shards` bar among the cited lines, or a kill report right after an unfinished bar): load with less host memory (low_cpu_mem_usage, a dtype, quantized)",
        compute: host_oom_loading,
    },
    Derived {
        name: "derive.ifname_exact",
        unit: Unit::Text,
        doc: "only when NCCL_SOCKET_IFNAME was set with NCCL's leading '=' (exact match): the interface name without it",
        compute: ifname_exact,
    },
    Derived {
        name: "derive.kernel_library",
        unit: Unit::Text,
        doc: "the installed package of the traceback's innermost frame that is not PyTorch or Triton (whose kernel failed)",
        compute: kernel_library,
    },
    Derived {
        name: "derive.local_extension",
        unit: Unit::Text,
        doc: "only when a frame of the crash's Python stack is in the project's own compiled-op directory (`ops`, `csrc`, `_ext`, outside the installed packages): rebuild the ops there against the installed torch and CUDA",
        compute: local_extension,
    },
    Derived {
        name: "derive.loopback_late_master",
        unit: Unit::Text,
        doc: "only when a store client waited minutes (`wait_ms`) for a store on this same machine (a loopback `host`): nothing blocks a loopback connection, so rank 0 had not created the store yet",
        compute: loopback_late_master,
    },
    Derived {
        name: "derive.memlock_plan",
        unit: Unit::Text,
        doc: "the locked-memory limit seen (ulimit -l) and what to set",
        compute: memlock_plan,
    },
    Derived {
        name: "derive.nan_after_finite",
        unit: Unit::Text,
        doc: "only when a logged loss turned NaN right after lines that logged it finite (a confirmation's capture): the run trained, then diverged",
        compute: |c| nan_after_finite(c).map(Text::plain),
    },
    Derived {
        name: "derive.nan_loss_term",
        unit: Unit::Text,
        doc: "only when a cited step line logs one named loss term non-finite while the other terms are still finite: that term",
        compute: |c| nan_loss_term(c).map(Text::plain),
    },
    Derived {
        name: "derive.nofile_plan",
        unit: Unit::Text,
        doc: "the open-files limit seen (ulimit -n, /proc limits) and the limit to set",
        compute: nofile_plan,
    },
    Derived {
        name: "derive.patched_attention",
        unit: Unit::Text,
        doc: "only when a NaN run's log announces at load an attention implementation its framework patched into the model (LLaMA-Factory's `Using FlashAttention-2 …`, `Using shift short attention …`: a confirmation's capture `patched_attention`): turn that implementation off for a rerun",
        compute: patched_attention,
    },
    Derived {
        name: "derive.port_plan",
        unit: Unit::Text,
        doc: "the busy port, how to find its holder and how to pick a free one",
        compute: port_plan,
    },
    Derived {
        name: "derive.ranks_out_of_step",
        unit: Unit::Text,
        doc: "only when two ranks' watchdogs timed out at the same collective number with a different operation or size: the ranks are out of step (uneven batches, a reduction on some ranks only), not one stuck",
        compute: ranks_out_of_step,
    },
    Derived {
        name: "derive.ray_rollout_memory",
        unit: Unit::Text,
        doc: "only when Ray's kill report lists the rollout engine's workers (`generate_sequences`, `LLMRayActor`, vLLM) as the largest host-memory users: the engine setting the run shows (a cache engine freed and rebuilt every generation, sleep mode, host memory growing every step) that holds it",
        compute: ray_rollout_memory,
    },
    Derived {
        name: "derive.release_shown",
        unit: Unit::Text,
        doc: "only when the paste shows which release of a framework or kernel library the run has (a `print(torch.__version__)`, a `pip list | grep`/`pip show` of it, a `transformer_engine version:` banner: a confirmation's captures `release_pkg` and `release_ver`): move to another release of it",
        compute: release_shown,
    },
    Derived {
        name: "derive.same_collective_plan",
        unit: Unit::Text,
        doc: "only when two ranks ran the same collective with different sizes: which per-rank tensors differ (DDP's buffer broadcast, parameters built differently per rank, or a gathered per-batch tensor of another length on each rank) and what to do",
        compute: same_collective_plan,
    },
    Derived {
        name: "derive.seq_cap_unset",
        unit: Unit::Text,
        doc: "the sequence-length setting a confirming line prints as `None` (`max_length`, `cutoff_len`, …)",
        compute: |c| seq_cap_unset(c).map(Text::plain),
    },
    Derived {
        name: "derive.shm_basis",
        unit: Unit::Text,
        doc: "why derive.shm_size_bytes has that value (observed peak, current size, host memory)",
        compute: shm_basis,
    },
    Derived {
        name: "derive.shm_size_bytes",
        unit: Unit::Bytes,
        doc: "recommended /dev/shm size: observed peak plus margin, else a safe default, capped by host memory",
        compute: shm_size_bytes,
    },
    Derived {
        name: "derive.short_pg_timeout",
        unit: Unit::Text,
        doc: "the process group's timeout in seconds when the watchdog's `Timeout(ms)` is five minutes or less (a busy rank reported as a timeout)",
        compute: short_pg_timeout,
    },
    Derived {
        name: "derive.short_time_request",
        unit: Unit::Text,
        doc: "only for a time-limit cancel whose batch script asked for under five minutes: the request read as Slurm reads it, and a real one",
        compute: short_time_request,
    },
    Derived {
        name: "derive.single_generation",
        unit: Unit::Text,
        doc: "where a GRPO run says it samples one completion per prompt (a confirmation's capture `single_generation`: `--num_generations 1`, `num_generations: 1`): its group normalisation divides by the standard deviation of one sample",
        compute: |c| single_generation(c).map(Text::plain),
    },
    Derived {
        name: "derive.startup_collective",
        unit: Unit::Text,
        doc: "the sequence number of a timed-out collective when it is among a process group's first few (the ranks were still starting up)",
        compute: startup_collective,
    },
    Derived {
        name: "derive.startup_tokenizing",
        unit: Unit::Text,
        doc: "only when the timed-out collective's own cited line carries a datasets 'Running tokenizer on dataset' progress bar: the start-up work still running was tokenization",
        compute: startup_tokenizing,
    },
    Derived {
        name: "derive.state_dict_prefix",
        unit: Unit::Text,
        doc: "when a state_dict's missing and unexpected keys differ by one constant prefix: that prefix, and whether to add or strip it",
        compute: state_dict_prefix,
    },
    Derived {
        name: "derive.time_limit_plan",
        unit: Unit::Text,
        doc: "how long the job ran against its time limit (scontrol RunTime/TimeLimit) and what to request",
        compute: time_limit_plan,
    },
    Derived {
        name: "derive.toolkit_mismatch",
        unit: Unit::Text,
        doc: "only when the log shows nvcc's release and a torch build for another CUDA release (a confirmation's captures `nvcc_release` and `torch_cuda_tail`, the digits after `+cu1`): rebuild what this machine compiled with torch's toolkit",
        compute: toolkit_mismatch,
    },
    Derived {
        name: "derive.torch_import_clash",
        unit: Unit::Text,
        doc: "only when the crash is inside torch's own import (faulthandler's frame at `torch/__init__.py … in <module>`, or a `python -c` that imports another module and then torch printing the fault): a native library loaded before torch clashes with torch's",
        compute: torch_import_clash,
    },
    Derived {
        name: "derive.tunableop",
        unit: Unit::Text,
        doc: "where a faulting run's log shows PyTorch TunableOp switched on (a confirming line's text: `PYTORCH_TUNABLEOP_ENABLED=1`)",
        compute: |c| tunableop(c).map(Text::plain),
    },
    Derived {
        name: "derive.xid_explain",
        unit: Unit::Text,
        doc: "the NVIDIA Xid catalog entry for the code in the hit (meaning, usual cause, action)",
        compute: xid_explain,
    },
    Derived {
        name: "derive.xla_preallocation",
        unit: Unit::Text,
        doc: "only beside XLA's own log lines (JAX, TensorFlow/XLA): make it stop preallocating most of the card",
        compute: xla_preallocation,
    },
];

pub fn is_derived(name: &str) -> bool {
    DERIVED.iter().any(|d| d.name == name)
}

/// What derived variable `name` computes and when it has a value (`rules explain` shows it
/// beside a fix template that uses it); `None` for an unknown name.
pub fn doc(name: &str) -> Option<&'static str> {
    DERIVED.iter().find(|d| d.name == name).map(|d| d.doc)
}

/// Inputs a derivation may use.
pub struct DeriveCtx<'a> {
    pub facts: &'a FactSet,
    /// Named captures of the finding's hits, first hit first.
    pub captures: &'a [(String, String)],
    /// The finding's cited lines (a CUDA OOM message names the other processes on the card,
    /// which no capture holds).
    pub lines: &'a [&'a str],
}

impl DeriveCtx<'_> {
    fn capture(&self, name: &str) -> Option<&str> {
        self.captures
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

/// The value of derived variable `name` with its unit; `None` for an unknown name or when
/// the finding lacks what the value needs.
pub fn derive(name: &str, ctx: &DeriveCtx) -> Option<(Text, Unit)> {
    let d = DERIVED.iter().find(|d| d.name == name)?;
    (d.compute)(ctx).map(|v| (v, d.unit))
}

fn shm_size_bytes(ctx: &DeriveCtx) -> Option<Text> {
    Some(Text::plain(shm_recommendation(ctx.facts).bytes.to_string()))
}

fn shm_basis(ctx: &DeriveCtx) -> Option<Text> {
    Some(shm_recommendation(ctx.facts).basis)
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

pub struct ShmRecommendation {
    pub bytes: u64,
    pub basis: Text,
}

/// Size /dev/shm from what the run showed:
/// - a recorded peak below the mount's size (the run was watched and did not hit the ceiling):
///   peak × 1.5 plus 512 MiB, rounded up to a whole GiB;
/// - otherwise (the mount was the ceiling, or nothing was recorded): 8 GiB, or 4× the current
///   size if that is larger;
/// - never more than half the host's memory when that is known (tmpfs pages are host RAM).
pub fn shm_recommendation(facts: &FactSet) -> ShmRecommendation {
    let size = facts.num(names::SHM_SIZE_BYTES);
    let peak = facts
        .num(names::SHM_PEAK_BYTES)
        .into_iter()
        .chain(facts.num(names::SHM_USED_BYTES))
        .reduce(f64::max);
    let host = facts.num(names::HOST_MEM_TOTAL_BYTES);
    let h = super::template::human_bytes;
    let peak_margin = |p: f64| {
        (
            p * 1.5 + 512.0 * MIB,
            format!("observed peak {} plus 50% and 512 MiB of margin", h(p)),
            format!("观测到的峰值 {} 再加 50% 和 512 MiB 余量", h(p)),
        )
    };
    let (mut want, mut basis, mut basis_zh) = match (peak, size) {
        (Some(p), Some(s)) if p > 0.0 && p < 0.9 * s => peak_margin(p),
        (Some(p), None) if p > 0.0 => peak_margin(p),
        (p, Some(s)) => {
            let start = (8.0 * GIB).max(4.0 * s);
            let recorded = match p {
                Some(p) if facts.num(names::SHM_PEAK_BYTES).is_some() => Some(h(p)),
                _ => None,
            };
            (
                start,
                format!(
                    "{}the {} /dev/shm was the ceiling, so the real need is unknown: {} is a safe start",
                    recorded
                        .as_ref()
                        .map(|p| format!("the recorded peak ({p}) reached the mount's size: "))
                        .unwrap_or_default(),
                    h(s),
                    h(start)
                ),
                format!(
                    "{}{} 的 /dev/shm 已经被用满，实际需要多少无从得知，先给 {} 比较稳妥",
                    recorded
                        .as_ref()
                        .map(|p| format!("记录到的峰值（{p}）已达到挂载上限，"))
                        .unwrap_or_default(),
                    h(s),
                    h(start)
                ),
            )
        }
        (_, None) => (
            8.0 * GIB,
            "no /dev/shm size or usage was captured: 8 GiB is a safe start".to_string(),
            "没有采集到 /dev/shm 的大小和用量，先给 8 GiB 比较稳妥".to_string(),
        ),
    };
    want = (want / GIB).ceil() * GIB;
    if let Some(host) = host {
        let cap = ((host / 2.0) / GIB).floor() * GIB;
        if cap >= GIB && want > cap {
            want = cap;
            basis.push_str(&format!(
                "; capped at half the host's {} because /dev/shm pages are host RAM",
                h(host)
            ));
            basis_zh.push_str(&format!(
                "；/dev/shm 占用的是主机内存，因此上限取主机 {} 的一半",
                h(host)
            ));
        } else {
            basis.push_str(&format!("; the host has {}", h(host)));
            basis_zh.push_str(&format!("；主机内存 {}", h(host)));
        }
    }
    ShmRecommendation {
        bytes: want as u64,
        basis: Text::new(basis, basis_zh),
    }
}

/// A size in a CUDA message (`2.00 GiB`, `289.12 MiB`) as bytes: the one size grammar,
/// `units::size_1024`.
fn parse_size(s: &str) -> Option<f64> {
    crate::sources::units::size_1024(s, 1).map(|b| b as f64)
}

/// Who holds a full GPU's memory, as a CUDA OOM message tells: this process's PyTorch
/// allocator (shrink the batch) or something else on the card (free it). The fix and the
/// fingerprint (`correlate::fingerprint`) both ask here, so they cannot disagree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GpuMemoryHolder {
    /// PyTorch in the failing process holds most of the card.
    ThisProcess,
    /// PyTorch holds under half the card, or other processes the message names hold more
    /// than it does.
    OtherProcess,
}

/// `Process 3808 has 133.79 GiB memory in use`: since PyTorch 2.1 the OOM message lists every
/// other process on the card this way (the failing one is `this process has …`).
static OTHER_PROCESS: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"\bProcess (\d+) has ([\d.]+ [KMGTP]?i?B) memory in use").ok()
});

/// What PyTorch's caching allocator has reserved, in either layout: `12.43 GiB reserved in
/// total by PyTorch` (to 1.13) or `391.99 MiB is reserved by PyTorch but unallocated` (since
/// 2.0, on top of what is allocated). Memory reserved is this process's, even when unused.
static RESERVED: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"([\d.]+ [KMGTP]?i?B) (?:reserved in total by PyTorch|(is) reserved by PyTorch but unallocated)",
    )
    .ok()
});

/// Bytes PyTorch reserved beyond what it allocated, and whether the figure is the total (old
/// layout) rather than the unallocated part (new layout).
fn reserved(lines: &[&str]) -> Option<(f64, bool)> {
    let re = RESERVED.as_ref()?;
    lines.iter().find_map(|l| {
        let c = re.captures(l)?;
        let b = parse_size(c.get(1)?.as_str())?;
        Some((b, c.get(2).is_none()))
    })
}

/// What this process's PyTorch holds: allocated plus reserved-but-unallocated.
fn torch_held(allocated: Option<f64>, lines: &[&str]) -> Option<f64> {
    match (allocated, reserved(lines)) {
        (Some(a), Some((r, true))) => Some(a.max(r)),
        (Some(a), Some((r, false))) => Some(a + r),
        (a, None) => a,
        (None, Some((r, true))) => Some(r),
        (None, Some((_, false))) => None,
    }
}

/// The other processes a CUDA OOM message names, with the memory each holds (bytes); one
/// pid counted once however many lines repeat it.
pub fn other_processes(lines: &[&str]) -> Vec<(u32, f64)> {
    let Some(re) = OTHER_PROCESS.as_ref() else {
        return Vec::new();
    };
    let mut out: Vec<(u32, f64)> = Vec::new();
    for l in lines {
        for c in re.captures_iter(l) {
            let (Some(pid), Some(b)) = (
                c.get(1).and_then(|m| m.as_str().parse().ok()),
                c.get(2).and_then(|m| parse_size(m.as_str())),
            ) else {
                continue;
            };
            if !out.iter().any(|(p, _)| *p == pid) {
                out.push((pid, b));
            }
        }
    }
    out
}

/// The processes a CUDA OOM message names that are not the failing one. Inside a container
/// NVML reports host pids, so PyTorch cannot recognise its own process: the failing process is
/// then listed as `Process N has X memory in use` and no line says `this process has`. A
/// process holding this process's PyTorch memory plus what a CUDA context and libraries take
/// (up to 2 GiB more) is that process, not another holder of the card.
fn foreign_processes(torch: Option<f64>, lines: &[&str]) -> Vec<(u32, f64)> {
    let mut named = other_processes(lines);
    let says_self = lines.iter().any(|l| l.contains("this process has"));
    if !says_self
        && let Some(t) = torch
        && let Some(i) = named
            .iter()
            .position(|(_, b)| *b >= t && *b <= t + 2.0 * GIB)
    {
        named.remove(i);
    }
    named
}

/// Who holds the card, from the message's figures; `None` when it gives none.
pub fn gpu_memory_holder(captures: &[(String, String)], lines: &[&str]) -> Option<GpuMemoryHolder> {
    let cap = |n: &str| {
        captures
            .iter()
            .find(|(k, _)| k == n)
            .and_then(|(_, v)| parse_size(v))
    };
    let (total, torch) = (cap("total"), torch_held(cap("allocated"), lines));
    let others: f64 = foreign_processes(torch, lines).iter().map(|(_, b)| b).sum();
    match (total, torch) {
        (Some(total), Some(torch)) if torch < 0.5 * total || others > torch => {
            Some(GpuMemoryHolder::OtherProcess)
        }
        (Some(_), Some(_)) => Some(GpuMemoryHolder::ThisProcess),
        (Some(total), None) if others >= 0.5 * total => Some(GpuMemoryHolder::OtherProcess),
        _ => None,
    }
}

/// From a CUDA OOM message's figures: is it this process's own usage (shrink the batch), or
/// another process holding the card?
fn gpu_oom_plan(ctx: &DeriveCtx) -> Option<Text> {
    let tried = parse_size(ctx.capture("tried")?)?;
    let total = ctx.capture("total").and_then(parse_size);
    let free = ctx.capture("free").and_then(parse_size);
    let by_torch = ctx.capture("allocated").and_then(parse_size);
    let h = super::template::human_bytes;
    if gpu_memory_holder(ctx.captures, ctx.lines) == Some(GpuMemoryHolder::OtherProcess)
        && let Some(total) = total
    {
        let named = foreign_processes(torch_held(by_torch, ctx.lines), ctx.lines);
        let torch = torch_held(by_torch, ctx.lines).unwrap_or(0.0);
        let other = if named.is_empty() {
            (total - torch - free.unwrap_or(0.0)).max(0.0)
        } else {
            named.iter().map(|(_, b)| b).sum()
        };
        let pids = named
            .iter()
            .map(|(p, b)| format!("pid {p}: {}", h(*b)))
            .collect::<Vec<_>>()
            .join(", ");
        return Some(Text::new(
            format!(
                "PyTorch itself holds only {} of the {} card: about {} is held outside this \
                 process's allocator{} (another process on the same GPU, or a leak in a native \
                 library). Find the holder with `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` \
                 and free the card, so that each rank has its GPU to itself; a smaller batch will not help.",
                h(torch),
                h(total),
                h(other),
                if pids.is_empty() {
                    String::new()
                } else {
                    format!(" ({pids})")
                }
            ),
            format!(
                "这个进程里 PyTorch 自己只占了 {}（整卡 {}），另有约 {} 被本进程分配器之外的占用拿走了{}（同一张卡上的其他进程，或某个 native 库泄漏）。\
                 用 `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` 查出占卡的进程并释放它，确保每个 rank 独占自己的 GPU；这种情况减小 batch size 没有用。",
                h(torch),
                h(total),
                h(other),
                if pids.is_empty() {
                    String::new()
                } else {
                    format!("（{pids}）")
                }
            ),
        ));
    }
    // Reserved far above allocated: the caching allocator holds blocks it cannot hand out.
    if let (Some(total), Some(alloc), Some(held)) =
        (total, by_torch, torch_held(by_torch, ctx.lines))
        && held - alloc > tried.max(0.25 * total)
    {
        return Some(Text::new(
            format!(
                "PyTorch's caching allocator holds {} but only {} of it is allocated (card: {}): \
                 the memory is fragmented, the model is not too large. Set \
                 `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` (`max_split_size_mb:128` on old \
                 versions), or avoid reallocating large tensors of varying size between peaks; \
                 shrink the micro-batch only if that is not enough.",
                h(held),
                h(alloc),
                h(total)
            ),
            format!(
                "PyTorch 的缓存分配器占着 {}，真正分配出去的只有 {}（整卡 {}）：这是显存碎片，不是模型真的放不下。\
                 设置 `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`（老版本用 `max_split_size_mb:128`），\
                 或者在峰值之间避免反复分配大小不一的大张量；仍然不够再减小 micro-batch。",
                h(held),
                h(alloc),
                h(total)
            ),
        ));
    }
    // What the cache holds unallocated plus what is free would cover the request, yet no block
    // was large enough: this process's own cache is fragmented, and counting the cache the
    // peak sits at the card's edge (T3507: rank 0's first backward after a checkpoint save).
    // Not memory held outside the allocator: shrink the peak, and let the cache grow segments.
    if let (Some(total), Some(alloc), Some(held), Some(free)) =
        (total, by_torch, torch_held(by_torch, ctx.lines), free)
        && held - alloc >= 0.05 * total
        && held - alloc + free >= tried
        && held + tried > 0.9 * total
    {
        return Some(Text::new(
            format!(
                "Lower the micro-batch (raising gradient accumulation to keep the global batch) and \
                 set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`: PyTorch had {} allocated \
                 and {} more reserved but unallocated, with {} free — room for the {} request, yet \
                 no block was large enough, so this process's own cache is fragmented at a peak on \
                 the edge of the {} card.",
                h(alloc),
                h(held - alloc),
                h(free),
                h(tried),
                h(total)
            ),
            format!(
                "把 micro-batch 调小（同时调大梯度累积步数保持全局 batch size），并设置 \
                 `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`：PyTorch 已分配 {}，另有 {} \
                 预留未分配，空闲 {}——本够这次申请的 {}，却找不到足够大的连续块，是本进程自己的缓存碎片化了，\
                 而峰值已贴着 {} 整卡的上限。",
                h(alloc),
                h(held - alloc),
                h(free),
                h(tried),
                h(total)
            ),
        ));
    }
    let (Some(total), Some(torch)) = (total, by_torch) else {
        return Some(Text::new(
            format!(
                "The allocation of {} did not fit: halve the micro-batch (and double gradient \
                 accumulation to keep the global batch), or enable activation checkpointing.",
                h(tried)
            ),
            format!(
                "申请的 {} 分配不下：把 micro-batch 减半（同时把梯度累积步数翻倍，保持全局 batch size 不变），或者开启 activation checkpointing。",
                h(tried)
            ),
        ));
    };
    // The process needs about torch + tried; to fit under ~90% of the card, scale the
    // activation-dominated part by this factor.
    let need = torch + tried;
    let budget = 0.9 * total;
    let factor = (budget / need).clamp(0.05, 1.0);
    let pct = ((1.0 - factor) * 100.0).ceil();
    // What PyTorch holds plus the request fits the card: the figures do not say what to cut
    // (a percentage here would read "cut by 0%"). The card's memory went elsewhere: outside
    // this allocator (another process, NCCL/cuBLAS workspaces, a collective's buffers) or to
    // fragmentation.
    if pct < 1.0 {
        let free = free.map(h).unwrap_or_else(|| "little".into());
        return Some(Text::new(
            format!(
                "PyTorch held {} and asked for {} more, which fits the {} card, yet only {free} was free:                  the memory is held outside this process's allocator (another process on the card,                  NCCL/cuBLAS workspaces, a collective's buffers) or fragmented. Check `nvidia-smi` for                  other processes, set `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`, and look at                  what the run was doing when it failed (loading, a gather, evaluation): that step's                  memory is what to cut.",
                h(torch),
                h(tried),
                h(total)
            ),
            format!(
                "PyTorch 占着 {}、又申请 {}，本来放得下这张 {} 的卡，但只剩 {free} 空闲：显存被本进程分配器之外的东西拿走了（同卡的其他进程、NCCL/cuBLAS 的工作区、集合通信的缓冲区）或者碎片化了。                 用 `nvidia-smi` 查卡上的其他进程，设置 `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`，                 并看出错时在做什么（加载、集合通信 gather、评估）：那一步的显存占用才是要降的。",
                h(torch),
                h(tried),
                h(total)
            ),
        ));
    }
    Some(Text::new(
        format!(
            "The process needed about {} on a {} card ({} held by PyTorch + {} requested): cut \
             activation memory by at least {pct:.0}% — e.g. multiply the micro-batch (or sequence \
             length) by {factor:.2} or less, raising gradient accumulation to keep the global batch, \
             or enable activation checkpointing.",
            h(need),
            h(total),
            h(torch),
            h(tried)
        ),
        format!(
            "这个进程大约需要 {}，而卡只有 {}（PyTorch 已占 {} + 本次申请 {}）：激活显存至少要降 {pct:.0}%，\
             比如把 micro-batch（或序列长度）乘以 {factor:.2} 或更小，同时调大梯度累积步数保持全局 batch size，\
             或者开启 activation checkpointing。",
            h(need),
            h(total),
            h(torch),
            h(tried)
        ),
    ))
}

/// `File ".../site-packages/<pkg>/…"`: the installed package a traceback frame is in.
static FRAME_PACKAGE: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r#"File "[^"]*(?:site|dist)-packages[/\\]([A-Za-z_]\w*)[/\\]"#).ok()
});

/// The package whose code launched the failing kernel: the innermost traceback frame in an
/// installed package other than PyTorch and Triton (which run every package's kernels). When
/// the innermost frames are torch's autograd engine the kernel ran somewhere in the backward
/// pass, and the frame that called `backward()` (a trainer, accelerate) launched none of it,
/// so no package is named.
fn kernel_library(ctx: &DeriveCtx) -> Option<Text> {
    kernel_package(ctx).map(Text::plain)
}

/// The package `kernel_library` names.
fn kernel_package(ctx: &DeriveCtx) -> Option<String> {
    let re = FRAME_PACKAGE.as_ref()?;
    for l in ctx.lines.iter().rev() {
        let Some(c) = re.captures(l) else { continue };
        let p = c.get(1)?.as_str();
        if p == "torch" && (l.contains("/torch/autograd/") || l.contains("\\torch\\autograd\\")) {
            return None;
        }
        if !matches!(p, "torch" | "triton" | "torch_npu" | "numpy") {
            return Some(p.to_string());
        }
    }
    None
}

/// Engines and libraries whose attention kernel is a backend picked at start-up, each with
/// where its backends' modules live (a part of a frame's path), who picks it, the setting
/// that picks another, and the backend's name when the path alone does not give it.
const ATTENTION_BACKENDS: &[(&str, &str, &str, Option<&str>)] = &[
    (
        "/vllm/attention/backends/",
        "vLLM",
        "`VLLM_ATTENTION_BACKEND=XFORMERS` or `FLASHINFER`",
        None,
    ),
    (
        "/sglang/srt/layers/attention/",
        "SGLang",
        "`--attention-backend flashinfer` or `triton`",
        None,
    ),
    (
        "/transformers/integrations/flash_attention.py",
        "transformers",
        "`attn_implementation=\"sdpa\"` or `\"eager\"`",
        Some("flash_attention_2"),
    ),
    (
        "/transformers/modeling_flash_attention_utils.py",
        "transformers",
        "`attn_implementation=\"sdpa\"` or `\"eager\"`",
        Some("flash_attention_2"),
    ),
];

/// A kernel fault whose traceback passes through an attention backend that an engine or a
/// model library picked at start-up (vLLM's and SGLang's backends, transformers' FlashAttention
/// integration): another backend is one setting away and sidesteps the faulting kernel, so it
/// comes first, beside updating the package whose kernel faulted (`kernel_library`).
fn attention_backend(ctx: &DeriveCtx) -> Option<Text> {
    let (path, who, knob, named) = ctx.lines.iter().find_map(|l| {
        let (path, _) = frame_of(l)?;
        let path = path.replace('\\', "/");
        ATTENTION_BACKENDS
            .iter()
            .find(|(part, ..)| path.contains(part))
            .map(|&(_, who, knob, named)| (path, who, knob, named))
    })?;
    let whose = if who.ends_with('s') {
        format!("{who}'")
    } else {
        format!("{who}'s")
    };
    let stem = path.rsplit('/').next()?.trim_end_matches(".py");
    let backend = named.unwrap_or(stem);
    Some(match kernel_package(ctx) {
        Some(lib) => text!(
            "Switch {whose} attention backend away from `{backend}` ({knob}), or update {lib} to its latest release (or pin the one that worked): the fault is in the attention kernel {who} picked at start-up (its frames are in the traceback), and another backend sidesteps that kernel while its bug is open.",
            "把 {who} 的注意力后端从 `{backend}` 换掉（{knob}），或者把 {lib} 升级到最新版本（或固定到之前能用的版本）：出错的是 {who} 启动时选中的注意力 kernel（traceback 里有它的栈帧），换一个后端就绕开了这个 kernel。"
        ),
        None => text!(
            "Switch {whose} attention backend away from `{backend}` ({knob}): the fault is in the attention kernel {who} picked at start-up (its frames are in the traceback), and another backend sidesteps that kernel; then update the package that provides it.",
            "把 {who} 的注意力后端从 `{backend}` 换掉（{knob}）：出错的是 {who} 启动时选中的注意力 kernel（traceback 里有它的栈帧），换一个后端就绕开了这个 kernel；之后再升级提供它的包。"
        ),
    })
}

/// Directories in which a project keeps the CUDA/C++ operators it compiles itself.
const LOCAL_OP_DIRS: &[&str] = &["ops", "csrc", "_ext"];

/// A compiled operator of the project itself in the crash's Python stack: a frame outside the
/// installed packages under one of `LOCAL_OP_DIRS` (not a home directory of that name), e.g.
/// `…/segmentation/ops/functions/ms_deform_attn_func.py`; the value is that directory. Such an
/// op was built on the machine against the torch, nvcc and GPU of the day, and a build that no
/// longer fits them faults at run time rather than failing to load: rebuild it first.
fn local_extension(ctx: &DeriveCtx) -> Option<Text> {
    ctx.lines.iter().find_map(|l| {
        let rest = &l[l.find("File \"")? + "File \"".len()..];
        let path = rest[..rest.find('"')?].replace('\\', "/");
        if path.contains("-packages/") {
            return None;
        }
        let segs: Vec<&str> = path.split('/').collect();
        let i = (1..segs.len().saturating_sub(1)).find(|&i| {
            LOCAL_OP_DIRS.contains(&segs[i]) && !matches!(segs[i - 1], "home" | "Users")
        })?;
        Some(segs[..=i].join("/"))
    })
    .map(|dir| {
        Text::new(format!("Rebuild the project's own compiled ops in `{dir}` against the torch and CUDA now installed (delete the old build — its `build/` directory and `.so` files — then run its `setup.py build_ext --inplace` or `pip install -e .` with the nvcc that matches `torch.version.cuda`): the crash is inside one of them, and an op built for another torch, CUDA or GPU faults at run time instead of failing to load. If a fresh build still crashes, rerun with `CUDA_LAUNCH_BLOCKING=1` to find the kernel."), format!("针对现在装的 torch 和 CUDA 重新编译项目自己在 `{dir}` 里的算子（先删掉旧的编译产物——`build/` 目录和 `.so` 文件——再用与 `torch.version.cuda` 一致的 nvcc 运行它的 `setup.py build_ext --inplace` 或 `pip install -e .`）：崩溃就发生在其中某个算子里，为别的 torch、CUDA 或 GPU 编译的算子不会在加载时报错，而是在运行时出错。重新编译后仍然崩溃，就用 `CUDA_LAUNCH_BLOCKING=1` 重跑找出是哪个 kernel。"))
    })
}

/// The installed package being imported when the process crashed: a frame of the crash's
/// Python stack (faulthandler's `File "…/site-packages/<pkg>/…", line N in <module>`, or a
/// traceback's `, in <module>`) at module level inside an installed package other than the
/// framework itself. A native crash while a package loads is its compiled library failing to
/// fit the torch or CUDA it was built for, not the training.
fn crashing_extension(ctx: &DeriveCtx) -> Option<Text> {
    crashing_package(ctx).map(Text::plain)
}

/// The package `crashing_extension` names.
fn crashing_package(ctx: &DeriveCtx) -> Option<String> {
    let re = FRAME_PACKAGE.as_ref()?;
    ctx.lines.iter().find_map(|l| {
        let p = re.captures(l)?.get(1)?.as_str();
        let at_module = l.trim_end().ends_with(" in <module>");
        (at_module && !matches!(p, "torch" | "triton" | "torch_npu" | "numpy" | "importlib"))
            .then(|| p.to_string())
    })
}

/// Frameworks that load a native runtime of their own (their protobuf, C++ standard library,
/// CUDA libraries) instead of building against torch's.
const OWN_RUNTIME: &[&str] = &[
    "tensorflow",
    "jax",
    "jaxlib",
    "paddle",
    "mxnet",
    "onnxruntime",
    "tensorrt",
];

/// The crashing import (`crashing_extension`) when it is one of `OWN_RUNTIME`: its libraries
/// loaded after torch's copies of the same ones are in the process, so the order of the
/// imports, not a rebuild, is the remedy.
fn crashing_framework(ctx: &DeriveCtx) -> Option<Text> {
    crashing_package(ctx)
        .filter(|p| OWN_RUNTIME.contains(&p.as_str()))
        .map(Text::plain)
}

/// The installed package holding the crashing module (`core.crash_module`): its directory under
/// `site-packages`/`dist-packages`, or a wheel's vendored `<dist>.libs` there. PyTorch and the
/// NVIDIA runtime wheels run every package's native work, so a crash in them names no one.
fn crash_package(ctx: &DeriveCtx) -> Option<Text> {
    let module = ctx.facts.get(names::CORE_CRASH_MODULE)?.value.to_string();
    let module = module.replace('\\', "/");
    let at = module
        .find("/site-packages/")
        .or_else(|| module.find("/dist-packages/"))?;
    let dir = module[at + "/site-packages/".len()..].split('/').next()?;
    let dir = dir.strip_suffix(".libs").unwrap_or(dir);
    if dir.is_empty()
        || dir.ends_with(".so")
        || matches!(dir, "torch" | "nvidia" | "triton" | "torch_npu")
    {
        return None;
    }
    let lib = module.rsplit('/').next().unwrap_or(&module);
    // Import names whose distribution is named otherwise (what `pip install` takes).
    let dist = match dir {
        "cv2" => "opencv-python (or opencv-python-headless, whichever is installed)",
        "PIL" => "Pillow",
        "sklearn" => "scikit-learn",
        "skimage" => "scikit-image",
        "yaml" => "PyYAML",
        d => d,
    };
    Some(Text::new(
        format!(
            "Install another build of the package that owns `{dir}`: upgrade {dist}, or pin the release that worked. The crash is inside its own bundled native library (`{lib}`); check too that no second copy of the same libraries (another wheel, a conda package, a system install) is loaded beside it."
        ),
        format!(
            "换一个 `{dir}` 的构建：升级 {dist}，或者固定到之前能用的版本：崩溃发生在它自带的 native 库 `{lib}` 里；再确认没有第二份同样的库（另一个 wheel、conda 包或系统安装）和它一起被加载。"
        ),
    ))
}

/// A package release known upstream to crash the process: the package as `pip` names it, the
/// crashing releases, the release to install instead, what crashes, and the upstream thread
/// that established it (a row needs one).
struct CrashingRelease {
    package: &'static str,
    bad: &'static [&'static str],
    good: &'static str,
    what: Text<&'static str>,
    /// Where the crash and its remedy were established (kept here so a row cannot lack it).
    #[allow(dead_code)]
    upstream: &'static str,
}

/// Releases that crash the process beside torch, each with its upstream evidence. The
/// confirmation `crashing-release-installed` reads the packages' rows out of a pasted listing.
const CRASHING_RELEASES: &[CrashingRelease] = &[
    CrashingRelease {
        package: "scipy",
        bad: &["1.4.0"],
        good: "1.4.1 (or back to 1.3.3)",
        what: Text {
            en: "its 1.4.0 wheels crash the process when torch (or TensorFlow) is imported after it, as `import transformers` or scikit-learn does",
            zh: "它的 1.4.0 wheel 在之后再导入 torch（或 TensorFlow）时会让进程崩溃，`import transformers` 或 scikit-learn 就会这样导入",
        },
        upstream: "https://github.com/scipy/scipy/issues/11237",
    },
    CrashingRelease {
        package: "sentencepiece",
        bad: &["0.1.92", "0.1.93", "0.1.94"],
        good: "0.1.91 (or 0.1.95 and later)",
        what: Text {
            en: "its 0.1.92-0.1.94 wheels crash the process in torch calls once it is imported (transformers and texar import it at start-up)",
            zh: "它的 0.1.92-0.1.94 wheel 被导入后，torch 的调用会让进程崩溃（transformers、texar 启动时就会导入它）",
        },
        upstream: "https://github.com/huggingface/transformers/issues/4857",
    },
];

/// The first package listing row (captures `installed_pkg` and `installed_ver` of one hit) whose
/// release `CRASHING_RELEASES` lists: the run has a release known to crash beside torch, so
/// pinning the one that does not is the first step, before any hunt for the crashing library.
fn crash_release(ctx: &DeriveCtx) -> Option<Text> {
    let (row, ver) = ctx.captures.windows(2).find_map(|w| {
        let (pkg, ver) = (&w[0], &w[1]);
        if pkg.0 != "installed_pkg" || ver.0 != "installed_ver" {
            return None;
        }
        let row = CRASHING_RELEASES
            .iter()
            .find(|r| r.package.eq_ignore_ascii_case(&pkg.1))?;
        row.bad
            .contains(&ver.1.as_str())
            .then_some((row, ver.1.clone()))
    })?;
    let p = row.package;
    let (good, pin) = (
        row.good,
        row.good.split_whitespace().next().unwrap_or(row.good),
    );
    Some(text!(
        "Pin {p} {good} in place of the installed {ver} (`pip install \"{p}=={pin}\"`, and pin it in the requirements): {what}.",
        "把 {p} 从 {ver} 换成 {good}（`pip install \"{p}=={pin}\"`，并在 requirements 里固定它）：{what}。";
        what = row.what
    ))
}

/// The crash is inside torch's own import: faulthandler's stack has a frame at module level of
/// `torch/__init__.py`, or a `python -c` that imported another module and then torch printed
/// the fault (the confirmation's capture `import_then_torch`). torch's native libraries load
/// then, and one that an earlier import already put in the process (another wheel's bundled
/// C++ runtime, OpenMP, pybind11 or protobuf) clashes with them: import order is the lever.
fn torch_import_clash(ctx: &DeriveCtx) -> Option<Text> {
    let in_torch_init = ctx.lines.iter().any(|l| {
        let l = l.replace('\\', "/");
        l.contains("/torch/__init__.py\"") && l.trim_end().ends_with(" in <module>")
    });
    (in_torch_init || ctx.capture("import_then_torch").is_some()).then(|| {
        Text::new("Import torch first (move `import torch` to the top of the entry script, ahead of the other packages with native libraries), or install a release of the other package that fits this torch: the crash is inside torch's own import, where its native libraries clash with ones an earlier import already loaded (another wheel's bundled C++ runtime, OpenMP, pybind11 or protobuf); `python -c 'import torch'` alone not crashing confirms the import order.", "先导入 torch（把 `import torch` 放到入口脚本最上面，早于其他带 native 库的包），或者把另一个包换成和这个 torch 兼容的版本：崩溃发生在 torch 自己的导入过程中，这时它的 native 库与之前某个导入已经加载进进程的库（另一个 wheel 自带的 C++ 运行时、OpenMP、pybind11 或 protobuf）冲突；单独执行 `python -c 'import torch'` 不崩溃就说明是导入顺序的问题。")
    })
}

/// Collectives a process group runs before training proper: the first handful (DDP's
/// parameter broadcast, a `broadcast_object_list` of the data or config, a barrier).
pub(crate) const STARTUP_COLLECTIVES: u64 = 8;

/// The timed-out collective's sequence number (capture `seq`) when it is one of the process
/// group's first few: the waiting ranks were still starting up, so the late rank was busy
/// with start-up work (dataset tokenization, index building, a load), not with a step.
fn startup_collective(ctx: &DeriveCtx) -> Option<Text> {
    let seq: u64 = ctx.capture("seq")?.trim().parse().ok()?;
    (seq <= STARTUP_COLLECTIVES).then(|| Text::plain(seq.to_string()))
}

/// The progress bar `datasets` prints while a tokenizing `map` runs (LLaMA-Factory, the
/// transformers examples). tqdm rewrites its line with a carriage return, so when the
/// watchdog fires during tokenization its message lands on the bar's line: the bar on the
/// timed-out collective's own cited line says the rank still busy was tokenizing.
const TOKENIZING_BAR: &str = "Running tokenizer on dataset";

/// Whether a cited line of the finding carries the tokenizing progress bar (see
/// `TOKENIZING_BAR`): the start-up work that outlasted the timeout was tokenization.
fn startup_tokenizing(ctx: &DeriveCtx) -> Option<Text> {
    ctx.lines
        .iter()
        .any(|l| l.contains(TOKENIZING_BAR))
        .then(|| Text::new("tokenizing the dataset", "对数据集做 tokenize"))
}

/// A process-group timeout this short or shorter was set on purpose (PyTorch's defaults are 10
/// and 30 minutes), and ordinary one-rank work outlasts it.
const SHORT_PG_TIMEOUT_MS: u64 = 300_000;

/// The watchdog's `Timeout(ms)` (capture `timeout_ms`) in seconds, when the process group was
/// given a timeout of five minutes or less: a rank busy with a checkpoint load or a rank-0
/// validation is then reported as a timeout although it was on its way.
fn short_pg_timeout(ctx: &DeriveCtx) -> Option<Text> {
    let ms: u64 = ctx.capture("timeout_ms")?.trim().parse().ok()?;
    (ms > 0 && ms <= SHORT_PG_TIMEOUT_MS).then(|| {
        let secs = ms as f64 / 1000.0;
        Text::plain(if secs.fract() == 0.0 {
            format!("{secs:.0}")
        } else {
            format!("{secs:.1}")
        })
    })
}

/// One traceback frame of a cited line: the file and the function, in CPython's
/// `File "path", line N, in func` and IPython's `File path:N, in Class.func(args)` shapes.
fn frame_of(line: &str) -> Option<(&str, &str)> {
    let at = line.find("File ")?;
    let rest = &line[at + 5..];
    let (path, after) = if let Some(q) = rest.strip_prefix('"') {
        let end = q.find('"')?;
        (&q[..end], &q[end + 1..])
    } else {
        let end = rest.find(", in ")?;
        let path = rest[..end]
            .rsplit_once(':')
            .map_or(&rest[..end], |(p, _)| p);
        (path, &rest[end..])
    };
    let func = after.split_once(", in ")?.1;
    let func = func
        .split(|c: char| c == '(' || c.is_whitespace())
        .next()?
        .rsplit('.')
        .next()?;
    Some((path, func))
}

/// The phase of a CUDA OOM that its own traceback names, when the phase has a lever of its
/// own that a smaller training batch does not pull: a VAE encoding or decoding images (its
/// activations grow with the pixels: tiling), or the evaluation loop concatenating the
/// outputs it gathers (they grow with the eval set: `eval_accumulation_steps`). Read from the
/// innermost frames cited (the frames after the model's forward do not count: an OOM inside a
/// layer during evaluation is the eval batch, not the gathering).
/// Whether a frame (file, function) belongs to a phase.
type FrameTest<'a> = dyn Fn(&str, &str) -> bool + 'a;

fn gpu_oom_phase(ctx: &DeriveCtx) -> Option<Text> {
    let frames: Vec<(&str, &str)> = ctx.lines.iter().filter_map(|l| frame_of(l)).collect();
    // vLLM's own line for running out while loading the weights: the engine's start-up.
    if ctx.capture("engine_load_oom").is_some() {
        return Some(engine_start_oom());
    }
    let vae = frames.iter().any(|(path, func)| {
        let p = path.to_ascii_lowercase();
        (p.contains("autoencoder") || p.contains("/vae"))
            && matches!(
                *func,
                "encode" | "decode" | "_encode" | "_decode" | "forward"
            )
    });
    if vae {
        return Some(Text::new(
            "Enable VAE tiling (and slicing) so the VAE encodes and decodes large images in tiles: `vae.enable_tiling()` / `vae.enable_slicing()` in diffusers, or encode at a lower resolution. The OOM is inside the VAE's encode/decode, whose activations grow with the image's pixels, not with the batch you already cut.",
            "打开 VAE 的 tiling（以及 slicing），让 VAE 分块编码/解码大图：diffusers 里是 `vae.enable_tiling()` / `vae.enable_slicing()`，或者降低编码的分辨率。显存不够发生在 VAE 的 encode/decode 里，它的激活随图像像素数增长，而不是随已经减小了的 batch 增长。",
        ));
    }
    let gather = |f: &str| {
        matches!(
            f,
            "nested_concat" | "torch_pad_and_concatenate" | "evaluation_loop" | "prediction_loop"
        )
    };
    // The innermost frame outside PyTorch's own code: the gathering, not a layer.
    let inner = frames
        .iter()
        .rev()
        .find(|(path, _)| !path.contains("/torch/"));
    // Raised while scoring what the evaluation collected: in the project's own scoring
    // function (`compute_scores`, `evaluate_predictions`, `score_*`, `*_metrics`), called from
    // its evaluation, with no layer running inside it. The collected outputs hold the memory,
    // not activations, so `no_grad` and the evaluation batch do not shrink it.
    let evaluation = frames.iter().find_map(own_evaluation);
    if let (Some(eval), Some((path, scorer))) = (evaluation, inner) {
        let own = !path.contains("-packages/") && !path.contains("-packages\\");
        let below = frames.iter().skip_while(|(p, f)| p != path || f != scorer);
        let layer = below
            .clone()
            .any(|(p, _)| p.contains("/torch/nn/") || p.contains("\\torch\\nn\\"));
        if own && scoring_function(scorer) && !layer {
            return Some(Text::new(
                format!(
                    "Score the evaluation's collected outputs on the CPU: move what `{eval}()` gathered to the CPU (`.cpu()`) before `{scorer}()` runs (or score it in chunks, or turn on your script's CPU-evaluation option if it has one): the OOM is raised in `{scorer}()` while it scores the collected predictions, in code that runs no model, so `torch.no_grad()` and a smaller evaluation batch do not shrink it."
                ),
                format!(
                    "在 CPU 上给评估收集到的输出打分：在 `{scorer}()` 运行之前，把 `{eval}()` 收集的结果搬到 CPU（`.cpu()`）（或者分块打分；脚本如果有在 CPU 上评估的选项，就打开它）：显存不够发生在 `{scorer}()` 给收集到的预测打分的时候，这段代码不跑模型，所以 `torch.no_grad()` 和更小的评估 batch 都减不下来。"
                ),
            ));
        }
    }
    if let Some(func) = frames.iter().find_map(own_evaluation) {
        return Some(Text::new(
            format!(
                "Run the evaluation in `{func}()` under `torch.no_grad()` (or `torch.inference_mode()`), after `model.eval()`: the OOM is raised in your own evaluation function, where without it every batch keeps its autograd graph (and tensors kept across batches keep theirs alive); if it already runs without gradients, use a smaller evaluation batch."
            ),
            format!(
                "把 `{func}()` 里的评估放到 `torch.no_grad()`（或 `torch.inference_mode()`）下运行，并先调用 `model.eval()`：显存不够发生在你自己的评估函数里，没有关掉梯度时每个 batch 都会保留自己的计算图（跨 batch 留下的张量也会连着它们的图）；如果它已经关掉了梯度，就减小评估的 batch。"
            ),
        ));
    }
    if inner.is_some_and(|(_, f)| gather(f)) {
        return Some(Text::new(
            "Set `eval_accumulation_steps` (e.g. 8) so the Trainer moves the predictions it gathers during evaluation to the CPU every N steps instead of keeping them all on the GPU (or pass `preprocess_logits_for_metrics` to keep only the argmax ids): the OOM is in the evaluation loop's concatenation of outputs, which a smaller training batch does not shrink.",
            "设置 `eval_accumulation_steps`（比如 8），让 Trainer 每 N 步把评估时收集的预测搬到 CPU，而不是全部留在 GPU 上（或者传 `preprocess_logits_for_metrics` 只保留 argmax 的 id）：显存不够发生在评估循环拼接输出的时候，减小训练 batch 解决不了。",
        ));
    }
    oom_step_phase(&frames)
}

/// An inference engine ran out while starting: its reserved share is the lever.
fn engine_start_oom() -> Text {
    Text::new(
        "Lower the inference engine's `gpu_memory_utilization` (the share of each card it reserves) or give the engine a GPU of its own, and lower `max_num_seqs` / `max_model_len` if it runs alone: the OOM is raised while the engine starts (loading its weights and profiling a forward to size its KV cache), where its reserved share plus what else holds the card (training on the same GPU, another engine) exceeds it; the training batch does not change that.",
        "调低推理引擎的 `gpu_memory_utilization`（它在每张卡上预留的份额），或者给引擎单独一张卡；引擎单独运行时再降低 `max_num_seqs` / `max_model_len`：显存不够发生在引擎启动时（加载权重、试跑一次来确定 KV cache 大小），这时引擎预留的份额加上卡上已有的占用（同卡的训练进程、另一个引擎）超过了整张卡，训练的 batch 改变不了它。",
    )
}

/// The step a CUDA OOM's phase names, for the phases past the model's training forward and
/// backward, each with a lever of its own (issue 29, item 5), read from the frames' files and
/// functions — the optimizer step, the wrapping and the save count only when no layer's
/// forward or a backward runs inside them (Lightning runs the forward in the step's closure):
/// a serving engine sizing or loading itself (its memory share), the optimizer step (its
/// states: shard or offload them), FSDP/ZeRO wrapping the model before the first step (the
/// model's states do not fit: fewer trained parameters or offload), a checkpoint save
/// gathering the state dict (gather it on the CPU), a framework's evaluation loop (the eval
/// batch and the outputs it keeps).
fn oom_step_phase(frames: &[(&str, &str)]) -> Option<Text> {
    // The frames inside the phase's frame must not be a layer's forward or a backward: an
    // OOM there is the batch's activations, whatever called the layer.
    let innermost = |i: usize| {
        !frames[i + 1..].iter().any(|(p, f)| {
            *f == "forward"
                || f.contains("backward")
                || f.contains("closure")
                || *f == "_call_impl"
                || *f == "training_step"
                || p.contains("/nn/modules/")
        })
    };
    // An engine's start-up and an evaluation loop run the model's forward inside them: their
    // phase holds whatever runs within.
    let phase = |hit: &dyn Fn(&str, &str) -> bool, within: bool| {
        frames
            .iter()
            .position(|(p, f)| hit(&p.replace('\\', "/").to_ascii_lowercase(), f))
            .is_some_and(|i| within || innermost(i))
    };
    let engine = |p: &str, f: &str| {
        (p.contains("/vllm/") || p.contains("/sglang/"))
            && matches!(
                f,
                "determine_num_available_blocks"
                    | "determine_available_memory"
                    | "profile_run"
                    | "_initialize_kv_caches"
                    | "initialize_cache"
                    | "load_model"
            )
    };
    let optimizer = |p: &str, f: &str| {
        (f == "optimizer_step"
            || (matches!(f, "step" | "_init_group")
                && (p.contains("/optim/") || p.contains("optimizer") || p.contains("adam"))))
            && !p.contains("lightning")
    };
    let wrap = |p: &str, f: &str| {
        (p.contains("/fsdp/") && (f.starts_with("_init") || f == "__init__" || f == "_get_shard"))
            || (p.contains("partition_parameters")
                && matches!(
                    f,
                    "_post_init_method" | "_convert_to_deepspeed_param" | "_zero_init_param"
                ))
    };
    // The trainer saving the optimizer state (HF Trainer's `_save_optimizer_and_scheduler`,
    // DeepSpeed's ZeRO checkpoint): the states, not the weights, are what the save gathers.
    let optimizer_save = |p: &str, f: &str| {
        f == "_save_optimizer_and_scheduler"
            || (p.contains("deepspeed")
                && matches!(f, "_save_zero_checkpoint" | "_get_zero_ckpt_name"))
    };
    // A save's own function, not a dispatcher that also logs or evaluates (the HF Trainer's
    // `_maybe_log_save_evaluate` runs the evaluation loop: T2824).
    let save = |_: &str, f: &str| {
        (f.split('_').any(|w| w == "save")
            && !f
                .split('_')
                .any(|w| matches!(w, "evaluate" | "eval" | "log")))
            || matches!(f, "state_dict" | "full_state_dict")
    };
    let eval_loop = |p: &str, f: &str| {
        (p.contains("-packages/") || p.contains("lightning"))
            && matches!(
                f,
                "evaluation_loop"
                    | "prediction_loop"
                    | "evaluation_step"
                    | "_evaluation_step"
                    | "validation_loop"
                    | "run_evaluation"
                    | "_run_evaluate"
                    | "predict_loop"
            )
    };
    if phase(&engine, true) {
        return Some(engine_start_oom());
    }
    // Each phase with its lever (Chinese, English), tried in order.
    let phases: [(&FrameTest, bool, &str, &str); 5] = [
        (
            &optimizer,
            false,
            "把优化器状态切分到各张卡上（DeepSpeed ZeRO stage 3 或 FSDP），或者把优化器 offload 到 CPU（DeepSpeed `offload_optimizer`），或者换 8-bit 优化器：显存不够发生在优化器的 step 里，Adam 在第一步为每个参数分配两份 fp32 状态，它们随参数量增长，减小 batch 省不下来。",
            "Shard the optimizer states across the GPUs (DeepSpeed ZeRO stage 3, or FSDP) or offload the optimizer to the CPU (DeepSpeed `offload_optimizer`), or use an 8-bit optimizer: the OOM is raised in the optimizer step, where Adam allocates two fp32 states per parameter on the first step; they grow with the parameters trained, not with the batch.",
        ),
        (
            &wrap,
            false,
            "减少要训练的参数（LoRA 或其他 PEFT 方法），或者把参数和优化器状态 offload 到 CPU（FSDP `cpu_offload`、ZeRO-3 offload），或者用更多、更大的 GPU：显存不够发生在 FSDP/ZeRO 切分模型的时候，第一步还没开始，全量模型的状态在这些卡上放不下，任何 batch 设置都没用。",
            "Train fewer parameters (LoRA or another parameter-efficient method), offload parameters and optimizer states to the CPU (FSDP `cpu_offload`, ZeRO-3 offload), or use more or larger GPUs: the OOM is raised while FSDP or ZeRO shards the model, before the first step, so the full model's states do not fit on these cards whatever the batch.",
        ),
        (
            &optimizer_save,
            false,
            "保存 checkpoint 时不要带优化器状态（HF Trainer / LLaMA-Factory 的 `save_only_model: true`），或者把优化器状态 offload 到 CPU：显存不够发生在保存优化器状态的时候（ZeRO/分片的优化器状态要先收集起来），不是训练的某一步；这样保存的 checkpoint 恢复训练时优化器会重新开始。",
            "Save the checkpoints without the optimizer state (HF Trainer and LLaMA-Factory: `save_only_model: true`), or offload the optimizer states to the CPU: the OOM is raised while the optimizer state is gathered for the save, not in a training step; a checkpoint saved this way resumes with a fresh optimizer.",
        ),
        (
            &save,
            false,
            "在 CPU 上收集要保存的 state dict：显存不够发生在保存 checkpoint 时收集 state dict 的过程中，而不是训练的某一步——FSDP 用 full state dict 时设 `FullStateDictConfig(offload_to_cpu=True, rank0_only=True)`，或者改存分片的 state dict（`SHARDED_STATE_DICT`）；其他情况先把张量搬到 CPU 再保存。",
            "Gather the state dict on the CPU for the save: the OOM is raised while a checkpoint's state dict is collected, not in a training step — with FSDP's full state dict set `FullStateDictConfig(offload_to_cpu=True, rank0_only=True)` or save a sharded one (`SHARDED_STATE_DICT`); otherwise move the tensors to the CPU before saving.",
        ),
        (
            &eval_loop,
            true,
            "降低评估的 batch（`per_device_eval_batch_size`）或生成长度，在收集预测时把它们搬到 CPU（HF Trainer 的 `eval_accumulation_steps`，或者在每个评估 step 的输出上调用 `.cpu()`），或者少评估几次（调大 `eval_steps`，或训练完再评估）：显存不够发生在评估循环里，叠加在训练状态之上，它的 batch 和留下的输出都不由训练 batch 决定。",
            "Lower the evaluation batch (`per_device_eval_batch_size`) or the generation length, move the predictions to the CPU as they are gathered (HF Trainer's `eval_accumulation_steps`, or `.cpu()` on each evaluation step's outputs), or evaluate less often (a larger `eval_steps`, or once after training): the OOM is raised in the evaluation loop, on top of the training state, whose batch and kept outputs the training batch does not set.",
        ),
    ];
    phases
        .iter()
        .find(|(is, within, _, _)| phase(*is, *within))
        .map(|(_, _, zh_text, en)| Text::new(*en, *zh_text))
}

/// The quoted keys of a `Missing key(s) in state_dict: "a", "b"` (or `Unexpected key(s)`) line.
fn state_dict_keys<'a>(lines: &[&'a str], head: &str) -> Vec<&'a str> {
    let Some(rest) = lines
        .iter()
        .find_map(|l| l.split_once(head).map(|(_, r)| r))
    else {
        return Vec::new();
    };
    rest.split('"')
        .skip(1)
        .step_by(2)
        .filter(|k| !k.is_empty())
        .collect()
}

/// When the keys a model missed and the keys the checkpoint held instead differ by one
/// constant prefix (`module.` from DataParallel/DDP, `model.`, `base_model.model.`), that
/// prefix: the keys are right, one side is wrapped once more than the other. Every missing key
/// that has a prefixed or unprefixed twin among the unexpected ones must agree on it, and at
/// least two must pair.
fn state_dict_prefix(ctx: &DeriveCtx) -> Option<Text> {
    let missing = state_dict_keys(ctx.lines, "Missing key(s) in state_dict:");
    let unexpected = state_dict_keys(ctx.lines, "Unexpected key(s) in state_dict:");
    if missing.is_empty() || unexpected.is_empty() {
        return None;
    }
    // (prefix, the model wants it): `true` when the model's keys carry the prefix.
    let mut found: Option<(&str, bool)> = None;
    let mut pairs = 0;
    for m in &missing {
        let here = unexpected.iter().find_map(|u| {
            if let Some(p) = m.strip_suffix(u).filter(|p| p.ends_with('.')) {
                Some((p, true))
            } else {
                u.strip_suffix(m)
                    .filter(|p| p.ends_with('.'))
                    .map(|p| (p, false))
            }
        });
        let Some(h) = here else { continue };
        if found.is_some_and(|f| f != h) {
            return None;
        }
        found = Some(h);
        pairs += 1;
    }
    let (prefix, model_wants) = found.filter(|_| pairs >= 2)?;
    Some(if model_wants {
        text!(
            "Add the `{prefix}` prefix to every key of the checkpoint before loading (`{{'{prefix}' + k: v for k, v in state.items()}}`), or load into the model before it is wrapped (`model.module.load_state_dict(…)`): each key the model missed is a key the checkpoint holds with `{prefix}` in front, so the model here is wrapped (DataParallel/DDP) once more than the one that saved it.",
            "加载前给 checkpoint 的每个 key 加上 `{prefix}` 前缀（`{{'{prefix}' + k: v for k, v in state.items()}}`），或者在包装之前加载（`model.module.load_state_dict(…)`）：模型缺的每个 key 都是 checkpoint 里某个 key 前面加上 `{prefix}`，说明这里的模型比保存时多包了一层（DataParallel/DDP）。"
        )
    } else {
        text!(
            "Strip the `{prefix}` prefix from every key of the checkpoint before loading (`{{k.removeprefix('{prefix}'): v for k, v in state.items()}}`), or wrap the model the same way before loading: each key the checkpoint holds is the model's own key with `{prefix}` in front, so it was saved from a model wrapped (DataParallel/DDP) once more than this one.",
            "加载前去掉 checkpoint 每个 key 的 `{prefix}` 前缀（`{{k.removeprefix('{prefix}'): v for k, v in state.items()}}`），或者先用同样的方式包装模型再加载：checkpoint 里的每个 key 都是模型自己的 key 前面多了 `{prefix}`，说明保存它的模型比这里多包了一层（DataParallel/DDP）。"
        )
    })
}

/// The function of a frame in the user's own code (not an installed package) that evaluates:
/// `validate`, `evaluate`, `run_eval`, `val_epoch`, `test`. A framework's evaluation hooks
/// (Lightning's `validation_step`, the Trainer's loops) already run without gradients and
/// are not this.
/// A function that scores collected outputs rather than running a model: one of its words
/// (split at `_`) is a score, a metric or the predictions.
fn scoring_function(func: &str) -> bool {
    let f = func.to_ascii_lowercase();
    f.split('_').any(|w| {
        matches!(
            w,
            "score" | "scores" | "scoring" | "metric" | "metrics" | "predictions" | "accuracy"
        )
    })
}

fn own_evaluation<'a>((path, func): &(&str, &'a str)) -> Option<&'a str> {
    if path.contains("-packages/") || path.contains("-packages\\") || func.ends_with("_step") {
        return None;
    }
    let f = func.to_ascii_lowercase();
    let words = || f.split('_');
    if words().any(|w| w.starts_with("train")) {
        return None;
    }
    words()
        .any(|w| {
            matches!(
                w,
                "validate"
                    | "validation"
                    | "valid"
                    | "val"
                    | "eval"
                    | "evaluate"
                    | "evaluation"
                    | "test"
            )
        })
        .then_some(*func)
}

/// Only when something other than this process's PyTorch holds the card.
fn gpu_oom_foreign(ctx: &DeriveCtx) -> Option<Text> {
    if gpu_memory_holder(ctx.captures, ctx.lines) != Some(GpuMemoryHolder::OtherProcess) {
        return None;
    }
    gpu_oom_plan(ctx)
}

/// The failing traceback passes through `torch.nn.DataParallel` (`torch/nn/parallel/
/// data_parallel.py`): one process drives every visible GPU, as the Trainer arranges by itself
/// when plain `python` starts a script on a machine with several. Its replicas and scattered
/// inputs (and `generate` on a wrapped model) fail where one process per GPU does not, so the
/// launch is the step, whatever the kernel checked.
fn data_parallel(ctx: &DeriveCtx) -> Option<Text> {
    let frame = ctx.lines.iter().find_map(|l| {
        let (path, _) = frame_of(l)?;
        path.replace('\\', "/")
            .ends_with("torch/nn/parallel/data_parallel.py")
            .then_some(())
    });
    frame?;
    Some(Text::new(
        "Launch the script with one process per GPU (`accelerate launch` or `torchrun --nproc_per_node N`), or expose a single GPU (`CUDA_VISIBLE_DEVICES=0`): the traceback passes through `torch.nn.DataParallel` (`data_parallel.py`), one process driving every visible GPU, which the Trainer sets up by itself when plain `python` starts the script on a machine with several, and its replicas and scattered inputs (and `generate` on the wrapped model) fail where one process per GPU does not.",
        "每张 GPU 启动一个进程来运行脚本（`accelerate launch` 或 `torchrun --nproc_per_node N`），或者只暴露一张卡（`CUDA_VISIBLE_DEVICES=0`）：traceback 经过了 `torch.nn.DataParallel`（`data_parallel.py`），也就是一个进程驱动所有可见的 GPU——直接用 `python` 在多卡机器上启动时 Trainer 会自己这样包装模型，而它的副本和被切分的输入（以及包装后的 `generate`）会在一卡一进程时不会出错的地方出错。",
    ))
}

/// A cited traceback frame inside a loss: a file whose name holds `loss` (`loss.py`,
/// `ppyolo_loss.py`) or a file under a `loss`/`losses` directory (`loss/dice.py`). The value
/// is the frame's last two path segments, as the fix names it. An index a loss reads on the
/// device is a target's class label (`one_hot(labels, num_classes)`, `scatter_(1, gt, 1)`,
/// `labels > 0` against the classifier), not a token id.
fn loss_frame(ctx: &DeriveCtx) -> Option<String> {
    ctx.lines.iter().rev().find_map(|l| {
        let (path, _) = frame_of(l)?;
        let path = path.replace('\\', "/").to_ascii_lowercase();
        let segs: Vec<&str> = path.split('/').collect();
        let (file, dirs) = segs.split_last()?;
        let stem = file.strip_suffix(".py")?;
        (stem.contains("loss") || dirs.iter().any(|d| matches!(*d, "loss" | "losses")))
            .then(|| segs[segs.len().saturating_sub(2)..].join("/"))
    })
}

/// The class-label reading of an assert, naming the loss frame it was raised in when known.
fn class_label_hint(loss: Option<&str>) -> Text {
    let lead = match loss {
        Some(f) => text!(
            "the assert was raised in the loss (`{f}`), where the index is a target's class label, so ",
            "断言发生在 loss 里（`{f}`），那里的下标是目标的类别标签，所以"
        ),
        None => Text::default(),
    };
    text!(
            "{lead}a class label is outside [0, num_classes): find the labels out of range in the dataset (`max(labels)`, a stray category id in the annotations) and renumber the classes as zero-based ids below the class count (a detector that adds 1 for background wants them from 0), and change `num_classes` to match only if the dataset really has that many classes; labels such as -1 or 255 that mean 'ignore' need the loss's `ignore_index`.",
            "{lead}类别标签超出了 [0, num_classes)：先在数据集里找出越界的标签（`max(labels)`，标注里多出来的类别 id），把类别重新编号为从 0 开始、小于类别数的 id（检测器自己会为背景加 1 的，类别要从 0 编起），只有数据集确实有更多类别时才把 `num_classes` 改成与之一致；表示“忽略”的 -1、255 这类标签要在 loss 里设 `ignore_index`。";
        lead = lead
    )
}

/// The assertion text of a device-side assert, read as a domain statement. Without the
/// kernel's assertion line (only `device-side assert triggered`), a loss frame in the
/// traceback still says what the index was.
fn assert_hint(ctx: &DeriveCtx) -> Option<Text> {
    let Some(a) = ctx.capture("assertion") else {
        let f = loss_frame(ctx)?;
        let mut hint = class_label_hint(Some(&f));
        for side in hint.each_mut() {
            let mut c = side.chars();
            let first = c.next()?.to_uppercase().collect::<String>();
            *side = first + c.as_str();
        }
        return Some(hint);
    };
    let scatter = a.contains("idx_dim >= 0 && idx_dim < index_size");
    let what = if a.contains("n_classes") || a.contains("n_class") {
        class_label_hint(None)
    } else if scatter && let Some(f) = loss_frame(ctx) {
        class_label_hint(Some(&f))
    } else if a.contains("srcIndex < srcSelectDimSize")
        || a.contains("ind_dim_size")
        || a.contains("index out of bounds")
    {
        Text::new(
            "an index into an embedding or gather is out of range: token ids >= the embedding's size (tokenizer larger than the model's vocabulary: `model.resize_token_embeddings(len(tokenizer))`), or position ids beyond `max_position_embeddings`.",
            "embedding 或 gather 的下标越界：token id 大于等于 embedding 的大小（tokenizer 的词表比模型大，需要 `model.resize_token_embeddings(len(tokenizer))`），或者 position id 超过了 `max_position_embeddings`。",
        )
    } else if a.contains("input_val >= zero && input_val <= one") {
        Text::new(
            "binary cross-entropy got an input outside [0, 1]: apply a sigmoid or use `BCEWithLogitsLoss`.",
            "binary cross-entropy 的输入不在 [0, 1] 内：先过一层 sigmoid，或者改用 `BCEWithLogitsLoss`。",
        )
    } else {
        return Some(Text::new(
            format!(
                "The kernel checked `{a}` and it failed: one of the index tensors it reads is out of range."
            ),
            format!("kernel 里的检查 `{a}` 没通过：它读取的某个下标张量越界了。"),
        ));
    };
    Some(text!(
        "The kernel checked `{a}`: {what}",
        "kernel 里的检查 `{a}` 没通过：{what}";
        what = what
    ))
}

fn batch_plan(ctx: &DeriveCtx) -> Option<Text> {
    let n = |k: &str| ctx.capture(k)?.parse::<u64>().ok();
    let (train, micro, accum, world) = (n("train")?, n("micro")?, n("accum")?, n("world")?);
    let product = micro * accum * world;
    let mut s = Text::new(
        format!(
            "train_batch_size is {train} but micro-batch {micro} × accumulation {accum} × {world} GPUs = {product}."
        ),
        format!(
            "train_batch_size 是 {train}，但 micro-batch {micro} × 梯度累积 {accum} × {world} 张卡 = {product}。"
        ),
    );
    if micro * world > 0 && train % (micro * world) == 0 {
        let v = train / (micro * world);
        s.push(&Text::new(
            format!(" Keep the global batch of {train}: set gradient_accumulation_steps to {v}."),
            format!("要保持全局 batch size {train}，把 gradient_accumulation_steps 设为 {v}。"),
        ));
    } else if accum * world > 0 && train % (accum * world) == 0 {
        let v = train / (accum * world);
        s.push(&Text::new(
            format!(
                " Keep the global batch of {train}: set train_micro_batch_size_per_gpu to {v}."
            ),
            format!("要保持全局 batch size {train}，把 train_micro_batch_size_per_gpu 设为 {v}。"),
        ));
    }
    s.push(&Text::new(
        format!(" Or set train_batch_size to {product} (or \"auto\" with the HF integration)."),
        format!("或者直接把 train_batch_size 设为 {product}（用 HF 集成时也可以设成 \"auto\"）。"),
    ));
    Some(s)
}

fn disk_full_plan(ctx: &DeriveCtx) -> Option<Text> {
    let path = ctx.capture("path");
    let mount = ctx.capture("mount");
    match (path, mount) {
        (Some(p), Some(m)) => Some(Text::new(
            format!(
                "Writing `{p}` failed because the filesystem at {m} is 100% full: free space there or point the output at a larger volume."
            ),
            format!(
                "写 `{p}` 失败，因为 {m} 所在的文件系统已经 100% 满了：清理那里的空间，或者把输出目录指到更大的盘上。"
            ),
        )),
        (Some(p), None) => Some(Text::new(
            format!(
                "Writing `{p}` failed: its filesystem is full (`df -h $(dirname {p})`); free space there or point the output at a larger volume."
            ),
            format!(
                "写 `{p}` 失败：它所在的文件系统满了（`df -h $(dirname {p})`）；清理那里的空间，或者把输出目录指到更大的盘上。"
            ),
        )),
        (None, Some(m)) => Some(Text::new(
            format!(
                "The filesystem at {m} is 100% full (df): free space there or point the checkpoints at a larger volume; a checkpoint with optimizer state is several times the model's size."
            ),
            format!(
                "{m} 所在的文件系统已经 100% 满了（df）：清理空间，或者把 checkpoint 存到更大的盘上；带 optimizer state 的 checkpoint 往往是模型本身大小的好几倍。"
            ),
        )),
        (None, None) => None,
    }
}

fn memlock_plan(ctx: &DeriveCtx) -> Option<Text> {
    let kb: u64 = ctx.capture("memlock_kb")?.parse().ok()?;
    Some(Text::new(
        format!(
            "The ranks ran with a locked-memory limit of {kb} KiB, far below what RDMA registration needs: set it to unlimited where the ranks start (`ulimit -l unlimited`; Docker `--ulimit memlock=-1:-1`; Slurm: slurmd's `LimitMEMLOCK=infinity` and `PropagateResourceLimitsExcept=MEMLOCK`)."
        ),
        format!(
            "各 rank 运行时的 locked memory 上限只有 {kb} KiB，远低于 RDMA 注册内存所需：在启动 rank 的地方把它设成 unlimited（`ulimit -l unlimited`；Docker 用 `--ulimit memlock=-1:-1`；Slurm 要在 slurmd 上配 `LimitMEMLOCK=infinity` 和 `PropagateResourceLimitsExcept=MEMLOCK`）。"
        ),
    ))
}

fn nofile_plan(ctx: &DeriveCtx) -> Option<Text> {
    let seen: u64 = ctx.capture("nofile")?.parse().ok()?;
    let want = (seen * 16).clamp(65536, 1_048_576);
    let hard = ctx.capture("nofile_hard").and_then(|h| {
        if h == "unlimited" {
            None
        } else {
            h.parse::<u64>().ok()
        }
    });
    let hard_note = match hard {
        Some(h) if h < want => Text::new(
            format!(
                " The hard limit is also {h}: raise it first (Docker `--ulimit nofile={want}:{want}`, systemd `LimitNOFILE={want}`, /etc/security/limits.conf)."
            ),
            format!(
                "硬限制也只有 {h}，要先把它调上去（Docker `--ulimit nofile={want}:{want}`，systemd `LimitNOFILE={want}`，或 /etc/security/limits.conf）。"
            ),
        ),
        _ => Text::default(),
    };
    Some(text!(
        "The open-files limit was {seen}: raise it to {want} in the shell that starts the job (`ulimit -n {want}`).{hard_note}",
        "打开文件数上限是 {seen}：在启动任务的 shell 里把它调到 {want}（`ulimit -n {want}`）。{hard_note}";
        hard_note = hard_note
    ))
}

/// `NCCL_SOCKET_IFNAME` given with NCCL's exact-match prefix (`=ens5`): the name without it.
/// An NCCL that does not know the prefix looks for an interface literally named `=ens5`, so
/// none matches although the interface exists.
fn ifname_exact(ctx: &DeriveCtx) -> Option<Text> {
    let name = ctx.capture("ifname")?.strip_prefix('=')?;
    let name = name.split(',').next()?.trim();
    (!name.is_empty() && !name.starts_with(['=', '^'])).then(|| Text::plain(name))
}

/// The two tensor sizes of a collective mismatch, as torch's fingerprint check reports them:
/// each fingerprint's `TensorShape=[…]` (the line's head, which a cited line keeps), else its
/// summary `Tensor Tensor shapes: 24084544vs 64`.
fn mismatch_sizes(line: &str) -> Option<(&str, &str)> {
    let mut shapes = line
        .split("TensorShape=[")
        .skip(1)
        .filter_map(|t| t.split_once(']'));
    if let (Some((a, _)), Some((b, _))) = (shapes.next(), shapes.next()) {
        return Some((a.trim(), b.trim()));
    }
    let at = line.find("shapes: ")? + "shapes: ".len();
    let (a, b) = line[at..].split_once("vs")?;
    fn size(t: &str) -> Option<&str> {
        let t = t.trim();
        let end = t
            .find(|c: char| !(c.is_ascii_digit() || c == ',' || c == ' ' || c == '[' || c == ']'))
            .unwrap_or(t.len());
        let t = t[..end].trim();
        (!t.is_empty()).then_some(t)
    }
    Some((size(a)?, size(b)?))
}

/// One rank's fingerprint in torch 1.10-1.12's one-rank-a-line form: `Rank R is running
/// inconsistent collective: CollectiveFingerPrint(OpType=OP, TensorShape=[…], …`.
fn rank_fingerprint(line: &str) -> Option<(&str, &str, &str)> {
    const MARK: &str = " is running inconsistent collective: CollectiveFingerPrint(";
    let at = line.find(MARK)?;
    let rank = line[..at].rsplit("Rank ").next()?;
    if rank.is_empty() || !rank.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let rest = &line[at + MARK.len()..];
    let op = rest
        .split("OpType=")
        .nth(1)?
        .split([',', ')'])
        .next()?
        .trim();
    let shape = rest
        .split("TensorShape=[")
        .nth(1)?
        .split_once(']')?
        .0
        .trim();
    Some((rank, op, shape))
}

/// Two shapes (`47, 256, 8` and `48, 256, 8`) of the same rank that differ in their first
/// dimension only.
fn differ_in_first_dim_only(a: &str, b: &str) -> bool {
    let da: Vec<&str> = a.split(',').map(str::trim).collect();
    let db: Vec<&str> = b.split(',').map(str::trim).collect();
    da.len() == db.len() && da.len() > 1 && da[0] != db[0] && da[1..] == db[1..]
}

/// Two ranks ran the same collective (`op_a` = `op_b`) with tensors of different sizes: no
/// rank skipped or reordered a call, so the code path is the same and the data differs. A
/// BROADCAST is DDP's buffer sync (every forward under `broadcast_buffers=True`) of a buffer
/// each rank grew on its own; a reduction or gather means the ranks' parameters or their
/// buckets differ (a model built from rank-dependent data or config).
fn same_collective_plan(ctx: &DeriveCtx) -> Option<Text> {
    let op = ctx.capture("op_a")?;
    let (a, b) = match ctx.capture("op_b") {
        Some(op_b) if op_b != op => return None,
        Some(_) => ctx.lines.iter().find_map(|l| mismatch_sizes(l))?,
        // torch 1.10-1.12 print one rank's fingerprint a line: pair two ranks' lines.
        None => {
            let fps: Vec<_> = ctx
                .lines
                .iter()
                .filter_map(|l| rank_fingerprint(l))
                .collect();
            fps.iter().find_map(|x| {
                fps.iter()
                    .find(|y| y.0 != x.0 && y.1 == op && x.1 == op && y.2 != x.2)
                    .map(|y| (x.2, y.2))
            })?
        }
    };
    if a == b {
        return None;
    }
    let broadcast = op.eq_ignore_ascii_case("BROADCAST");
    // A gather whose shapes differ only in the first dimension gathers a per-batch tensor
    // that has another length on each rank: the data differs, not the model.
    if op.to_ascii_uppercase().contains("GATHER") && differ_in_first_dim_only(a, b) {
        return Some(Text::new(
            format!(
                "Make the tensor every rank passes to {op} the same shape: both ranks ran {op} at the same point with shapes that differ only in the first dimension ([{a}] vs [{b}]), which is a per-batch tensor of another length on each rank (a collate_fn that drops samples, a last partial batch, variable-length items), not a different model. Keep the batch size equal on every rank (no dropping in the collate_fn, `drop_last=True`), or pad to a common size before the gather and drop the padding after it (gather the sizes first)."
            ),
            format!(
                "让每个 rank 传给 {op} 的张量形状一致：两个 rank 在同一位置都调用了 {op}，形状只在第一维不同（[{a}] 对 [{b}]），这是每个 rank 上长度不同的按 batch 组织的张量（collate_fn 丢掉了样本、最后一个不完整的 batch、变长样本），不是模型不同。让每个 rank 的 batch 大小一致（collate_fn 里不要丢样本，`drop_last=True`），或者 gather 之前先补齐到统一大小、gather 之后再去掉补齐的部分（先 gather 各 rank 的大小）。"
            ),
        ));
    }
    Some(if broadcast {
        text!(
            "Take the buffer that differs per rank out of DDP's buffer sync (`DistributedDataParallel(..., broadcast_buffers=False)` when no buffer must match across ranks, or name it in `DistributedDataParallel._set_params_and_buffers_to_ignore_for_model`), keep it as state outside the module, or upgrade the framework that registers it if its release fixes this: both ranks ran {op} at the same point with different sizes ({a} vs {b}), which is DDP broadcasting a registered buffer before a forward, a buffer each rank builds or grows from its own inputs (a position or cache table). The code path is the same on every rank, so no rank-dependent branch is to blame.",
            "把各 rank 不一样的那个 buffer 从 DDP 的 buffer 同步里拿掉（不需要各 rank 一致时用 `DistributedDataParallel(..., broadcast_buffers=False)`，或者用 `DistributedDataParallel._set_params_and_buffers_to_ignore_for_model` 点名它），把它改成模块之外的状态，或者在注册它的框架修复了这个问题时升级该框架：两个 rank 在同一位置都调用了 {op}，但大小不同（{a} 对 {b}），这是 DDP 在前向之前广播已注册的 buffer，而这个 buffer 是各 rank 按自己的输入构建或增长的（位置表或缓存表）。各 rank 走的是同一条代码路径，不是依赖 rank 的分支造成的。"
        )
    } else {
        text!(
            "Build, resize, freeze and wrap the model identically on every rank before DDP/FSDP (from the same configuration and data): both ranks ran {op} at the same point with different sizes ({a} vs {b}), so the code path is the same and the tensors are not: the ranks built different models or gradient buckets (a layer sized from rank-local data or config, a vocabulary or head resized on one rank, parameters frozen differently). `TORCH_DISTRIBUTED_DEBUG=DETAIL` lists each rank's shapes.",
            "在 DDP/FSDP 包装之前，让每个 rank 用相同的配置和数据以相同方式构建、resize、冻结和包装模型：两个 rank 在同一位置都调用了 {op}，但大小不同（{a} 对 {b}），代码路径一样，张量不一样，说明各 rank 构建出的模型或梯度 bucket 不同（按本 rank 的数据或配置决定大小的层、只在一个 rank 上改过大小的词表或输出头、冻结的参数不一样）。`TORCH_DISTRIBUTED_DEBUG=DETAIL` 会列出每个 rank 的形状。"
        )
    })
}

/// One rank's watchdog report of a timed-out collective: `[Rank R] Watchdog caught collective
/// operation timeout: WorkNCCL(SeqNum=S, OpType=OP, NumelIn=N, …`.
fn watchdog_work(line: &str) -> Option<(&str, &str, &str, &str)> {
    let rest = &line[line.find("[Rank ")? + "[Rank ".len()..];
    let (rank, rest) = rest.split_once(']')?;
    let rest = &rest[rest.find("WorkNCCL(SeqNum=")? + "WorkNCCL(SeqNum=".len()..];
    let (seq, rest) = rest.split_once(", OpType=")?;
    let (op, rest) = rest.split_once(", NumelIn=")?;
    let numel = rest.split([',', ')']).next()?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    (digits(rank) && digits(seq) && digits(numel)).then_some((rank, seq, op, numel))
}

/// Two ranks' watchdogs timed out at the same collective number with a different operation or
/// size: each process group numbers its collectives in the order a rank issues them, so at
/// the same number the ranks were in different calls. Neither was stuck in its own work; they
/// are out of step (one ran more batches, or issued a reduction the others did not).
fn ranks_out_of_step(ctx: &DeriveCtx) -> Option<Text> {
    let works: Vec<_> = ctx.lines.iter().filter_map(|l| watchdog_work(l)).collect();
    let (a, b) = works.iter().find_map(|a| {
        works
            .iter()
            .find(|b| b.1 == a.1 && b.0 != a.0 && (b.2 != a.2 || b.3 != a.3))
            .map(|b| (a, b))
    })?;
    let seq = a.1;
    let (ra, oa, na) = (a.0, a.2, a.3);
    let (rb, ob, nb) = (b.0, b.2, b.3);
    Some(Text::new(
        format!(
            "Make every rank issue the same collectives in the same order: at collective #{seq} rank {ra} ran {oa} of {na} elements while rank {rb} ran {ob} of {nb}, so the ranks are out of step, not one of them stuck; either one rank ran more batches than another (uneven shards or an IterableDataset: give every rank the same number of batches, `drop_last=True`, a DistributedSampler) or some ranks reduced what the others did not (a loss term or metric present on some ranks only: reduce the same keys on every rank, zero-filled). `TORCH_DISTRIBUTED_DEBUG=DETAIL` reports the mismatch at the call instead of a timeout."
        ),
        format!(
            "让每个 rank 以相同的顺序发起相同的集合通信：在第 {seq} 个集合通信上，rank {ra} 执行的是 {na} 个元素的 {oa}，而 rank {rb} 执行的是 {nb} 个元素的 {ob}，说明各 rank 步调不一致，而不是某个 rank 卡住了——要么一个 rank 比别的多跑了 batch（各 rank 数据分片不等长或用了 IterableDataset：让每个 rank 的 batch 数相同，`drop_last=True`、用 DistributedSampler），要么只有部分 rank 做了某次归约（只在部分 rank 上出现的 loss 项或指标：在每个 rank 上归约同样的键，缺的补 0）。`TORCH_DISTRIBUTED_DEBUG=DETAIL` 会在调用处直接报告不一致，而不是等到超时。"
        ),
    ))
}

/// A rendezvous failure in a launch with the c10d backend (capture `rdzv_c10d`): the store and
/// the master address the workers are told are the ones rank 0's agent advertises (its own
/// hostname), which another node or container may not reach; the static rendezvous uses the
/// address the user gives.
fn c10d_static_plan(ctx: &DeriveCtx) -> Option<Text> {
    ctx.capture("rdzv_c10d")?;
    Some(Text::new(
        "Launch with the static rendezvous and an address every node reaches (`--rdzv_backend=static --master_addr=<rank 0's address> --master_port=<port> --node_rank=<n>`), or run the containers with host networking: under `--rdzv_backend c10d` the store and the master address the workers connect to are the ones rank 0's agent advertises (its own hostname, inside a container the container's address), and this node could not reach them. On torch 2.1+ `--local_addr` sets the address the agent advertises.",
        "改用 static rendezvous，并给一个所有节点都能连到的地址（`--rdzv_backend=static --master_addr=<rank 0 的地址> --master_port=<端口> --node_rank=<n>`），或者让容器使用 host 网络：用 `--rdzv_backend c10d` 时，worker 去连的 store 和 master 地址是 rank 0 的 agent 自己公布的（它自己的主机名，在容器里就是容器的地址），而这个节点连不上它们。torch 2.1 及以上可以用 `--local_addr` 指定 agent 公布的地址。",
    ))
}

/// A wait for the store this long or longer is the process group's own timeout (minutes), not a
/// launcher's short retry (seconds): the others had been in `init_process_group` that long.
/// A rank 0 that crashed first leaves its own error in the input, which is then the cause.
const LATE_MASTER_MS: u64 = 300_000;

/// A TCPStore client that waited `LATE_MASTER_MS` or more for a store at a loopback address
/// (`host` 127.x, `localhost`, `::1`): on one machine nothing routes, filters or resolves a
/// connection wrongly, so the store did not exist yet: rank 0 reached `init_process_group` that
/// much later than the others (loading or preprocessing data, downloading a model first).
fn loopback_late_master(ctx: &DeriveCtx) -> Option<Text> {
    let host = ctx.capture("host")?.trim();
    let port = ctx.capture("port")?;
    let ms: u64 = ctx.capture("wait_ms")?.parse().ok()?;
    let loopback = host.starts_with("127.") || host == "localhost" || host == "::1";
    if !loopback || ms < LATE_MASTER_MS {
        return None;
    }
    let min = ms / 60_000;
    Some(Text::new(
        format!(
            "Let rank 0 reach `init_process_group` sooner, or raise the timeout: the other ranks waited {min} minutes for the store at {host}:{port} on this same machine, where nothing blocks a connection, so rank 0 was still busy with something else (loading or preprocessing the dataset, downloading a model) and had not created it. Prepare the data once beforehand (or on rank 0 after the process group exists, the others waiting at a barrier), or pass a longer `timeout=` to `init_process_group` (accelerate: `InitProcessGroupKwargs(timeout=…)`)."
        ),
        format!(
            "让 rank 0 更早执行到 `init_process_group`，或者调大超时：其他 rank 在本机的 {host}:{port} 上等了 {min} 分钟的 store，本机连接不会被路由或防火墙挡住，所以是 rank 0 还在忙别的（加载或预处理数据集、下载模型），还没创建 store。事先把数据准备好一次（或者在进程组建立之后只让 rank 0 处理，其余 rank 在 barrier 上等），或者给 `init_process_group` 传更长的 `timeout=`（accelerate：`InitProcessGroupKwargs(timeout=…)`）。"
        ),
    ))
}

/// A socket connect that failed (`peer_addr`, `peer_port`, `sock_err`) on a node whose firewall
/// is running (`firewall_on`, captured by the confirmation `host-firewall-active`).
fn firewall_plan(ctx: &DeriveCtx) -> Option<Text> {
    let state = ctx.capture("firewall_on")?;
    let err = ctx.capture("sock_err")?;
    let peer = match (ctx.capture("peer_addr"), ctx.capture("peer_port")) {
        (Some(a), Some(p)) => format!("{a}<{p}>"),
        _ => "a peer".to_string(),
    };
    Some(Text::new(
        format!(
            "Open the TCP ports between the nodes, or stop the host firewall for the job (its state here: `{state}`): NCCL's socket connect to {peer} failed ({err}), and NCCL listens on ports it picks at run time, so allow all traffic between the cluster's nodes (firewalld: `firewall-cmd --permanent --zone=trusted --add-source=<cluster subnet>`, then `firewall-cmd --reload`)."
        ),
        format!(
            "打开节点之间的 TCP 端口，或者在任务运行时停掉主机防火墙（这台主机的防火墙状态：`{state}`）：NCCL 的 socket 连接 {peer} 失败（{err}），而 NCCL 监听的端口是运行时才挑的，所以要放行集群节点之间的全部流量（firewalld：`firewall-cmd --permanent --zone=trusted --add-source=<集群网段>`，再 `firewall-cmd --reload`）。"
        ),
    ))
}

fn port_plan(ctx: &DeriveCtx) -> Option<Text> {
    let port: u32 = ctx.capture("port")?.parse().ok()?;
    // The launcher's own knob: accelerate names its flag in its own message and takes no
    // `--master_port`; every other launcher here (torchrun, DeepSpeed) does.
    let flag = if ctx.lines.iter().any(|l| {
        l.contains("main_process_port")
            || l.contains("accelerate")
            || l.contains("Tried to launch distributed communication")
    }) {
        "--main_process_port"
    } else {
        "--master_port"
    };
    // A port in Linux's default ephemeral range (`ip_local_port_range`, 32768–60999) was most
    // likely picked by the program itself, free when probed and bound later: a sibling process
    // or an outgoing connection took it in between. A "free port" probe is then the cause, not
    // the cure.
    if (32768..=60999).contains(&port) {
        return Some(Text::new(
            format!(
                "Give each process group (each job, each actor group) a fixed, distinct port outside 32768–60999 (`{flag} 29500`, 29501, …), or retry the bind over several ports: {port} is in the kernel's ephemeral range, so it was most likely picked free by a probe and bound later, and a sibling process on the node or an outgoing connection took it in between."
            ),
            format!(
                "给每个进程组（每个任务、每组 actor）固定一个互不相同、在 32768–60999 之外的端口（例如 `{flag} 29500`、29501 …），或者绑定失败时换几个端口重试：{port} 在内核的临时端口范围里，多半是程序先探测到空闲端口、稍后才绑定，这期间被同一节点上的兄弟进程或某个出站连接占走了。"
            ),
        ));
    }
    // accelerate picks the next free port itself when asked for port 0 (one node only).
    if flag == "--main_process_port" {
        let next = port.saturating_add(1);
        return Some(Text::new(
            format!(
                "Start on another port: `accelerate launch --main_process_port {next} …` (or `main_process_port: {next}` in the accelerate config file; `0` picks the next free port on a single node): port {port} is held by another process (`ss -ltnp 'sport = :{port}'` shows which, usually another training job). Jobs sharing a node need distinct ports."
            ),
            format!(
                "换一个端口启动：`accelerate launch --main_process_port {next} …`（或者在 accelerate 的配置文件里设 `main_process_port: {next}`；单机时设成 `0` 会自动选下一个空闲端口）：{port} 端口已被另一个进程占用（用 `ss -ltnp 'sport = :{port}'` 可以看到是谁，多半是另一个训练任务）。同一节点上的多个任务必须用不同端口。"
            ),
        ));
    }
    let pick = format!(
        r#"{flag}=$(python -c 'import socket; s=socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])')"#
    );
    Some(Text::new(
        format!(
            "Port {port} is already taken on this host: find the holder with `ss -ltnp 'sport = :{port}'` (a leftover rank of an earlier run: kill it), or start on a free port: `{pick}` (torchrun/DeepSpeed `--master_port`, accelerate `--main_process_port`). Jobs sharing a node need distinct ports."
        ),
        format!(
            "本机的 {port} 端口已被占用：用 `ss -ltnp 'sport = :{port}'` 找出占用者（多半是上一次运行残留的 rank，kill 掉即可），或者换一个空闲端口启动：`{pick}`（torchrun/DeepSpeed 用 `--master_port`，accelerate 用 `--main_process_port`）。同一节点上的多个任务必须用不同端口。"
        ),
    ))
}

/// Slurm durations: `[D-]HH:MM:SS`, `MM:SS`.
fn slurm_secs(s: &str) -> Option<u64> {
    let (days, rest) = match s.split_once('-') {
        Some((d, r)) => (d.parse::<u64>().ok()?, r),
        None => (0, s),
    };
    let parts: Vec<u64> = rest
        .split(':')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    let secs = match parts.as_slice() {
        [h, m, s] => h * 3600 + m * 60 + s,
        [m, s] => m * 60 + s,
        [m] => m * 60,
        _ => return None,
    };
    Some(days * 86400 + secs)
}

fn time_limit_plan(ctx: &DeriveCtx) -> Option<Text> {
    let elapsed = slurm_secs(ctx.capture("elapsed")?)?;
    let limit = slurm_secs(ctx.capture("limit")?)?;
    let hm = |s: u64| format!("{}h{:02}m", s / 3600, (s % 3600) / 60);
    if limit == 0 {
        return None;
    }
    if elapsed + 60 < limit {
        return Some(Text::new(
            format!(
                "The job ran {} of its {} limit: it was stopped before the limit, so preemption or a cancel is likelier than the time limit.",
                hm(elapsed),
                hm(limit)
            ),
            format!(
                "任务运行了 {}，时限是 {}：还没到时限就被停了，更可能是被抢占或被取消，而不是超时。",
                hm(elapsed),
                hm(limit)
            ),
        ));
    }
    let ask = ((limit as f64 * 1.25) / 3600.0).ceil() as u64 * 3600;
    let every = hm((limit / 4).max(600));
    Some(Text::new(
        format!(
            "The job ran {} against a {} limit: it hit the limit. Request at least {} (`--time`), or checkpoint at least every {} so a requeued job loses little.",
            hm(elapsed),
            hm(limit),
            hm(ask),
            every
        ),
        format!(
            "任务运行了 {}，时限是 {}：撞上了时限。申请至少 {}（`--time`），或者至少每 {} 存一次 checkpoint，这样重新排队后损失不大。",
            hm(elapsed),
            hm(limit),
            hm(ask),
            every
        ),
    ))
}

/// Where the run says it trains in fp16: the text a confirmation rule captured
/// (`half_precision`), else an fp16 switch among the settings read (`config.fp16`,
/// `config.fp16_enabled`, `config.mixed_precision`).
fn half_precision(ctx: &DeriveCtx) -> Option<String> {
    if let Some(c) = ctx.capture("half_precision") {
        return Some(c.trim().to_string());
    }
    let on = |name: &str, vals: &[&str]| {
        ctx.facts.get(name).and_then(|f| {
            let v = f.value.to_string();
            let v = v.trim_matches(|c| c == '\'' || c == '"');
            vals.iter()
                .any(|x| x.eq_ignore_ascii_case(v))
                .then(|| format!("{} = {v}", name.trim_start_matches("config.")))
        })
    };
    on("config.fp16", &["true", "1"])
        .or_else(|| on("config.fp16_enabled", &["true"]))
        .or_else(|| on("config.mixed_precision", &["fp16"]))
}

/// A loss logged NaN within a few lines of the same series logged finite and non-zero (the
/// capture `nan_after_finite` of a confirmation whose signature looks back for the finite
/// value): the run was training, so the optimisation diverged; a loss NaN from its first
/// logged step (bad inputs, a precision or version problem) never has it.
fn nan_after_finite(ctx: &DeriveCtx) -> Option<String> {
    ctx.capture("nan_after_finite")
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
}

/// `giou_loss: nan`, `loss_ctc=7.01`, `lm_loss 3.2`: a named loss value on a step line.
static LOSS_TERM: std::sync::LazyLock<Option<regex::Regex>> = std::sync::LazyLock::new(|| {
    regex::Regex::new(
        r"(?i)\b([a-z][a-z0-9_]*loss[a-z0-9_]*)['\x22]?\s*[:=]?\s*['\x22]?(nan|-?inf|-?\d+(?:\.\d+)?(?:e[-+]?\d+)?)\b",
    )
    .ok()
});

/// Whether a loss key names the sum the step optimises (or another series) rather than one
/// term of it: `loss`, `all_loss`, `total_loss`, `train_loss`, `lm_loss`, evaluation keys, and
/// a loss's settings (`loss_scale`, `loss_weight`).
fn loss_total_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    matches!(
        k.as_str(),
        "loss"
            | "all_loss"
            | "total_loss"
            | "loss_total"
            | "sum_loss"
            | "loss_sum"
            | "train_loss"
            | "avg_loss"
            | "mean_loss"
            | "lm_loss"
            | "overall_loss"
    ) || ["eval", "val", "valid", "test"]
        .iter()
        .any(|p| k.starts_with(p))
        || ["scale", "weight", "coef", "ratio"]
            .iter()
            .any(|p| k.contains(p))
}

/// The loss term that went non-finite first: a cited step line whose named terms (keys holding
/// `loss` other than the total) are all finite but one. A NaN that starts in one term is that
/// term's own arithmetic (a log, division or square root reaching zero or a negative), not the
/// whole optimisation: the sum turns NaN with it, the other terms stay finite for a step.
fn nan_loss_term(ctx: &DeriveCtx) -> Option<String> {
    let re = LOSS_TERM.as_ref()?;
    ctx.lines.iter().find_map(|l| {
        let terms: Vec<(&str, bool)> = re
            .captures_iter(l)
            .filter_map(|c| {
                let key = c.get(1)?.as_str();
                let v = c.get(2)?.as_str().to_ascii_lowercase();
                (!loss_total_key(key)).then_some((key, v.ends_with("nan") || v.ends_with("inf")))
            })
            .collect();
        let bad: Vec<&str> = terms.iter().filter(|t| t.1).map(|t| t.0).collect();
        (bad.len() == 1 && terms.len() >= 2).then(|| bad[0].to_string())
    })
}

/// A torch build tag's CUDA release: `118` → `11.8`, `92` → `9.2`, `128` → `12.8`.
fn cuda_of_tag(tag: &str) -> Option<String> {
    if !(2..=3).contains(&tag.len()) || !tag.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = tag.split_at(tag.len() - 1);
    Some(format!("{major}.{minor}"))
}

/// `major.minor` of a version (`11.4.152` → `11.4`).
fn major_minor(v: &str) -> Option<String> {
    let mut it = v.trim().split('.');
    let (a, b) = (it.next()?, it.next()?);
    let digits = |x: &str| !x.is_empty() && x.bytes().all(|c| c.is_ascii_digit());
    (digits(a) && digits(b)).then(|| format!("{a}.{b}"))
}

/// nvcc's release and the CUDA torch was built for differ: what the machine compiled for the
/// run was built with a toolkit torch does not run on, and a kernel so built faults rather
/// than failing to load. Read from a confirmation's captures (`nvcc_release`; `torch_cuda`, or
/// `torch_cuda_tail`, the digits after a `+cu1` tag on nvcc's line) or an env dump's facts
/// (`version.cuda_toolkit`, `version.torch_cuda`).
fn toolkit_mismatch(ctx: &DeriveCtx) -> Option<Text> {
    let fact = |n: &str| ctx.facts.get(n).map(|f| f.value.to_string());
    let nvcc = confirmed(ctx, "nvcc_release")
        .or_else(|| fact("version.cuda_toolkit"))
        .and_then(|v| major_minor(&v))?;
    let torch = confirmed(ctx, "torch_cuda")
        .or_else(|| confirmed(ctx, "torch_cuda_tail").and_then(|t| cuda_of_tag(&format!("1{t}"))))
        .or_else(|| fact("version.torch_cuda"))
        .and_then(|v| major_minor(&v))?;
    if nvcc == torch {
        return None;
    }
    Some(Text::new(
        format!(
            "Rebuild the extensions compiled on this machine with the CUDA {torch} toolkit: nvcc is release {nvcc} while torch is built for CUDA {torch} (`+cu{tag}`), and a kernel compiled here (the project's own ops, a rasterizer, a JIT-built extension) for another CUDA than torch's faults at run time instead of failing to load. Install the {torch} toolkit (or point `CUDA_HOME` at it), remove the old build (`build/`) and reinstall the extension; or install the torch build for CUDA {nvcc}.",
            tag = torch.replace('.', "")
        ),
        format!(
            "用 CUDA {torch} 工具包重新编译本机编译的扩展：nvcc 是 {nvcc}，而 torch 是为 CUDA {torch} 编译的（`+cu{tag}`），本机编译的 kernel（自己的算子、rasterizer、JIT 扩展）对不上 torch 的 CUDA 时会在运行中非法访问，而不是加载失败。装上 {torch} 工具包（或把 `CUDA_HOME` 指向它），清掉旧的编译产物（`build/`）后重新安装扩展；或者换成为 CUDA {nvcc} 编译的 torch。",
            tag = torch.replace('.', "")
        ),
    ))
}

/// The package whose release the paste shows (captures `release_pkg`, and `release_ver` of the
/// same hit when the line holds the number): a `print(torch.__version__)`, a `pip list | grep`
/// or `pip show` of a framework, a `transformer_engine version: …` banner. Beside a native crash
/// or a GPU fault whose stack names no extension, decoder or other package (the variants that
/// read those come first), the release of the framework or kernel library the user checked is
/// the lever: such crashes are most often a bug of that release or a build that does not fit
/// the machine, and another release is the step (T0639, T0813, T1105, T1807, T2213, T2403,
/// T2508). The name is the one `pip` takes.
fn release_shown(ctx: &DeriveCtx) -> Option<Text> {
    let at = ctx
        .captures
        .iter()
        .position(|(n, v)| n == "release_pkg" && !v.trim().is_empty())?;
    let pkg = ctx.captures[at].1.trim().to_ascii_lowercase();
    let pkg = match pkg.as_str() {
        "tf" => "tensorflow".to_string(),
        "pytorch" => "torch".to_string(),
        "transformer-engine" => "transformer_engine".to_string(),
        _ => pkg,
    };
    let ver = ctx
        .captures
        .get(at + 1)
        .filter(|(n, v)| n == "release_ver" && !v.trim().is_empty())
        .map(|(_, v)| format!(" ({})", v.trim()))
        .unwrap_or_default();
    Some(Text::new(
        format!(
            "Upgrade the {pkg} release the run has{ver}, or pin the one the project was written for"
        ),
        format!("升级这次运行装的 {pkg}{ver}，或者固定到项目所针对的版本"),
    ))
}

/// Attention implementations a training framework patches into the model at load, each with
/// the words of the banner it prints then, its name, and how to turn it off for a rerun.
const PATCHED_ATTENTION: &[(&str, &str, &str, &str)] = &[
    (
        "FlashAttention-2",
        "FlashAttention-2",
        "`flash_attn: disabled` or `sdpa` in LLaMA-Factory's config, `attn_implementation=\"sdpa\"` or `\"eager\"` in transformers",
        "LLaMA-Factory 配置里的 `flash_attn: disabled` 或 `sdpa`，transformers 里的 `attn_implementation=\"sdpa\"` 或 `\"eager\"`",
    ),
    (
        "shift short attention",
        "LongLoRA shift short attention",
        "train without `shift_attn`, or update LLaMA-Factory to a release whose patch keeps the half-precision backward finite",
        "去掉 `shift_attn` 训练，或者把 LLaMA-Factory 更新到这个补丁在半精度反向里不再出错的版本",
    ),
];

/// The attention implementation a framework announced patching in at load (capture
/// `patched_attention` of a confirmation), beside a NaN loss: the patched kernel or its
/// rewrite of the attention is what returns non-finite values on this model, precision and
/// GPU, and turning it off is one setting (T2021: FlashAttention-2, NaN from the first step
/// while precision, DeepSpeed and torch were already varied; T2713: LongLoRA's shift short
/// attention in fp16).
fn patched_attention(ctx: &DeriveCtx) -> Option<Text> {
    let said = confirmed(ctx, "patched_attention")?;
    let (_, name, off, off_zh) = PATCHED_ATTENTION
        .iter()
        .find(|(words, ..)| said.contains(words))?;
    Some(Text::new(
        format!(
            "Turn off the {name} patched into the model at load for a rerun ({off}): the log shows `{said}`, and the loss is not finite from then on"
        ),
        format!(
            "关掉加载时打进模型的 {name} 再重跑（{off_zh}）：日志里是 `{said}`，loss 从那以后就不是有限值"
        ),
    ))
}

/// The text of a confirmation's capture `name`, trimmed; `None` when absent or empty.
fn confirmed(ctx: &DeriveCtx, name: &str) -> Option<String> {
    ctx.capture(name)
        .map(|c| c.trim().to_string())
        .filter(|c| !c.is_empty())
}

/// Where a NaN run names the fused scaled-dot-product attention path (capture
/// `fused_attention` of a confirmation): fused bf16/fp16 attention kernels are a known NaN
/// source on some model, GPU and torch combinations, so the attention implementation is the
/// first thing to change.
fn fused_attention(ctx: &DeriveCtx) -> Option<String> {
    confirmed(ctx, "fused_attention")
}

/// Parameters or optimizer states offloaded to CPU memory (capture `cpu_offload` of a
/// confirmation): beside a host OOM, the offload is what filled host RAM (T2805, T2806: an
/// RL recipe offloading the actor or reference model on every rank of one node).
fn cpu_offload(ctx: &DeriveCtx) -> Option<String> {
    confirmed(ctx, "cpu_offload")
}

/// PyTorch TunableOp switched on for the run (capture `tunableop` of a confirmation): its
/// tuning runs candidate GEMMs on copies of the operands, and several releases sized those
/// copies wrongly for batched or strided GEMMs, which faults on read.
fn tunableop(ctx: &DeriveCtx) -> Option<String> {
    confirmed(ctx, "tunableop")
}

/// A GRPO run sampling one completion per prompt (the capture `single_generation` of a
/// confirmation): beside a NaN loss, the group of one is the cause.
fn single_generation(ctx: &DeriveCtx) -> Option<String> {
    confirmed(ctx, "single_generation")
}

/// `load_best_model_at_end` with the evaluation off (capture `eval_off`): with nothing to
/// evaluate there is no best model, so matching the save schedule to it would stop saving.
/// When the command line asked for evaluation under the old argument name (a confirmation's
/// capture `old_eval_arg`), the flag was not read.
fn eval_off_plan(ctx: &DeriveCtx) -> Option<Text> {
    ctx.capture("eval_off")?;
    Some(if ctx.capture("old_eval_arg").is_some() {
        Text::new(
            "Pass `--eval_strategy` instead of `--evaluation_strategy`: the command line asks for evaluation under the argument's old name, which recent transformers releases no longer read, so the evaluation stayed off (`no`) and `load_best_model_at_end` has no evaluation to pick the best checkpoint from.",
            "用 `--eval_strategy` 代替 `--evaluation_strategy`：命令行用的是这个参数的旧名字，较新的 transformers 版本不再读取它，所以评估仍然是关闭的（`no`），`load_best_model_at_end` 没有评估结果可以用来挑选最优 checkpoint。",
        )
    } else {
        Text::new(
            "Turn evaluation on with the same schedule as saving (`eval_strategy` equal to `save_strategy`, e.g. `epoch`, and an eval dataset), or set `load_best_model_at_end=False`: the check found evaluation off (`no`), so there is no best model to reload, and setting the save strategy to match it would stop checkpointing altogether.",
            "按和保存相同的节奏打开评估（`eval_strategy` 与 `save_strategy` 一致，比如 `epoch`，并提供评估数据集），或者设置 `load_best_model_at_end=False`：检查发现评估是关闭的（`no`），没有最优模型可加载；反过来把保存策略改成和它一致，就完全不保存 checkpoint 了。",
        )
    })
}

/// A host allocation that failed while the DataLoader collated a batch: the innermost frame
/// outside torch's tensor code is the collating function (`default_collate`, a `collate_fn`),
/// so the allocation is one batch and the batch size is the lever.
fn collate_allocation(ctx: &DeriveCtx) -> Option<String> {
    let frames: Vec<(&str, &str)> = ctx.lines.iter().filter_map(|l| frame_of(l)).collect();
    let (path, func) = frames.last()?;
    let collating = func.contains("collate") || path.ends_with("/_utils/collate.py");
    collating.then(|| func.to_string())
}

/// A GPU OOM in a run whose sampled GPU memory rose through the whole run (the fact
/// `gpu.<index>.memory_climb_from_bytes`) and not while a model or checkpoint loaded (its
/// frames): what the loop keeps from step to step grows until the card is full, so a smaller
/// batch only moves the failure later.
fn gpu_memory_climb(ctx: &DeriveCtx) -> Option<Text> {
    let f = ctx.facts.matching("gpu.*.memory_climb_from_bytes").next()?;
    let gpu = f.name.split('.').nth(1)?;
    let from = f.value.to_string().parse::<f64>().ok()?;
    let loading = ctx
        .lines
        .iter()
        .filter_map(|l| frame_of(l))
        .any(|(_, func)| {
            matches!(
                func,
                "from_pretrained"
                    | "load_state_dict"
                    | "load_checkpoint"
                    | "load"
                    | "_load_from_state_dict"
            )
        });
    if loading {
        return None;
    }
    let peak = ctx
        .facts
        .num(&crate::fact_names::gpu_memory_peak_bytes(gpu.parse().ok()?))
        .map(super::template::human_bytes);
    let h = super::template::human_bytes(from);
    let path = &f.path;
    Some(match peak {
        Some(p) => text!(
            "Find what the training loop keeps from one step to the next and stop keeping it on the GPU: GPU {gpu}'s memory climbed steadily through the run, from {h} early on to {p} when it ran out ({path}), so a smaller batch only moves the same failure later. The usual culprits are outputs appended to a list each step (a loss, logits or predictions kept without `.detach()`, `.item()` or `.cpu()`: each keeps its tensor, and without detach its graph), metrics accumulated on the GPU, or a cache that grows with the step; `torch.cuda.memory._record_memory_history()` and a snapshot near the end name the allocations that pile up.",
            "找出训练循环从一个 step 留到下一个 step 的东西，别再把它留在 GPU 上：GPU {gpu} 的显存在整个运行中一路上涨，从早期的 {h} 涨到显存耗尽时的 {p}（{path}），减小 batch 只会让同样的失败来得晚一些。常见原因是每个 step 往列表里追加输出（没有 `.detach()`、`.item()` 或 `.cpu()` 就保留下来的 loss、logits 或预测：每个都留着自己的张量，不 detach 还留着整张计算图）、在 GPU 上累积的 metric，或者随 step 增长的缓存；用 `torch.cuda.memory._record_memory_history()` 并在接近结束时做一次快照，就能看出是哪些分配在堆积。"
        ),
        None => text!(
            "Find what the training loop keeps from one step to the next and stop keeping it on the GPU: GPU {gpu}'s memory climbed steadily through the run from {h} early on until it ran out ({path}), so a smaller batch only moves the same failure later. The usual culprits are outputs appended to a list each step (a loss, logits or predictions kept without `.detach()`, `.item()` or `.cpu()`: each keeps its tensor, and without detach its graph), metrics accumulated on the GPU, or a cache that grows with the step; `torch.cuda.memory._record_memory_history()` and a snapshot near the end name the allocations that pile up.",
            "找出训练循环从一个 step 留到下一个 step 的东西，别再把它留在 GPU 上：GPU {gpu} 的显存在整个运行中从早期的 {h} 一路上涨直到耗尽（{path}），减小 batch 只会让同样的失败来得晚一些。常见原因是每个 step 往列表里追加输出（没有 `.detach()`、`.item()` 或 `.cpu()` 就保留下来的 loss、logits 或预测），在 GPU 上累积的 metric，或者随 step 增长的缓存；用 `torch.cuda.memory._record_memory_history()` 并在接近结束时做一次快照，就能看出是哪些分配在堆积。"
        ),
    })
}

/// A host OOM kill while transformers loaded a model's checkpoint shards (its `Loading checkpoint
/// shards` progress bar, often with the shell's `Killed` glued to it, among the cited lines, or
/// a launcher's kill report right after an unfinished bar: the confirmation's `killed_loading`):
/// the whole model sits in host RAM then — in fp32 unless a dtype is given — so the lever is
/// how it is loaded, not DataLoader workers.
fn host_oom_loading(ctx: &DeriveCtx) -> Option<Text> {
    let loading = ctx.capture("killed_loading").is_some()
        || ctx
            .lines
            .iter()
            .any(|l| l.contains("Loading checkpoint shards"));
    loading.then(|| {
            Text::new("Load the model with less host memory, passing `low_cpu_mem_usage=True` and a dtype to `from_pretrained` (`torch_dtype=torch.bfloat16`; or `device_map=\"auto\"` to put the shards straight on the GPU), from safetensors files, or quantized to 8 or 4 bits (`BitsAndBytesConfig(load_in_8bit=True)`) when the model in 16 bits is larger than the machine's RAM. The kill came while the checkpoint shards were loading, when the whole model sits in host RAM (in fp32 unless a dtype is given); otherwise give the machine more RAM or swap for the load.", "用更少的主机内存加载模型：给 `from_pretrained` 传 `low_cpu_mem_usage=True` 和 dtype（`torch_dtype=torch.bfloat16`；或者 `device_map=\"auto\"`，把分片直接放到 GPU 上），并优先用 safetensors 格式；16 位的模型比机器内存还大时，按 8 位或 4 位量化加载（`BitsAndBytesConfig(load_in_8bit=True)`）；进程是在加载 checkpoint 分片时被杀的，这时整个模型都在主机内存里（不指定 dtype 就是 fp32）。也可以给机器更多内存或 swap 来完成加载。")
        })
}

/// A CUDA out-of-memory (or cuDNN's failure to initialize) in a run whose memory XLA manages
/// (a confirmation's capture `xla_runtime`): JAX takes most of each card at start, leaving too
/// little for NCCL's and cuDNN's own buffers or for a second process on the card.
fn xla_preallocation(ctx: &DeriveCtx) -> Option<Text> {
    ctx.capture("xla_runtime")?;
    // XLA's own pool refused the allocation (its RESOURCE_EXHAUSTED, in either wording): the
    // pool's size and fragmentation are the lever before the batch.
    let own_pool = ctx.lines.iter().any(|l| {
        l.contains("RESOURCE_EXHAUSTED") || l.contains("Resource exhausted: Out of memory")
    });
    if own_pool {
        return Some(Text::new(
            "Tune XLA's memory pool first: `XLA_PYTHON_CLIENT_PREALLOCATE=false` (allocate on demand, which also ends the fragmentation of a preallocated pool) or its share of the card with `XLA_PYTHON_CLIENT_MEM_FRACTION` (.75 by default, .9 before JAX 0.4); if the peak allocated on demand is still above the card, cut the per-device batch: XLA's own allocator could not serve the request from its pool.",
            "先调 XLA 的显存池：`XLA_PYTHON_CLIENT_PREALLOCATE=false`（按需分配，也就没有了预占池里的碎片），或者用 `XLA_PYTHON_CLIENT_MEM_FRACTION` 调整它占整卡的比例（默认 .75，JAX 0.4 之前是 .9）；按需分配后峰值仍超过整卡时，再减小每张卡上的 batch：XLA 自己的分配器在它的池子里分不到这块内存。",
        ));
    }
    Some(Text::new(
        "Stop XLA from taking most of the card at start: set `XLA_PYTHON_CLIENT_PREALLOCATE=false` (allocate on demand) or lower the share with `XLA_PYTHON_CLIENT_MEM_FRACTION=.5` (TensorFlow: `tf.config.experimental.set_memory_growth(gpu, True)`). JAX reserves 75–90 % of each card when it starts, and NCCL and cuDNN allocate their own buffers outside that pool, so they find nothing left and fail with errors that need not say memory.",
        "不要让 XLA 一启动就预占大部分显存：设置 `XLA_PYTHON_CLIENT_PREALLOCATE=false`（按需分配），或者用 `XLA_PYTHON_CLIENT_MEM_FRACTION=.5` 之类调低预占比例（TensorFlow 用 `tf.config.experimental.set_memory_growth(gpu, True)`）：JAX 启动时会占掉每张卡 75–90% 的显存，NCCL 和 cuDNN 在池子之外分配自己的缓冲区，于是它们分不到，报出的错也不一定提显存。",
    ))
}

/// A CUDA OOM in a job whose own vLLM engine shares the cards (a confirmation's capture
/// `vllm_util`, its `gpu_memory_utilization`): the engine's share is taken before training
/// allocates anything, so it is the first lever, with a value computed from the run's own.
/// Two readings of the run come first: the trainer's own warning that the engine's device is
/// also a training rank's (`vllm_shared_device`) means a device of its own for the engine, and
/// a share already small (a quarter of the card or less) leaves the training side as the lever.
fn colocated_rollout(ctx: &DeriveCtx) -> Option<Text> {
    let util: f64 = ctx.capture("vllm_util")?.trim().parse().ok()?;
    if !(0.0..=1.0).contains(&util) {
        return None;
    }
    if let Some(dev) = ctx.capture("vllm_shared_device").map(str::trim) {
        return Some(Text::new(
            format!(
                "Give the vLLM engine a device of its own rather than a smaller share: the trainer warned that {dev} is also being used for training, so the engine's KV cache and a training rank compete for one card — run vLLM as a separate server on dedicated GPUs (`trl vllm-serve` in newer TRL) or start training with one process fewer so `vllm_device` is free."
            ),
            format!(
                "给 vLLM 引擎一块自己的卡，而不是再压低它的显存配额：训练框架已经警告 {dev} 同时也被训练用着，引擎的 KV cache 和一个训练 rank 在抢同一张卡——用较新的 TRL 把 vLLM 作为独立的服务跑在专用的 GPU 上（`trl vllm-serve`），或者让训练少起一个进程，把 `vllm_device` 空出来。"
            ),
        ));
    }
    if util <= 0.25 {
        return Some(Text::new(
            format!(
                "Cut the training side first — `per_device_train_batch_size`, `num_generations` and the generation lengths (`max_completion_length`, `max_prompt_length`), then gradient checkpointing: the colocated rollout engine's share is already small ({util} of the card), so lowering it further frees little and the OOM is training's own forward and backward memory."
            ),
            format!(
                "先减训练这一侧：`per_device_train_batch_size`、`num_generations` 和生成长度（`max_completion_length`、`max_prompt_length`），再考虑梯度检查点：同卡 rollout 引擎的配额已经很小（这里是整卡的 {util}），再压低它也腾不出多少，OOM 来自训练自己前向和反向所需的显存。"
            ),
        ));
    }
    let lower = ((util - 0.1).max(0.05) * 100.0).round() / 100.0;
    Some(Text::new(
        format!(
            "Lower the colocated rollout engine's `gpu_memory_utilization` ({util} here, e.g. to {lower}) or the training micro-batch, so training and rollout fit on the card together: vLLM takes that share of every card before training allocates anything, and the memory the OOM reports as held by another process is this job's own engine, not a foreign one."
        ),
        format!(
            "调低同卡 rollout 引擎的 `gpu_memory_utilization`（这里是 {util}，比如调到 {lower}），或者减小训练的 micro-batch，让训练和 rollout 能一起放进同一张卡：vLLM 会先占走每张卡的这一份显存，训练只能用剩下的；OOM 报告里“别的进程”占的显存就是本任务自己的这个引擎，不是外来进程。"
        ),
    ))
}

/// Ray's kill report lists the node's largest memory users (`PID MEM(GB) COMMAND`; the first
/// row's command is the capture `ray_top_cmd`). When that is the RL rollout engine (verl's
/// `…generate_sequences` workers, OpenRLHF's `LLMRayActor`, a vLLM worker), the engine's own
/// host memory is the lever, and the run shows which: its cache engine freed and rebuilt every
/// generation (`free_cache_on`), its sleep mode parking weights in host RAM (`rollout_sleep_on`),
/// or host memory rising at every logged step (`host_mem_gb`, a leak in the engine).
fn ray_rollout_memory(ctx: &DeriveCtx) -> Option<Text> {
    let cmd = ctx.capture("ray_top_cmd")?.trim();
    let lc = cmd.to_ascii_lowercase();
    if !["generate_sequences", "llmrayactor", "vllm", "sglang"]
        .iter()
        .any(|k| lc.contains(k))
    {
        return None;
    }
    let mem = ctx.capture("ray_top_mem").map(str::trim).unwrap_or("?");
    let series: Vec<f64> = ctx
        .captures
        .iter()
        .filter(|(n, _)| n == "host_mem_gb")
        .filter_map(|(_, v)| v.trim().parse().ok())
        .collect();
    let growing = series.len() >= 3
        && series.windows(2).all(|w| w[1] >= w[0])
        && series.last() > series.first();
    Some(if ctx.capture("free_cache_on").is_some() {
        Text::new(
            format!(
                "Set `free_cache_engine=False` (verl: `actor_rollout_ref.rollout.free_cache_engine`): the largest host-memory users Ray lists are the rollout engine's workers (`{cmd}`, {mem}), and this run frees and rebuilds the engine's cache every generation, which grows host memory step after step; fewer rollout engines per node or shorter responses help after that."
            ),
            format!(
                "设置 `free_cache_engine=False`（verl 里是 `actor_rollout_ref.rollout.free_cache_engine`）：Ray 列出的主机内存大户是 rollout 引擎的 worker（`{cmd}`，{mem}），而这次运行每次生成都释放再重建引擎的缓存，主机内存一步步往上涨；之后再考虑每个节点少开几个 rollout 引擎或缩短生成长度。"
            ),
        )
    } else if ctx.capture("rollout_sleep_on").is_some() {
        Text::new(
            format!(
                "Turn off the rollout engine's sleep mode (`--vllm_enable_sleep` / `enable_sleep_mode`): the largest host-memory users Ray lists are the engine's workers (`{cmd}`, {mem}), and sleep mode parks each engine's weights in host RAM between generations; if it must stay on, run fewer engines per node or give the node more RAM."
            ),
            format!(
                "关掉 rollout 引擎的 sleep 模式（`--vllm_enable_sleep` / `enable_sleep_mode`）：Ray 列出的主机内存大户是引擎的 worker（`{cmd}`，{mem}），sleep 模式会在两次生成之间把每个引擎的权重放到主机内存里；如果必须开着，就每个节点少开几个引擎，或者给节点加内存。"
            ),
        )
    } else if growing {
        let (first, last) = (series[0], series[series.len() - 1]);
        Text::new(
            format!(
                "Upgrade vLLM to a release without the host-memory leak (or apply its fix): host memory grows at every step ({first} → {last} GB) and the largest users are the rollout engine's workers (`{cmd}`), the mark of an engine leaking host memory every generation; restarting from a checkpoint only postpones the kill."
            ),
            format!(
                "升级 vLLM 到修复了主机内存泄漏的版本（或打上修复补丁）：主机内存每一步都在涨（{first} → {last} GB），最大的占用者又是 rollout 引擎的 worker（`{cmd}`），这是引擎每次生成都泄漏主机内存的特征；从 checkpoint 重启只是把被杀的时间往后推。"
            ),
        )
    } else {
        text!(
            "Cut the rollout engine's host memory: its workers (`{cmd}`, {mem}) are the largest users Ray lists, so lower vLLM's `swap_space` (a CPU KV cache, 4 GiB per GPU by default), keep sleep and offload modes off, or run fewer rollout engines per node.",
            "减少 rollout 引擎占用的主机内存：Ray 列出的最大占用者是它的 worker（`{cmd}`，{mem}）——调小 vLLM 的 `swap_space`（CPU 上的 KV cache，默认每张卡 4 GiB），不要开 sleep 或 offload 模式，或者每个节点少开几个 rollout 引擎。"
        )
    })
}

/// The sequence cap a confirmation rule saw printed as `None` (capture `unset_seq_cap`).
fn seq_cap_unset(ctx: &DeriveCtx) -> Option<String> {
    ctx.capture("unset_seq_cap").map(|c| c.trim().to_string())
}

/// Under this a requested limit is no training's length but a misread format.
const SHORT_REQUEST_SECS: u64 = 300;

/// A time-limit cancel (capture `reason`) of a job whose script asked for a limit shorter than
/// any training (capture `requested_time`): the request is the cause, read the way Slurm reads
/// it (`00:00:02` is two seconds; a bare number is minutes).
fn short_time_request(ctx: &DeriveCtx) -> Option<Text> {
    if ctx.capture("reason")? != "TIME LIMIT" {
        return None;
    }
    let asked = ctx.capture("requested_time")?;
    let secs = slurm_secs(asked)?;
    if secs >= SHORT_REQUEST_SECS {
        return None;
    }
    let (m, s) = (secs / 60, secs % 60);
    let d = match (m, s) {
        (0, s) => text!("{s} seconds", "{s} 秒"),
        (m, 0) => text!("{m} minutes", "{m} 分钟"),
        (m, s) => text!("{m} minutes {s} seconds", "{m} 分 {s} 秒"),
    };
    Some(text!(
            "Raise the job's time limit: `--time={asked}` requests {d} (Slurm reads `MM:SS` and `HH:MM:SS` as written, a bare number as minutes), so request the run's real length, e.g. `--time=02:00:00` for two hours.",
            "把任务的时限调大：`--time={asked}` 申请的是 {d}（Slurm 按 `MM:SS` 和 `HH:MM:SS` 读，单独一个数字是分钟），按这次运行真正需要的长度申请，比如两小时就写 `--time=02:00:00`。";
        d = d
    ))
}

fn xid_explain(ctx: &DeriveCtx) -> Option<Text> {
    let code: u32 = ctx.capture("xid")?.parse().ok()?;
    let e = super::xid::lookup(code)?;
    Some(super::xid::said(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Fact;
    use crate::model::Lang;

    /// `f` on these lines alone (no facts, no captures), in `lang`.
    fn on_lines(f: fn(&DeriveCtx) -> Option<Text>, lines: &[&str], lang: Lang) -> Option<String> {
        f(&DeriveCtx {
            facts: &FactSet::new(),
            captures: &[],
            lines,
        })
        .map(|t| t.get(lang).to_string())
    }

    fn facts(list: &[(&str, i64)]) -> FactSet {
        let mut s = FactSet::new();
        for (n, v) in list {
            s.push(Fact::new(*n, *v));
        }
        s
    }

    #[test]
    fn derived_table_is_sorted() {
        for w in DERIVED.windows(2) {
            assert!(w[0].name < w[1].name);
        }
    }

    #[test]
    fn every_derived_name_computes_through_the_table() {
        let s = facts(&[("shm.size_bytes", 64 << 20)]);
        let ctx = DeriveCtx {
            facts: &s,
            captures: &[],
            lines: &[],
        };
        for d in DERIVED {
            assert!(d.name.starts_with("derive."), "{}", d.name);
            assert!(is_derived(d.name));
            // Without captures only the fact-based values exist; none may panic.
            let v = derive(d.name, &ctx);
            assert_eq!(v.is_some(), d.name.starts_with("derive.shm_"), "{}", d.name);
        }
        assert_eq!(derive("derive.no_such_value", &ctx), None);
    }

    #[test]
    fn a_crash_while_an_installed_package_is_imported_names_it() {
        let ext = |lines: &[&str]| on_lines(crashing_extension, lines, Lang::En);
        assert_eq!(
            ext(&[
                "  File \"/env/lib/python3.9/site-packages/torch/_ops.py\", line 255 in load_library",
                "  File \"/env/lib/python3.9/site-packages/torch_cluster/__init__.py\", line 18 in <module>",
                "  File \"/home/u/proj/model.py\", line 3 in <module>",
            ])
            .as_deref(),
            Some("torch_cluster")
        );
        // A crash inside a package's function while training is not an import.
        assert_eq!(
            ext(&["  File \"/env/lib/python3.9/site-packages/cv2/data.py\", line 40 in decode"]),
            None
        );
        // The user's own module at import time is no installed package.
        assert_eq!(
            ext(&["  File \"/home/u/proj/model.py\", line 3 in <module>"]),
            None
        );
    }

    #[test]
    fn a_constant_key_prefix_says_which_way_to_rename() {
        let run = |lines: &[&str]| on_lines(state_dict_prefix, lines, Lang::En);
        let more = run(&[
            "\tMissing key(s) in state_dict: \"module.module.a.weight\", \"module.module.b.bias\", \"module.module.c.w",
            "\tUnexpected key(s) in state_dict: \"module.a.weight\", \"module.b.bias\".",
        ]);
        assert!(more.unwrap().starts_with("Add the `module.` prefix"));
        let fewer = run(&[
            "\tMissing key(s) in state_dict: \"a.weight\", \"b.bias\".",
            "\tUnexpected key(s) in state_dict: \"model.a.weight\", \"model.b.bias\".",
        ]);
        assert!(fewer.unwrap().starts_with("Strip the `model.` prefix"));
        // Different layers, or one pair only, is not a prefix.
        let other = run(&[
            "\tMissing key(s) in state_dict: \"lm_head.weight\", \"x.bias\".",
            "\tUnexpected key(s) in state_dict: \"head.weight\", \"y.bias\".",
        ]);
        assert_eq!(other, None);
        let one = run(&[
            "\tMissing key(s) in state_dict: \"a.weight\".",
            "\tUnexpected key(s) in state_dict: \"m.a.weight\".",
        ]);
        assert_eq!(one, None);
    }

    #[test]
    fn a_gpu_ooms_phase_comes_from_its_innermost_frames() {
        let phase = |lines: &[&str]| on_lines(gpu_oom_phase, lines, Lang::En);
        let vae = phase(&[
            "[rank1]:   File \"/srv/t2i/train.py\", line 88, in main",
            "[rank1]:   File \"/env/site-packages/diffusers/models/autoencoders/autoencoder_kl.py\", line 301, in decode",
            "[rank1]:   File \"/env/site-packages/torch/nn/modules/conv.py\", line 554, in _conv_forward",
        ]);
        assert!(vae.unwrap().starts_with("Enable VAE tiling"));
        // IPython's frame shape, the gathering innermost.
        let gather = phase(&[
            "File /env/dist-packages/transformers/trainer.py:4120, in Trainer.evaluation_loop(self, dataloader)",
            "File /env/dist-packages/transformers/trainer_pt_utils.py:110, in torch_pad_and_concatenate(tensor1, tensor2)",
        ]);
        assert!(gather.unwrap().starts_with("Set `eval_accumulation_steps`"));
        // An OOM inside a layer during evaluation is the eval batch, not the gathering.
        let in_layer = phase(&[
            "  File \"/env/site-packages/transformers/trainer.py\", line 4120, in evaluation_loop",
            "  File \"/env/site-packages/transformers/models/llama/modeling_llama.py\", line 300, in forward",
            "  File \"/env/site-packages/torch/nn/modules/linear.py\", line 125, in forward",
        ]);
        assert!(
            in_layer
                .unwrap()
                .starts_with("Lower the evaluation batch (`per_device_eval_batch_size`)")
        );
        assert_eq!(phase(&["  File \"train.py\", line 9, in step"]), None);
        // The user's own evaluation function keeps graphs unless it runs without gradients.
        let own = phase(&["  File \"train.py\", line 282, in validate"]);
        assert!(
            own.unwrap()
                .starts_with("Run the evaluation in `validate()` under `torch.no_grad()`")
        );
        let hook = phase(&["  File \"/env/lib/model.py\", line 40, in validation_step"]);
        assert_eq!(hook, None);
        let installed = phase(&["  File \"/env/site-packages/lib/run.py\", line 4, in evaluate"]);
        assert_eq!(installed, None);
        let in_layer = phase(&[
            "  File \"main.py\", line 90, in evaluate",
            "  File \"/home/u/proj/model.py\", line 12, in forward",
        ]);
        assert!(in_layer.unwrap().contains("`evaluate()`"));
        assert_eq!(
            phase(&["  File \"main.py\", line 9, in train_and_eval"]),
            None
        );
        assert_eq!(phase(&[]), None);
    }

    #[test]
    fn a_gpu_ooms_phase_past_the_forward_names_its_own_lever() {
        let phase = |lines: &[&str]| on_lines(gpu_oom_phase, lines, Lang::En);
        let starts = |lines: &[&str], with: &str| {
            let got = phase(lines);
            assert!(
                got.as_deref().is_some_and(|g| g.starts_with(with)),
                "{lines:?}: {got:?}"
            );
        };
        // The optimizer's first step allocates its states.
        starts(
            &[
                "  File \"/srv/run/train.py\", line 50, in main",
                "  File \"/env/site-packages/accelerate/optimizer.py\", line 170, in step",
                "  File \"/env/site-packages/torch/optim/adam.py\", line 166, in step",
                "  File \"/env/site-packages/torch/optim/adam.py\", line 120, in _init_group",
            ],
            "Shard the optimizer states",
        );
        // Lightning runs the forward inside the optimizer step's closure: that is the batch.
        assert_eq!(
            phase(&[
                "  File \"/env/site-packages/pytorch_lightning/core/module.py\", line 1300, in optimizer_step",
                "  File \"/env/site-packages/torch/optim/sgd.py\", line 70, in step",
                "  File \"/env/site-packages/pytorch_lightning/loops/optimization/automatic.py\", line 140, in closure",
                "  File \"/srv/net/model.py\", line 33, in training_step",
                "  File \"/env/site-packages/torch/nn/modules/conv.py\", line 450, in forward",
            ]),
            None
        );
        // FSDP sharding the model before any step: the states do not fit.
        starts(
            &[
                "[rank0]:   File \"/env/site-packages/accelerate/accelerator.py\", line 1500, in prepare_model",
                "[rank0]:   File \"/env/site-packages/torch/distributed/fsdp/_init_utils.py\", line 600, in _init_param_handle_from_module",
                "[rank0]:   File \"/env/site-packages/torch/distributed/fsdp/_flat_param.py\", line 900, in _get_shard",
            ],
            "Train fewer parameters (LoRA",
        );
        // The engine sizing its cache at start-up.
        starts(
            &[
                "  File \"/env/site-packages/vllm/worker/worker.py\", line 190, in determine_num_available_blocks",
                "  File \"/env/site-packages/vllm/worker/model_runner.py\", line 1200, in profile_run",
                "  File \"/env/site-packages/vllm/model_executor/models/qwen2.py\", line 300, in forward",
            ],
            "Lower the inference engine's `gpu_memory_utilization`",
        );
        // A save gathering its state dict.
        starts(
            &[
                "  File \"sft.py\", line 120, in <module>",
                "  File \"sft.py\", line 80, in save_full_model",
            ],
            "Gather the state dict on the CPU",
        );
        // A save that runs a forward is not the save's gathering; nor is the training loop.
        assert_eq!(
            phase(&[
                "  File \"sft.py\", line 80, in save_samples",
                "  File \"/env/site-packages/torch/nn/modules/module.py\", line 1500, in _call_impl",
            ]),
            None
        );
        assert_eq!(
            phase(&[
                "  File \"/env/site-packages/transformers/trainer.py\", line 2000, in _inner_training_loop"
            ]),
            None
        );
        // vLLM's own weight-load line, without frames.
        let caps = [("engine_load_oom".to_string(), "x".to_string())];
        let load = gpu_oom_phase(&DeriveCtx {
            facts: &FactSet::new(),
            captures: &caps,
            lines: &[],
        })
        .map(|t| t.get(Lang::Zh).to_string());
        assert!(
            load.unwrap()
                .starts_with("调低推理引擎的 `gpu_memory_utilization`")
        );
    }

    #[test]
    fn only_a_timeout_of_minutes_or_less_is_short() {
        let s = FactSet::new();
        let at = |ms: &str| {
            let caps = [("timeout_ms".to_string(), ms.to_string())];
            short_pg_timeout(&DeriveCtx {
                facts: &s,
                captures: &caps,
                lines: &[],
            })
            .map(|t| t.get(Lang::En).to_string())
        };
        assert_eq!(at("60000").as_deref(), Some("60"));
        assert_eq!(at("1500").as_deref(), Some("1.5"));
        assert_eq!(at("300000").as_deref(), Some("300"));
        assert_eq!(at("600000"), None);
        assert_eq!(at("1800000"), None);
        assert_eq!(at("0"), None);
        assert_eq!(at("x"), None);
    }

    #[test]
    fn a_projects_own_op_directory_in_the_frames_is_named() {
        let at = |lines: &[&str]| on_lines(local_extension, lines, Lang::En);
        let op = r#"  File "/data/proj/seg/ops/functions/deform_func.py", line 26, in forward"#;
        assert!(
            at(&[op]).unwrap().starts_with(
                "Rebuild the project's own compiled ops in `/data/proj/seg/ops` against"
            )
        );
        // faulthandler's shape, without the comma.
        let fh = r#"  File "/srv/det/lib/csrc/nms/nms.py", line 50 in forward"#;
        assert!(at(&[fh]).unwrap().contains("`/srv/det/lib/csrc`"));
        // An installed package's ops, a home directory called ops, a file named ops.py: none.
        let pkg = r#"  File "/env/lib/python3.10/site-packages/mmcv/ops/roi_align.py", line 80, in forward"#;
        let home = r#"  File "/home/ops/proj/train.py", line 12, in main"#;
        let file = r#"  File "/data/proj/ops", line 3, in <module>"#;
        assert_eq!(at(&[pkg, home, file]), None);
    }

    #[test]
    fn an_attention_backend_in_the_frames_names_its_switch() {
        let at = |lines: &[&str], lang| on_lines(attention_backend, lines, lang);
        let hf = r#"  File "/opt/env/lib/python3.12/site-packages/transformers/integrations/flash_attention.py", line 66, in flash_attention_forward"#;
        let kernel = r#"  File "/opt/env/lib/python3.12/site-packages/flash_attn/flash_attn_interface.py", line 165, in _flash_attn_varlen_forward"#;
        let got = at(&[hf, kernel], Lang::En).unwrap();
        assert!(got.starts_with("Switch transformers' attention backend away from `flash_attention_2` (`attn_implementation=\"sdpa\"`"));
        assert!(got.contains("or update flash_attn to its latest release"));
        let sgl = r#"  File "/usr/lib/python3/dist-packages/sglang/srt/layers/attention/triton_backend.py", line 420, in forward_decode"#;
        let got = at(&[sgl], Lang::Zh).unwrap();
        assert!(got.starts_with("把 SGLang 的注意力后端从 `triton_backend` 换掉"));
        // A kernel fault with no backend module in its frames: nothing to switch.
        assert_eq!(at(&[kernel], Lang::En), None);
        assert_eq!(at(&[], Lang::En), None);
    }

    #[test]
    fn ranks_are_out_of_step_only_at_one_number_in_different_calls() {
        let at = |lines: &[&str]| on_lines(ranks_out_of_step, lines, Lang::En);
        let w = |rank: u32, seq: u32, op: &str, n: u64| {
            format!(
                "[rank{rank}]:[E ProcessGroupNCCL.cpp:616] [Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, OpType={op}, NumelIn={n}, NumelOut={n}, Timeout(ms)=600000) ran for 600050 milliseconds before timing out."
            )
        };
        let (a, b) = (w(0, 41, "ALLREDUCE", 8192), w(1, 41, "ALLREDUCE", 1));
        let got = at(&[&a, &b]).unwrap();
        assert!(got.starts_with("Make every rank issue the same collectives"));
        assert!(
            got.contains(
                "#41 rank 0 ran ALLREDUCE of 8192 elements while rank 1 ran ALLREDUCE of 1"
            )
        );
        // Another operation at the same number is out of step as well.
        let c = w(1, 41, "BROADCAST", 8192);
        assert!(at(&[&a, &c]).is_some());
        // The same call on both ranks, a different number, or one rank alone: nothing read.
        assert_eq!(at(&[&a, &w(1, 41, "ALLREDUCE", 8192)]), None);
        assert_eq!(at(&[&a, &w(1, 40, "ALLREDUCE", 1)]), None);
        assert_eq!(at(&[&a, &w(0, 41, "ALLREDUCE", 1)]), None);
        assert_eq!(at(&[&a]), None);
        // A line without the rank or the size is not read.
        let bare = "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=41, OpType=ALLREDUCE, Timeout(ms)=600000)";
        assert_eq!(at(&[&a, bare]), None);
    }

    #[test]
    fn only_a_process_groups_first_collectives_count_as_start_up() {
        let s = FactSet::new();
        let at = |seq: &str| {
            let caps = [("seq".to_string(), seq.to_string())];
            let ctx = DeriveCtx {
                facts: &s,
                captures: &caps,
                lines: &[],
            };
            startup_collective(&ctx).map(|t| t.en)
        };
        assert_eq!(at("1").as_deref(), Some("1"));
        assert_eq!(at("8").as_deref(), Some("8"));
        // A collective of the training steps (DDP's buckets reach dozens per step).
        assert_eq!(at("31"), None);
        assert_eq!(at("4967570"), None);
        assert_eq!(at("x"), None);
    }

    #[test]
    fn full_small_shm_gets_safe_default() {
        let r = shm_recommendation(&facts(&[
            ("shm.size_bytes", 64 << 20),
            ("shm.used_bytes", 64 << 20),
            ("host.mem_total_bytes", 256 << 30),
        ]));
        assert_eq!(r.bytes, 8 << 30);
        assert!(r.basis.en.contains("ceiling"), "{}", r.basis.en);
    }

    #[test]
    fn observed_peak_sizes_the_fix() {
        let r = shm_recommendation(&facts(&[("shm.peak_bytes", 5 << 30)]));
        // 5 GiB * 1.5 + 0.5 GiB = 8 GiB
        assert_eq!(r.bytes, 8 << 30);
        // Recorded on a large mount: the peak, not the mount, sizes a container's /dev/shm.
        let r = shm_recommendation(&facts(&[
            ("shm.size_bytes", 64 << 30),
            ("shm.peak_bytes", 5 << 30),
        ]));
        assert_eq!(r.bytes, 8 << 30);
    }

    #[test]
    fn small_host_caps_the_size() {
        let r = shm_recommendation(&facts(&[
            ("shm.size_bytes", 64 << 20),
            ("host.mem_total_bytes", 8 << 30),
        ]));
        assert_eq!(r.bytes, 4 << 30);
        assert!(r.basis.en.contains("capped"));
    }

    #[test]
    fn gpu_oom_other_process() {
        let caps = vec![
            ("tried".to_string(), "2.00 GiB".to_string()),
            ("total".to_string(), "79.15 GiB".to_string()),
            ("free".to_string(), "100.00 MiB".to_string()),
            ("allocated".to_string(), "3.00 GiB".to_string()),
        ];
        let s = facts(&[]);
        let plan = gpu_oom_plan(&DeriveCtx {
            facts: &s,
            captures: &caps,
            lines: &[],
        })
        .map(|t| t.get(Lang::En).to_string())
        .unwrap();
        assert!(plan.contains("outside this"), "{plan}");
    }

    /// What PyTorch holds plus the request fits under the card (issue 29: a real ZeRO-3
    /// gather OOM read "cut activation memory by at least 0%"): no percentage is computed.
    #[test]
    fn gpu_oom_that_fits_by_the_numbers_names_no_cut() {
        let caps = ctx_caps(&[
            ("tried", "1.16 GiB"),
            ("total", "79.19 GiB"),
            ("free", "598.00 MiB"),
            ("allocated", "69.20 GiB"),
        ]);
        let s = facts(&[]);
        for lang in [Lang::En, Lang::Zh] {
            let plan = gpu_oom_plan(&DeriveCtx {
                facts: &s,
                captures: &caps,
                lines: &[],
            })
            .map(|t| t.get(lang).to_string())
            .unwrap();
            assert!(!plan.contains("0%"), "{plan}");
            assert!(plan.contains("nvidia-smi"), "{plan}");
        }
    }

    fn ctx_caps(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn nofile_plan_scales_the_limit_seen() {
        let caps = ctx_caps(&[("nofile", "128"), ("nofile_hard", "128")]);
        let s = facts(&[]);
        let p = nofile_plan(&DeriveCtx {
            facts: &s,
            captures: &caps,
            lines: &[],
        })
        .map(|t| t.get(Lang::En).to_string())
        .unwrap();
        assert!(
            p.contains("was 128") && p.contains("65536") && p.contains("hard limit"),
            "{p}"
        );
    }

    #[test]
    fn batch_plan_keeps_the_global_batch() {
        let caps = ctx_caps(&[
            ("train", "32"),
            ("micro", "4"),
            ("accum", "3"),
            ("world", "2"),
        ]);
        let s = facts(&[]);
        let p = batch_plan(&DeriveCtx {
            facts: &s,
            captures: &caps,
            lines: &[],
        })
        .map(|t| t.get(Lang::En).to_string())
        .unwrap();
        assert!(
            p.contains("= 24") && p.contains("gradient_accumulation_steps to 4"),
            "{p}"
        );
    }

    #[test]
    fn only_a_request_of_seconds_beside_a_time_limit_cancel_is_the_cause() {
        let s = facts(&[]);
        let plan = |reason: &str, asked: &str| {
            let caps = ctx_caps(&[("reason", reason), ("requested_time", asked)]);
            short_time_request(&DeriveCtx {
                facts: &s,
                captures: &caps,
                lines: &[],
            })
            .map(|t| t.get(Lang::En).to_string())
        };
        let p = plan("TIME LIMIT", "00:00:02").unwrap();
        assert!(p.starts_with("Raise the job's time limit"), "{p}");
        assert!(p.contains("requests 2 seconds"), "{p}");
        assert!(plan("TIME LIMIT", "3").unwrap().contains("3 minutes"));
        // A real training's request, or a cancel for another reason, is not this.
        assert_eq!(plan("TIME LIMIT", "02:00:00"), None);
        assert_eq!(plan("PREEMPTION", "00:00:02"), None);
    }

    #[test]
    fn time_limit_plan_compares_elapsed_and_limit() {
        let caps = ctx_caps(&[("elapsed", "1-00:00:12"), ("limit", "1-00:00:00")]);
        let s = facts(&[]);
        let p = time_limit_plan(&DeriveCtx {
            facts: &s,
            captures: &caps,
            lines: &[],
        })
        .map(|t| t.get(Lang::En).to_string())
        .unwrap();
        assert!(p.contains("hit the limit") && p.contains("30h00m"), "{p}");
        let caps = ctx_caps(&[("elapsed", "02:00:00"), ("limit", "1-00:00:00")]);
        let p = time_limit_plan(&DeriveCtx {
            facts: &s,
            captures: &caps,
            lines: &[],
        })
        .map(|t| t.get(Lang::En).to_string())
        .unwrap();
        assert!(p.contains("preemption"), "{p}");
    }

    /// Our own OOM texts in PyTorch's layouts: 2.x names the other processes on the card,
    /// 1.x gives `reserved in total by PyTorch` beside `already allocated`.
    #[test]
    fn who_holds_the_card_decides_the_plan_in_both_languages() {
        let caps = ctx_caps(&[
            ("tried", "512.00 MiB"),
            ("total", "79.15 GiB"),
            ("free", "20.00 MiB"),
            ("allocated", "31.00 GiB"),
        ]);
        // PyTorch holds 31 of 79 GiB (not under half), but another process holds more.
        let other = [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 2 has a total capacity of 79.15 GiB of which 20.00 MiB is free. Process 7001 has 46.50 GiB memory in use. Including non-PyTorch memory, this process has 32.60 GiB memory in use. Of the allocated memory 31.00 GiB is allocated by PyTorch, and 1.10 GiB is reserved by PyTorch but unallocated.",
        ];
        assert_eq!(
            gpu_memory_holder(&caps, &other),
            Some(GpuMemoryHolder::OtherProcess)
        );
        assert_eq!(other_processes(&other), vec![(7001, 46.5 * GIB)]);
        let s = facts(&[]);
        let ctx = |lines: &[&str], lang| {
            gpu_oom_plan(&DeriveCtx {
                facts: &s,
                captures: &caps,
                lines,
            })
            .map(|t| t.get(lang).to_string())
            .unwrap()
        };
        let (en, zh) = (ctx(&other, Lang::En), ctx(&other, Lang::Zh));
        assert!(
            en.contains("pid 7001: 46.5 GiB") && en.contains("free the card"),
            "{en}"
        );
        assert!(
            zh.contains("pid 7001: 46.5 GiB") && zh.contains("释放"),
            "{zh}"
        );
        // The same figures with nobody else on the card: shrink the batch.
        let own = [
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512.00 MiB. GPU 2 has a total capacity of 79.15 GiB of which 20.00 MiB is free. Including non-PyTorch memory, this process has 79.10 GiB memory in use. Of the allocated memory 31.00 GiB is allocated by PyTorch, and 47.20 GiB is reserved by PyTorch but unallocated.",
        ];
        assert_eq!(
            gpu_memory_holder(&caps, &own),
            Some(GpuMemoryHolder::ThisProcess)
        );
        let caps_old = ctx_caps(&[
            ("tried", "20.00 MiB"),
            ("total", "15.78 GiB"),
            ("allocated", "2.10 GiB"),
            ("free", "3.44 MiB"),
        ]);
        let old_own = [
            "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 2.10 GiB already allocated; 3.44 MiB free; 14.74 GiB reserved in total by PyTorch)",
        ];
        let old_other = [
            "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 15.78 GiB total capacity; 2.10 GiB already allocated; 3.44 MiB free; 2.20 GiB reserved in total by PyTorch)",
        ];
        assert_eq!(
            gpu_memory_holder(&caps_old, &old_own),
            Some(GpuMemoryHolder::ThisProcess)
        );
        assert_eq!(
            gpu_memory_holder(&caps_old, &old_other),
            Some(GpuMemoryHolder::OtherProcess)
        );
    }

    /// In a container NVML gives host pids, so the failing process is listed as `Process N`
    /// with no `this process has` line: a process holding this process's PyTorch memory plus a
    /// CUDA context is the run itself, and the plan is its own batch (T2610). One holding
    /// far more, or a message that names this process separately, is still another holder.
    #[test]
    fn own_process_listed_by_host_pid_is_not_another_holder() {
        let caps = ctx_caps(&[
            ("tried", "196.00 MiB"),
            ("total", "15.77 GiB"),
            ("free", "141.06 MiB"),
            ("allocated", "14.61 GiB"),
        ]);
        let msg = |proc_line: &str| {
            format!(
                "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 196.00 MiB. GPU 5 has a total capacity of 15.77 GiB of which 141.06 MiB is free. {proc_line}Of the allocated memory 14.61 GiB is allocated by PyTorch, and 512.38 MiB is reserved by PyTorch but unallocated."
            )
        };
        let own = msg("Process 2881 has 15.62 GiB memory in use. ");
        assert_eq!(
            gpu_memory_holder(&caps, &[own.as_str()]),
            Some(GpuMemoryHolder::ThisProcess)
        );
        let s = facts(&[]);
        let plan = gpu_oom_plan(&DeriveCtx {
            facts: &s,
            captures: &caps,
            lines: &[own.as_str()],
        })
        .map(|t| t.get(Lang::En).to_string())
        .unwrap();
        assert!(
            plan.contains("micro-batch") && !plan.contains("pid 2881"),
            "{plan}"
        );
        // Another process: it holds more than this one's PyTorch memory plus a context could.
        let big = msg("Process 2881 has 15.62 GiB memory in use. ");
        let small_caps = ctx_caps(&[
            ("tried", "196.00 MiB"),
            ("total", "15.77 GiB"),
            ("free", "141.06 MiB"),
            ("allocated", "6.00 GiB"),
        ]);
        assert_eq!(
            gpu_memory_holder(&small_caps, &[big.as_str()]),
            Some(GpuMemoryHolder::OtherProcess)
        );
        // This process named separately: the listed one is someone else.
        let named = msg(
            "Process 2881 has 15.62 GiB memory in use. Including non-PyTorch memory, this process has 15.20 GiB memory in use. ",
        );
        assert_eq!(
            gpu_memory_holder(&caps, &[named.as_str()]),
            Some(GpuMemoryHolder::OtherProcess)
        );
    }

    #[test]
    fn port_and_xid_and_disk_and_firewall_plans() {
        let s = facts(&[]);
        let en = |f: fn(&DeriveCtx) -> Option<Text>, caps: &[(&str, &str)]| {
            f(&DeriveCtx {
                facts: &s,
                captures: &ctx_caps(caps),
                lines: &[],
            })
            .map(|t| t.get(Lang::En).to_string())
        };
        assert!(
            en(port_plan, &[("port", "29533")])
                .unwrap()
                .contains(":29533")
        );
        // A port the program probed for itself: the probe is the cause, not the cure.
        let race = en(port_plan, &[("port", "46811")]).unwrap();
        assert!(
            race.starts_with("Give each process group") && !race.contains("s.bind"),
            "{race}"
        );
        let x = en(xid_explain, &[("xid", "79")]).unwrap();
        assert!(
            x.contains("fallen off the bus") && x.contains("hardware"),
            "{x}"
        );
        assert!(
            en(disk_full_plan, &[("mount", "/ckpt")])
                .unwrap()
                .contains("/ckpt")
        );
        // accelerate's own check: its flag, and the next port, lead; torchrun's lines keep theirs.
        let accel = port_plan(&DeriveCtx {
            facts: &s,
            captures: &ctx_caps(&[("port", "29500")]),
            lines: &["ConnectionError: Tried to launch distributed communication on port `29500`, but another process is utilizing it."],
        }).map(|t| t.get(Lang::En).to_string())
        .unwrap();
        assert!(
            accel
                .starts_with("Start on another port: `accelerate launch --main_process_port 29501"),
            "{accel}"
        );
        assert!(
            en(port_plan, &[("port", "29500")])
                .unwrap()
                .contains("`--master_port=$(python")
        );
        // A firewall's state alone, or a socket error alone, is no plan.
        let sock = [
            ("sock_err", "Connection refused"),
            ("peer_addr", "10.2.0.5"),
            ("peer_port", "40211"),
        ];
        assert_eq!(en(firewall_plan, &sock), None);
        assert_eq!(en(firewall_plan, &[("firewall_on", "running")]), None);
        let both = [sock.as_slice(), &[("firewall_on", "running")]].concat();
        let plan = en(firewall_plan, &both).unwrap();
        assert!(
            plan.starts_with("Open the TCP ports") && plan.contains("10.2.0.5<40211>"),
            "{plan}"
        );
    }

    #[test]
    fn gpu_oom_own_usage() {
        let caps = vec![
            ("tried".to_string(), "2.00 GiB".to_string()),
            ("total".to_string(), "139.80 GiB".to_string()),
            ("free".to_string(), "289.12 MiB".to_string()),
            ("allocated".to_string(), "138.46 GiB".to_string()),
        ];
        let s = facts(&[]);
        let plan = gpu_oom_plan(&DeriveCtx {
            facts: &s,
            captures: &caps,
            lines: &[],
        })
        .map(|t| t.get(Lang::En).to_string())
        .unwrap();
        assert!(plan.contains("micro-batch"), "{plan}");
    }
}
