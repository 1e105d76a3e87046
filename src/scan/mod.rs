//! The line scanner: many regexes over chunks of lines, fast. Every pattern must contain a
//! required literal; one pass of the literal prefilter (`shiftor`) over the whole chunk
//! finds the few candidate lines, at a cost that does not grow with the number of
//! patterns; only those lines meet an aho-corasick pass over the literals and then the
//! regexes of the patterns whose literals they hold, compiled for `is_match` alone (the full
//! regex, captures and all, only for a pattern that hit). A candidate line that holds a
//! pattern's literal but does not match it whole is tried again in its other readings (a
//! `Rereader` the caller gives: a paste's prefixes, bars and quotes peeled), so only such
//! rare lines pay for them. Knows nothing of rules, facts or files: patterns in,
//! `(pattern, line)` hits out.

pub(crate) mod ansi;
pub(crate) mod literals;
pub(crate) mod shared;
pub mod shiftor;
pub(crate) mod watch;

use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
pub use literals::{FREQUENT_WORDS, Lit, MIN_LITERAL, PatternError, pattern_literals};
use literals::{literal_alternatives, rare_window};
use regex::bytes::Regex;
use regex_syntax::hir::{Hir, HirKind};
use std::sync::OnceLock;

/// One pattern to scan for, with an opaque id the caller maps back.
pub struct PatternSpec<'a> {
    pub id: usize,
    pub regex: &'a str,
    /// Its required literals when already linted (`LazyRegex::literals`): saves a parse.
    pub literals: Option<&'a [Lit]>,
    /// Where each of those literals' prefilter window starts, when already picked
    /// (`LazyRegex::windows`: a user regex's, picked on the thread that loaded it).
    pub windows: Option<&'a [usize]>,
}

