//! The line scanner: many regexes over chunks of lines, fast. Every pattern must contain a
//! required literal; one pass of the literal prefilter (`shiftor`) over the whole chunk
//! finds the few candidate lines, at a cost that does not grow with the number of
//! patterns; only those lines meet an aho-corasick pass over the literals and then the
//! full regexes of the patterns whose literals they hold. A candidate line that holds a
//! pattern's literal but does not match it whole is tried again in its other readings (a
//! `Rereader` the caller gives: a paste's prefixes, bars and quotes peeled), so only such
//! rare lines pay for them. Knows nothing of rules, facts or files: patterns in,
//! `(pattern, line)` hits out.

pub mod ansi;
pub mod shiftor;
pub mod watch;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use regex::bytes::Regex;
use regex_syntax::hir::{Class, Hir, HirKind};
use std::sync::OnceLock;

/// Literals shorter than this make a poor prefilter: every line would be a candidate.
pub const MIN_LITERAL: usize = 4;

/// Words so common in training logs that a literal made only of them would let most lines
/// through the prefilter. Lower-case; compared case-insensitively.
pub const FREQUENT_WORDS: &[&str] = &[
    "info",
    "warn",
    "warning",
    "error",
    "nccl",
    "loss",
    "rank",
    "step",
    "epoch",
    "torch",
    "cuda",
    "train",
    "debug",
    "python",
    "self",
    "file",
    "line",
    "time",
    "true",
    "false",
    "none",
    "data",
    "model",
    "grad",
    "with",
    "from",
    "the ",
    " the",
    "and ",
    " and",
    "for ",
    " for",
    "node",
    // Measured on gen_logs.py output (each on more than 1% of lines): a signature whose only
    // literal is one of these makes every such line a candidate.
    "iteration",
    "global",
    "tokens",
    "throughput",
    "samples",
    "elapsed",
    "memory",
    "allreduce",
    "opcount",
    "comm",
    "coll",
    "count",
    "datatype",
    "stream",
    "batch",
    "learning",
    "lr",
    "eval",
    "checkpoint",
    "saving",
    "deepspeed",
    "engine",
    "stage",
    "worker",
    "optimizer",
    "scheduler",
    "progress",
    "it/s",
    "s/it",
    // On more than 1% of the lines of NCCL-debug and PyTorch warning output.
    "detected",
    "net/ib",
    "processgroupnccl",
];

/// One pattern to scan for, with an opaque id the caller maps back.
pub struct PatternSpec<'a> {
    pub id: usize,
    pub regex: &'a str,
    /// Its required literals when already linted (`LazyRegex::literals`): saves a parse.
    pub literals: Option<&'a [Lit]>,
}

