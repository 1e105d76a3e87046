//! Fact names in one place: a constructor for each family whose name is built from parts (a
//! rank, a GPU index, a disk, a container, an Xid code, an environment variable) and
//! constants for the names analysis code looks up. The tests below check every constant,
//! every constructor with every field it accepts, and every dotted fact-name literal written
//! anywhere under `src/` against `facts::CATALOG` (`trainwreck facts --catalog`), so a name
//! the code can produce is never missing from the catalog. Names only: nothing here parses
//! input or decides what a value means.

/// Size of the /dev/shm mount (a `df` snapshot).
pub const SHM_SIZE_BYTES: &str = "shm.size_bytes";
/// Usage of the /dev/shm mount (a `df` snapshot).
pub const SHM_USED_BYTES: &str = "shm.used_bytes";
/// Highest /dev/shm usage seen while the run was watched.
pub const SHM_PEAK_BYTES: &str = "shm.peak_bytes";
/// The host's memory (meminfo, free).
pub const HOST_MEM_TOTAL_BYTES: &str = "host.mem_total_bytes";
/// Lowest MemAvailable of the host seen while watched.
pub const HOST_MEM_AVAILABLE_MIN_BYTES: &str = "host.mem_available_min_bytes";
/// Highest memory usage of the run's cgroup seen while watched.
pub const CGROUP_MEMORY_PEAK_BYTES: &str = "cgroup.memory_peak_bytes";
/// The mapped file holding the crashing thread's pc (a core, a gdb backtrace).
pub const CORE_CRASH_MODULE: &str = "core.crash_module";
/// Every rank's exit code (a pattern for `FactSet::matching`).
pub const ANY_RANK_EXIT_CODE: &str = "rank.*.exit_code";

/// Job variables of schedulers and CI systems, most specific first: `run` reads them from its
/// own environment (the job it runs in); in logs they come from env dumps (`env.<NAME>`), and
/// either way they are the history's `job`.
pub const JOB_VARIABLES: &[&str] = &[
    "SLURM_JOB_ID",
    "SLURM_JOBID",
    "PBS_JOBID",
    "LSB_JOBID",
    "KUBERNETES_POD_NAME",
    "POD_NAME",
    "GITHUB_RUN_ID",
    "CI_JOB_ID",
    "BUILDKITE_JOB_ID",
    "BUILD_TAG",
];

/// Fields of `gpu.<index>.…` (nvidia-smi table, `-q`, CSV; the capture sampler's peak).
pub const GPU_FIELDS: &[&str] = &[
    "bus_id",
    "ecc_corrected_aggregate",
    "ecc_corrected_volatile",
    "ecc_uncorrected_aggregate",
    "ecc_uncorrected_volatile",
    "memory_climb_from_bytes",
    "memory_peak_bytes",
    "memory_total_bytes",
    "memory_used_bytes",
    "name",
    "process_memory_bytes",
    "processes",
    "remapped_rows_correctable",
    "remapped_rows_failure",
    "remapped_rows_pending",
    "remapped_rows_uncorrectable",
    "retired_pages_dbe",
    "retired_pages_pending",
    "retired_pages_sbe",
    "smi_error",
    "temperature_c",
    "utilization_percent",
    "uuid",
];

/// `gpu.<index>.<field>`, `field` one of [`GPU_FIELDS`].
pub fn gpu(index: u32, field: &'static str) -> String {
    debug_assert!(GPU_FIELDS.contains(&field), "gpu field {field}");
    format!("gpu.{index}.{field}")
}

/// `gpu.<index>.memory_peak_bytes`: highest memory used on GPU `<index>` seen while watched.
pub fn gpu_memory_peak_bytes(index: u32) -> String {
    gpu(index, "memory_peak_bytes")
}

/// Fields of a `df` row: `shm.<field>` for /dev/shm takes the usage ones, `disk.<n>.<field>`
/// every one.
pub const DF_USAGE_FIELDS: &[&str] = &["size_bytes", "used_bytes", "avail_bytes", "use_percent"];
/// Fields only a `disk.<n>` row has.
pub const DISK_ONLY_FIELDS: &[&str] = &["mount", "filesystem", "fstype"];

/// `shm.<field>`, `field` one of [`DF_USAGE_FIELDS`].
pub fn shm(field: &'static str) -> String {
    debug_assert!(DF_USAGE_FIELDS.contains(&field), "shm field {field}");
    format!("shm.{field}")
}

/// `disk.<n>.<field>` for the `n`th mount other than /dev/shm.
pub fn disk(n: usize, field: &'static str) -> String {
    debug_assert!(
        DF_USAGE_FIELDS.contains(&field) || DISK_ONLY_FIELDS.contains(&field),
        "disk field {field}"
    );
    format!("disk.{n}.{field}")
}

/// `rank.<n>.exit_code`.
pub fn rank_exit_code(rank: u32) -> String {
    format!("rank.{rank}.exit_code")
}

/// `rank.<n>.exit_signal` (`SIGBUS`).
pub fn rank_exit_signal(rank: u32) -> String {
    format!("rank.{rank}.exit_signal")
}

/// Fields of `k8s.container.<name>.…`.
pub const K8S_CONTAINER_FIELDS: &[&str] = &[
    "exit_code",
    "last_exit_code",
    "last_reason",
    "memory_limit_bytes",
    "reason",
    "restarts",
];