impl<'a> PatternSpec<'a> {
    pub fn new(id: usize, regex: &'a str) -> PatternSpec<'a> {
        PatternSpec {
            id,
            regex,
            literals: None,
            windows: None,
        }
    }
}

/// The compiled scanner. Built once per analysis; shared read-only across threads.
pub struct Scanner {
    /// Chunk prefilter: finds the lines that may hold a literal (or an ANSI escape, which
    /// could split one).
    prefilter: shiftor::ShiftOr,
    /// Per-line identification over every pattern's literal alternatives, ASCII
    /// case-insensitive (over-approximates case-sensitive literals; the regex decides). Built
    /// on the first candidate line (`literals`): an input with none never pays for it. `None`
    /// if the automaton cannot be built (never seen: then every pattern is tried).
    ac: OnceLock<Option<AhoCorasick>>,
    /// The literals, lower-cased, that `ac` is built from.
    lits: Vec<Vec<u8>>,
    /// For each AC literal: which pattern it belongs to.
    lit_owner: Vec<usize>,
    sources: Vec<String>,
    /// What confirms a candidate line: each pattern compiled for `is_match` alone, on first
    /// use (first candidate line), so start-up stays cheap with a big knowledge base. Boxed:
    /// a pattern never compiled costs its slot, one pointer.
    matchers: Vec<OnceLock<Option<Box<Matcher>>>>,
    /// Full regexes (capture groups, match offsets), compiled only for a pattern that hit:
    /// what the caller reads a hit's captures with (`regex_for`).
    regexes: Vec<OnceLock<Option<FullRegex>>>,
    ids: Vec<usize>,
    rereader: Option<Rereader>,
    /// Per pattern: whether a piece of a line can match it when the whole line did not
    /// (it has an anchor or a word boundary, which a reading's new edges can satisfy).
    edge_sensitive: Vec<bool>,
    /// Per pattern, compiled on first use: the pattern with its anchors and word boundaries
    /// removed. A piece of a line can match the pattern only if the whole line matches this,
    /// so a line it misses is not reread for that pattern (most near misses: a common
    /// literal such as `host` in a line that is nothing like the pattern).
    relaxed: Vec<OnceLock<Option<Box<Matcher>>>>,
}

/// The window of literal `l` that the prefilter watches for (a built-in literal's from the
/// build's table, any other's chosen by `rare_window`): a line holding it is a candidate line.
/// Public so that a test can measure each signature's candidate lines on healthy text
/// (`tests/scan_background.rs`) with the windows the scanner itself uses.
pub fn prefilter_window(l: &Lit) -> shiftor::Window {
    shiftor::Window {
        bytes: crate::prepared::window(&l.bytes)
            .unwrap_or_else(|| rare_window(&l.bytes))
            .to_vec(),
        folded: l.folded,
    }
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
            .map(|p| (p.id, p.regex, true, p.literals, p.windows))
            .chain(
                escaped
                    .iter()
                    .map(|(id, re)| (*id, re.as_str(), false, None, None)),
            );
        let mut errors = Vec::new();
        let mut lits: Vec<Vec<u8>> = Vec::new();
        let mut lit_owner = Vec::new();
        let mut sources = Vec::new();
        let mut ids = Vec::new();
        let mut windows = Vec::new();
        for (id, regex, lint, known, picked) in all {
            // A fixed pattern the build linted (`prepared`: the launcher's shapes, the
            // error-tail marks) is not parsed again. The build's literals passed the lint,
            // which only filters `literal_alternatives`' answer: the same for a mark.
            let built = || match crate::prepared::regex(regex) {
                Some((Some(l), _)) => Some(l),
                _ => None,
            };
            let alts = match known {
                Some(l) => Ok(l.to_vec()),
                None => match built() {
                    Some(l) => Ok(l),
                    None if lint => pattern_literals(regex),
                    None => literal_alternatives(regex),
                },
            };
            match alts {
                Ok(alts) => {
                    let ix = sources.len();
                    sources.push(regex.to_string());
                    ids.push(id);
                    for (i, l) in alts.into_iter().enumerate() {
                        // The window the loader picked, else the build's, else picked now
                        // (`prefilter_window`, the choice tests/scan_background.rs checks).
                        windows.push(match picked.and_then(|w| w.get(i)) {
                            Some(&at) => shiftor::Window {
                                bytes: l.bytes[at..(at + literals::WINDOW).min(l.bytes.len())]
                                    .to_vec(),
                                folded: l.folded,
                            },
                            None => prefilter_window(&l),
                        });
                        lits.push(l.bytes.to_ascii_lowercase());
                        lit_owner.push(ix);
                    }
                }
                Err(e) => errors.push((id, e)),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Scanner {
            prefilter: shiftor::ShiftOr::new(&windows, Some(ESC)),
            ac: OnceLock::new(),
            lits,
            lit_owner,
            matchers: sources.iter().map(|_| OnceLock::new()).collect(),
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
    fn regex(&self, ix: usize) -> Option<&FullRegex> {
        self.regexes[ix]
            .get_or_init(|| FullRegex::new(&self.sources[ix]))
            .as_ref()
    }

    /// Pattern `ix` for confirming candidates, compiled on first use; `None` as for `regex`.
    fn matcher(&self, ix: usize) -> Option<&Matcher> {
        self.matchers[ix]
            .get_or_init(|| Matcher::new(&self.sources[ix]).map(Box::new))
            .as_deref()
    }

    /// The literal automaton, built on first use. A contiguous NFA: quick to build, and only
    /// candidate lines meet it. The literals are lower-cased and so is each candidate line
    /// before the search: the same matches as an ASCII-case-insensitive automaton, which took
    /// 3.5 times as long to build (4.8 ms against 1.4 ms for the built-in rules' 714 literals).
    fn ac(&self) -> Option<&AhoCorasick> {
        self.ac
            .get_or_init(|| {
                AhoCorasickBuilder::new()
                    .kind(Some(AhoCorasickKind::ContiguousNFA))
                    .match_kind(MatchKind::Standard)
                    .build(&self.lits)
                    .ok()
            })
            .as_ref()
    }

    /// Pattern `ix` without its edges (see `relaxed`); `None` when it cannot be built, and
    /// then every reading is tried.
    fn relaxed(&self, ix: usize) -> Option<&Matcher> {
        self.relaxed[ix]
            .get_or_init(|| {
                let hir = literals::parse(&self.sources[ix]).ok()?;
                Matcher::new(&without_edges(&hir).to_string()).map(Box::new)
            })
            .as_deref()
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
        on_hit: impl FnMut(Hit, &[u8]),
    ) {
        self.scan(chunk, first_lineno, scratch, false, on_hit);
    }

    /// As `scan_chunk`, and returns the chunk's newlines: the hits' line numbers already
    /// count them up to the last hit, so a reader that takes this count (`ChunkReader::counted`)
    /// saves counting the whole chunk a second time.
    pub fn scan_chunk_counting(
        &self,
        chunk: &[u8],
        first_lineno: u64,
        scratch: &mut ScanScratch,
        on_hit: impl FnMut(Hit, &[u8]),
    ) -> u64 {
        self.scan(chunk, first_lineno, scratch, true, on_hit)
    }

    /// `scan_chunk`; with `count_all`, the newlines after the last hit are counted too and
    /// the chunk's newlines returned (else the count up to the last hit's line).
    fn scan(
        &self,
        chunk: &[u8],
        first_lineno: u64,
        scratch: &mut ScanScratch,
        count_all: bool,
        mut on_hit: impl FnMut(Hit, &[u8]),
    ) -> u64 {
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
                |id| ids.push((id, None)),
            );
            // A reading is a piece of the line (or a repr's unescaped text): it can only
            // match a pattern the line missed through the pattern's edges, or escapes.
            let escaped = memchr::memchr(b'\\', line).is_some();
            scratch.missed.retain(|&ix| {
                escaped
                    || (self.edge_sensitive[ix]
                        && self.relaxed(ix).is_none_or(|r| r.is_match(line)))
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
        if count_all {
            lineno += memchr::memchr_iter(b'\n', &chunk[counted_to..]).count() as u64;
        }
        lineno - first_lineno
    }

    /// Run the full regexes whose literals occur in this line; those that miss go to `missed`.
    fn match_line(
        &self,
        line: &[u8],
        lower: &mut Vec<u8>,
        cands: &mut Vec<usize>,
        missed: &mut Vec<usize>,
        mut on_hit: impl FnMut(usize),
    ) {
        cands.clear();
        missed.clear();
        lower.clear();
        lower.extend(line.iter().map(u8::to_ascii_lowercase));
        match self.ac() {
            Some(ac) => {
                for m in ac.find_overlapping_iter(&lower[..]) {
                    cands.push(self.lit_owner[m.pattern().as_usize()]);
                }
            }
            None => cands.extend(0..self.len()),
        }
        cands.sort_unstable();
        cands.dedup();
        for &ix in cands.iter() {
            if self.matcher(ix).is_some_and(|m| m.is_match(line)) {
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
            let Some(re) = self.matcher(ix) else {
                continue;
            };
            if let Some(v) = scratch.readings.iter().position(|r| re.is_match(r)) {
                ids.push((self.ids[ix], Some(v)));
            }
        }
    }

    /// Does the pattern with this id match this text? (For examples and tests.)
    pub fn regex_for(&self, id: usize) -> Option<&FullRegex> {
        // Ids are usually the pattern indexes themselves: look there first.
        let ix = if self.ids.get(id) == Some(&id) {
            Some(id)
        } else {
            self.ids.iter().position(|&i| i == id)
        };
        ix.and_then(|ix| self.regex(ix))
    }
}

/// Buffers reused across lines (one per scanning thread).
#[derive(Default)]
pub struct ScanScratch {
    cands: Vec<usize>,
    missed: Vec<usize>,
    readings: Vec<Vec<u8>>,
    ids: Vec<(usize, Option<usize>)>,
    starts: Vec<usize>,
    clean: Vec<u8>,
    /// The candidate line lower-cased, for the literal automaton.
    lower: Vec<u8>,
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
    /// What `is_match` uses: compiled for yes/no alone (`Matcher`), about half the full
    /// regex's compile work, and never the full regex unless a caller wants its captures.
    matcher: OnceLock<Option<Matcher>>,
    literals: Vec<Lit>,
    /// Where each literal's prefilter window starts (`literals::rare_window`), picked with the
    /// lint for a regex the build did not lint (a user's): picking the windows of a thousand
    /// user literals on the engine's thread cost 7.9 M instructions, the load's threads share
    /// it. Empty for a built-in regex (the build picked its windows: `prepared::window`).
    windows: Vec<usize>,
}

impl LazyRegex {
    /// Lint `src` (syntax, required literals: load errors) and return it with its named
    /// capture groups, from one parse (none for a built-in regex: the build linted it,
    /// `prepared`); the regex itself is compiled on first use.
    pub fn new(src: &str) -> Result<(LazyRegex, Vec<String>), PatternError> {
        if let Some((Some(literals), names)) = crate::prepared::regex(src) {
            return Ok((LazyRegex::linted(src, literals), names));
        }
        Self::from_hir(src, &literals::parse(src)?)
    }

    /// As `new`, from `src` already parsed (`literals::parse`): a user's regex, whose parse
    /// also measures its compiled size.
    pub fn from_hir(src: &str, hir: &Hir) -> Result<(LazyRegex, Vec<String>), PatternError> {
        let (literals, names) = literals::prepare(hir)?;
        let mut re = LazyRegex::linted(src, literals);
        re.windows = re
            .literals
            .iter()
            .map(|l| {
                let w = rare_window(&l.bytes);
                // `rare_window` returns a piece of the literal: where it starts.
                w.as_ptr() as usize - l.bytes.as_ptr() as usize
            })
            .collect();
        Ok((re, names))
    }

    /// A context regex (a rule's `preceded_by`), which needs no required literal: its syntax
    /// checked now (by the build for a built-in one), the regex compiled on first use.
    pub fn context(src: &str) -> Result<LazyRegex, PatternError> {
        if crate::prepared::regex(src).is_none() {
            literals::parse(src)?;
        }
        Ok(LazyRegex::linted(src, Vec::new()))
    }

    /// A context regex whose syntax the caller checked (`literals::parse`).
    pub fn context_parsed(src: &str) -> LazyRegex {
        LazyRegex::linted(src, Vec::new())
    }

    fn linted(src: &str, literals: Vec<Lit>) -> LazyRegex {
        LazyRegex {
            src: src.to_string(),
            cell: OnceLock::new(),
            matcher: OnceLock::new(),
            literals,
            windows: Vec::new(),
        }
    }

    /// The compiled regex; `None` only if it exceeds the size limit (reported by `rules test`).
    pub fn get(&self) -> Option<&Regex> {
        self.cell
            .get_or_init(|| build_regex(&self.src).ok())
            .as_ref()
    }

    /// Does `haystack` match? A haystack holding none of the required literals (every match
    /// holds one) is answered without the regex, so a regex no line reaches is never
    /// compiled: the token table's fifty-odd regexes are tried on every line that says a
    /// run died, and compiling each on first use cost a run ~100 M instructions.
    pub fn is_match(&self, haystack: &[u8]) -> bool {
        self.may_match(haystack)
            && self
                .matcher
                .get_or_init(|| Matcher::new(&self.src))
                .as_ref()
                .is_some_and(|m| m.is_match(haystack))
    }

    /// Whether `haystack` holds one of the required literals (always, when there are none).
    fn may_match(&self, haystack: &[u8]) -> bool {
        self.literals.is_empty()
            || self.literals.iter().any(|l| {
                if l.folded {
                    haystack
                        .windows(l.bytes.len())
                        .any(|w| w.eq_ignore_ascii_case(&l.bytes))
                } else {
                    memchr::memmem::find(haystack, &l.bytes).is_some()
                }
            })
    }

    pub fn as_str(&self) -> &str {
        &self.src
    }

    /// The required literals the lint found (what the scanner prefilters on).
    pub fn literals(&self) -> &[Lit] {
        &self.literals
    }

    /// Where each literal's prefilter window starts, when picked at load (a user regex's);
    /// `None` for a built-in regex, whose windows the build picked.
    pub fn windows(&self) -> Option<&[usize]> {
        (!self.windows.is_empty()).then_some(&self.windows[..])
    }
}

impl Clone for LazyRegex {
    fn clone(&self) -> Self {
        LazyRegex {
            src: self.src.clone(),
            cell: OnceLock::new(),
            matcher: OnceLock::new(),
            literals: self.literals.clone(),
            windows: self.windows.clone(),
        }
    }
}

impl std::fmt::Debug for LazyRegex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LazyRegex({:?})", self.src)
    }
}

/// A pattern compiled to answer "does this line match?" and nothing more: a forward lazy DFA
/// over an automaton without capture states, started at the pattern's literal prefix where it
/// has one (as `regex` does), and a PikeVM over the same automaton for the searches the lazy DFA
/// quits (a Unicode `\b` beside a non-ASCII byte, a thrashed cache). `regex` builds besides a
/// reverse automaton and its lazy DFA, to find where a match starts, and a one-pass DFA for
/// captures: 4.6 MiB of a one-thread run on 100 MB, and half the compile time. Same syntax and
/// size limit as `build_regex`, so the same lines match. Its search caches are shared by every
/// scan thread (`shared`): candidate lines are rare, so few searches of one pattern overlap.
struct Matcher {
    dfa: Option<regex_automata::hybrid::dfa::DFA>,
    vm: regex_automata::nfa::thompson::pikevm::PikeVM,
    caches: shared::Caches<MatcherCache>,
}

type MatcherCache = (
    Option<regex_automata::hybrid::dfa::Cache>,
    Option<regex_automata::nfa::thompson::pikevm::Cache>,
);

impl Matcher {
    /// `None` where `build_regex` fails too (the size limit).
    fn new(src: &str) -> Option<Matcher> {
        use regex_automata::util::{prefilter::Prefilter, syntax};
        use regex_automata::{MatchKind, hybrid, nfa::thompson};
        let hir = syntax::parse_with(src, &syntax::Config::new().unicode(true).utf8(false)).ok()?;
        // A compiler each: one kept per thread would hold its UTF-8 state map (320 KiB) for
        // as long as the thread lives.
        let nfa = thompson::Compiler::new()
            .configure(
                thompson::Config::new()
                    .utf8(false)
                    .shrink(false)
                    .nfa_size_limit(Some(REGEX_SIZE_LIMIT))
                    .which_captures(thompson::WhichCaptures::None),
            )
            .build_from_hir(&hir)
            .ok()?;
        let anchored = hir
            .properties()
            .look_set_prefix()
            .contains(regex_syntax::hir::Look::Start);
        let pre = (!anchored)
            .then(|| Prefilter::from_hir_prefix(MatchKind::LeftmostFirst, &hir))
            .flatten();
        // `regex`'s lazy DFA settings; one that cannot be built (its cache would not hold a
        // few states) leaves every search to the PikeVM, as there.
        let dfa = hybrid::dfa::Builder::new()
            .configure(
                hybrid::dfa::DFA::config()
                    .match_kind(MatchKind::LeftmostFirst)
                    .specialize_start_states(pre.is_some())
                    .prefilter(pre)
                    .unicode_word_boundary(true)
                    .cache_capacity(2 << 20)
                    .skip_cache_capacity_check(false)
                    .minimum_cache_clear_count(Some(3))
                    .minimum_bytes_per_state(Some(10)),
            )
            .build_from_nfa(nfa.clone())
            .ok();
        let vm = thompson::pikevm::PikeVM::new_from_nfa(nfa).ok()?;
        Some(Matcher {
            dfa,
            vm,
            caches: shared::Caches::default(),
        })
    }

    fn is_match(&self, haystack: &[u8]) -> bool {
        let input = regex_automata::Input::new(haystack).earliest(true);
        self.caches.with(
            || (None, None),
            |(dc, vc)| {
                if let Some(dfa) = &self.dfa {
                    let dc = dc.get_or_insert_with(|| dfa.create_cache());
                    if let Ok(found) = dfa.try_search_fwd(dc, &input) {
                        return found.is_some();
                    }
                }
                let vc = vc.get_or_insert_with(|| self.vm.create_cache());
                self.vm.is_match(vc, input.clone())
            },
        )
    }
}

/// A pattern's full regex, for a hit's place in its line and its captures (and a launcher
/// line's fields): `build_regex`'s engine and settings (the same matches, the same groups), its
/// search caches shared by every scan thread (`shared`) instead of `regex`'s one per thread. A
/// pattern that hits on every thread (an NCCL identity line) otherwise grew a forward and a
/// reverse lazy DFA on each: 11.6 MB of an 8-thread run's 36.6 MB heap on 100 MB. No one-pass
/// DFA, which `regex` builds for every regex with groups and keeps (1.5 MB for the launcher's
/// line shapes alone): the groups of the few short lines read this way come from the bounded
/// backtracker, the same groups.
pub struct FullRegex {
    re: regex_automata::meta::Regex,
    caches: shared::Caches<regex_automata::meta::Cache>,
}

/// The groups of one match of a `FullRegex` over text: group `i` by `get(i)` or `[i]` (which
/// panics for a group that did not take part, as `regex::Captures` does).
pub struct Groups<'h> {
    text: &'h str,
    caps: regex_automata::util::captures::Captures,
}

impl<'h> Groups<'h> {
    pub fn get(&self, i: usize) -> Option<&'h str> {
        self.caps.get_group(i).map(|sp| &self.text[sp.range()])
    }
}

impl std::ops::Index<usize> for Groups<'_> {
    type Output = str;
    fn index(&self, i: usize) -> &str {
        self.get(i).expect("the group took part in the match")
    }
}

impl FullRegex {
    /// Over bytes, as `build_regex`; `None` where it fails (the size limit).
    fn new(src: &str) -> Option<FullRegex> {
        Self::build(src, false)
    }

