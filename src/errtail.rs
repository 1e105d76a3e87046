//! The tail of error-ish lines of one file: the last few lines holding a traceback, an
//! exception or an error word, kept so an unknown failure (no rule matched) can still be
//! fingerprinted. One aho-corasick pass per chunk over a handful of literals, a bounded ring
//! of lines per file; it must never grow with the file or run a regex per line.

use aho_corasick::AhoCorasick;
use std::collections::VecDeque;
use std::sync::LazyLock;

/// Lines kept per file: enough for the end of a deep traceback and its exception.
pub const KEEP: usize = 48;

/// Longest line kept, in bytes (cut on a character boundary).
const MAX_LINE: usize = 400;

const LITERALS: &[&str] = &[
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
];

// Leftmost-first (a line is kept once anyway) lets aho-corasick use its SIMD (Teddy)
// prefilter; the default standard semantics walk the automaton over every byte.
static MATCHER: LazyLock<Option<AhoCorasick>> = LazyLock::new(|| {
    AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostFirst)
        .build(LITERALS)
        .ok()
});

/// One kept line.
#[derive(Debug, Clone, PartialEq)]
pub struct TailLine {
    /// Index into `Analysis::inputs` (set when results are merged).
    pub input: usize,
    pub line: u64,
    pub text: String,
}

/// The ring of one file's last error-ish lines.
#[derive(Debug, Default)]
pub struct ErrorTail {
    lines: VecDeque<TailLine>,
}

impl ErrorTail {
    /// Find error-ish lines in one chunk (`first` is the line number of its first line).
    pub fn scan_chunk(&mut self, chunk: &[u8], first: u64) {
        let Some(ac) = MATCHER.as_ref() else { return };
        let mut counted_to = 0usize;
        let mut lineno = first;
        let mut next_free = 0usize; // a line is kept once however many literals it holds
        for m in ac.find_iter(chunk) {
            if m.start() < next_free {
                continue;
            }
            let start = memchr::memrchr(b'\n', &chunk[..m.start()]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &chunk[m.end()..]).map_or(chunk.len(), |i| m.end() + i);
            lineno += memchr::memchr_iter(b'\n', &chunk[counted_to..start]).count() as u64;
            counted_to = start;
            next_free = end + 1;
            let raw = &chunk[start..end];
            let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
            let raw = &raw[..raw.len().min(MAX_LINE)];
            let text = String::from_utf8_lossy(raw).trim_end().to_string();
            if self.lines.len() == KEEP {
                self.lines.pop_front();
            }
            self.lines.push_back(TailLine {
                input: 0,
                line: lineno,
                text,
            });
        }
    }

    /// Join the tail of the next byte range of the same file (a huge file scanned in
    /// ranges): its lines come after ours, numbered from `line_offset`.
    pub fn append_after(&mut self, other: ErrorTail, line_offset: u64) {
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

    #[test]
    fn keeps_error_lines_with_their_numbers_once_each() {
        let mut t = ErrorTail::default();
        t.scan_chunk(
            b"ok\nTraceback (most recent call last):\n  File \"a.py\", line 3, in f\nfine\nKeyError: 'x' Error\n",
            1,
        );
        let got: Vec<(u64, String)> = t.into_lines(0).map(|l| (l.line, l.text)).collect();
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
    fn ring_is_bounded() {
        let mut t = ErrorTail::default();
        let text = "Error here\n".repeat(KEEP * 3);
        t.scan_chunk(text.as_bytes(), 1);
        let v: Vec<TailLine> = t.into_lines(0).collect();
        assert_eq!(v.len(), KEEP);
        assert_eq!(v.last().map(|l| l.line), Some((KEEP * 3) as u64));
    }
}
