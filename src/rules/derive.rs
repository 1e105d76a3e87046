//! Derived values for fix templates: numbers computed from the run's own facts and the
//! captures of a rule's hits (a `--shm-size` from the observed peak and the host's memory;
//! how far a batch must shrink from a CUDA OOM message). Pure functions of their inputs;
//! the rule loader checks template variables against `DERIVED`.

use crate::fact_names as names;
use crate::facts::{FactSet, Unit};

/// A derived variable: its name, unit and meaning, and the function that computes it.
pub struct Derived {
    pub name: &'static str,
    pub unit: Unit,
    pub doc: &'static str,
    /// `None` when the finding lacks what the value needs (the template falls back).
    pub compute: fn(&DeriveCtx) -> Option<String>,
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
        name: "derive.batch_plan",
        unit: Unit::Text,
        doc: "consistent DeepSpeed batch settings from the assertion's train/micro/accumulation/world figures",
        compute: batch_plan,
    },
    Derived {
        name: "derive.disk_full_plan",
        unit: Unit::Text,
        doc: "which path or mount filled up and how big it is, from the error and a df row",
        compute: disk_full_plan,
    },
    Derived {
        name: "derive.gpu_oom_foreign",
        unit: Unit::Text,
        doc: "only when PyTorch holds under half the card: how much another process holds",
        compute: gpu_oom_foreign,
    },
    Derived {
        name: "derive.gpu_oom_plan",
        unit: Unit::Text,
        doc: "what to change after a CUDA OOM, from the message's tried/free/total/allocated figures",
        compute: gpu_oom_plan,
    },
    Derived {
        name: "derive.memlock_plan",
        unit: Unit::Text,
        doc: "the locked-memory limit seen (ulimit -l) and what to set",
        compute: memlock_plan,
    },
    Derived {
        name: "derive.nofile_plan",
        unit: Unit::Text,
        doc: "the open-files limit seen (ulimit -n, /proc limits) and the limit to set",
        compute: nofile_plan,
    },
    Derived {
        name: "derive.port_plan",
        unit: Unit::Text,
        doc: "the busy port, how to find its holder and how to pick a free one",
        compute: port_plan,
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
        name: "derive.time_limit_plan",
        unit: Unit::Text,
        doc: "how long the job ran against its time limit (scontrol RunTime/TimeLimit) and what to request",
        compute: time_limit_plan,
    },
    Derived {
        name: "derive.xid_explain",
        unit: Unit::Text,
        doc: "the NVIDIA Xid catalog entry for the code in the hit (meaning, usual cause, action)",
        compute: xid_explain,
    },
];

pub fn is_derived(name: &str) -> bool {
    DERIVED.iter().any(|d| d.name == name)
}

/// Inputs a derivation may use.
pub struct DeriveCtx<'a> {
    pub facts: &'a FactSet,
    /// Named captures of the finding's hits, first hit first.
    pub captures: &'a [(String, String)],
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
pub fn derive(name: &str, ctx: &DeriveCtx) -> Option<(String, Unit)> {
    let d = DERIVED.iter().find(|d| d.name == name)?;
    (d.compute)(ctx).map(|v| (v, d.unit))
}

fn shm_size_bytes(ctx: &DeriveCtx) -> Option<String> {
    Some(shm_recommendation(ctx.facts).bytes.to_string())
}

fn shm_basis(ctx: &DeriveCtx) -> Option<String> {
    Some(shm_recommendation(ctx.facts).basis)
}

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const MIB: f64 = 1024.0 * 1024.0;