    /// Over text, as `regex::Regex::new` (matches never split a character); for built-in
    /// patterns, which always compile.
    pub fn text(src: &str) -> FullRegex {
        Self::build(src, true).expect("a built-in regex compiles")
    }

    fn build(src: &str, utf8: bool) -> Option<FullRegex> {
        use regex_automata::{MatchKind, meta, util::syntax};
        // What `regex`'s builders give these settings, less the one-pass DFA.
        let re = meta::Builder::new()
            .configure(
                meta::Config::new()
                    .nfa_size_limit(Some(REGEX_SIZE_LIMIT))
                    .hybrid_cache_capacity(2 << 20)
                    .match_kind(MatchKind::LeftmostFirst)
                    .utf8_empty(utf8)
                    .onepass(false),
            )
            .syntax(syntax::Config::new().unicode(true).utf8(utf8))
            .build(src)
            .ok()?;
        Some(FullRegex {
            re,
            caches: shared::Caches::default(),
        })
    }

    fn with<T>(&self, search: impl FnOnce(&mut regex_automata::meta::Cache) -> T) -> T {
        self.caches.with(|| self.re.create_cache(), search)
    }

    pub fn is_match(&self, haystack: &[u8]) -> bool {
        self.with(|c| self.re.is_match_with(c, &haystack.into()))
    }

