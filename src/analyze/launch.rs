//! The launcher consumer: the launcher and NCCL line shapes (`sources::launcher::LINES`) an
//! input holds, kept in line order (one identity line per process) and read into events and
//! exit facts once the whole file is in (a range's wait for the merge: a launcher's report
//! can straddle a range edge). What the lines mean is `sources::launcher`'s.

use super::FileResult;
use super::stream::{Consumer, Seen};
use crate::sources::encoding::decode_line;
use crate::sources::launcher;
use crate::sources::prefix;

/// The launcher lines of one stream.
#[derive(Default)]
pub(super) struct LauncherLines {
    hits: Vec<(launcher::Line, u64, String)>,
    identities: launcher::Identities,
    path: String,
}

impl LauncherLines {
    pub(super) fn new(path: &str) -> LauncherLines {
        LauncherLines {
            path: path.to_string(),
            ..LauncherLines::default()
        }
    }
}

impl Consumer for LauncherLines {
    fn take(&mut self, local: usize, seen: &Seen<'_>) {
        let (shape, text) = (launcher::LINES[local].0, decode_line(seen.line));
        if self.identities.keep(shape, &text) {
            self.hits.push((shape, seen.hit.lineno, text.into_owned()));
        }
    }

    fn finish(&mut self, res: &mut FileResult, ranged: bool) {
        res.launch_lines = std::mem::take(&mut self.hits);
        if !ranged {
            finish_launch(res, &self.path);
        }
    }
}

/// Read an input's launcher lines (gathered by `scan_stream`, over all ranges of a split file)
/// into events and exit facts.
pub(super) fn finish_launch(res: &mut FileResult, path: &str) {
    let lines = std::mem::take(&mut res.launch_lines);
    let lh: Vec<launcher::LineHit> = lines
        .iter()
        .map(|(line, lineno, text)| launcher::LineHit {
            line: *line,
            lineno: *lineno,
            text,
        })
        .collect();
    let events = launcher::read(&lh, &prefix::from_path(path));
    for mut f in launcher::exit_facts(&events) {
        f.path = path.to_string();
        f.phase = res.info.phase;
        res.facts.push(f);
    }
    res.launch = events;
}
