//! Finding this process's memory cgroup (v2 unified, or v1 / hybrid memory controller) from
//! /proc/self/cgroup, falling back to the namespace root when the listed path is not visible.
//! It must only read: never create, move into, or write a cgroup.

use std::path::{Path, PathBuf};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CgroupVersion {
    V1,
    V2,
}

#[derive(Debug, Clone)]
pub(crate) struct MemoryCgroup {
    pub version: CgroupVersion,
    /// The directory holding the memory files.
    pub dir: PathBuf,
    /// The path as /proc/self/cgroup lists it (what a container hint shows).
    pub listed: String,
}

/// Memory files copied into a snapshot's `cgroup/` (the same list the corpus captures used).
pub(crate) const FILES: &[&str] = &[
    "memory.events",
    "memory.events.local",
    "memory.max",
    "memory.high",
    "memory.peak",
    "memory.current",
    "memory.stat",
    "memory.swap.current",
    "memory.swap.max",
    "memory.oom.group",
    "cgroup.procs",
    "memory.failcnt",
    "memory.limit_in_bytes",
    "memory.max_usage_in_bytes",
    "memory.usage_in_bytes",
    "memory.oom_control",
    "memory.memsw.limit_in_bytes",
    "memory.memsw.failcnt",
];

impl MemoryCgroup {
    /// The file with current usage in bytes.
    pub fn current_file(&self) -> PathBuf {
        self.dir.join(match self.version {
            CgroupVersion::V2 => "memory.current",
            CgroupVersion::V1 => "memory.usage_in_bytes",
        })
    }

    /// The file with an `oom_kill <n>` line.
    pub fn events_file(&self) -> PathBuf {
        self.dir.join(match self.version {
            CgroupVersion::V2 => "memory.events",
            CgroupVersion::V1 => "memory.oom_control",
        })
    }
}

pub(crate) fn locate() -> Result<MemoryCgroup, String> {
    let text = std::fs::read_to_string("/proc/self/cgroup")
        .map_err(|e| format!("/proc/self/cgroup: {e}"))?;
    locate_in(Path::new("/sys/fs/cgroup"), &text)
}

pub(crate) fn locate_in(root: &Path, proc_self_cgroup: &str) -> Result<MemoryCgroup, String> {
    let lines = proc_self_cgroup.lines().filter_map(|l| {
        let mut it = l.splitn(3, ':');
        Some((it.next()?, it.next()?, it.next()?))
    });
    if root.join("cgroup.controllers").exists() {
        let listed = lines
            .clone()
            .find(|(id, ctl, _)| *id == "0" && ctl.is_empty())
            .map(|(_, _, p)| p.to_string())
            .ok_or("cgroup v2 mounted but /proc/self/cgroup has no `0::` line")?;
        let dir = pick(root, &listed, "memory.current");
        return Ok(MemoryCgroup {
            version: CgroupVersion::V2,
            dir,
            listed,
        });
    }
    let v1root = root.join("memory");
    if let Some((_, _, p)) = lines
        .clone()
        .find(|(_, ctl, _)| ctl.split(',').any(|c| c == "memory"))
        && v1root.is_dir()
    {
        return Ok(MemoryCgroup {
            version: CgroupVersion::V1,
            dir: pick(&v1root, p, "memory.usage_in_bytes"),
            listed: p.to_string(),
        });
    }
    Err("no memory cgroup found (neither v2 unified nor a v1 memory controller)".into())
}

/// The listed path under the mount, or the mount itself when a cgroup namespace hides it.
fn pick(mount: &Path, listed: &str, probe: &str) -> PathBuf {
    let dir = mount.join(listed.trim_start_matches('/'));
    if dir.join(probe).exists() {
        dir
    } else {
        mount.to_path_buf()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v2_path_comes_from_the_zero_line() {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join("cgroup.controllers"), "memory\n").unwrap();
        std::fs::create_dir_all(t.path().join("job/a")).unwrap();
        std::fs::write(t.path().join("job/a/memory.current"), "1\n").unwrap();
        let cg = locate_in(t.path(), "0::/job/a\n").unwrap();
        assert_eq!(cg.version, CgroupVersion::V2);
        assert_eq!(cg.dir, t.path().join("job/a"));
    }

    #[test]
    fn hidden_path_falls_back_to_the_namespace_root() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("memory")).unwrap();
        let cg = locate_in(t.path(), "4:memory:/docker/abc\n0::/\n").unwrap();
        assert_eq!(cg.version, CgroupVersion::V1);
        assert_eq!(cg.dir, t.path().join("memory"));
        assert_eq!(cg.listed, "/docker/abc");
    }

    #[test]
    fn no_cgroup_is_an_explained_absence() {
        let t = tempfile::tempdir().unwrap();
        assert!(locate_in(t.path(), "0::/\n").is_err());
    }
}