    /// Where the leftmost-first match is.
    pub fn find(&self, haystack: &[u8]) -> Option<std::ops::Range<usize>> {
        self.with(|c| self.re.search_with(c, &haystack.into()))
            .map(|m| m.range())
    }

    /// The named groups of the leftmost-first match that took part in it, in group order.
    pub fn named_captures<'h>(&self, haystack: &'h [u8]) -> Vec<(&str, &'h [u8])> {
        let mut caps = self.re.create_captures();
        self.with(|c| self.re.search_captures_with(c, &haystack.into(), &mut caps));
        let names = self
            .re
            .group_info()
            .pattern_names(regex_automata::PatternID::ZERO);
        names
            .enumerate()
            .filter_map(|(i, name)| Some((name?, &haystack[caps.get_group(i)?.range()])))
            .collect()
    }

    /// The groups of the leftmost-first match in `text`.
    pub fn captures<'h>(&self, text: &'h str) -> Option<Groups<'h>> {
        self.captures_from(text, 0)
    }

    fn captures_from<'h>(&self, text: &'h str, at: usize) -> Option<Groups<'h>> {
        let mut caps = self.re.create_captures();
        let input = regex_automata::Input::new(text).range(at..);
        self.with(|c| self.re.search_captures_with(c, &input, &mut caps));
        caps.is_match().then_some(Groups { text, caps })
    }

    /// The groups of each successive non-overlapping match in `text` (`regex`'s
    /// `captures_iter`; an empty match moves on a character).
    pub fn captures_all<'h>(&self, text: &'h str) -> Vec<Groups<'h>> {
        let mut out = Vec::new();
        let mut at = 0;
        while at <= text.len() {
            let Some(g) = self.captures_from(text, at) else {
                break;
            };
            let m = g.caps.get_match().expect("a match").range();
            at = if m.is_empty() {
                m.end + text[m.end..].chars().next().map_or(1, char::len_utf8)
            } else {
                m.end
            };
            out.push(g);
        }
        out
    }
}