impl<'a> PatternSpec<'a> {
    pub fn new(id: usize, regex: &'a str) -> PatternSpec<'a> {
        PatternSpec {
            id,
            regex,
            literals: None,
        }
    }
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
    /// Chunk prefilter: finds the lines that may hold a literal (or an ANSI escape, which
    /// could split one).
    prefilter: shiftor::ShiftOr,
    /// Per-line identification over every pattern's literal alternatives, ASCII
    /// case-insensitive (over-approximates case-sensitive literals; the regex decides).
    ac: AhoCorasick,
    /// For each AC literal: which pattern it belongs to.
    lit_owner: Vec<usize>,
    sources: Vec<String>,
    /// Full regexes, compiled on first use (first candidate line): start-up stays cheap
    /// with a big knowledge base.
    regexes: Vec<OnceLock<Option<Regex>>>,
    ids: Vec<usize>,
    rereader: Option<Rereader>,
    /// Per pattern: whether a piece of a line can match it when the whole line did not
    /// (it has an anchor or a word boundary, which a reading's new edges can satisfy).
    edge_sensitive: Vec<bool>,
    /// Per pattern, compiled on first use: the pattern with its anchors and word boundaries
    /// removed. A piece of a line can match the pattern only if the whole line matches this,
    /// so a line it misses is not reread for that pattern (most near misses: a common
    /// literal such as `host` in a line that is nothing like the pattern).
    relaxed: Vec<OnceLock<Option<Regex>>>,
    /// Unique among the scanners of this process (never 0): what a thread's `Copies` are of.
    serial: u64,
}

/// Other readings of a line (never the line itself), most faithful first: tried for the
/// patterns whose literal a line holds but whose regex it did not match. Contract: for a line
/// without a backslash, every reading is a substring of the line (only unescaping may make
/// new text); the scanner's `relaxed` gate relies on it.
pub type Rereader = fn(&[u8], &mut Vec<Vec<u8>>);

/// Colour codes can split a literal (`\x1b[31mRuntimeError: CUDA\x1b[0m out of memory`):
/// lines holding this byte are candidates and are matched with their escapes removed.
const ESC: u8 = 0x1b;

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
        Self::with_marks(patterns, &[])
    }

    /// As `new`, plus plain literals (`marks`) that report every line holding them, however
    /// frequent: the analysis folds its error-line tail into the same pass this way. Their
    /// cost is the lines they match, so they are for words that are rare in healthy logs.
    pub fn with_marks(
        patterns: &[PatternSpec],
        marks: &[(usize, &str)],
    ) -> Result<Scanner, Vec<(usize, PatternError)>> {
        let escaped: Vec<(usize, String)> = marks
            .iter()
            .map(|&(id, lit)| (id, regex::escape(lit)))
            .collect();
        let all = patterns
            .iter()
            .map(|p| (p.id, p.regex, true, p.literals))
            .chain(
                escaped
                    .iter()
                    .map(|(id, re)| (*id, re.as_str(), false, None)),
            );
        let mut errors = Vec::new();
        let mut lits: Vec<Vec<u8>> = Vec::new();
        let mut lit_owner = Vec::new();
        let mut sources = Vec::new();
        let mut ids = Vec::new();
        let mut windows = Vec::new();
        for (id, regex, lint, known) in all {
            let alts = match known {
                Some(l) => Ok(l.to_vec()),
                None if lint => pattern_literals(regex),
                None => literal_alternatives(regex),
            };
            match alts {
                Ok(alts) => {
                    let ix = sources.len();
                    sources.push(regex.to_string());
                    ids.push(id);
                    for l in alts {
                        lits.push(l.bytes.to_ascii_lowercase());
                        lit_owner.push(ix);
                        windows.push(shiftor::Window {
                            bytes: rare_window(&l.bytes).to_vec(),
                            folded: l.folded,
                        });
                    }
                }
                Err(e) => errors.push((id, e)),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        // A contiguous NFA: quick to build (start-up), and only candidate lines meet it. The
        // literals are lower-cased and so is each candidate line before the search: the same
        // matches as an ASCII-case-insensitive automaton, which took 3.5 times as long to
        // build (4.8 ms against 1.4 ms for the built-in rules' 714 literals).
        let ac = AhoCorasickBuilder::new()
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .match_kind(MatchKind::Standard)
            .build(&lits)
            .map_err(|e| vec![(usize::MAX, PatternError::Regex(e.to_string()))])?;
        Ok(Scanner {
            prefilter: shiftor::ShiftOr::new(&windows, Some(ESC)),
            ac,
            lit_owner,
            regexes: sources.iter().map(|_| OnceLock::new()).collect(),
            edge_sensitive: sources
                .iter()
                .map(|s| {
                    ["^", "$", r"\A", r"\z", r"\b"]
                        .iter()
                        .any(|e| s.contains(e))
                })
                .collect(),
            relaxed: sources.iter().map(|_| OnceLock::new()).collect(),
            sources,
            ids,
            rereader: None,
            serial: {
                static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
                NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            },
        })
    }

    /// Try `r`'s readings of a candidate line that holds a pattern's literal but missed it.
    pub fn set_rereader(&mut self, r: Rereader) {
        self.rereader = Some(r);
    }

    pub fn len(&self) -> usize {
        self.sources.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sources.is_empty()
    }

    /// The full regex of pattern `ix`, compiled on first use. `None` only for a pattern
    /// the regex engine refuses (too big), which `compile_pattern` reports at rule load.
    fn regex(&self, ix: usize) -> Option<&Regex> {
        self.regexes[ix]
            .get_or_init(|| build_regex(&self.sources[ix]).ok())
            .as_ref()
    }

    /// Pattern `ix` without its edges (see `relaxed`); `None` when it cannot be built, and
    /// then every reading is tried.
    fn relaxed(&self, ix: usize) -> Option<&Regex> {
        self.relaxed[ix]
            .get_or_init(|| {
                let hir = regex_syntax::ParserBuilder::new()
                    .utf8(false)
                    .build()
                    .parse(&self.sources[ix])
                    .ok()?;
                build_regex(&without_edges(&hir).to_string()).ok()
            })
            .as_ref()
    }

    /// Scan a chunk of whole lines whose first line is `first_lineno`. `on_hit` gets each
    /// (pattern, line) pair once, in line order, with the text that matched: the line (ANSI
    /// escapes removed) or the reading of it that matched (the line itself is at
    /// `hit.start..hit.end` of the chunk). `scratch` is reused across calls.
    pub fn scan_chunk(
        &self,
        chunk: &[u8],
        first_lineno: u64,
        scratch: &mut ScanScratch,
        mut on_hit: impl FnMut(Hit, &[u8]),
    ) {
        scratch.copies.serve(self);
        let mut starts = std::mem::take(&mut scratch.starts);
        starts.clear();
        self.prefilter.candidate_lines(chunk, &mut starts);
        // Line numbers are counted only up to lines that hit (most candidates do not).
        let mut counted_to = 0;
        let mut lineno = first_lineno;
        let mut clean = std::mem::take(&mut scratch.clean);
        let mut ids = std::mem::take(&mut scratch.ids);
        for &start in &starts {
            let end = memchr::memchr(b'\n', &chunk[start..]).map_or(chunk.len(), |i| start + i);
            let raw = &chunk[start..end];
            let line = if memchr::memchr(ESC, raw).is_some() {
                ansi::strip_ansi(raw, &mut clean);
                &clean[..]
            } else {
                raw
            };
            ids.clear();
            self.match_line(
                line,
                &mut scratch.lower,
                &mut scratch.cands,
                &mut scratch.missed,
                &mut scratch.copies,
                |id| ids.push((id, None)),
            );
            // A reading is a piece of the line (or a repr's unescaped text): it can only
            // match a pattern the line missed through the pattern's edges, or escapes.
            let escaped = memchr::memchr(b'\\', line).is_some();
            let copies = &mut scratch.copies;
            scratch.missed.retain(|&ix| {
                escaped
                    || (self.edge_sensitive[ix]
                        && copies
                            .relaxed(ix, self.len(), || self.relaxed(ix))
                            .is_none_or(|r| r.is_match(line)))
            });
            if !scratch.missed.is_empty()
                && let Some(reread) = self.rereader
            {
                self.reread(line, reread, scratch, &mut ids);
            }
            if ids.is_empty() {
                continue;
            }
            lineno += memchr::memchr_iter(b'\n', &chunk[counted_to..start]).count() as u64;
            counted_to = start;
            for &(id, view) in &ids {
                let text = view.map_or(line, |v| &scratch.readings[v][..]);
                on_hit(
                    Hit {
                        id,
                        lineno,
                        start,
                        end,
                    },
                    text,
                );
            }
        }
        scratch.starts = starts;
        scratch.clean = clean;
        scratch.ids = ids;
    }

    /// Run the full regexes whose literals occur in this line; those that miss go to `missed`.
    fn match_line(
        &self,
        line: &[u8],
        lower: &mut Vec<u8>,
        cands: &mut Vec<usize>,
        missed: &mut Vec<usize>,
        copies: &mut Copies,
        mut on_hit: impl FnMut(usize),
    ) {
        cands.clear();
        missed.clear();
        lower.clear();
        lower.extend(line.iter().map(u8::to_ascii_lowercase));
        for m in self.ac.find_overlapping_iter(&lower[..]) {
            cands.push(self.lit_owner[m.pattern().as_usize()]);
        }
        cands.sort_unstable();
        cands.dedup();
        for &ix in cands.iter() {
            let re = copies.full(ix, self.len(), || self.regex(ix));
            if re.is_some_and(|re| re.is_match(line)) {
                on_hit(self.ids[ix]);
            } else {
                missed.push(ix);
            }
        }
    }

    /// The patterns a line missed, tried on its other readings: the first reading each
    /// matches is the text its hit carries.
    fn reread(
        &self,
        line: &[u8],
        reread: Rereader,
        scratch: &mut ScanScratch,
        ids: &mut Vec<(usize, Option<usize>)>,
    ) {
        scratch.readings.clear();
        reread(line, &mut scratch.readings);
        for &ix in &scratch.missed {
            let Some(re) = scratch.copies.full(ix, self.len(), || self.regex(ix)) else {
                continue;
            };
            if let Some(v) = scratch.readings.iter().position(|r| re.is_match(r)) {
                ids.push((self.ids[ix], Some(v)));
            }
        }
    }

    /// Does the pattern with this id match this text? (For examples and tests.)
    pub fn regex_for(&self, id: usize) -> Option<&Regex> {
        // Ids are usually the pattern indexes themselves: look there first.
        let ix = if self.ids.get(id) == Some(&id) {
            Some(id)
        } else {
            self.ids.iter().position(|&i| i == id)
        };
        ix.and_then(|ix| self.regex(ix))
    }
}

/// The `shiftor::WINDOW`-byte piece of a literal least likely to occur in ordinary log
/// text: no whole frequent word if it can help it; then the window whose rarest trigram is
/// rarest in healthy training logs (a window occurs at most as often as each of its
/// trigrams: `'grad_norm': nan` must not watch `ad_norm':`, which every Trainer step line
/// holds); then, among windows equally rare there, the one with the fewest lower-case
/// letters, spaces and digits (capitals and punctuation are rarer).
fn rare_window(lit: &[u8]) -> &[u8] {
    let w = shiftor::WINDOW;
    if lit.len() <= w {
        return lit;
    }
    let common = |b: u8| match b {
        b'a'..=b'z' | b' ' => 3u32,
        b'0'..=b'9' => 2,
        _ => 1,
    };
    // A window holding a whole frequent word matches wherever that word does: find the
    // words' occurrences once, then test each window against them.
    let lower = lit.to_ascii_lowercase();
    let mut found: Vec<(usize, usize)> = Vec::new();
    for f in frequent_words() {
        if f.len() >= MIN_LITERAL && f.len() <= w {
            found.extend(
                lower
                    .windows(f.len())
                    .enumerate()
                    .filter(|(_, x)| x[0] == f[0] && x == f)
                    .map(|(at, _)| (at, at + f.len())),
            );
        }
    }
    let score = |start: usize| {
        let win = &lit[start..start + w];
        let freq = found.iter().any(|&(a, b)| a >= start && b <= start + w);
        let seen = lower[start..start + w]
            .windows(3)
            .map(|t| trigram_frequency(t[0], t[1], t[2]))
            .min()
            .unwrap_or(0);
        let letters: u32 = win.iter().map(|&b| common(b)).sum();
        (freq, seen, letters)
    };
    (0..=lit.len() - w)
        .min_by_key(|&s| score(s))
        .map_or(lit, |s| &lit[s..s + w])
}

/// How often a (lower-case) trigram occurs in healthy training logs: the bit length of its
/// count in a background text, hashed into 65,536 buckets (0 = never seen). The table is
/// made by `scripts/window_freq.py`, which says what text it counts.
fn trigram_frequency(a: u8, b: u8, c: u8) -> u8 {
    static TABLE: &[u8; 65536] = include_bytes!("trigrams.bin");
    TABLE[trigram_bucket(a, b, c)]
}

/// Must equal `bucket` in scripts/window_freq.py.
fn trigram_bucket(a: u8, b: u8, c: u8) -> usize {
    ((u32::from(a) << 16 | u32::from(b) << 8 | u32::from(c)).wrapping_mul(0x9E37_79B1) >> 16)
        as usize
}

/// Buffers reused across lines (one per scanning thread).
#[derive(Default)]
pub struct ScanScratch {
    copies: Copies,
    cands: Vec<usize>,
    missed: Vec<usize>,
    readings: Vec<Vec<u8>>,
    ids: Vec<(usize, Option<usize>)>,
    starts: Vec<usize>,
    clean: Vec<u8>,
    /// The candidate line lower-cased, for the literal automaton.
    lower: Vec<u8>,
}

/// This thread's clones of the scanner's regexes, made on the thread's first use of each. A
/// regex shared by many threads lends its search caches from a pool that, when several
/// threads want one at once, builds a throwaway cache for each search (regex-automata's
/// `Pool`); a clone shares the compiled program but has its own pool, so each scan thread
/// keeps its caches warm.
#[derive(Default)]
struct Copies {
    /// The scanner these are copies of (`Scanner::serial`), so that a scratch handed to
    /// another scanner starts afresh instead of using the wrong patterns.
    of: u64,
    full: Vec<Option<Regex>>,
    relaxed: Vec<Option<Regex>>,
}

impl Copies {
    fn serve(&mut self, scanner: &Scanner) {
        let of = scanner.serial;
        if self.of != of {
            *self = Copies {
                of,
                ..Copies::default()
            };
        }
    }

    fn full<'a>(
        &mut self,
        ix: usize,
        n: usize,
        shared: impl FnOnce() -> Option<&'a Regex>,
    ) -> Option<&Regex> {
        Self::copy(&mut self.full, ix, n, shared)
    }

    fn relaxed<'a>(
        &mut self,
        ix: usize,
        n: usize,
        shared: impl FnOnce() -> Option<&'a Regex>,
    ) -> Option<&Regex> {
        Self::copy(&mut self.relaxed, ix, n, shared)
    }

    fn copy<'a, 's>(
        slots: &'s mut Vec<Option<Regex>>,
        ix: usize,
        n: usize,
        shared: impl FnOnce() -> Option<&'a Regex>,
    ) -> Option<&'s Regex> {
        if slots.len() < n {
            slots.resize(n, None);
        }
        if slots[ix].is_none() {
            slots[ix] = shared().cloned();
        }
        slots[ix].as_ref()
    }
}

