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
        "cgroup.failcnt",
        Count,
        "times usage hit the v1 limit (memory.failcnt)"
    ),
    spec!(
        "cgroup.high_events",
        Count,
        "times usage went over memory.high (v2 memory.events `high`)"
    ),
    spec!(
        "cgroup.local.max_events",
        Count,
        "memory.events.local `max`: limit hits in this cgroup only, not its children"
    ),
    spec!(
        "cgroup.local.oom",
        Count,
        "memory.events.local `oom`: OOM path runs in this cgroup only"
    ),
    spec!(
        "cgroup.local.oom_kill",
        Count,
        "memory.events.local `oom_kill`: OOM kills in this cgroup only"
    ),
    spec!(
        "cgroup.max_events",
        Count,
        "times usage was about to exceed memory.max (v2 memory.events `max`)"
    ),
    spec!(
        "cgroup.memory_current_bytes",
        Bytes,
        "cgroup memory usage when captured (v2 memory.current, v1 memory.usage_in_bytes)"
    ),
    spec!(
        "cgroup.memory_high_bytes",
        Bytes,
        "cgroup memory.high throttling threshold; absent when `max`"
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
        "cgroup.oom_group",
        Bool,
        "memory.oom.group: the OOM killer kills the whole cgroup at once"
    ),
    spec!(
        "cgroup.oom_group_kill",
        Count,
        "v2 memory.events `oom_group_kill`: whole-group OOM kills"
    ),
    spec!(
        "cgroup.oom_kill",
        Count,
        "processes killed by the OOM killer in the cgroup (v2 memory.events `oom_kill`, v1 memory.oom_control)"
    ),
    spec!(
        "cgroup.oom_kill_disable",
        Bool,
        "v1 memory.oom_control `oom_kill_disable`"
    ),
    spec!(
        "cgroup.stat.anon_bytes",
        Bytes,
        "anonymous memory charged to the cgroup (memory.stat `anon`, v1 `rss`)"
    ),
    spec!(
        "cgroup.stat.file_bytes",
        Bytes,
        "page cache charged to the cgroup (memory.stat `file`, v1 `cache`)"
    ),
    spec!(
        "cgroup.stat.shmem_bytes",
        Bytes,
        "shmem/tmpfs (incl. /dev/shm) charged to the cgroup (memory.stat `shmem`)"
    ),
    spec!(
        "cgroup.swap_current_bytes",
        Bytes,
        "swap used by the cgroup (memory.swap.current)"
    ),
    spec!(
        "cgroup.swap_fail",
        Count,
        "swap allocations that failed (memory.swap.events `fail`)"
    ),
    spec!(
        "cgroup.swap_limit_bytes",
        Bytes,
        "swap limit (memory.swap.max; v1 memory.memsw.limit_in_bytes is memory+swap); absent when unlimited"
    ),
    spec!(
        "cgroup.under_oom",
        Bool,
        "v1 memory.oom_control `under_oom`: the cgroup is in OOM right now"
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
        "disk.<n>.avail_bytes",
        Bytes,
        "df: available bytes on the n-th non-/dev/shm row"
    ),
    spec!(
        "disk.<n>.filesystem",
        Text,
        "df: filesystem (device) of the n-th non-/dev/shm row"
    ),
    spec!(
        "disk.<n>.fstype",
        Text,
        "df -T: filesystem type of the n-th non-/dev/shm row"
    ),
    spec!(
        "disk.<n>.mount",
        Text,
        "df: mount point of the n-th non-/dev/shm row (find the checkpoint disk by it)"
    ),
    spec!(
        "disk.<n>.size_bytes",
        Bytes,
        "df: size of the n-th non-/dev/shm row"
    ),
    spec!(
        "disk.<n>.use_percent",
        Percent,
        "df: Use% of the n-th non-/dev/shm row"
    ),
    spec!(
        "disk.<n>.used_bytes",
        Bytes,
        "df: used bytes of the n-th non-/dev/shm row"
    ),
    spec!("docker.exit_code", Count, "docker inspect State.ExitCode"),
    spec!(
        "docker.ipc_mode",
        Text,
        "docker inspect HostConfig.IpcMode (`host` shares the host's /dev/shm)"
    ),
    spec!(
        "docker.memory_limit_bytes",
        Bytes,
        "docker inspect HostConfig.Memory; absent when 0 (no limit)"
    ),
    spec!(
        "docker.memory_swap_limit_bytes",
        Bytes,
        "docker inspect HostConfig.MemorySwap (memory+swap); absent when 0 or -1"
    ),
    spec!("docker.oom_killed", Bool, "docker inspect State.OOMKilled"),
    spec!(
        "docker.shm_size_bytes",
        Bytes,
        "docker inspect HostConfig.ShmSize (/dev/shm size of the container)"
    ),
    spec!(
        "docker.ulimit.<name>.hard",
        Count,
        "docker inspect HostConfig.Ulimits hard value (-1: unlimited)"
    ),
    spec!(
        "docker.ulimit.<name>.soft",
        Count,
        "docker inspect HostConfig.Ulimits soft value (-1: unlimited)"
    ),
    spec!(
        "env.<name>",
        Text,
        "an environment variable that steers training (NCCL_*, TORCH_*, CUDA_*, MASTER_PORT, …); secrets never kept"
    ),
    spec!("gpu.<index>.bus_id", Text, "PCI bus id of GPU index"),
    spec!(
        "gpu.<index>.ecc_corrected_aggregate",
        Count,
        "corrected ECC errors since the counters were reset (nvidia-smi)"
    ),
    spec!(
        "gpu.<index>.ecc_corrected_volatile",
        Count,
        "corrected ECC errors since the driver loaded (nvidia-smi)"
    ),
    spec!(
        "gpu.<index>.ecc_uncorrected_aggregate",
        Count,
        "uncorrected ECC errors since the counters were reset (nvidia-smi)"
    ),
    spec!(
        "gpu.<index>.ecc_uncorrected_volatile",
        Count,
        "uncorrected ECC errors since the driver loaded (nvidia-smi)"
    ),
    spec!(
        "gpu.<index>.memory_peak_bytes",
        Bytes,
        "highest memory used on GPU <index> (nvidia-smi/NVML order) seen while the run was watched"
    ),
    spec!(
        "gpu.<index>.memory_total_bytes",
        Bytes,
        "GPU memory total (nvidia-smi)"
    ),
    spec!(
        "gpu.<index>.memory_used_bytes",
        Bytes,
        "GPU memory in use when captured (nvidia-smi)"
    ),
    spec!("gpu.<index>.name", Text, "GPU product name (nvidia-smi)"),
    spec!(
        "gpu.<index>.process_memory_bytes",
        Bytes,
        "GPU memory held by the processes nvidia-smi lists on this GPU"
    ),
    spec!(
        "gpu.<index>.processes",
        Count,
        "processes nvidia-smi lists on this GPU"
    ),
    spec!(
        "gpu.<index>.remapped_rows_correctable",
        Count,
        "rows remapped for correctable errors"
    ),
    spec!(
        "gpu.<index>.remapped_rows_failure",
        Bool,
        "a row remapping failed (the GPU needs service)"
    ),
    spec!(
        "gpu.<index>.remapped_rows_pending",
        Bool,
        "row remapping pending: takes effect after a GPU reset"
    ),
    spec!(
        "gpu.<index>.remapped_rows_uncorrectable",
        Count,
        "rows remapped for uncorrectable errors"
    ),
    spec!(
        "gpu.<index>.retired_pages_dbe",
        Count,
        "pages retired for double-bit ECC errors"
    ),
    spec!(
        "gpu.<index>.retired_pages_pending",
        Bool,
        "page retirement pending: takes effect after a reboot"
    ),
    spec!(
        "gpu.<index>.retired_pages_sbe",
        Count,
        "pages retired for single-bit ECC errors"
    ),
    spec!(
        "gpu.<index>.smi_error",
        Text,
        "fields nvidia-smi printed as ERR!/Unknown Error for this GPU"
    ),
    spec!(
        "gpu.<index>.temperature_c",
        Celsius,
        "GPU temperature (nvidia-smi)"
    ),
    spec!(
        "gpu.<index>.utilization_percent",
        Percent,
        "GPU utilisation when captured (nvidia-smi)"
    ),
    spec!(
        "host.commit_limit_bytes",
        Bytes,
        "CommitLimit from /proc/meminfo"
    ),
    spec!(
        "host.committed_bytes",
        Bytes,
        "Committed_AS from /proc/meminfo"
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
        "host.mem_free_bytes",
        Bytes,
        "MemFree from /proc/meminfo, `free` column of free"
    ),
    spec!(
        "host.mem_total_bytes",
        Bytes,
        "MemTotal from /proc/meminfo or free"
    ),
    spec!("host.mem_used_bytes", Bytes, "`used` column of free"),
    spec!(
        "host.shmem_bytes",
        Bytes,
        "Shmem from /proc/meminfo or free's `shared`: tmpfs incl. /dev/shm"
    ),
    spec!(
        "host.swap_free_bytes",
        Bytes,
        "SwapFree from /proc/meminfo or free"
    ),
    spec!(
        "host.swap_total_bytes",
        Bytes,
        "SwapTotal from /proc/meminfo or free"
    ),
    spec!(
        "k8s.container.<name>.exit_code",
        Count,
        "exit code of the container's current terminated state"
    ),
    spec!(
        "k8s.container.<name>.last_exit_code",
        Count,
        "exit code of the container's last terminated state (137: SIGKILL)"
    ),
    spec!(
        "k8s.container.<name>.last_reason",
        Text,
        "reason of the container's last termination (OOMKilled, Error, …)"
    ),
    spec!(
        "k8s.container.<name>.memory_limit_bytes",
        Bytes,
        "container memory limit (resources.limits.memory)"
    ),
    spec!(
        "k8s.container.<name>.reason",
        Text,
        "reason of the container's current terminated state"
    ),
    spec!(
        "k8s.container.<name>.restarts",
        Count,
        "container restart count"
    ),
    spec!(
        "k8s.oom_killed",
        Count,
        "container states in the pod with reason OOMKilled"
    ),
    spec!(
        "k8s.shm_medium_memory",
        Bool,
        "the volume mounted at /dev/shm is an emptyDir with medium Memory"
    ),
    spec!(
        "k8s.shm_size_limit_bytes",
        Bytes,
        "sizeLimit of the emptyDir mounted at /dev/shm"
    ),
    spec!(
        "kernel.boot_time",
        Text,
        "boot time (UTC ISO) from a btime line in a kernel log"
    ),
    spec!("kernel.edac_ce", Count, "EDAC corrected memory error lines"),
    spec!(
        "kernel.edac_ue",
        Count,
        "EDAC uncorrected memory error lines"
    ),
    spec!(
        "kernel.mce",
        Count,
        "machine-check events reported by the kernel"
    ),
    spec!(
        "kernel.nvlink_error",
        Count,
        "NVLink error lines in the kernel log (other than Xid lines)"
    ),
    spec!(
        "kernel.oom_kill",
        Count,
        "processes killed by the kernel OOM killer (Killed process … lines)"
    ),
    spec!(
        "kernel.oom_kill_memcg",
        Count,
        "OOM kills constrained by a memory cgroup (CONSTRAINT_MEMCG)"
    ),
    spec!("kernel.oom_victim", Text, "name of an OOM-killed process"),
    spec!(
        "kernel.oom_victim_anon_rss_bytes",
        Bytes,
        "anon-rss of an OOM-killed process when it was killed"
    ),
    spec!("kernel.pcie_aer", Count, "PCIe AER error reports"),
    spec!(
        "kernel.pcie_aer_uncorrected",
        Count,
        "PCIe AER reports of uncorrected (fatal or non-fatal) errors"
    ),
    spec!(
        "kernel.segfault",
        Count,
        "segfault/general-protection lines from user processes"
    ),
    spec!(
        "launcher.exit_code",
        Count,
        "exit status the launcher itself reported for the job"
    ),
    spec!(
        "nvidia_smi.device_handle_error",
        Count,
        "`Unable to determine the device handle` lines: a GPU the driver cannot reach"
    ),
    spec!(
        "nvidia_smi.failed",
        Text,
        "nvidia-smi could not run (driver/NVML failure, no devices)"
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
        "shm.avail_bytes",
        Bytes,
        "available bytes of the /dev/shm mount (df snapshot)"
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
        "shm.use_percent",
        Percent,
        "Use% of the /dev/shm mount (df snapshot)"
    ),
    spec!(
        "shm.used_bytes",
        Bytes,
        "used bytes of the /dev/shm mount (df snapshot)"
    ),
    spec!(
        "slurm.cancelled",
        Text,
        "why Slurm cancelled the job: TIME LIMIT, PREEMPTION, NODE FAILURE, or `unstated`"
    ),
    spec!(
        "slurm.elapsed_seconds",
        Seconds,
        "job run time (sacct Elapsed, scontrol RunTime)"
    ),
    spec!(
        "slurm.exit_code",
        Count,
        "job exit code (the part before `:` in ExitCode)"
    ),
    spec!(
        "slurm.exit_signal",
        Count,
        "signal that ended the job (the part after `:` in ExitCode)"
    ),
    spec!("slurm.job_id", Count, "Slurm job id"),
    spec!("slurm.max_rss_bytes", Bytes, "MaxRSS of a job step (sacct)"),
    spec!(
        "slurm.oom_kill",
        Count,
        "OOM-kill events slurmstepd detected in the job's steps"
    ),
    spec!(
        "slurm.out_of_memory_steps",
        Count,
        "sacct rows in state OUT_OF_MEMORY"
    ),
    spec!("slurm.reason", Text, "scontrol Reason (TimeLimit, …)"),
    spec!(
        "slurm.state",
        Text,
        "job state (COMPLETED, FAILED, TIMEOUT, OUT_OF_MEMORY, PREEMPTED, …)"
    ),
    spec!(
        "slurm.time_limit_seconds",
        Seconds,
        "job time limit; absent when UNLIMITED"
    ),
    spec!(
        "systemd.oomd_kill",
        Count,
        "units killed by systemd-oomd (user-space OOM: no kernel OOM line)"
    ),
    spec!(
        "torchelastic.error_code",
        Count,
        "errorCode field of the error file"
    ),
    spec!(
        "torchelastic.exception",
        Text,
        "last exception line of the recorded traceback"
    ),
    spec!(
        "torchelastic.exit_code",
        Count,
        "exit code stated in the error file"
    ),
    spec!(
        "torchelastic.message",
        Text,
        "message of the torchelastic error file"
    ),
    spec!("torchelastic.rank", Count, "rank stated in the error file"),
    spec!(
        "torchelastic.timestamp",
        Count,
        "Unix time at which the error was recorded"
    ),
    spec!(
        "ulimit.core_file_size_bytes",
        Bytes,
        "core file size limit (ulimit -c); i64::MAX when unlimited"
    ),
    spec!(
        "ulimit.max_locked_memory_bytes",
        Bytes,
        "locked-memory limit (ulimit -l), soft; i64::MAX when unlimited"
    ),
    spec!(
        "ulimit.max_locked_memory_hard_bytes",
        Bytes,
        "locked-memory hard limit (/proc/<pid>/limits)"
    ),
    spec!(
        "ulimit.max_user_processes",
        Count,
        "process limit (ulimit -u); i64::MAX when unlimited"
    ),
    spec!(
        "ulimit.open_files",
        Count,
        "open-file limit (ulimit -n), soft; i64::MAX when unlimited"
    ),
    spec!(
        "ulimit.open_files_hard",
        Count,
        "open-file hard limit (/proc/<pid>/limits)"
    ),
    spec!(
        "ulimit.stack_size_bytes",
        Bytes,
        "stack size limit (ulimit -s); i64::MAX when unlimited"
    ),
    spec!(
        "ulimit.virtual_memory_bytes",
        Bytes,
        "address-space limit (ulimit -v); i64::MAX when unlimited"
    ),
    spec!("version.accelerate", Text, "accelerate version (pip)"),
    spec!(
        "version.cuda_driver",
        Text,
        "highest CUDA version the driver supports (nvidia-smi `CUDA Version`)"
    ),
    spec!(
        "version.cuda_runtime",
        Text,
        "CUDA runtime version (collect_env, nvidia-cuda-runtime wheel)"
    ),
    spec!("version.cuda_toolkit", Text, "nvcc version (ds_report)"),
    spec!("version.deepspeed", Text, "DeepSpeed version"),
    spec!("version.driver", Text, "NVIDIA driver version"),
    spec!("version.flash_attn", Text, "flash-attn version (pip)"),
    spec!(
        "version.nccl",
        Text,
        "NCCL version (nvidia-nccl wheel, NCCL INFO banner)"
    ),
    spec!("version.python", Text, "Python version (collect_env)"),
    spec!("version.torch", Text, "PyTorch version"),
    spec!(
        "version.torch_cuda",
        Text,
        "CUDA version PyTorch was built with"
    ),
    spec!("version.transformers", Text, "transformers version (pip)"),
    spec!("version.triton", Text, "Triton version (pip)"),
    spec!(
        "xid.<code>",
        Count,
        "NVIDIA Xid events with this code in the kernel log"
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
