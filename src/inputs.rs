//! Turning what the user named (directories, files, archives, compressed files, `-` for stdin) into a list
//! of readable inputs with report paths relative to what was given, each with its phase
//! (before / during / after the run), decided here once from the layout's names. Skips loops
//! and special files with a warning; never opens file contents (that is `sources`' job).

use crate::model::{Phase, Warning, text};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Names of what a run directory holds, so the CLI and the analyzer agree on them.
pub mod layout {
    pub const SNAPSHOT_BEFORE: &str = "snapshot_before";
    pub const SNAPSHOT_AFTER: &str = "snapshot_after";
    pub const STDOUT_LOG: &str = "stdout.log";
    pub const STDERR_LOG: &str = "stderr.log";
    /// stdout and stderr interleaved in the order the wrapper read them.
    pub const CONSOLE_LOG: &str = "console.log";
    pub const SAMPLES_CSV: &str = "samples.csv";
    pub const PEAKS_TXT: &str = "peaks.txt";
    pub const EXIT_STATUS_TXT: &str = "exit_status.txt";
    pub const MANIFEST_JSON: &str = "manifest.json";
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    File(PathBuf),
    Stdin,
}

#[derive(Debug, Clone)]
pub struct Input {
    /// Path as shown in the report: relative to the directory given, or as given.
    pub display: String,
    pub source: Source,
    /// Size on disk (compressed size for `.gz`); 0 for stdin until read.
    pub size: u64,
    /// When it was taken relative to the run (`phase_of`).
    pub phase: Phase,
    /// Which file it was when listed (device, inode, mtime, size): the reader checks the
    /// handle it reads against it, so a file replaced or changed since is said, not mixed in.
    pub id: Option<FileId>,
}

/// A file's identity and state, from its metadata.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileId {
    pub dev: u64,
    pub ino: u64,
    pub mtime_ns: i128,
    pub size: u64,
}

