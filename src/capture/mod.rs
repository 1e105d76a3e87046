//! Capture: keep the evidence a postmortem needs while a training run is alive. `snapshot` writes
//! the machine's state as plain files in the same forms `sources` parses; `run` wraps a command,
//! tees its output, samples memory cheaply and records peaks and the exit status.
//! It must never fail a run for a missing tool or an unreadable file (those go in the manifest),
//! never print reports (the CLI does), and never import the rule engine.

mod cgroup;
mod env;
mod exec;
mod manifest;
mod nvml;
mod run;
mod sampler;
mod signals;
mod snapshot;
mod tee;
mod ulimit;

pub use env::{is_secret_name, redact_value, training_env};
pub use manifest::{Manifest, ManifestFile, ManifestNote};
pub use run::{RunError, RunOptions, RunOutcome, Termination, run};
pub use sampler::Peaks;
pub use signals::signal_name;
pub use snapshot::{SnapshotOptions, snapshot};
pub use ulimit::ulimit_a;

/// Fact names written to `peaks.txt` (all listed in `facts::CATALOG`).
pub mod fact_names {
    /// Highest /dev/shm usage seen while the run was watched.
    pub const SHM_PEAK_BYTES: &str = "shm.peak_bytes";
    /// Highest memory usage of the run's cgroup seen while watched.
    pub const CGROUP_MEMORY_PEAK_BYTES: &str = "cgroup.memory_peak_bytes";
    /// Lowest MemAvailable of the host seen while watched.
    pub const HOST_MEM_AVAILABLE_MIN_BYTES: &str = "host.mem_available_min_bytes";
    /// `gpu.<index>.memory_peak_bytes`: highest memory used on GPU `<index>` seen while watched.
    pub fn gpu_memory_peak_bytes(index: u32) -> String {
        format!("gpu.{index}.memory_peak_bytes")
    }
}

/// Names of what a run directory holds (kept in `inputs`, which reads them without
/// depending on the capture code).
pub use crate::inputs::layout;