/// `build_regex`'s limit on a compiled automaton (`regex`'s `size_limit`).
const REGEX_SIZE_LIMIT: usize = 8 << 20;

fn build_regex(src: &str) -> Result<Regex, regex::Error> {
    regex::bytes::RegexBuilder::new(src)
        .unicode(true)
        .size_limit(REGEX_SIZE_LIMIT)
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

#[cfg(test)]
mod tests {
    use super::literals::{is_weak, trigram_bucket, trigram_frequency};
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
            vec!["foo bar ", "baz qux "]
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
    fn matchers_match_what_the_full_regex_matches() {
        // Unicode `\b` beside non-ASCII text makes the lazy DFA quit (the PikeVM answers);
        // anchors, case folding, classes and alternations take the lazy DFA's own path.
        let patterns = [
            r"\bexitcode\s*: -7\b",
            r"^\s*host\s*: ([\w.-]+)\s*$",
            r"(?i)cuda out of memory",
            r"(?:NCCL|Gloo) (?:error|timeout): (\d+)",
            r"rank\s*\d+\s*$",
        ];
        let lines: [&[u8]; 10] = [
            "退出exitcode: -7号".as_bytes(),
            "退出 exitcode: -7 号".as_bytes(),
            b"  host : node-01",
            "  host : nœud-01".as_bytes(),
            b"[default0]: host : node-01",
            b"RuntimeError: CUDA Out Of Memory",
            b"NCCL timeout: 1800000",
            b"Gloo error: x",
            b"rank 3",
            b"\xff\xfe rank 3 \xff",
        ];
        for p in patterns {
            let m = Matcher::new(p).expect("builds");
            let re = build_regex(p).unwrap();
            for l in lines {
                assert_eq!(
                    m.is_match(l),
                    re.is_match(l),
                    "{p} on {:?}",
                    String::from_utf8_lossy(l)
                );
            }
        }
        assert!(
            Matcher::new(r"\bexitcode\b")
                .unwrap()
                .is_match("退出 exitcode 号".as_bytes())
        );
        assert!(
            !Matcher::new(r"\bexitcode\b")
                .unwrap()
                .is_match("退出exitcode号".as_bytes())
        );
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
    fn a_lazy_regex_is_not_compiled_for_a_line_without_its_literals() {
        for (src, yes, no) in [
            (
                r"\bKilled\b",
                "bash: line 1: 42 Killed python train.py",
                "killed nothing",
            ),
            (
                r"(?i)out of memory",
                "CUDA Out Of Memory while allocating",
                "memory fine",
            ),
            (
                r"NCCL (?:WARN|ERROR) .*remote",
                "NCCL WARN NET/IB : remote peer",
                "NCCL INFO ok",
            ),
        ] {
            let (re, _) = LazyRegex::new(src).unwrap();
            assert!(!re.is_match(no.as_bytes()), "{src} on {no}");
            assert!(
                re.matcher.get().is_none(),
                "{src} compiled for a line without its literal"
            );
            assert!(re.is_match(yes.as_bytes()), "{src} on {yes}");
            assert!(re.matcher.get().is_some() && re.cell.get().is_none());
            // Same answers as the compiled regex, both ways.
            let full = build_regex(src).unwrap();
            for line in [yes, no] {
                assert_eq!(re.is_match(line.as_bytes()), full.is_match(line.as_bytes()));
            }
        }
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
    fn a_message_head_healthy_logs_do_not_write_is_preferred() {
        let exact = |b: &[u8]| Lit {
            bytes: b.to_vec(),
            folded: false,
        };
        // `Error: ` spelled so is no healthy line's (healthy logs write `error`, `ERROR`): it
        // wins over advice words that healthy warnings hold.
        assert_eq!(
            pattern_literals(
                r"Error: .*?\b(?:[Yy]ou (?:should|must|need to)|[Pp]lease) set `(?P<s>\w+)`"
            ),
            Ok(vec![exact(b"Error: ")])
        );
        // An alternation of literals takes the literal after it.
        assert_eq!(
            pattern_literals(r"(?:Error|Exception): (?:(?P<a>[^:]{1,80}?)) is incompatible with"),
            Ok(vec![exact(b"Error: "), exact(b"Exception: ")])
        );
        assert_eq!(
            pattern_literals(r"(?P<k>Timeout|Closed)Error\b"),
            Ok(vec![exact(b"TimeoutError"), exact(b"ClosedError")])
        );
        // Alone it passes the lint; in any case, in lower case, or as a head healthy logs
        // write (`Warning: `), the word is as frequent as ever.
        assert!(lits(r"Error: \d+").is_ok());
        for w in [
            r"(?i)Error: \d+",
            r"error: \d+",
            r"ERROR: \d+",
            r"Warning: \d+",
            r"Error\d",
        ] {
            assert!(
                matches!(lits(w), Err(PatternError::FrequentLiteral(_))),
                "{w}"
            );
        }
        assert!(is_weak(b"Warning: ") && !is_weak(b"Error: ") && is_weak(b"Error"));
    }

    /// The window picker, as its definition reads: for each start, whether the window holds a
    /// whole frequent word, its rarest trigram's count, its common bytes; the first least.
    fn rare_window_by_definition(lit: &[u8]) -> &[u8] {
        let w = shiftor::WINDOW;
        if lit.len() <= w {
            return lit;
        }
        let lower = lit.to_ascii_lowercase();
        let words: Vec<Vec<u8>> = FREQUENT_WORDS
            .iter()
            .map(|f| f.trim().as_bytes().to_vec())
            .filter(|f| f.len() >= MIN_LITERAL && f.len() <= w)
            .collect();
        let score = |s: usize| {
            let win = &lower[s..s + w];
            let word = words
                .iter()
                .any(|f| win.windows(f.len()).any(|x| x == &f[..]));
            let seen = win
                .windows(3)
                .map(|t| trigram_frequency(t[0], t[1], t[2]))
                .min();
            let letters: u32 = lit[s..s + w]
                .iter()
                .map(|&b| match b {
                    b'a'..=b'z' | b' ' => 3,
                    b'0'..=b'9' => 2,
                    _ => 1,
                })
                .sum();
            (word, seen, letters)
        };
        let s = (0..=lit.len() - w).min_by_key(|&s| score(s)).unwrap();
        &lit[s..s + w]
    }

    #[test]
    fn the_window_picker_picks_what_its_definition_says() {
        let kb = crate::rules::KnowledgeBase::load(&[]).unwrap();
        let mut lits: Vec<Vec<u8>> = kb
            .rules
            .iter()
            .flat_map(|r| &r.signatures)
            .flat_map(|s| s.regex.literals())
            .map(|l| l.bytes.clone())
            .collect();
        lits.extend(
            [
                &b"unable to open shared memory object"[..],
                b"'grad_norm': nan",
                b"the loss is nan at step and the epoch",
                b"Qadrovex buffer stalled after ",
                b"NCCL INFO Bootstrap : no socket interface found",
            ]
            .map(|l| l.to_vec()),
        );
        assert!(lits.len() > 300, "{}", lits.len());
        for l in &lits {
            assert_eq!(
                rare_window(l),
                rare_window_by_definition(l),
                "{}",
                String::from_utf8_lossy(l)
            );
        }
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
