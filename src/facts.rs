//! The catalog of fact names and the set of facts gathered from one analysis.
//! The catalog is the contract rule files are checked against: a rule that names a fact
//! not listed here fails to load. It must not know how any fact is parsed.

use crate::model::{Fact, FactValue};
use std::collections::BTreeMap;

/// Units, so that templates can format a value for people (`64 MiB`, not `67108864`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Bytes,
    Count,
    Seconds,
    Percent,
    Celsius,
    Text,
    Bool,
}

/// One catalog entry. `<n>`-style segments in a name match any one segment
/// (`gpu.<index>.memory_used_bytes` matches `gpu.0.memory_used_bytes`).
pub struct FactSpec {
    pub name: &'static str,
    pub unit: Unit,
    pub doc: &'static str,
}

macro_rules! spec {
    ($name:expr, $unit:ident, $doc:expr) => {
        FactSpec {
            name: $name,
            unit: Unit::$unit,
            doc: $doc,
        }
    };
}

/// Every fact name the tool can emit. Sorted by name; a test keeps it so.
pub static CATALOG: &[FactSpec] = &[
    spec!(
        "cgroup.memory_current_bytes",
        Bytes,
        "cgroup memory usage when captured (v2 memory.current, v1 memory.usage_in_bytes)"
    ),
    spec!(
        "cgroup.memory_limit_bytes",
        Bytes,
        "cgroup memory limit (v2 memory.max, v1 memory.limit_in_bytes); absent when unlimited"
    ),
    spec!(
        "cgroup.memory_peak_bytes",
        Bytes,
        "cgroup peak memory usage (v2 memory.peak, v1 memory.max_usage_in_bytes)"
    ),
    spec!(
        "cgroup.oom",
        Count,
        "times the cgroup hit its limit and the OOM path ran (v2 memory.events `oom`)"
    ),
    spec!(
        "cgroup.oom_kill",
        Count,
        "processes killed by the OOM killer in the cgroup (v2 memory.events `oom_kill`, v1 memory.oom_control)"
    ),
    spec!(
        "core.exe",
        Text,
        "executable of the process that dumped core"
    ),
    spec!(
        "core.fault_addr",
        Text,
        "faulting address from NT_SIGINFO, hex"
    ),
    spec!(
        "core.fault_mapping",
        Text,
        "file mapped at the fault address, or [anonymous]/[stack]/[heap]"
    ),
    spec!("core.si_code", Text, "signal code name, e.g. BUS_ADRERR"),
    spec!(
        "core.signal",
        Text,
        "signal that killed the process, e.g. SIGBUS"
    ),
    spec!(
        "gpu.<index>.memory_peak_bytes",
        Bytes,
        "highest memory used on GPU <index> (nvidia-smi/NVML order) seen while the run was watched"
    ),
    spec!(
        "host.mem_available_bytes",
        Bytes,
        "MemAvailable from /proc/meminfo or free"
    ),
    spec!(
        "host.mem_available_min_bytes",
        Bytes,
        "lowest host MemAvailable seen while the run was watched"
    ),
    spec!(
        "host.mem_total_bytes",
        Bytes,
        "MemTotal from /proc/meminfo or free"
    ),
    spec!(
        "launcher.exit_code",
        Count,
        "exit status the launcher itself reported for the job"
    ),
    spec!(
        "rank.<n>.exit_code",
        Count,
        "exit status of rank n's process as the launcher reported it (negative: signal)"
    ),
    spec!(
        "rank.<n>.exit_signal",
        Text,
        "signal that ended rank n's process, e.g. SIGBUS"
    ),
    spec!(
        "run.workers",
        Count,
        "DataLoader workers per rank (num_workers) when the log states it"
    ),
    spec!(
        "shm.peak_bytes",
        Bytes,
        "highest /dev/shm usage seen while the run was watched"
    ),
    spec!(
        "shm.size_bytes",
        Bytes,
        "size of the /dev/shm mount (df snapshot)"
    ),
    spec!(
        "shm.used_bytes",
        Bytes,
        "used bytes of the /dev/shm mount (df snapshot)"
    ),
];