/// Compile one pattern and find the literal alternatives every match must contain.
/// Literals are lower-cased (as the prefilter lint and the per-line automaton see them).
pub fn compile_pattern(src: &str) -> Result<(Regex, Vec<Vec<u8>>), PatternError> {
    let re = build_regex(src).map_err(|e| PatternError::Regex(e.to_string()))?;
    let alts = pattern_literals(src)?;
    Ok((
        re,
        alts.into_iter()
            .map(|l| l.bytes.to_ascii_lowercase())
            .collect(),
    ))
}

/// A regex validated at load (parsed) but compiled on first use: start-up with the whole
/// knowledge base must not pay for compiling regexes that no line will ever reach.
pub struct LazyRegex {
    src: String,
    cell: OnceLock<Option<Regex>>,
    literals: Vec<Lit>,
}

impl LazyRegex {
    /// Lint `src` (syntax, required literals: load errors) and return it with its named
    /// capture groups, from one parse; the regex itself is compiled on first use.
    pub fn new(src: &str) -> Result<(LazyRegex, Vec<String>), PatternError> {
        let hir = regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(src)
            .map_err(|e| PatternError::Regex(e.to_string()))?;
        let literals = lint_literals(&hir)?;
        let mut names = Vec::new();
        collect_capture_names(&hir, &mut names);
        Ok((
            LazyRegex {
                src: src.to_string(),
                cell: OnceLock::new(),
                literals,
            },
            names,
        ))
    }