impl FileId {
    pub fn of(m: &std::fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        FileId {
            dev: m.dev(),
            ino: m.ino(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            size: m.len(),
        }
    }

    /// The same file (device and inode), whatever its content.
    pub fn same_file(&self, o: &FileId) -> bool {
        self.dev == o.dev && self.ino == o.ino
    }
}

impl Input {
    fn file(display: String, path: PathBuf, meta: Option<&std::fs::Metadata>) -> Input {
        let phase = phase_of(&display).0;
        Input {
            display,
            source: Source::File(path),
            size: meta.map_or(0, |m| m.len()),
            phase,
            id: meta.map(FileId::of),
        }
    }
}

/// Directory names that mean "a snapshot taken before (after) the run" when a whole path
/// component is exactly one of them. `trainwreck capture`'s own names are certain; the others
/// are a reading of someone else's layout, said in a warning.
const BEFORE_DIRS: &[&str] = &[
    "before",
    "pre",
    "prerun",
    "pre_run",
    "pre-run",
    "before_run",
    "before-run",
    "snapshots_before",
    "snapshot-before",
    "snapshots-before",
];
const AFTER_DIRS: &[&str] = &[
    "after",
    "post",
    "postrun",
    "post_run",
    "post-run",
    "after_run",
    "after-run",
    "snapshots_after",
    "snapshot-after",
    "snapshots-after",
];

/// The phase of an input from its report path, and, when it is not `During`, the path
/// component that decided it and whether that was a guess (a name that is not
/// `trainwreck capture`'s own). Whole components only: `before_lr_fix/train.log` is a folder
/// someone named, not a snapshot, and stays `During`. A file is `Before` by its own name when
/// its stem ends in a `before` word (`dmesg_before.txt`, `nvidia-smi-before.log`).
pub fn phase_of(display: &str) -> (Phase, Option<(String, bool)>) {
    let parts: Vec<&str> = display
        .split(['/', '\\'])
        .filter(|c| !c.is_empty())
        .collect();
    let Some((file, dirs)) = parts.split_last() else {
        return (Phase::During, None);
    };
    for d in dirs.iter().rev() {
        let l = d.to_ascii_lowercase();
        if l == layout::SNAPSHOT_BEFORE {
            return (Phase::Before, Some((format!("{d}/"), false)));
        }
        if l == layout::SNAPSHOT_AFTER {
            return (Phase::After, Some((format!("{d}/"), false)));
        }
        if BEFORE_DIRS.contains(&l.as_str()) {
            return (Phase::Before, Some((format!("{d}/"), true)));
        }
        if AFTER_DIRS.contains(&l.as_str()) {
            return (Phase::After, Some((format!("{d}/"), true)));
        }
    }
    let stem = file.split('.').next().unwrap_or(file).to_ascii_lowercase();
    let words: Vec<&str> = stem.split(['_', '-']).collect();
    if words.len() > 1 {
        match words.last() {
            Some(&"before") => return (Phase::Before, Some((file.to_string(), true))),
            Some(&"after") => return (Phase::After, Some((file.to_string(), true))),
            _ => {}
        }
    }
    (Phase::During, None)
}

/// One warning per layout name that was read as a guess (not `trainwreck capture`'s own), so
/// a user whose folder was misread sees why its lines were not evidence.
fn phase_warnings(inputs: &[Input], warnings: &mut Vec<Warning>) {
    phase_warnings_of(inputs.iter().map(|i| i.display.as_str()), warnings);
}

/// As for the inputs of a directory, for the report paths of an archive's members.
pub(crate) fn phase_warnings_of<'p>(
    paths: impl Iterator<Item = &'p str>,
    warnings: &mut Vec<Warning>,
) {
    let mut guessed: BTreeMap<(String, bool), Vec<&str>> = BTreeMap::new();
    for p in paths {
        if let (phase, Some((name, true))) = phase_of(p) {
            guessed
                .entry((name, phase == Phase::Before))
                .or_default()
                .push(p);
        }
    }
    for ((name, before), files) in guessed {
        let (what, what_zh) = if before {
            (
                "before the run started: its lines are history, not evidence of the failure",
                "训练开始前采集的：其中的行是历史记录，不算这次失败的证据",
            )
        } else {
            ("after the run ended", "训练结束后采集的")
        };
        let n = files.len();
        let s = if n == 1 { "" } else { "s" };
        let (b, a) = (layout::SNAPSHOT_BEFORE, layout::SNAPSHOT_AFTER);
        warnings.push(Warning::new(
            Some(files[0]),
            text!(
                "{n} input{s} read as taken {what} (from the name `{name}`; `trainwreck capture` writes `{b}/` and `{a}/`)",
                "{n} 个输入根据名称 `{name}` 被视为{what_zh}（`trainwreck capture` 写出的是 `{b}/` 和 `{a}/`）"
            ),
        ));
    }
}

/// Expand the user's arguments into inputs, in a stable order; symbolic links in a walked
/// directory are followed only while they stay inside it (`collect_with` to allow more).
pub fn collect(args: &[String]) -> (Vec<Input>, Vec<Warning>) {
    collect_with(args, false)
}