pub struct ShmRecommendation {
    pub bytes: u64,
    pub basis: String,
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
    let (mut want, mut basis) = match (peak, size) {
        (Some(p), Some(s)) if p > 0.0 && p < 0.9 * s => (
            p * 1.5 + 512.0 * MIB,
            format!("observed peak {} plus 50% and 512 MiB of margin", h(p)),
        ),
        (Some(p), None) if p > 0.0 => (
            p * 1.5 + 512.0 * MIB,
            format!("observed peak {} plus 50% and 512 MiB of margin", h(p)),
        ),
        (p, Some(s)) => (
            (8.0 * GIB).max(4.0 * s),
            format!(
                "{}the {} /dev/shm was the ceiling, so the real need is unknown: {} is a safe start",
                match p {
                    Some(p) if facts.num(names::SHM_PEAK_BYTES).is_some() => {
                        format!("the recorded peak ({}) reached the mount's size: ", h(p))
                    }
                    _ => String::new(),
                },
                h(s),
                h((8.0 * GIB).max(4.0 * s))
            ),
        ),
        (_, None) => (
            8.0 * GIB,
            "no /dev/shm size or usage was captured: 8 GiB is a safe start".to_string(),
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
        } else {
            basis.push_str(&format!("; the host has {}", h(host)));
        }
    }
    ShmRecommendation {
        bytes: want as u64,
        basis,
    }
}

/// A size in a CUDA message (`2.00 GiB`, `289.12 MiB`) as bytes: the one size grammar,
/// `units::size_1024`.
fn parse_size(s: &str) -> Option<f64> {
    crate::sources::units::size_1024(s, 1).map(|b| b as f64)
}

/// From a CUDA OOM message's figures: is it this process's own usage (shrink the batch), or
/// another process holding the card?
fn gpu_oom_plan(ctx: &DeriveCtx) -> Option<String> {
    let tried = parse_size(ctx.capture("tried")?)?;
    let total = ctx.capture("total").and_then(parse_size);
    let free = ctx.capture("free").and_then(parse_size);
    let by_torch = ctx.capture("allocated").and_then(parse_size);
    let h = super::template::human_bytes;
    if let (Some(total), Some(torch)) = (total, by_torch)
        && torch < 0.5 * total
    {
        let other = total - torch - free.unwrap_or(0.0);
        return Some(format!(
            "PyTorch itself holds only {} of the {} card: about {} is held outside this \
             process's allocator (another process on the same GPU, or a leak in a native \
             library). Check `nvidia-smi --query-compute-apps=pid,used_memory --format=csv` \
             and make sure each rank has its GPU to itself.",
            h(torch),
            h(total),
            h(other.max(0.0))
        ));
    }
    let (Some(total), Some(torch)) = (total, by_torch) else {
        return Some(format!(
            "The allocation of {} did not fit: halve the micro-batch (and double gradient \
             accumulation to keep the global batch), or enable activation checkpointing.",
            h(tried)
        ));
    };
    // The process needs about torch + tried; to fit under ~90% of the card, scale the
    // activation-dominated part by this factor.
    let need = torch + tried;
    let budget = 0.9 * total;
    let factor = (budget / need).clamp(0.05, 1.0);
    let pct = ((1.0 - factor) * 100.0).ceil();
    Some(format!(
        "The process needed about {} on a {} card ({} held by PyTorch + {} requested): cut \
         activation memory by at least {pct:.0}% — e.g. multiply the micro-batch (or sequence \
         length) by {factor:.2} or less, raising gradient accumulation to keep the global batch, \
         or enable activation checkpointing.",
        h(need),
        h(total),
        h(torch),
        h(tried)
    ))
}

/// Only when the message shows PyTorch holding under half the card: the rest is someone else's.
fn gpu_oom_foreign(ctx: &DeriveCtx) -> Option<String> {
    let total = parse_size(ctx.capture("total")?)?;
    let torch = parse_size(ctx.capture("allocated")?)?;
    if torch >= 0.5 * total {
        return None;
    }
    gpu_oom_plan(ctx)
}

