//! The line scanner: many regexes over chunks of lines, fast. Every pattern must contain a
//! required literal; one multi-literal search (aho-corasick) over the whole chunk finds the
//! few candidate lines, and only those lines meet the full regexes. Knows nothing of rules,
//! facts or files: patterns in, `(pattern, line)` hits out.

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, MatchKind};
use regex::bytes::Regex;
use regex_syntax::hir::{Class, Hir, HirKind};

/// Literals shorter than this make a poor prefilter: every line would be a candidate.
pub const MIN_LITERAL: usize = 4;

/// Words so common in training logs that a literal made only of them would let most lines
/// through the prefilter. Lower-case; compared case-insensitively.
pub const FREQUENT_WORDS: &[&str] = &[
    "info", "warn", "warning", "error", "nccl", "loss", "rank", "step", "epoch", "torch", "cuda",
    "train", "debug", "python", "self", "file", "line", "time", "true", "false", "none", "data",
    "model", "grad", "with", "from", "the ", " the", "and ", " and", "for ", " for", "node",
];

/// One pattern to scan for, with an opaque id the caller maps back.
pub struct PatternSpec<'a> {
    pub id: usize,
    pub regex: &'a str,
}

/// Why a pattern cannot be scanned efficiently or at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatternError {
    Regex(String),
    NoLiteral,
    FrequentLiteral(String),
}

impl std::fmt::Display for PatternError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PatternError::Regex(e) => write!(f, "invalid regex: {e}"),
            PatternError::NoLiteral => write!(
                f,
                "no required literal of at least {MIN_LITERAL} bytes: every match must contain a \
                 distinctive fixed word (e.g. `Bus error`), not only classes, `.*` or optional parts"
            ),
            PatternError::FrequentLiteral(l) => write!(
                f,
                "its only required literal {l:?} is too frequent in training logs to prefilter \
                 on: include a rarer word"
            ),
        }
    }
}

/// The compiled scanner. Built once per analysis; shared read-only across threads.
pub struct Scanner {
    /// Prefilter over every pattern's literal alternatives, ASCII case-insensitive.
    ac: AhoCorasick,
    /// For each AC literal: which pattern it belongs to.
    lit_owner: Vec<usize>,
    regexes: Vec<Regex>,
    ids: Vec<usize>,
}

/// A hit: pattern id and the line (1-based) it matched in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit {
    pub id: usize,
    pub lineno: u64,
    /// Byte range of the line within the chunk.
    pub start: usize,
    pub end: usize,
}