/// `k8s.container.<name>.<field>`, `field` one of [`K8S_CONTAINER_FIELDS`].
pub fn k8s_container(name: &str, field: &'static str) -> String {
    debug_assert!(K8S_CONTAINER_FIELDS.contains(&field), "k8s field {field}");
    format!("k8s.container.{name}.{field}")
}

/// The two bounds of a ulimit in `docker inspect`.
pub const DOCKER_ULIMIT_BOUNDS: &[&str] = &["soft", "hard"];

/// `docker.ulimit.<name>.<bound>`, `bound` one of [`DOCKER_ULIMIT_BOUNDS`].
pub fn docker_ulimit(name: &str, bound: &'static str) -> String {
    debug_assert!(
        DOCKER_ULIMIT_BOUNDS.contains(&bound),
        "ulimit bound {bound}"
    );
    format!("docker.ulimit.{name}.{bound}")
}

/// `xid.<code>`: how many Xid events with this code the kernel logged.
pub fn xid(code: &str) -> String {
    format!("xid.{code}")
}

/// `env.<name>`: an environment variable from an env dump.
pub fn env(var: &str) -> String {
    format!("env.{var}")
}

/// `kernel.edac_ce` / `kernel.edac_ue`: corrected / uncorrected EDAC memory errors.
pub fn kernel_edac(uncorrected: bool) -> String {
    if uncorrected {
        "kernel.edac_ue"
    } else {
        "kernel.edac_ce"
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::spec_for;

    fn in_catalog(name: &str) -> bool {
        spec_for(name).is_some()
    }

    #[test]
    fn every_constant_and_constructor_is_in_the_catalog() {
        let mut names: Vec<String> = [
            SHM_SIZE_BYTES,
            SHM_USED_BYTES,
            SHM_PEAK_BYTES,
            HOST_MEM_TOTAL_BYTES,
            HOST_MEM_AVAILABLE_MIN_BYTES,
            CGROUP_MEMORY_PEAK_BYTES,
            ANY_RANK_EXIT_CODE,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        names.extend(GPU_FIELDS.iter().map(|f| gpu(3, f)));
        names.push(gpu_memory_peak_bytes(0));
        names.extend(DF_USAGE_FIELDS.iter().map(|f| shm(f)));
        names.extend(
            DF_USAGE_FIELDS
                .iter()
                .chain(DISK_ONLY_FIELDS)
                .map(|f| disk(1, f)),
        );
        names.push(rank_exit_code(7));
        names.push(rank_exit_signal(7));
        names.extend(
            K8S_CONTAINER_FIELDS
                .iter()
                .map(|f| k8s_container("trainer", f)),
        );
        names.extend(
            DOCKER_ULIMIT_BOUNDS
                .iter()
                .map(|b| docker_ulimit("nofile", b)),
        );
        names.push(xid("79"));
        names.push(env("NCCL_DEBUG"));
        names.push(kernel_edac(true));
        names.push(kernel_edac(false));
        let missing: Vec<&String> = names.iter().filter(|n| !in_catalog(n)).collect();
        assert!(missing.is_empty(), "not in facts::CATALOG: {missing:?}");
    }

    /// Strings under `src/` shaped like a fact name that are not one (file names, keys of
    /// files the capture writes).
    const NOT_FACTS: &[&str] = &[
        "cgroup.controllers",
        "cgroup.dir",
        "cgroup.path",
        "cgroup.procs",
        "cgroup.version",
        // facts.rs's test that a longer name does not match a catalog entry.
        "shm.size_bytes.x",
    ];

    /// Every string literal under `src/` that starts like a fact name (a catalog family and a
    /// dot), and every `format!` template of one (`{…}` standing for any segment), must be in
    /// the catalog: a fact a parser writes, a name a lookup reads, a test's expected name.
    #[test]
    fn every_fact_name_written_in_the_source_is_in_the_catalog() {
        let families: std::collections::BTreeSet<&str> = crate::facts::CATALOG
            .iter()
            .filter_map(|s| s.name.split('.').next())
            .collect();
        let alt = families.iter().copied().collect::<Vec<_>>().join("|");
        let lit = regex::Regex::new(&format!(r#""((?:{alt})\.[A-Za-z0-9_.<>*{{}}]+)""#))
            .expect("literal regex");
        let hole = regex::Regex::new(r"\{[^}]*\}").expect("hole regex");
        let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
        let mut seen = 0;
        let mut bad = Vec::new();
        for e in walkdir::WalkDir::new(&src).into_iter().flatten() {
            if e.path().extension().is_none_or(|x| x != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(e.path()).expect("read source");
            for (i, line) in text.lines().enumerate() {
                for c in lit.captures_iter(line) {
                    let name = hole.replace_all(&c[1], "<x>").to_string();
                    if NOT_FACTS.contains(&name.as_str()) || name.ends_with('.') {
                        continue;
                    }
                    seen += 1;
                    if !in_catalog(&name) {
                        bad.push(format!("{}:{}: {name}", e.path().display(), i + 1));
                    }
                }
            }
        }
        assert!(
            seen > 100,
            "the scan found only {seen} names: is the regex right?"
        );
        assert!(
            bad.is_empty(),
            "fact names not in facts::CATALOG (add them there, or to NOT_FACTS if they are \
             not facts):\n{}",
            bad.join("\n")
        );
    }
}
