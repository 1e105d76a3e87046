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

pub use env::training_env;
pub use manifest::{Manifest, ManifestFile, ManifestNote};
pub use run::{RunError, RunOptions, RunOutcome, Termination, run};
pub use sampler::Peaks;
pub use signals::signal_name;
pub use snapshot::{SnapshotOptions, snapshot};
pub use ulimit::ulimit_a;

/// Fact names written to `peaks.txt` (defined, with every other fact name, in
/// `crate::fact_names`).
pub(crate) mod fact_names {
    pub use crate::fact_names::{
        CGROUP_MEMORY_PEAK_BYTES, HOST_MEM_AVAILABLE_MIN_BYTES, SHM_PEAK_BYTES,
        gpu_memory_peak_bytes,
    };
}

/// Names of what a run directory holds (kept in `inputs`, which reads them without
/// depending on the capture code).
pub use crate::inputs::layout;
