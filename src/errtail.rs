//! The tail of error-ish lines of one file: the last few lines holding a traceback, an
//! exception or an error word, kept so an unknown failure (no rule matched) can still be
//! fingerprinted and a dead run is never called healthy; and the file's last clean-end line
//! (`CLEAN_END`), which says an earlier error was survived. The analysis finds those lines in
//! its one scanning pass (`LITERALS` and `CLEAN_END` are scanner marks) and pushes them here; a
//! bounded ring of lines per file. It must never grow with the file or read the file again.

use std::collections::VecDeque;

/// Lines kept per file: enough for the end of a deep traceback and its exception.
pub const KEEP: usize = 48;

/// Longest line kept, in bytes (cut on a character boundary).
const MAX_LINE: usize = 400;

/// A line holding any of these is error-ish.
pub const LITERALS: &[&str] = &[
    "Traceback (most recent call last)",
    "File \"",
    "Error",
    "Exception",
    "error:",
    "ERROR",
    "FATAL",
    "Fatal",
    "Killed",
    "Segmentation fault",
    "Aborted",
    "core dumped",
    "Assertion",
    // The source line Python prints under a frame when it is the assertion that failed.
    "    assert ",
    "Bus error",
    "Illegal instruction",
    "Floating point exception",
    "terminate called",
    "ERR!",
    "MPI_ABORT",
    "exited on signal",
];

/// A line holding any of these says the run ended well or went on working (HF Trainer's
/// final metrics, a script's own "training finished", NCCL tearing a communicator down in
/// order): an error-ish line before it in the same file was survived.
pub const CLEAN_END: &[&str] = &[
    "train_runtime",
    "Training completed",
    "training completed",
    "Training complete",
    "training complete",
    "Training finished",
    "training finished",
    "Destroy COMPLETE",
    "`Trainer.fit` stopped",
    "Training is over",
    "training is over",
    "Training is Over",
    // DeepLabCut's `train_network` when it returns
    // (deeplabcut/pose_estimation_tensorflow/training.py).
    "The network is now trained",
];

/// One kept line.
#[derive(Debug, Clone, PartialEq)]
pub struct TailLine {
    /// Index into `Analysis::inputs` (set when results are merged).
    pub input: usize,
    pub line: u64,
    pub text: String,
}

/// The ring of one file's last error-ish lines, and its last clean-end line.
#[derive(Debug, Default)]
pub struct ErrorTail {
    lines: VecDeque<TailLine>,
    last_clean: Option<u64>,
}

impl ErrorTail {
    /// Keep this error-ish line (`raw`, without its newline) as line `line`; a line is
    /// kept once however many literals it holds.
    pub fn push(&mut self, line: u64, raw: &[u8]) {
        if self.lines.back().is_some_and(|l| l.line == line) {
            return;
        }
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let mut cut = raw.len().min(MAX_LINE);
        while cut > 0 && cut < raw.len() && (raw[cut] & 0xc0) == 0x80 {
            cut -= 1; // not inside a UTF-8 sequence
        }
        let text = crate::sources::encoding::decode_line(&raw[..cut])
            .trim_end()
            .to_string();
        if self.lines.len() == KEEP {
            self.lines.pop_front();
        }
        self.lines.push_back(TailLine {
            input: 0,
            line,
            text,
        });
    }

    /// Line `line` holds a `CLEAN_END` word.
    pub fn clean_end(&mut self, line: u64) {
        self.last_clean = Some(self.last_clean.map_or(line, |l| l.max(line)));
    }

    /// The last line holding a `CLEAN_END` word.
    pub fn last_clean(&self) -> Option<u64> {
        self.last_clean
    }

    /// Join the tail of the next byte range of the same file (a huge file scanned in
    /// ranges): its lines come after ours, numbered from `line_offset`.
    pub fn append_after(&mut self, other: ErrorTail, line_offset: u64) {
        if let Some(l) = other.last_clean {
            self.clean_end(l + line_offset);
        }
        for mut l in other.lines {
            l.line += line_offset;
            if self.lines.len() == KEEP {
                self.lines.pop_front();
            }
            self.lines.push_back(l);
        }
    }

    /// The kept lines, oldest first, marked as coming from `input`.
    pub fn into_lines(self, input: usize) -> impl Iterator<Item = TailLine> {
        self.lines.into_iter().map(move |mut l| {
            l.input = input;
            l
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tail_of(text: &str) -> Vec<(u64, String)> {
        let mut t = ErrorTail::default();
        for (i, l) in text.lines().enumerate() {
            for lit in LITERALS {
                if l.contains(lit) {
                    t.push(i as u64 + 1, l.as_bytes());
                }
            }
        }
        t.into_lines(0).map(|l| (l.line, l.text)).collect()
    }

    #[test]
    fn keeps_error_lines_with_their_numbers_once_each() {
        let got = tail_of(
            "ok\nTraceback (most recent call last):\n  File \"a.py\", line 3, in f\nfine\nKeyError: 'x' Error\n",
        );
        assert_eq!(
            got,
            vec![
                (2, "Traceback (most recent call last):".to_string()),
                (3, "  File \"a.py\", line 3, in f".to_string()),
                (5, "KeyError: 'x' Error".to_string()),
            ]
        );
    }

    #[test]
    fn ring_is_bounded_and_long_lines_are_cut_on_a_character() {
        let got = tail_of(&"Error here\n".repeat(KEEP * 3));
        assert_eq!(got.len(), KEEP);
        assert_eq!(got.last().map(|l| l.0), Some((KEEP * 3) as u64));
        let long = format!("Error {}", "é".repeat(MAX_LINE));
        let got = tail_of(&long);
        assert!(got[0].1.len() <= MAX_LINE && !got[0].1.contains('\u{fffd}'));
    }
}
