//! Turning what the user named (directories, files, `.gz` files, `-` for stdin) into a list
//! of readable inputs with report paths relative to what was given. Skips loops and special
//! files with a warning; never opens file contents (that is `analyze`'s job).

use crate::model::Warning;
use std::path::{Path, PathBuf};

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
}

/// Expand the user's arguments into inputs, in a stable order.
pub fn collect(args: &[String]) -> (Vec<Input>, Vec<Warning>) {
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
                });
                stdin_seen = true;
            }
            continue;
        }
        let path = Path::new(arg);
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(e) => {
                warnings.push(Warning::new(Some(arg), format!("cannot read: {e}")));
                continue;
            }
        };
        if meta.is_dir() {
            walk_dir(path, &mut out, &mut warnings);
        } else if meta.is_file() {
            out.push(Input {
                display: arg.trim_start_matches("./").to_string(),
                source: Source::File(path.to_path_buf()),
                size: meta.len(),
            });
        } else {
            warnings.push(Warning::new(
                Some(arg),
                "not a regular file or directory (FIFO, socket or device): skipped",
            ));
        }
    }
    (out, warnings)
}

fn walk_dir(root: &Path, out: &mut Vec<Input>, warnings: &mut Vec<Warning>) {
    let before = out.len();
    let walker = walkdir::WalkDir::new(root)
        .follow_links(true)
        .sort_by_file_name();
    for entry in walker {
        let entry = match entry {
            Ok(e) => e,
            Err(e) => {
                let p = e
                    .path()
                    .map(|p| rel(root, p))
                    .unwrap_or_else(|| root.display().to_string());
                let msg = if e.loop_ancestor().is_some() {
                    "symbolic link loop: skipped".to_string()
                } else {
                    format!(
                        "cannot read: {}",
                        e.io_error().map_or(e.to_string(), |io| io.to_string())
                    )
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
                "not a regular file (FIFO, socket or device): skipped",
            ));
            continue;
        }
        let size = entry.metadata().map(|m| m.len()).unwrap_or(0);
        out.push(Input {
            display,
            source: Source::File(entry.path().to_path_buf()),
            size,
        });
    }
    if out.len() == before {
        warnings.push(Warning::new(
            Some(&root.display().to_string()),
            "directory holds no readable files",
        ));
    }
    drop_capture_duplicates(out, before, warnings);
}

/// `trainwreck run` writes the command's output three times: `stdout.log`, `stderr.log` and
/// the interleaved `console.log`. Read it once (from `console.log`), and say so.
fn drop_capture_duplicates(out: &mut Vec<Input>, from: usize, warnings: &mut Vec<Warning>) {
    let dirs: Vec<PathBuf> = out[from..]
        .iter()
        .filter_map(|i| match &i.source {
            Source::File(p) if p.file_name().is_some_and(|n| n == "manifest.json") => {
                let dir = p.parent()?.to_path_buf();
                let head = std::fs::read(p).ok()?;
                let is_capture = String::from_utf8_lossy(&head[..head.len().min(4096)])
                    .contains("\"trainwreck.capture/");
                (is_capture && dir.join("console.log").is_file()).then_some(dir)
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
                    .is_some_and(|n| n == "stdout.log" || n == "stderr.log")
                    && p.parent().is_some_and(|d| dirs.iter().any(|x| x == d))
            }
            Source::Stdin => false,
        };
        if dup {
            let gone = out.remove(i);
            warnings.push(Warning::new(
                Some(&gone.display),
                "same output as console.log beside it (written by `trainwreck run`): read once, from console.log",
            ));
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