/// As `collect`; `follow_links`: also follow links in a walked directory that leave it
/// (`--follow-links`), up to `limits::LINKED_FILES` files reached that way.
pub(crate) fn collect_with(args: &[String], follow_links: bool) -> (Vec<Input>, Vec<Warning>) {
    let mut out = Vec::new();
    let mut warnings = Vec::new();
    let mut stdin_seen = false;
    for arg in args {
        if arg == "-" {
            if !stdin_seen {
                out.push(Input {
                    display: "<stdin>".into(),
                    source: Source::Stdin,
                    size: 0,
                    phase: Phase::During,
                    id: None,
                });
                stdin_seen = true;
            }
            continue;
        }
        let path = Path::new(arg);
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => {
                warnings.push(Warning::new(
                    Some(arg),
                    text!("cannot read: {e}", "无法读取：{e}"),
                ));
                continue;
            }
        };
        if meta.is_dir() {
            walk_dir(path, follow_links, &mut out, &mut warnings);
        } else if meta.is_file() {
            out.push(Input::file(
                arg.trim_start_matches("./").to_string(),
                path.to_path_buf(),
                Some(&meta),
            ));
        } else if is_fifo(&meta) {
            // Named on purpose (`analyze <(kubectl logs pod)`): read as a stream, once. A
            // directory walk still skips FIFOs (nobody may ever write to one found there).
            out.push(Input::file(
                arg.trim_start_matches("./").to_string(),
                path.to_path_buf(),
                None,
            ));
        } else {
            warnings.push(Warning::new(
                Some(arg),
                text!(
                    "not a regular file, FIFO or directory (socket or device): skipped",
                    "不是普通文件、FIFO 或目录（而是 socket 或设备）：已跳过"
                ),
            ));
        }
    }
    phase_warnings(&out, &mut warnings);
    (out, warnings)
}

fn is_fifo(m: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::FileTypeExt;
    m.file_type().is_fifo()
}

fn walk_dir(root: &Path, follow_links: bool, out: &mut Vec<Input>, warnings: &mut Vec<Warning>) {
    let before = out.len();
    // Where the tree really is: a link is followed when its target is inside it.
    let real_root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let skipped: std::cell::RefCell<Vec<Warning>> = Default::default();
    let outside = std::cell::Cell::new(0usize);
    // The links followed out of the tree (`--follow-links`), as walked paths: what lies under
    // one is outside, and once `limits::LINKED_FILES` such files were taken the rest under
    // them is not walked at all.
    let followed: std::cell::RefCell<Vec<std::path::PathBuf>> = Default::default();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            if e.depth() == 0 {
                return true;
            }
            let via = followed
                .borrow()
                .iter()
                .find(|l| e.path().starts_with(l))
                .cloned();
            if let Some(link) = via {
                if outside.get() < crate::limits::LINKED_FILES {
                    return true;
                }
                let display = rel(root, &link);
                let n = crate::limits::LINKED_FILES;
                let w = Warning::new(
                    Some(&display),
                    text!(
                        "symbolic link outside the directory: followed until {n} files were read through such links (limits::LINKED_FILES); the rest it leads to is not read",
                        "指向目录之外的符号链接：已跟随，直到通过这类链接读取了 {n} 个文件（limits::LINKED_FILES）；它指向的其余内容未读取"
                    ),
                );
                let mut skipped = skipped.borrow_mut();
                if !skipped.contains(&w) {
                    skipped.push(w);
                }
                return false;
            }
            if !e.path_is_symlink() {
                return true;
            }
            let target = std::fs::canonicalize(e.path());
            let inside = target.as_ref().is_ok_and(|t| t.starts_with(&real_root));
            if inside {
                return true;
            }
            let display = rel(root, e.path());
            let to = match &target {
                Ok(t) => t.display().to_string(),
                Err(err) => format!("unresolvable ({err})"),
            };
            if follow_links && outside.get() < crate::limits::LINKED_FILES {
                followed.borrow_mut().push(e.path().to_path_buf());
                return true;
            }
            let why = if follow_links {
                let n = crate::limits::LINKED_FILES;
                text!(
                    "symbolic link to {to}, outside the directory: not followed ({n} files were already read through such links, limits::LINKED_FILES)",
                    "指向目录之外 {to} 的符号链接：未跟随（已通过这类链接读取 {n} 个文件，见 limits::LINKED_FILES）"
                )
            } else {
                text!(
                    "symbolic link to {to}, outside the directory: not followed (`--follow-links` follows it)",
                    "指向目录之外 {to} 的符号链接：未跟随（`--follow-links` 可跟随）"
                )
            };
            skipped.borrow_mut().push(Warning::new(Some(&display), why));
            false
        });
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let p = e
                    .path()
                    .map(|p| rel(root, p))
                    .unwrap_or_else(|| root.display().to_string());
                let msg = if e.loop_ancestor().is_some() {
                    text!("symbolic link loop: skipped", "符号链接成环：已跳过")
                } else {
                    let e = e.io_error().map_or(e.to_string(), |io| io.to_string());
                    text!("cannot read: {e}", "无法读取：{e}")
                };
                warnings.push(Warning::new(Some(&p), msg));
                continue;
            }
        };
        let ft = entry.file_type();
        if ft.is_dir() {
            continue;
        }
        let display = rel(root, entry.path());
        if !ft.is_file() {
            warnings.push(Warning::new(
                Some(&display),
                text!(
                    "not a regular file (FIFO, socket or device): skipped",
                    "不是普通文件（而是 FIFO、socket 或设备）：已跳过"
                ),
            ));
            continue;
        }
        let meta = entry.metadata().ok();
        if followed
            .borrow()
            .iter()
            .any(|l| entry.path().starts_with(l))
        {
            outside.set(outside.get() + 1);
        }
        out.push(Input::file(
            display,
            entry.path().to_path_buf(),
            meta.as_ref(),
        ));
    }
    warnings.append(&mut skipped.borrow_mut());
    if out.len() == before {
        warnings.push(Warning::new(
            Some(&root.display().to_string()),
            text!(
                "directory holds no readable files",
                "目录中没有可读取的文件"
            ),
        ));
    }
    drop_capture_duplicates(out, before);
}