/// The assertion text of a device-side assert, read as a domain statement.
fn assert_hint(ctx: &DeriveCtx) -> Option<String> {
    let a = ctx.capture("assertion")?;
    let what = if a.contains("n_classes") || a.contains("n_class") {
        "a class label is outside [0, num_classes): labels such as -1 or 255 need the loss's `ignore_index`, or the model has fewer outputs than the dataset has classes."
    } else if a.contains("srcIndex < srcSelectDimSize")
        || a.contains("ind_dim_size")
        || a.contains("index out of bounds")
    {
        "an index into an embedding or gather is out of range: token ids >= the embedding's size (tokenizer larger than the model's vocabulary: `model.resize_token_embeddings(len(tokenizer))`), or position ids beyond `max_position_embeddings`."
    } else if a.contains("input_val >= zero && input_val <= one") {
        "binary cross-entropy got an input outside [0, 1]: apply a sigmoid or use `BCEWithLogitsLoss`."
    } else {
        return Some(format!(
            "The kernel checked `{a}` and it failed: one of the index tensors it reads is out of range."
        ));
    };
    Some(format!("The kernel checked `{a}`: {what}"))
}

fn batch_plan(ctx: &DeriveCtx) -> Option<String> {
    let n = |k: &str| ctx.capture(k)?.parse::<u64>().ok();
    let (train, micro, accum, world) = (n("train")?, n("micro")?, n("accum")?, n("world")?);
    let product = micro * accum * world;
    let mut s = format!(
        "train_batch_size is {train} but micro-batch {micro} × accumulation {accum} × {world} GPUs = {product}."
    );
    if micro * world > 0 && train % (micro * world) == 0 {
        s.push_str(&format!(
            " Keep the global batch of {train}: set gradient_accumulation_steps to {}.",
            train / (micro * world)
        ));
    } else if accum * world > 0 && train % (accum * world) == 0 {
        s.push_str(&format!(
            " Keep the global batch of {train}: set train_micro_batch_size_per_gpu to {}.",
            train / (accum * world)
        ));
    }
    s.push_str(&format!(
        " Or set train_batch_size to {product} (or \"auto\" with the HF integration)."
    ));
    Some(s)
}

fn disk_full_plan(ctx: &DeriveCtx) -> Option<String> {
    let path = ctx.capture("path");
    let mount = ctx.capture("mount");
    match (path, mount) {
        (Some(p), Some(m)) => Some(format!(
            "Writing `{p}` failed because the filesystem at {m} is 100% full: free space there or point the output at a larger volume."
        )),
        (Some(p), None) => Some(format!(
            "Writing `{p}` failed: its filesystem is full (`df -h $(dirname {p})`); free space there or point the output at a larger volume."
        )),
        (None, Some(m)) => Some(format!(
            "The filesystem at {m} is 100% full (df): free space there or point the checkpoints at a larger volume; a checkpoint with optimizer state is several times the model's size."
        )),
        (None, None) => None,
    }
}

fn memlock_plan(ctx: &DeriveCtx) -> Option<String> {
    let kb: u64 = ctx.capture("memlock_kb")?.parse().ok()?;
    Some(format!(
        "The ranks ran with a locked-memory limit of {kb} KiB, far below what RDMA registration needs: set it to unlimited where the ranks start (`ulimit -l unlimited`; Docker `--ulimit memlock=-1:-1`; Slurm: slurmd's `LimitMEMLOCK=infinity` and `PropagateResourceLimitsExcept=MEMLOCK`)."
    ))
}

fn nofile_plan(ctx: &DeriveCtx) -> Option<String> {
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
        Some(h) if h < want => format!(
            " The hard limit is also {h}: raise it first (Docker `--ulimit nofile={want}:{want}`, systemd `LimitNOFILE={want}`, /etc/security/limits.conf)."
        ),
        _ => String::new(),
    };
    Some(format!(
        "The open-files limit was {seen}: raise it to {want} in the shell that starts the job (`ulimit -n {want}`).{hard_note}"
    ))
}

