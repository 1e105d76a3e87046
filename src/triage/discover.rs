//! Which directories are runs (README.md "Which directories are runs"): expands the user's
//! arguments into run directories by their layout. Looks at names and file types only; it
//! never reads a file's contents.

use crate::model::{Warning, text};
use std::path::{Path, PathBuf};

/// Subdirectory names that are parts of one run, never runs of their own.
const RUN_PARTS: &[&str] = &[
    "logs",
    "log",
    "out",
    "output",
    "outputs",
    "snapshot_before",
    "snapshot_after",
    "snapshots",
    "torchrun_logs",
    "cgroup",
    "ranks",
    "cores",
];

/// Deepest a parent-of-runs tree is searched.
const MAX_DEPTH: usize = 4;

/// Expand the user's arguments into run directories (README.md "Which directories are
/// runs"): a file is a run; a directory holding `run/` is analysed through it; a directory
/// with a regular file (other than `*.md` notes) directly inside, or with a subdirectory named like a part of a run
/// (`logs`, `snapshot_after`, …), or with no subdirectory at all, is a run; any other
/// directory is a parent whose subdirectories are looked at the same way.
pub fn discover(args: &[String]) -> (Vec<PathBuf>, Vec<Warning>) {
    let mut runs = Vec::new();
    let mut warnings = Vec::new();
    for a in args {
        let p = Path::new(a);
        if p.is_file() {
            runs.push(p.to_path_buf());
        } else if p.is_dir() {
            walk(p, 0, &mut runs, &mut warnings);
        } else {
            warnings.push(Warning::new(
                Some(a),
                text!("not a file or directory: skipped", "不是文件或目录：已跳过"),
            ));
        }
    }
    (runs, warnings)
}

fn walk(dir: &Path, depth: usize, runs: &mut Vec<PathBuf>, warnings: &mut Vec<Warning>) {
    if dir.join("run").is_dir() {
        runs.push(dir.join("run"));
        return;
    }
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) => {
            warnings.push(Warning::new(
                Some(&dir.display().to_string()),
                text!("cannot read directory: {e}", "无法读取目录：{e}"),
            ));
            return;
        }
    };
    let mut subdirs = Vec::new();
    let mut has_file = false;
    let mut has_part = false;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with('.') {
            continue;
        }
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_file() {
            // Notes (`README.md`) sit in parents of runs too: they do not make a run.
            has_file |= !name.ends_with(".md");
        } else if ft.is_dir() {
            has_part |= RUN_PARTS.contains(&name.as_str());
            subdirs.push(e.path());
        }
    }
    if has_file || has_part || subdirs.is_empty() || depth >= MAX_DEPTH {
        runs.push(dir.to_path_buf());
        return;
    }
    subdirs.sort();
    for d in subdirs {
        walk(&d, depth + 1, runs, warnings);
    }
}