fn is_split_output(name: &str) -> bool {
    name == layout::STDOUT_LOG || name == layout::STDERR_LOG
}

/// Of report paths listed with whether each is a capture's manifest (an archive's members),
/// the ones a directory walk would drop as a capture's duplicate output (below).
pub(crate) fn capture_duplicates(listed: &[(&str, bool)]) -> Vec<usize> {
    fn split(p: &str) -> (&str, &str) {
        p.rsplit_once('/').unwrap_or(("", p))
    }
    let dirs: Vec<&str> = listed
        .iter()
        .filter(|(_, manifest)| *manifest)
        .map(|(p, _)| split(p).0)
        .filter(|d| {
            listed
                .iter()
                .any(|(q, _)| split(q) == (*d, layout::CONSOLE_LOG))
        })
        .collect();
    (0..listed.len())
        .filter(|&i| {
            let (d, n) = split(listed[i].0);
            is_split_output(n) && dirs.contains(&d)
        })
        .collect()
}

/// `trainwreck run` writes the command's output three times: `stdout.log`, `stderr.log` and
/// the interleaved `console.log`. Read it once (from `console.log`). Not a warning: it is the
/// tool's own layout (README "trainwreck run"), nothing of the run is left unread, and a
/// warning on every run of `trainwreck run` about its own files only teaches users to skip
/// warnings.
fn drop_capture_duplicates(out: &mut Vec<Input>, from: usize) {
    let dirs: Vec<PathBuf> = out[from..]
        .iter()
        .filter_map(|i| match &i.source {
            Source::File(p) if p.file_name().is_some_and(|n| n == layout::MANIFEST_JSON) => {
                let dir = p.parent()?.to_path_buf();
                let head = std::fs::read(p).ok()?;
                let is_capture = String::from_utf8_lossy(&head[..head.len().min(4096)])
                    .contains("\"trainwreck.capture/");
                (is_capture && dir.join(layout::CONSOLE_LOG).is_file()).then_some(dir)
            }
            _ => None,
        })
        .collect();
    if dirs.is_empty() {
        return;
    }
    let mut i = from;
    while i < out.len() {
        let dup = match &out[i].source {
            Source::File(p) => {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(is_split_output)
                    && p.parent().is_some_and(|d| dirs.iter().any(|x| x == d))
            }
            Source::Stdin => false,
        };
        if dup {
            out.remove(i);
        } else {
            i += 1;
        }
    }
}

fn rel(root: &Path, p: &Path) -> String {
    p.strip_prefix(root)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}
