//! Derived values for fix templates: numbers computed from the run's own facts and the
//! captures of a rule's hits (a `--shm-size` from the observed peak and the host's memory;
//! how far a batch must shrink from a CUDA OOM message). Pure functions of their inputs;
//! the rule loader checks template variables against `DERIVED`.

use crate::facts::{FactSet, Unit};

/// Every derived variable: name, unit, what it means. Sorted; a test keeps it so.
pub static DERIVED: &[(&str, Unit, &str)] = &[
    (
        "derive.gpu_oom_plan",
        Unit::Text,
        "what to change after a CUDA OOM, from the message's tried/free/total/allocated figures",
    ),
    (
        "derive.shm_basis",
        Unit::Text,
        "why derive.shm_size_bytes has that value (observed peak, current size, host memory)",
    ),
    (
        "derive.shm_size_bytes",
        Unit::Bytes,
        "recommended /dev/shm size: observed peak plus margin, else a safe default, capped by host memory",
    ),
];

pub fn is_derived(name: &str) -> bool {
    DERIVED.iter().any(|(n, _, _)| *n == name)
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

pub fn derive(name: &str, ctx: &DeriveCtx) -> Option<(String, Unit)> {
    match name {
        "derive.shm_size_bytes" => {
            Some((shm_recommendation(ctx.facts).bytes.to_string(), Unit::Bytes))
        }
        "derive.shm_basis" => Some((shm_recommendation(ctx.facts).basis, Unit::Text)),
        "derive.gpu_oom_plan" => gpu_oom_plan(ctx).map(|s| (s, Unit::Text)),
        _ => None,
    }
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
    let size = facts.num("shm.size_bytes");
    let peak = facts
        .num("shm.peak_bytes")
        .into_iter()
        .chain(facts.num("shm.used_bytes"))
        .reduce(f64::max);
    let host = facts.num("host.mem_total_bytes");
    let h = crate::rules::template::human_bytes;
    let (mut want, mut basis) = match (peak, size) {
        (Some(p), Some(s)) if p > 0.0 && p < 0.9 * s => (
            p * 1.5 + 512.0 * MIB,
            format!("observed peak {} plus 50% and 512 MiB of margin", h(p)),
        ),
        (Some(p), None) if p > 0.0 => (
            p * 1.5 + 512.0 * MIB,
            format!("observed peak {} plus 50% and 512 MiB of margin", h(p)),
        ),
        (_, Some(s)) => (
            (8.0 * GIB).max(4.0 * s),
            format!(
                "the {} /dev/shm was the ceiling, so the real need is unknown: {} is a safe start",
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

/// Parse `2.00 GiB` / `289.12 MiB` / `512 KiB` / `12 bytes` as bytes.
pub fn parse_size(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let n: f64 = s[..split].parse().ok()?;
    let unit = s[split..].trim().to_ascii_lowercase();
    let mult = match unit.as_str() {
        "" | "b" | "bytes" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => MIB,
        "g" | "gb" | "gib" => GIB,
        "t" | "tb" | "tib" => GIB * 1024.0,
        _ => return None,
    };
    Some(n * mult)
}

/// From a CUDA OOM message's figures: is it this process's own usage (shrink the batch), or
/// another process holding the card?
fn gpu_oom_plan(ctx: &DeriveCtx) -> Option<String> {
    let tried = parse_size(ctx.capture("tried")?)?;
    let total = ctx.capture("total").and_then(parse_size);
    let free = ctx.capture("free").and_then(parse_size);
    let by_torch = ctx.capture("allocated").and_then(parse_size);
    let h = crate::rules::template::human_bytes;
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
            assert!(w[0].0 < w[1].0);
        }
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
        let r = shm_recommendation(&facts(&[
            ("shm.size_bytes", 64 << 30),
            ("shm.peak_bytes", 5 << 30),
        ]));
        // 5 GiB * 1.5 + 0.5 GiB = 8 GiB
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
