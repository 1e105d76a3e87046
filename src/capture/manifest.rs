//! The manifest: what a capture wrote, which tools were missing and what could not be read.
//! Absence is information for a postmortem, so it is recorded here instead of failing.
//! It must not decide anything about the run; it only lists.

use serde::Serialize;
use std::io::{self, Write};
use std::path::Path;
use std::time::{SystemTime, UNIX_EPOCH};

pub(crate) const SCHEMA: &str = "trainwreck.capture/1";

/// One file written by a capture, relative to the capture directory.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ManifestFile {
    pub path: String,
    /// Where it came from: a command line (`df -h /dev/shm`) or a file (`/proc/meminfo`).
    pub source: String,
    pub bytes: u64,
}

/// Something that could not be captured and why.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct ManifestNote {
    pub what: String,
    pub why: String,
}

/// `manifest.json` of a snapshot directory or a run directory.
#[derive(Debug, Clone, Serialize)]
pub struct Manifest {
    pub schema: &'static str,
    /// `snapshot` or `run`.
    pub kind: &'static str,
    /// UTC, RFC 3339.
    pub created: String,
    pub files: Vec<ManifestFile>,
    /// Tools that are not installed (`nvidia-smi`, `python3`).
    pub missing: Vec<ManifestNote>,
    /// Files or commands that exist but could not be read or failed (permission, timeout).
    pub unreadable: Vec<ManifestNote>,
    /// Files that could not be written (disk full).
    pub write_errors: Vec<ManifestNote>,
    /// Anything else worth knowing (GPU sampling mechanism, cgroup version).
    pub notes: Vec<String>,
}

impl Manifest {
    pub fn new(kind: &'static str) -> Manifest {
        Manifest {
            schema: SCHEMA,
            kind,
            created: utc_now_rfc3339(),
            files: Vec::new(),
            missing: Vec::new(),
            unreadable: Vec::new(),
            write_errors: Vec::new(),
            notes: Vec::new(),
        }
    }

    /// Write `bytes` to `dir/name` and record it; a failed write is recorded, not returned.
    pub(crate) fn put(&mut self, dir: &Path, name: &str, source: &str, bytes: &[u8]) {
        let path = dir.join(name);
        if let Some(parent) = path.parent()
            && let Err(e) = std::fs::create_dir_all(parent)
        {
            self.write_error(name, &e);
            return;
        }
        match std::fs::File::create(&path).and_then(|mut f| f.write_all(bytes)) {
            Ok(()) => self.files.push(ManifestFile {
                path: name.to_string(),
                source: source.to_string(),
                bytes: bytes.len() as u64,
            }),
            Err(e) => self.write_error(name, &e),
        }
    }

    /// Record a file written by someone else (the run's logs).
    pub(crate) fn record(&mut self, name: &str, source: &str, dir: &Path) {
        let bytes = std::fs::metadata(dir.join(name))
            .map(|m| m.len())
            .unwrap_or(0);
        self.files.push(ManifestFile {
            path: name.to_string(),
            source: source.to_string(),
            bytes,
        });
    }

    pub(crate) fn missing(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.missing.push(ManifestNote {
            what: what.into(),
            why: why.into(),
        });
    }

    pub(crate) fn unreadable(&mut self, what: impl Into<String>, why: impl Into<String>) {
        self.unreadable.push(ManifestNote {
            what: what.into(),
            why: why.into(),
        });
    }

    pub(crate) fn write_error(&mut self, what: &str, e: &io::Error) {
        self.write_errors.push(ManifestNote {
            what: what.to_string(),
            why: e.to_string(),
        });
    }

    pub(crate) fn note(&mut self, text: impl Into<String>) {
        self.notes.push(text.into());
    }

    /// Write `manifest.json` into `dir`. The only error a capture returns besides a directory
    /// that cannot be created: without the manifest nobody knows what is missing.
    pub fn save(&self, dir: &Path) -> io::Result<()> {
        let mut json = serde_json::to_vec_pretty(self).map_err(io::Error::other)?;
        json.push(b'\n');
        let tmp = dir.join(".manifest.json.tmp");
        std::fs::write(&tmp, &json)?;
        std::fs::rename(&tmp, dir.join(super::layout::MANIFEST_JSON))
    }
}

/// Now as `2026-11-29T18:54:17Z`, without a date crate.
pub(crate) fn utc_now_rfc3339() -> String {
    let secs = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    rfc3339(secs)
}

pub(crate) fn rfc3339(secs: u64) -> String {
    crate::sources::units::utc_z(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_known_instants() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_796_000_057), "2026-11-30T00:54:17Z");
    }

    #[test]
    fn a_failed_write_is_recorded_not_returned() {
        let mut m = Manifest::new("snapshot");
        m.put(Path::new("/proc/definitely/not"), "x.txt", "test", b"x");
        assert!(m.files.is_empty());
        assert_eq!(m.write_errors.len(), 1);
    }
}
