//! Where a crashed process's core went, and what a systemd-coredump file says about itself:
//! `kernel.core_pattern` read as a place (a file name pattern in a directory, or a pipe to a
//! handler such as systemd-coredump or apport), the core files a crash left there, and the
//! metadata systemd-coredump keeps in a core file's name and `user.coredump.*` xattrs (and the
//! shape of a `coredumpctl info` entry, `CoredumpInfo`, read by `text`). Finds and describes
//! files only; it never reads a core (that is `analyze_core`) and never moves one.

use regex::Regex;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// Where systemd-coredump stores the cores it keeps.
pub const SYSTEMD_COREDUMP_DIR: &str = "/var/lib/systemd/coredump";

/// Where the kernel puts a core, as `core_pattern` says.
#[derive(Debug, Clone)]
pub enum Destination {
    /// A file in `dir` whose name matches `name` (`pid` capture: the crashed process's pid,
    /// when the pattern names it).
    File { dir: PathBuf, name: Regex },
    /// Piped to a program (`|/usr/lib/systemd/systemd-coredump %P %u …`).
    Pipe { handler: String },
}

impl PartialEq for Destination {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Destination::File { dir, name }, Destination::File { dir: d, name: n }) => {
                dir == d && name.as_str() == n.as_str()
            }
            (Destination::Pipe { handler }, Destination::Pipe { handler: h }) => handler == h,
            _ => false,
        }
    }
}

/// Read `core_pattern` (and `core_uses_pid`, which appends `.PID` to a pattern without `%p`)
/// for a process whose working directory is `cwd`. `None` for a pattern that cannot be read as
/// a place (a directory part with `%` specifiers).
pub fn destination(pattern: &str, uses_pid: bool, cwd: &Path) -> Option<Destination> {
    let pattern = pattern.trim_end_matches('\n');
    if let Some(cmd) = pattern.strip_prefix('|') {
        return Some(Destination::Pipe {
            handler: cmd.trim().to_string(),
        });
    }
    let pattern = if pattern.is_empty() { "core" } else { pattern };
    let (dir, file) = match pattern.rfind('/') {
        Some(i) => (&pattern[..i.max(1)], &pattern[i + 1..]),
        None => ("", pattern),
    };
    if dir.contains('%') || file.is_empty() {
        return None;
    }
    let dir = if dir.is_empty() {
        cwd.to_path_buf()
    } else if dir.starts_with('/') {
        PathBuf::from(dir)
    } else {
        cwd.join(dir)
    };
    let mut re = String::from("^");
    let mut has_pid = false;
    let mut chars = file.chars();
    while let Some(c) = chars.next() {
        if c != '%' {
            re.push_str(&regex::escape(&c.to_string()));
            continue;
        }
        match chars.next() {
            Some('%') => re.push('%'),
            Some('p' | 'P') if !has_pid => {
                has_pid = true;
                re.push_str(r"(?P<pid>\d+)");
            }
            Some('p' | 'P' | 'i' | 'I' | 'u' | 'g' | 's' | 't' | 'c' | 'd') => re.push_str(r"\d+"),
            Some(_) => re.push_str(".*?"),
            None => {}
        }
    }
    if !has_pid && uses_pid {
        re.push_str(r"\.(?P<pid>\d+)");
    }
    re.push('$');
    let name = Regex::new(&re).ok()?;
    Some(Destination::File { dir, name })
}

/// A core file a crash left, and the pid it names (from the file name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundCore {
    pub path: PathBuf,
    pub pid: Option<i32>,
    pub size: u64,
}

/// The core files in `dir` whose names `name` matches, modified at or after `since` (a crash
/// during the run: its workers' cores too, whatever their pid). Sorted by name.
pub fn cores_in(dir: &Path, name: &Regex, since: SystemTime) -> Vec<FoundCore> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<FoundCore> = rd
        .filter_map(Result::ok)
        .filter_map(|e| {
            let n = e.file_name().into_string().ok()?;
            let caps = name.captures(&n)?;
            let meta = e.metadata().ok().filter(|m| m.is_file())?;
            if meta.modified().ok()? < since {
                return None;
            }
            Some(FoundCore {
                path: e.path(),
                pid: caps.name("pid").and_then(|p| p.as_str().parse().ok()),
                size: meta.len(),
            })
        })
        .collect();
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

