//! The error-tail consumers: the last error-ish lines of an input (`errtail::LITERALS` and
//! the second tier's tokens), which the verdict and `correlate::second_tier` read, and the
//! last line saying the run ended well (`errtail::CLEAN_END`). A before-run snapshot's
//! error lines are not kept. What the lines mean is decided elsewhere.

use super::FileResult;
use super::stream::{Consumer, Seen};
use crate::errtail::ErrorTail;

/// The error-ish lines of one stream.
pub(super) struct ErrorLines {
    tail: ErrorTail,
    /// False for a snapshot taken before the run: its errors are history.
    keep: bool,
}

impl ErrorLines {
    pub(super) fn new(keep: bool) -> ErrorLines {
        ErrorLines {
            tail: ErrorTail::default(),
            keep,
        }
    }
}

impl Consumer for ErrorLines {
    fn take(&mut self, _local: usize, seen: &Seen<'_>) {
        if self.keep {
            self.tail.push(seen.hit.lineno, seen.line);
        }
    }

    fn undoubles(&self) -> bool {
        true
    }

    fn finish(&mut self, res: &mut FileResult, _ranged: bool) {
        // A stream's result is fresh: the tail it starts with is empty.
        res.tail = std::mem::take(&mut self.tail);
    }
}

/// The last clean-end line of one stream.
#[derive(Default)]
pub(super) struct CleanEnds {
    last: Option<u64>,
}

impl Consumer for CleanEnds {
    fn take(&mut self, _local: usize, seen: &Seen<'_>) {
        self.last = Some(
            self.last
                .map_or(seen.hit.lineno, |l| l.max(seen.hit.lineno)),
        );
    }

    fn finish(&mut self, res: &mut FileResult, _ranged: bool) {
        if let Some(l) = self.last {
            res.tail.clean_end(l);
        }
    }
}