    /// A context regex (a rule's `preceded_by`), which needs no required literal: its syntax
    /// checked now, the regex compiled on first use.
    pub fn context(src: &str) -> Result<LazyRegex, PatternError> {
        regex_syntax::ParserBuilder::new()
            .utf8(false)
            .build()
            .parse(src)
            .map_err(|e| PatternError::Regex(e.to_string()))?;
        Ok(LazyRegex {
            src: src.to_string(),
            cell: OnceLock::new(),
            literals: Vec::new(),
        })
    }

    /// The compiled regex; `None` only if it exceeds the size limit (reported by `rules test`).
    pub fn get(&self) -> Option<&Regex> {
        self.cell
            .get_or_init(|| build_regex(&self.src).ok())
            .as_ref()
    }

    pub fn is_match(&self, haystack: &[u8]) -> bool {
        self.get().is_some_and(|r| r.is_match(haystack))
    }

    pub fn as_str(&self) -> &str {
        &self.src
    }

    /// The required literals the lint found (what the scanner prefilters on).
    pub fn literals(&self) -> &[Lit] {
        &self.literals
    }
}

impl Clone for LazyRegex {
    fn clone(&self) -> Self {
        LazyRegex {
            src: self.src.clone(),
            cell: OnceLock::new(),
            literals: self.literals.clone(),
        }
    }
}