impl Scanner {
    pub fn new(patterns: &[PatternSpec]) -> Result<Scanner, Vec<(usize, PatternError)>> {
        let mut errors = Vec::new();
        let mut lits: Vec<Vec<u8>> = Vec::new();
        let mut lit_owner = Vec::new();
        let mut regexes = Vec::new();
        let mut ids = Vec::new();
        for p in patterns {
            match compile_pattern(p.regex) {
                Ok((re, alts)) => {
                    let ix = regexes.len();
                    regexes.push(re);
                    ids.push(p.id);
                    for l in alts {
                        lits.push(l);
                        lit_owner.push(ix);
                    }
                }
                Err(e) => errors.push((p.id, e)),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let ac = AhoCorasickBuilder::new()
            .ascii_case_insensitive(true)
            .match_kind(MatchKind::Standard)
            .build(&lits)
            .map_err(|e| vec![(usize::MAX, PatternError::Regex(e.to_string()))])?;
        Ok(Scanner {
            ac,
            lit_owner,
            regexes,
            ids,
        })
    }

    pub fn len(&self) -> usize {
        self.regexes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.regexes.is_empty()
    }

    /// Scan a chunk of whole lines whose first line is `first_lineno`. `on_hit` gets each
    /// (pattern, line) pair once, in line order. `scratch` is reused across calls.
    pub fn scan_chunk(
        &self,
        chunk: &[u8],
        first_lineno: u64,
        scratch: &mut ScanScratch,
        mut on_hit: impl FnMut(Hit, &[u8]),
    ) {
        // Colour codes can split a literal (`\x1b[31mRuntimeError: CUDA\x1b[0m out of memory`):
        // strip them from the whole chunk first. Newlines are kept, so numbering holds.
        if memchr::memchr(0x1b, chunk).is_some() {
            let mut clean = std::mem::take(&mut scratch.clean);
            crate::sources::reader::strip_ansi(chunk, &mut clean);
            self.scan_clean(&clean, first_lineno, scratch, &mut on_hit);
            scratch.clean = clean;
        } else {
            self.scan_clean(chunk, first_lineno, scratch, &mut on_hit);
        }
    }

    fn scan_clean(
        &self,
        chunk: &[u8],
        first_lineno: u64,
        scratch: &mut ScanScratch,
        on_hit: &mut impl FnMut(Hit, &[u8]),
    ) {
        let mut pos = 0;
        // Line number bookkeeping: count newlines only between candidate lines.
        let mut counted_to = 0;
        let mut lineno = first_lineno;
        while pos < chunk.len() {
            let Some(m) = self.ac.find(&chunk[pos..]) else {
                break;
            };
            let at = pos + m.start();
            let start = memchr::memrchr(b'\n', &chunk[..at]).map_or(0, |i| i + 1);
            let end = memchr::memchr(b'\n', &chunk[at..]).map_or(chunk.len(), |i| at + i);
            lineno += memchr::memchr_iter(b'\n', &chunk[counted_to..start]).count() as u64;
            counted_to = start;
            let line = &chunk[start..end];
            self.match_line(line, scratch, |id| {
                on_hit(
                    Hit {
                        id,
                        lineno,
                        start,
                        end,
                    },
                    line,
                )
            });
            pos = end + 1;
        }
    }

    /// Run the full regexes whose literals occur in this line.
    fn match_line(&self, line: &[u8], scratch: &mut ScanScratch, mut on_hit: impl FnMut(usize)) {
        scratch.cands.clear();
        for m in self.ac.find_overlapping_iter(line) {
            scratch.cands.push(self.lit_owner[m.pattern().as_usize()]);
        }
        scratch.cands.sort_unstable();
        scratch.cands.dedup();
        for &ix in &scratch.cands {
            if self.regexes[ix].is_match(line) {
                on_hit(self.ids[ix]);
            }
        }
    }

    /// Does the pattern with this id match this text? (For examples and tests.)
    pub fn regex_for(&self, id: usize) -> Option<&Regex> {
        self.ids
            .iter()
            .position(|&i| i == id)
            .map(|ix| &self.regexes[ix])
    }
}

/// Buffers reused across lines.
#[derive(Default)]
pub struct ScanScratch {
    cands: Vec<usize>,
    clean: Vec<u8>,
}

/// Compile one pattern and find the literal alternatives every match must contain.
pub fn compile_pattern(src: &str) -> Result<(Regex, Vec<Vec<u8>>), PatternError> {
    let re = regex::bytes::RegexBuilder::new(src)
        .unicode(true)
        .size_limit(8 << 20)
        .build()
        .map_err(|e| PatternError::Regex(e.to_string()))?;
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(src)
        .map_err(|e| PatternError::Regex(e.to_string()))?;
    let alts = required_literals(&hir).ok_or(PatternError::NoLiteral)?;
    if alts.iter().any(|l| l.len() < MIN_LITERAL) {
        return Err(PatternError::NoLiteral);
    }
    if let Some(bad) = alts.iter().find(|l| is_frequent(l)) {
        return Err(PatternError::FrequentLiteral(
            String::from_utf8_lossy(bad).into_owned(),
        ));
    }
    Ok((re, alts))
}

fn is_frequent(lit: &[u8]) -> bool {
    let s = String::from_utf8_lossy(lit).to_ascii_lowercase();
    let trimmed = s.trim_matches(|c: char| !c.is_ascii_alphanumeric());
    trimmed.len() < MIN_LITERAL || FREQUENT_WORDS.iter().any(|w| w.trim() == trimmed)
}

/// A set of literals (lower-cased) such that every match of `hir` contains at least one.
/// `None` when no such set is known. Case-insensitive letters (`[aA]`) fold to one letter.
fn required_literals(hir: &Hir) -> Option<Vec<Vec<u8>>> {
    match hir.kind() {
        HirKind::Literal(l) => Some(vec![l.0.to_ascii_lowercase()]),
        HirKind::Class(c) => single_char(c).map(|b| vec![vec![b]]),
        HirKind::Capture(c) => required_literals(&c.sub),
        HirKind::Repetition(r) if r.min >= 1 => required_literals(&r.sub),
        HirKind::Alternation(subs) => {
            let mut out = Vec::new();
            for s in subs {
                out.extend(required_literals(s)?);
            }
            Some(out)
        }
        HirKind::Concat(subs) => {
            // Merge runs of adjacent literal pieces into longer literals, then pick the best
            // candidate: the set whose shortest member is longest (fewest false candidates).
            let mut best: Option<Vec<Vec<u8>>> = None;
            let mut run: Vec<u8> = Vec::new();
            let consider = |set: Vec<Vec<u8>>, best: &mut Option<Vec<Vec<u8>>>| {
                let score = |s: &Vec<Vec<u8>>| {
                    let min = s.iter().map(|l| l.len()).min().unwrap_or(0);
                    (min.min(16), usize::MAX - s.len())
                };
                if best.as_ref().is_none_or(|b| score(&set) > score(b)) {
                    *best = Some(set);
                }
            };
            for s in subs {
                match s.kind() {
                    HirKind::Literal(l) => run.extend(l.0.to_ascii_lowercase()),
                    HirKind::Class(c) if single_char(c).is_some() => {
                        run.push(single_char(c).unwrap_or(b'?'))
                    }
                    _ => {
                        if !run.is_empty() {
                            consider(vec![std::mem::take(&mut run)], &mut best);
                        }
                        if let Some(set) = required_literals(s) {
                            consider(set, &mut best);
                        }
                    }
                }
            }
            if !run.is_empty() {
                consider(vec![run], &mut best);
            }
            best
        }
        _ => None,
    }
}

/// A class that is one ASCII byte or one ASCII letter in both cases.
fn single_char(c: &Class) -> Option<u8> {
    let mut bytes: Vec<u8> = Vec::new();
    match c {
        Class::Unicode(u) => {
            for r in u.iter() {
                let (s, e) = (r.start() as u32, r.end() as u32);
                if e - s > 1 || e > 0x7f {
                    // `k` folds to the Kelvin sign and `s` to the long s in Unicode mode:
                    // accept those extra code points as part of a case pair.
                    if s == e && (s == 0x212a || s == 0x17f) {
                        continue;
                    }
                    return None;
                }
                for x in s..=e {
                    bytes.push(x as u8);
                }
            }
        }
        Class::Bytes(b) => {
            for r in b.iter() {
                if r.end() - r.start() > 1 {
                    return None;
                }
                for x in r.start()..=r.end() {
                    bytes.push(x);
                }
            }
        }
    }
    bytes.sort_unstable();
    bytes.dedup();
    match bytes.as_slice() {
        [one] => Some(one.to_ascii_lowercase()),
        [a, b] if a.eq_ignore_ascii_case(b) => Some(a.to_ascii_lowercase()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lits(re: &str) -> Result<Vec<String>, PatternError> {
        compile_pattern(re).map(|(_, l)| {
            l.into_iter()
                .map(|b| String::from_utf8(b).unwrap())
                .collect()
        })
    }

    #[test]
    fn literal_extraction() {
        assert_eq!(
            lits(r"DataLoader worker \(pid \d+\) is killed by signal: Bus error").unwrap(),
            vec!["dataloader worker (pid "]
        );
        assert_eq!(lits(r"(?i)out of memory").unwrap(), vec!["out of memory"]);
        assert_eq!(
            lits(r"(foo bar|baz qux) \d+").unwrap(),
            vec!["foo bar", "baz qux"]
        );
        assert_eq!(
            lits(r"\d+ exits with return code = -?\d+").unwrap(),
            vec![" exits with return code = "]
        );
    }

    #[test]
    fn patterns_without_good_literals_are_rejected() {
        assert_eq!(lits(r"\d+\s+\w+"), Err(PatternError::NoLiteral));
        assert!(matches!(
            lits(r"ERROR"),
            Err(PatternError::FrequentLiteral(_))
        ));
        assert!(matches!(lits(r"(unclosed"), Err(PatternError::Regex(_))));
    }

    #[test]
    fn scans_chunk_with_line_numbers() {
        let s = Scanner::new(&[
            PatternSpec {
                id: 7,
                regex: r"Bus error",
            },
            PatternSpec {
                id: 9,
                regex: r"(?i)out of memory",
            },
        ])
        .unwrap();
        let chunk = b"ok\nworker: Bus error\nx\nCUDA OUT OF MEMORY and Bus error\n";
        let mut got = Vec::new();
        s.scan_chunk(chunk, 10, &mut ScanScratch::default(), |h, _| {
            got.push((h.id, h.lineno))
        });
        got.sort();
        assert_eq!(got, vec![(7, 11), (7, 13), (9, 13)]);
    }

    #[test]
    fn ansi_colour_does_not_hide_a_match() {
        let s = Scanner::new(&[PatternSpec {
            id: 1,
            regex: r"RuntimeError: CUDA out of memory",
        }])
        .unwrap();
        let chunk = b"\x1b[31mRuntimeError: CUDA\x1b[0m out of memory\n";
        let mut n = 0;
        s.scan_chunk(chunk, 1, &mut ScanScratch::default(), |_, _| n += 1);
        assert_eq!(n, 1);
    }
}