fn port_plan(ctx: &DeriveCtx) -> Option<String> {
    let port: u32 = ctx.capture("port")?.parse().ok()?;
    Some(format!(
        "Port {port} is already taken on this host: find the holder with `ss -ltnp 'sport = :{port}'` (a leftover rank of an earlier run: kill it), or start on a free port: `--master_port=$(python -c 'import socket; s=socket.socket(); s.bind((\"\", 0)); print(s.getsockname()[1])')` (torchrun/DeepSpeed `--master_port`, accelerate `--main_process_port`). Jobs sharing a node need distinct ports."
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

fn time_limit_plan(ctx: &DeriveCtx) -> Option<String> {
    let elapsed = slurm_secs(ctx.capture("elapsed")?)?;
    let limit = slurm_secs(ctx.capture("limit")?)?;
    let hm = |s: u64| format!("{}h{:02}m", s / 3600, (s % 3600) / 60);
    if limit == 0 {
        return None;
    }
    if elapsed + 60 < limit {
        return Some(format!(
            "The job ran {} of its {} limit: it was stopped before the limit, so preemption or a cancel is likelier than the time limit.",
            hm(elapsed),
            hm(limit)
        ));
    }
    let ask = ((limit as f64 * 1.25) / 3600.0).ceil() as u64 * 3600;
    Some(format!(
        "The job ran {} against a {} limit: it hit the limit. Request at least {} (`--time`), or checkpoint at least every {} so a requeued job loses little.",
        hm(elapsed),
        hm(limit),
        hm(ask),
        hm((limit / 4).max(600))
    ))
}

fn xid_explain(ctx: &DeriveCtx) -> Option<String> {
    let code: u32 = ctx.capture("xid")?.parse().ok()?;
    let e = super::xid::lookup(code)?;
    Some(super::xid::sentence(e))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Fact;

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
    fn full_small_shm_gets_safe_default() {
        let r = shm_recommendation(&facts(&[
            ("shm.size_bytes", 64 << 20),
            ("shm.used_bytes", 64 << 20),
            ("host.mem_total_bytes", 256 << 30),
        ]));
        assert_eq!(r.bytes, 8 << 30);
        assert!(r.basis.contains("ceiling"), "{}", r.basis);
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
        assert!(r.basis.contains("capped"));
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
        })
        .unwrap();
        assert!(plan.contains("outside this"), "{plan}");
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
        })
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
        })
        .unwrap();
        assert!(
            p.contains("= 24") && p.contains("gradient_accumulation_steps to 4"),
            "{p}"
        );
    }

    #[test]
    fn time_limit_plan_compares_elapsed_and_limit() {
        let caps = ctx_caps(&[("elapsed", "1-00:00:12"), ("limit", "1-00:00:00")]);
        let s = facts(&[]);
        let p = time_limit_plan(&DeriveCtx {
            facts: &s,
            captures: &caps,
        })
        .unwrap();
        assert!(p.contains("hit the limit") && p.contains("30h00m"), "{p}");
        let caps = ctx_caps(&[("elapsed", "02:00:00"), ("limit", "1-00:00:00")]);
        let p = time_limit_plan(&DeriveCtx {
            facts: &s,
            captures: &caps,
        })
        .unwrap();
        assert!(p.contains("preemption"), "{p}");
    }

    #[test]
    fn port_and_xid_and_disk_plans() {
        let s = facts(&[]);
        let caps = ctx_caps(&[("port", "29533")]);
        assert!(
            port_plan(&DeriveCtx {
                facts: &s,
                captures: &caps
            })
            .unwrap()
            .contains(":29533")
        );
        let caps = ctx_caps(&[("xid", "79")]);
        let x = xid_explain(&DeriveCtx {
            facts: &s,
            captures: &caps,
        })
        .unwrap();
        assert!(
            x.contains("fallen off the bus") && x.contains("hardware"),
            "{x}"
        );
        let caps = ctx_caps(&[("mount", "/ckpt")]);
        assert!(
            disk_full_plan(&DeriveCtx {
                facts: &s,
                captures: &caps
            })
            .unwrap()
            .contains("/ckpt")
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
        })
        .unwrap();
        assert!(plan.contains("micro-batch"), "{plan}");
    }
}