impl std::fmt::Debug for LazyRegex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LazyRegex({:?})", self.src)
    }
}

fn collect_capture_names(hir: &Hir, out: &mut Vec<String>) {
    match hir.kind() {
        HirKind::Capture(c) => {
            if let Some(n) = &c.name {
                out.push(n.to_string());
            }
            collect_capture_names(&c.sub, out);
        }
        HirKind::Repetition(r) => collect_capture_names(&r.sub, out),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => {
            for s in subs {
                collect_capture_names(s, out);
            }
        }
        _ => {}
    }
}

fn build_regex(src: &str) -> Result<Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(src)
        .unicode(true)
        .size_limit(8 << 20)
        .build()
}

/// `hir` with every look-around assertion (`^`, `$`, `\A`, `\z`, `\b`, `\B`) made empty: it
/// matches everything `hir` matches anywhere in a text's substrings, and more.
fn without_edges(hir: &Hir) -> Hir {
    match hir.kind() {
        HirKind::Look(_) => Hir::empty(),
        HirKind::Repetition(r) => Hir::repetition(regex_syntax::hir::Repetition {
            sub: Box::new(without_edges(&r.sub)),
            ..r.clone()
        }),
        HirKind::Capture(c) => Hir::capture(regex_syntax::hir::Capture {
            sub: Box::new(without_edges(&c.sub)),
            ..c.clone()
        }),
        HirKind::Concat(subs) => Hir::concat(subs.iter().map(without_edges).collect()),
        HirKind::Alternation(subs) => Hir::alternation(subs.iter().map(without_edges).collect()),
        _ => hir.clone(),
    }
}

