//! Both runs' memory over time, for the diff page's charts: each memory that both runs sampled
//! (`trainwreck run`'s samples, or a polled nvidia-smi), paired, with each run's limit as its
//! own facts give it. Numbers only, and not part of `trainwreck.diff/1`: a run's peak memory is
//! already one difference (a number per side); this is what the page draws of it. Decides
//! nothing: which memory a column is and which fact is its limit are `sources::samples`'s.

use super::Run;
use crate::sources::samples::{Memory, Samples, memories};

/// One memory both runs sampled.
#[derive(Debug, Clone)]
pub struct MemoryCurve {
    pub what: Memory,
    /// Each run's samples: milliseconds since its own first sample, and bytes.
    pub good: (Vec<u64>, Vec<Option<u64>>),
    pub bad: (Vec<u64>, Vec<Option<u64>>),
    pub good_limit: Option<u64>,
    pub bad_limit: Option<u64>,
}

/// The memories both runs sampled, and the files each side's samples came from.
#[derive(Debug, Clone, Default)]
pub struct MemoryCurves {
    pub good_path: String,
    pub bad_path: String,
    pub memories: Vec<MemoryCurve>,
}

/// A run's samples: its first set that holds any memory (one run is one folder; a second set
/// is another run's or another sampler's).
fn samples_of(run: &Run) -> Option<&Samples> {
    run.samples.iter().find(|s| {
        s.columns
            .iter()
            .any(|c| Memory::of_column(&c.name).is_some())
    })
}

/// The memories both `good` and `bad` sampled, in the good run's column order.
pub fn curves(good: &Run, bad: &Run) -> MemoryCurves {
    let (Some(g), Some(b)) = (samples_of(good), samples_of(bad)) else {
        return MemoryCurves::default();
    };
    let limit = |run: &Run, name: &str| {
        run.facts
            .all()
            .iter()
            .filter(|f| f.name == name)
            .find_map(|f| f.value.as_i64())
            .filter(|v| *v > 0)
            .map(|v| v as u64)
    };
    let from_zero = |s: &Samples| {
        let t0 = s.t_ms.first().copied().unwrap_or(0);
        s.t_ms.iter().map(|t| t - t0).collect::<Vec<u64>>()
    };
    let gm = memories(g, &|n| limit(good, n));
    let bm = memories(b, &|n| limit(bad, n));
    let memories = gm
        .into_iter()
        .filter_map(|gs| {
            let bs = bm.iter().find(|b| b.what == gs.what)?;
            let sampled = |v: &[Option<u64>]| v.iter().any(Option::is_some);
            (sampled(&gs.values) && sampled(&bs.values)).then(|| MemoryCurve {
                what: gs.what.clone(),
                good: (from_zero(g), gs.values.clone()),
                bad: (from_zero(b), bs.values.clone()),
                good_limit: gs.limit,
                bad_limit: bs.limit,
            })
        })
        .collect();
    MemoryCurves {
        good_path: g.path.clone(),
        bad_path: b.path.clone(),
        memories,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Fact;

    fn run(csv: &str, facts: &[(&str, i64)]) -> Run {
        let (s, _) = crate::sources::samples::read("samples.csv", csv.as_bytes()).unwrap();
        let mut r = Run {
            samples: vec![s],
            ..Run::default()
        };
        for (n, v) in facts {
            r.facts.push(Fact::new(*n, *v));
        }
        r
    }

    /// Only the memories both runs sampled are paired, each with its own run's limit; the
    /// host's needs each run's MemTotal.
    #[test]
    fn pairs_the_memories_both_runs_sampled() {
        let good = run(
            "t_ms,shm_used_bytes,gpu0_used_bytes,host_mem_available_bytes\n0,1,5,90\n100,2,6,80\n",
            &[("shm.size_bytes", 1 << 30), ("host.mem_total_bytes", 100)],
        );
        let bad = run(
            "t_ms,shm_used_bytes,host_mem_available_bytes\n50,3,70\n150,64,60\n",
            &[("shm.size_bytes", 64), ("host.mem_total_bytes", 100)],
        );
        let c = curves(&good, &bad);
        let whats: Vec<&Memory> = c.memories.iter().map(|m| &m.what).collect();
        assert_eq!(whats, [&Memory::Shm, &Memory::Host]);
        let shm = &c.memories[0];
        assert_eq!((shm.good_limit, shm.bad_limit), (Some(1 << 30), Some(64)));
        assert_eq!(shm.bad.0, vec![0, 100], "from the run's own first sample");
        assert_eq!(c.memories[1].bad.1, vec![Some(30), Some(40)]);
        assert!(curves(&good, &Run::default()).memories.is_empty());
    }
}