/// Does a catalog pattern (`rank.<n>.exit_signal`) match a concrete name (`rank.3.exit_signal`)?
/// A pattern may also be matched by another pattern with the same shape (`rank.*.exit_signal`)
/// so that rule conditions can quantify over ranks.
pub fn pattern_matches(pattern: &str, name: &str) -> bool {
    let mut p = pattern.split('.');
    let mut n = name.split('.');
    loop {
        match (p.next(), n.next()) {
            (None, None) => return true,
            (Some(ps), Some(ns)) => {
                let wild_p = ps == "*" || (ps.starts_with('<') && ps.ends_with('>'));
                let wild_n = ns == "*" || (ns.starts_with('<') && ns.ends_with('>'));
                if !(wild_p || wild_n || ps == ns) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// A path of a snapshot taken before the run (`snapshot_before/df.txt`).
pub fn is_before(path: &str) -> bool {
    path.split(['/', '\\']).any(|c| {
        let c = c.to_ascii_lowercase();
        c.contains("before") || c.starts_with("pre_") || c.starts_with("pre-")
    })
}

/// The catalog entry for a name, if any.
pub fn spec_for(name: &str) -> Option<&'static FactSpec> {
    CATALOG.iter().find(|s| pattern_matches(s.name, name))
}

/// All facts of one analysis, in the order they were found, with lookups by name.
#[derive(Debug, Default, Clone)]
pub struct FactSet {
    facts: Vec<Fact>,
    by_name: BTreeMap<String, Vec<usize>>,
}

impl FactSet {
    pub fn new() -> FactSet {
        FactSet::default()
    }

    pub fn push(&mut self, fact: Fact) {
        // The same snapshot is often captured twice (before/after) or the same line read
        // by two parsers: keep one copy of an identical (name, value, path, line).
        if let Some(ix) = self.by_name.get(&fact.name)
            && ix.iter().any(|&i| {
                let f = &self.facts[i];
                f.value == fact.value && f.path == fact.path && f.line == fact.line
            })
        {
            return;
        }
        self.by_name
            .entry(fact.name.clone())
            .or_default()
            .push(self.facts.len());
        self.facts.push(fact);
    }

    pub fn all(&self) -> &[Fact] {
        &self.facts
    }

    pub fn is_empty(&self) -> bool {
        self.facts.is_empty()
    }

    /// Every current fact whose name matches `pattern` (which may contain `*` segments).
    /// When a name was read both before and after the run (`snapshot_before/…`,
    /// `snapshot_after/…`), only the later values count: they describe the failure.
    pub fn matching<'a>(&'a self, pattern: &'a str) -> impl Iterator<Item = &'a Fact> + 'a {
        let exact = !pattern.contains('*') && !pattern.contains('<');
        let names: Vec<&Vec<usize>> = if exact {
            self.by_name.get(pattern).into_iter().collect()
        } else {
            self.by_name
                .iter()
                .filter(|(n, _)| pattern_matches(pattern, n))
                .map(|(_, v)| v)
                .collect()
        };
        let mut out = Vec::new();
        for ix in names {
            let has_after = ix.iter().any(|&i| !is_before(&self.facts[i].path));
            out.extend(
                ix.iter()
                    .copied()
                    .filter(|&i| !has_after || !is_before(&self.facts[i].path)),
            );
        }
        out.into_iter().map(move |i| &self.facts[i])
    }

    /// The most telling value of a fact: for snapshots taken before and after a run, the
    /// later one (not-before files win, then the last one read).
    pub fn get(&self, name: &str) -> Option<&Fact> {
        let ix = self.by_name.get(name)?;
        ix.iter()
            .rev()
            .map(|&i| &self.facts[i])
            .find(|f| !is_before(&f.path))
            .or_else(|| ix.last().map(|&i| &self.facts[i]))
    }

    pub fn num(&self, name: &str) -> Option<f64> {
        self.get(name).and_then(|f| f.value.as_f64())
    }

    /// The largest numeric value among facts matching the pattern.
    pub fn max_num<'a>(&'a self, pattern: &'a str) -> Option<(f64, &'a Fact)> {
        self.matching(pattern)
            .filter_map(|f| f.value.as_f64().map(|v| (v, f)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    }

    pub fn text(&self, name: &str) -> Option<&str> {
        self.get(name).and_then(|f| match &f.value {
            FactValue::Text(s) => Some(s.as_str()),
            _ => None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_sorted_and_unique() {
        for w in CATALOG.windows(2) {
            assert!(w[0].name < w[1].name, "{} !< {}", w[0].name, w[1].name);
        }
    }

    #[test]
    fn wildcard_segments_match_one_segment() {
        assert!(pattern_matches(
            "rank.<n>.exit_signal",
            "rank.3.exit_signal"
        ));
        assert!(pattern_matches(
            "rank.<n>.exit_signal",
            "rank.*.exit_signal"
        ));
        assert!(!pattern_matches("rank.<n>.exit_signal", "rank.3.exit_code"));
        assert!(!pattern_matches("shm.size_bytes", "shm.size_bytes.x"));
    }

    #[test]
    fn identical_facts_are_kept_once() {
        let mut s = FactSet::new();
        let mut f = Fact::new("shm.size_bytes", 64i64);
        f.path = "a".into();
        s.push(f.clone());
        s.push(f);
        assert_eq!(s.all().len(), 1);
    }
}