/// A required literal: exact bytes, or (`folded`) lower-case bytes to match ASCII
/// case-insensitively.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lit {
    pub bytes: Vec<u8>,
    pub folded: bool,
}

/// The literal alternatives every match of `src` contains, checked by the lint (long
/// enough, not frequent). Parses only: no regex is compiled.
pub fn pattern_literals(src: &str) -> Result<Vec<Lit>, PatternError> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(src)
        .map_err(|e| PatternError::Regex(e.to_string()))?;
    lint_literals(&hir)
}

/// The literal alternatives of `src` without the frequency lint (two bytes at least).
fn literal_alternatives(src: &str) -> Result<Vec<Lit>, PatternError> {
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(src)
        .map_err(|e| PatternError::Regex(e.to_string()))?;
    match required_literals(&hir) {
        Some(alts) if alts.iter().all(|l| l.bytes.len() >= 2) => Ok(alts),
        _ => Err(PatternError::NoLiteral),
    }
}

fn lint_literals(hir: &Hir) -> Result<Vec<Lit>, PatternError> {
    let alts = required_literals(hir).ok_or(PatternError::NoLiteral)?;
    if alts.iter().any(|l| l.bytes.len() < MIN_LITERAL) {
        return Err(PatternError::NoLiteral);
    }
    if let Some(bad) = alts.iter().find(|l| is_frequent(&l.bytes)) {
        return Err(PatternError::FrequentLiteral(
            String::from_utf8_lossy(&bad.bytes).to_ascii_lowercase(),
        ));
    }
    Ok(alts)
}

/// A literal that would let most lines of a training log through the prefilter: too short, or
/// one frequent word. The lint refuses a pattern whose only literal is one.
fn is_frequent(lit: &[u8]) -> bool {
    match trim_to_words(lit) {
        Some(t) => t.len() < MIN_LITERAL || is_frequent_word(t),
        None => true,
    }
}

/// A literal made only of frequent words (`NCCL INFO `: NCCL_DEBUG=INFO puts it on half of
/// a rank's lines). Allowed as a pattern's only literal (punctuation around it, as in
/// `'train_loss': `, can make it rare), but a pattern that also holds another literal is keyed
/// on that one.
fn is_weak(lit: &[u8]) -> bool {
    trim_to_words(lit).is_none_or(|t| {
        t.split(|b| !word_byte(b))
            .filter(|w| !w.is_empty())
            .all(is_frequent_word)
    })
}

/// The literal from its first to its last letter or digit (ASCII, or any non-ASCII byte); `None`
/// when it has none.
fn trim_to_words(lit: &[u8]) -> Option<&[u8]> {
    let s = lit.iter().position(word_byte)?;
    let e = lit.iter().rposition(word_byte)?;
    Some(&lit[s..=e])
}

/// A byte of a word: an ASCII letter or digit, or any byte of a non-ASCII character (letters of
/// other scripts: `已杀死` is a word, not punctuation).
fn word_byte(b: &u8) -> bool {
    b.is_ascii_alphanumeric() || *b >= 0x80
}

fn is_frequent_word(w: &[u8]) -> bool {
    frequent_words().iter().any(|f| f.eq_ignore_ascii_case(w))
}

/// `FREQUENT_WORDS` trimmed, as bytes (computed once).
fn frequent_words() -> &'static [Vec<u8>] {
    static WORDS: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    WORDS.get_or_init(|| {
        FREQUENT_WORDS
            .iter()
            .map(|w| w.trim().as_bytes().to_vec())
            .collect()
    })
}