/// What systemd-coredump recorded about a core, from its file name
/// (`core.COMM.UID.BOOTID.PID.USEC[.zst]`) and, where the file system keeps them, its
/// `user.coredump.*` extended attributes (which win).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CoredumpMeta {
    pub pid: Option<i32>,
    pub uid: Option<u32>,
    pub signal: Option<i32>,
    pub comm: Option<String>,
    pub exe: Option<String>,
    pub hostname: Option<String>,
    /// Microseconds since the epoch.
    pub timestamp_usec: Option<u64>,
    pub boot_id: Option<String>,
    /// `file-name`, or `xattr` when any attribute was read.
    pub from: &'static str,
}

/// The metadata of a systemd-coredump file; `None` when neither its name nor its xattrs
/// look like one.
pub fn coredump_meta(path: &Path) -> Option<CoredumpMeta> {
    let mut m = path
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(parse_systemd_name)
        .unwrap_or_default();
    let mut any = false;
    let mut attr = |name: &str| {
        let v = get_xattr(path, &format!("user.coredump.{name}"))?;
        any = true;
        Some(v)
    };
    let num = |v: Option<String>| v.and_then(|s| s.trim().parse::<i64>().ok());
    if let Some(p) = num(attr("pid")) {
        m.pid = i32::try_from(p).ok();
    }
    if let Some(u) = num(attr("uid")) {
        m.uid = u32::try_from(u).ok();
    }
    if let Some(s) = num(attr("signal")) {
        m.signal = i32::try_from(s).ok();
    }
    if let Some(t) = num(attr("timestamp")) {
        m.timestamp_usec = u64::try_from(t).ok();
    }
    m.comm = attr("comm").or(m.comm);
    m.exe = attr("exe").or(m.exe);
    m.hostname = attr("hostname").or(m.hostname);
    if any {
        m.from = "xattr";
    } else if m.from.is_empty() {
        return None;
    }
    Some(m)
}

/// `core.COMM.UID.BOOTID.PID.USEC` (+ `.zst`/`.xz`/`.lz4`): COMM may itself hold dots, so the
/// fields are taken from the end.
pub fn parse_systemd_name(name: &str) -> Option<CoredumpMeta> {
    let rest = name.strip_prefix("core.")?;
    let rest = [".zst", ".xz", ".lz4"]
        .iter()
        .find_map(|s| rest.strip_suffix(s))
        .unwrap_or(rest);
    let mut it = rest.rsplitn(5, '.');
    let usec = it.next()?.parse::<u64>().ok()?;
    let pid = it.next()?.parse::<i32>().ok()?;
    let boot = it.next()?;
    let uid = it.next()?.parse::<u32>().ok()?;
    let comm = it.next()?;
    if boot.len() != 32 || !boot.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    // systemd escapes odd bytes in COMM as \xNN.
    Some(CoredumpMeta {
        pid: Some(pid),
        uid: Some(uid),
        comm: Some(comm.to_string()),
        timestamp_usec: Some(usec),
        boot_id: Some(boot.to_string()),
        from: "file-name",
        ..CoredumpMeta::default()
    })
}

/// What `coredumpctl info` (or the journal's `COREDUMP_*` fields) said about one core, as
/// `text::CoreTextParser` read it into `core.*` facts: one entry per `PID:` line.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct CoredumpInfo {
    pub pid: u32,
    /// `SIGSEGV`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// As printed (`Thu 2024-06-06 13:38:31 CST`), without the relative `(5min ago)`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command_line: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exe: Option<String>,
    /// The file and line of the entry's `PID:` line.
    pub path: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<u64>,
}

/// One extended attribute as text (at most 4 KiB), `None` when absent or unsupported.
fn get_xattr(path: &Path, name: &str) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let p = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let n = std::ffi::CString::new(name).ok()?;
    let mut buf = vec![0u8; 4096];
    // SAFETY: both strings are NUL-terminated; the buffer is valid for its length.
    let got = unsafe { libc::getxattr(p.as_ptr(), n.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
    let got = usize::try_from(got).ok()?;
    buf.truncate(got);
    while buf.last() == Some(&0) {
        buf.pop();
    }
    String::from_utf8(buf).ok()
}