/// A set of literals such that every match of `hir` contains at least one. `None` when no
/// such set is known. Case-insensitive letters (`[aA]`) fold to one lower-case letter and
/// mark the literal `folded`; everything else keeps its exact bytes (so the prefilter can
/// use a case-sensitive SIMD searcher).
fn required_literals(hir: &Hir) -> Option<Vec<Lit>> {
    match hir.kind() {
        HirKind::Literal(l) => Some(vec![Lit {
            bytes: l.0.to_vec(),
            folded: false,
        }]),
        HirKind::Class(c) => single_char(c).map(|(b, folded)| {
            vec![Lit {
                bytes: vec![b],
                folded,
            }]
        }),
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
            let mut best: Option<Vec<Lit>> = None;
            let mut run = Lit {
                bytes: Vec::new(),
                folded: false,
            };
            let consider = |set: Vec<Lit>, best: &mut Option<Vec<Lit>>| {
                // Prefer sets with no frequent member, then sets with no member made only
                // of frequent words, then the longest shortest member, then fewer members.
                let score = |s: &Vec<Lit>| {
                    let min = s.iter().map(|l| l.bytes.len()).min().unwrap_or(0);
                    let rare = !s.iter().any(|l| is_frequent(&l.bytes));
                    let strong = !s.iter().any(|l| is_weak(&l.bytes));
                    (rare, strong, min.min(32), usize::MAX - s.len())
                };
                if best.as_ref().is_none_or(|b| score(&set) > score(b)) {
                    *best = Some(set);
                }
            };
            let flush = |run: &mut Lit, best: &mut Option<Vec<Lit>>| {
                if !run.bytes.is_empty() {
                    let mut l = std::mem::replace(
                        run,
                        Lit {
                            bytes: Vec::new(),
                            folded: false,
                        },
                    );
                    if l.folded {
                        l.bytes.make_ascii_lowercase();
                    }
                    consider(vec![l], best);
                }
            };
            for s in subs {
                match s.kind() {
                    HirKind::Literal(l) => run.bytes.extend_from_slice(&l.0),
                    HirKind::Class(c) if single_char(c).is_some() => {
                        let (b, folded) = single_char(c).unwrap_or((b'?', false));
                        run.bytes.push(b);
                        run.folded |= folded;
                    }
                    _ => {
                        flush(&mut run, &mut best);
                        if let Some(set) = required_literals(s) {
                            consider(set, &mut best);
                        }
                    }
                }
            }
            flush(&mut run, &mut best);
            best
        }
        _ => None,
    }
}

/// A class that is one ASCII byte (`false`) or one ASCII letter in both cases (`true`,
/// lower-case byte).
fn single_char(c: &Class) -> Option<(u8, bool)> {
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
        [one] => Some((*one, false)),
        [a, b] if a.eq_ignore_ascii_case(b) => Some((a.to_ascii_lowercase(), true)),
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
            vec![") is killed by signal: bus error"]
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
    fn edges_removed_match_every_piece_the_pattern_matches() {
        let s = Scanner::new(&[PatternSpec::new(0, r"^\s*host\s*: ([\w.-]+)\s*$")]).unwrap();
        let r = s.relaxed(0).expect("builds");
        // A piece of the line (after a launcher prefix) matches the pattern, so the whole
        // line matches the relaxed one, and is reread.
        assert!(r.is_match(b"[default0]:  host      : node-01"));
        assert!(s.regex(0).unwrap().is_match(b"  host      : node-01"));
        // A line that only shares the literal is nothing like it: not reread.
        assert!(!r.is_match(b"heartbeat - rank 1 alive, host node-00"));
        let w = Scanner::new(&[PatternSpec::new(0, r"\bexitcode\s*: -7\b")]).unwrap();
        assert!(
            w.relaxed(0)
                .unwrap()
                .is_match("退出exitcode: -7号".as_bytes())
        );
    }

    /// Rereads find what the line missed by its edges, and only through lines the relaxed
    /// pattern admits.
    #[test]
    fn rereads_pass_the_relaxed_gate_only_when_a_piece_can_match() {
        fn after_prefix(line: &[u8], out: &mut Vec<Vec<u8>>) {
            if let Some(i) = line.windows(2).position(|w| w == b"]:") {
                out.push(line[i + 2..].to_vec());
            }
        }
        let mut s = Scanner::new(&[PatternSpec::new(3, r"^\s*host\s*: ([\w.-]+)\s*$")]).unwrap();
        s.set_rereader(after_prefix);
        let chunk = b"[default0]:  host      : node-01\n[default0]: rank 1 alive, host node-00\n";
        let mut got = Vec::new();
        s.scan_chunk(chunk, 1, &mut ScanScratch::default(), |h, text| {
            got.push((h.lineno, String::from_utf8_lossy(text).into_owned()))
        });
        assert_eq!(got, vec![(1, "  host      : node-01".to_string())]);
    }

    #[test]
    fn scans_chunk_with_line_numbers() {
        let s = Scanner::new(&[
            PatternSpec::new(7, r"Bus error"),
            PatternSpec::new(9, r"(?i)out of memory"),
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
    fn frequent_log_words_are_rejected_as_only_literal() {
        for w in ["iteration", "(?i)allreduce", "Throughput", "global"] {
            assert!(
                matches!(lits(w), Err(PatternError::FrequentLiteral(_))),
                "{w}"
            );
        }
        assert!(lits(r"global step \d+ diverged").is_ok());
    }

    #[test]
    fn literals_made_only_of_frequent_words_are_a_last_resort() {
        // `NCCL INFO ` is on half the lines of an NCCL_DEBUG=INFO rank log: a pattern that
        // also holds a rarer literal must be keyed on that one.
        let l = literal_alternatives(
            r"NCCL INFO (?:ncclCommInitRank\w* )?comm 0x[0-9a-fA-F]+ rank (\d+) n[Rr]anks (\d+)",
        )
        .unwrap();
        assert_eq!(l.len(), 1);
        assert_eq!(l[0].bytes, b" nranks ");
        assert!(l[0].folded);
        // Alone, such a literal is allowed: punctuation can make it rare.
        assert!(lits(r"'train_loss': \d").is_ok());
        assert!(is_weak(b"NCCL INFO ") && !is_weak(b"NCCL INFO Bootstrap : no socket"));
    }

    #[test]
    fn windows_avoid_what_healthy_lines_hold() {
        // Every Trainer step line holds `'grad_norm': `, and DeepSpeed's cache-flush warning
        // (once a step under memory pressure) holds `unable to`: a window inside those pieces
        // would make each such line a candidate.
        let step = b"{'loss': 0.4121, 'grad_norm': 1.873, 'learning_rate': 1.9e-05, 'epoch': 0.31}";
        let warn = b"[WARNING] [stage3.py:2117:step] 3 pytorch allocator cache flushes since last \
            step. if you are unable to make the cache flushes go away consider adding \
            get_accelerator().empty_cache() calls in your training loop";
        for (lit, healthy) in [
            (&b"'grad_norm': nan"[..], &step[..]),
            (b"unable to open shared memory object", warn),
            (b"Unable to determine the device handle", warn),
        ] {
            let w = rare_window(lit).to_ascii_lowercase();
            assert_eq!(w.len(), shiftor::WINDOW);
            assert!(
                !healthy
                    .to_ascii_lowercase()
                    .windows(w.len())
                    .any(|x| x == w),
                "{:?} watches {:?}, which a healthy line holds",
                String::from_utf8_lossy(lit),
                String::from_utf8_lossy(&w)
            );
        }
        // The table and scripts/window_freq.py hash alike (values printed by the script's
        // `bucket`); a trigram every log has is common, one no log has is not.
        assert_eq!(trigram_bucket(b'n', b'a', b'n'), 19200);
        assert_eq!(trigram_bucket(0xff, 0xfe, 0x1b), 61926);
        assert!(trigram_frequency(b'i', b'n', b'g') > 10);
        assert_eq!(trigram_frequency(b'\x01', b'\x02', b'\x03'), 0);
    }

    #[test]
    fn case_sensitive_and_folded_literals_and_many_shards() {
        let l = pattern_literals(r"(?i:bus error)|Caught signal").unwrap();
        assert_eq!(
            l,
            vec![
                Lit {
                    bytes: b"bus error".to_vec(),
                    folded: true
                },
                Lit {
                    bytes: b"Caught signal".to_vec(),
                    folded: false
                }
            ]
        );
        // More literals than one packed searcher holds, mixed with folded ones.
        let srcs: Vec<String> = (0..200)
            .map(|i| format!("signature number {i:03}x"))
            .collect();
        let mut specs: Vec<PatternSpec> = srcs
            .iter()
            .enumerate()
            .map(|(id, r)| PatternSpec::new(id, r))
            .collect();
        specs.push(PatternSpec::new(999, r"(?i)\bbus error\b"));
        let s = Scanner::new(&specs).unwrap();
        let chunk =
            b"a\nsignature number 150x\nb\nBUS ERROR here\nsignature number 007x, signature number 199x\n";
        let mut got = Vec::new();
        s.scan_chunk(chunk, 1, &mut ScanScratch::default(), |h, _| {
            got.push((h.id, h.lineno))
        });
        got.sort();
        assert_eq!(got, vec![(7, 5), (150, 2), (199, 5), (999, 4)]);
    }

    #[test]
    fn ansi_colour_does_not_hide_a_match() {
        let s = Scanner::new(&[PatternSpec::new(1, r"RuntimeError: CUDA out of memory")]).unwrap();
        let chunk = b"\x1b[31mRuntimeError: CUDA\x1b[0m out of memory\n";
        let mut n = 0;
        s.scan_chunk(chunk, 1, &mut ScanScratch::default(), |_, _| n += 1);
        assert_eq!(n, 1);
    }
}
