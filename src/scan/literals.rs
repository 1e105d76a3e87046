//! The required literals of a scanner pattern: the fixed strings every match must contain,
//! checked by the lint (long enough, not one word frequent in logs), and the rarest window of
//! each that the prefilter watches. Depends on `regex-syntax` alone, because the build script
//! (`build.rs`) includes this file to lint the built-in rules' regexes once, at build time, with
//! the very code that lints a user's at run time. It compiles no regex and scans nothing.

use regex_syntax::hir::{Class, Hir, HirKind};
use std::sync::OnceLock;

/// Bytes of each literal the prefilter watches (`shiftor`: 8 adjacent pairs, one per lane).
pub const WINDOW: usize = 9;

/// `src` parsed as the scanner compiles it (bytes, Unicode classes).
pub fn parse(src: &str) -> Result<Hir, PatternError> {
    regex_syntax::ParserBuilder::new()
        .utf8(false)
        .build()
        .parse(src)
        .map_err(|e| PatternError::Regex(e.to_string()))
}

/// What the lint makes of a pattern: its required literals and its named capture groups.
pub fn prepare(hir: &Hir) -> Result<(Vec<Lit>, Vec<String>), PatternError> {
    let literals = lint_literals(hir)?;
    let mut names = Vec::new();
    collect_capture_names(hir, &mut names);
    Ok((literals, names))
}

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

/// The capitalised frequent words followed by `: ` that healthy training logs write (the
/// heads `scripts/window_freq.py --heads` finds on any line of its healthy background). A
/// case-sensitive literal that starts with another such head (`Error: `, the head of an
/// exception or error message) is not frequent: healthy text writes those words in lower case
/// or in capitals, not as a message head.
pub const HEALTHY_HEADS: &[&str] = &["Comm: ", "Memory: ", "Warning: "];

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

/// The `WINDOW`-byte piece of a literal least likely to occur in ordinary log
/// text: no whole frequent word if it can help it; then the window whose rarest trigram is
/// rarest in healthy training logs (a window occurs at most as often as each of its
/// trigrams: `'grad_norm': nan` must not watch `ad_norm':`, which every Trainer step line
/// holds); then, among windows equally rare there, the one with the fewest lower-case
/// letters, spaces and digits (capitals and punctuation are rarer).
pub fn rare_window(lit: &[u8]) -> &[u8] {
    let w = WINDOW;
    if lit.len() <= w {
        return lit;
    }
    let common = |b: u8| match b {
        b'a'..=b'z' | b' ' => 3u32,
        b'0'..=b'9' => 2,
        _ => 1,
    };
    let lower = lit.to_ascii_lowercase();
    let starts = lit.len() - w + 1;
    // A window holding a whole frequent word matches wherever that word does: mark, for each
    // occurrence of one, the windows that hold it whole (starts `end - w ..= at`).
    let mut holds_word = vec![false; starts];
    let by_first = frequent_words_by_first_byte();
    for at in 0..lower.len() {
        for &k in &by_first[usize::from(lower[at])] {
            let f = &frequent_words()[k];
            if lower[at..].starts_with(f) {
                let end = at + f.len();
                let (first, last) = (end.saturating_sub(w), at.min(starts - 1));
                if first <= last {
                    holds_word[first..=last].fill(true);
                }
            }
        }
    }
    let seen: Vec<u8> = lower
        .windows(3)
        .map(|t| trigram_frequency(t[0], t[1], t[2]))
        .collect();
    // The first window with the least (holds a frequent word, rarest trigram's count,
    // common bytes).
    let mut best: Option<((bool, u8, u32), usize)> = None;
    for (s, &word) in holds_word.iter().enumerate() {
        let rarest = seen[s..s + w - 2].iter().copied().min().unwrap_or(0);
        let letters: u32 = lit[s..s + w].iter().map(|&b| common(b)).sum();
        let score = (word, rarest, letters);
        if best.is_none_or(|(b, _)| score < b) {
            best = Some((score, s));
        }
    }
    best.map_or(lit, |(_, s)| &lit[s..s + w])
}

/// A trigram seen at least 2^(HELD_BITS - 1) times in the healthy background of
/// `trigram_frequency` (about 20 MB, 110,000 lines: one line in a thousand) is common there.
const HELD_BITS: u8 = 8;

/// Whether healthy training logs may hold `lit`: each of its trigrams (ASCII lower-cased) is
/// common in the background text (`HELD_BITS`). A literal with a rare trigram is rare; one
/// shorter than a trigram may be anywhere. `should`, `incompatible with` are held (healthy
/// warnings give advice); `Error: `, `Bus error` are not.
fn held(lit: &[u8]) -> bool {
    let lower = lit.to_ascii_lowercase();
    lower.len() < 3
        || lower
            .windows(3)
            .all(|t| trigram_frequency(t[0], t[1], t[2]) >= HELD_BITS)
}

/// For each first byte, the indexes of the `frequent_words` (of `MIN_LITERAL` to `WINDOW`
/// bytes) that start with it: the words a window must not hold whole.
fn frequent_words_by_first_byte() -> &'static [Vec<usize>] {
    static BY_FIRST: OnceLock<Vec<Vec<usize>>> = OnceLock::new();
    BY_FIRST.get_or_init(|| {
        let mut t = vec![Vec::new(); 256];
        for (k, f) in frequent_words().iter().enumerate() {
            if f.len() >= MIN_LITERAL && f.len() <= WINDOW {
                t[usize::from(f[0])].push(k);
            }
        }
        t
    })
}

/// How often a (lower-case) trigram occurs in healthy training logs: the bit length of its
/// count in a background text, hashed into 65,536 buckets (0 = never seen). The table is
/// made by `scripts/window_freq.py`, which says what text it counts.
pub fn trigram_frequency(a: u8, b: u8, c: u8) -> u8 {
    static TABLE: &[u8; 65536] = include_bytes!("trigrams.bin");
    TABLE[trigram_bucket(a, b, c)]
}

/// Must equal `bucket` in scripts/window_freq.py.
pub fn trigram_bucket(a: u8, b: u8, c: u8) -> usize {
    ((u32::from(a) << 16 | u32::from(b) << 8 | u32::from(c)).wrapping_mul(0x9E37_79B1) >> 16)
        as usize
}

/// The names of `hir`'s named capture groups, in order.
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
    let hir = parse(src)?;
    lint_literals(&hir)
}

/// The literal alternatives of `src` without the frequency lint (two bytes at least).
pub fn literal_alternatives(src: &str) -> Result<Vec<Lit>, PatternError> {
    let hir = parse(src)?;
    match required_literals(&hir) {
        Some(alts) if alts.iter().all(|l| l.bytes.len() >= 2) => Ok(alts),
        _ => Err(PatternError::NoLiteral),
    }
}

pub fn lint_literals(hir: &Hir) -> Result<Vec<Lit>, PatternError> {
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
    if is_rare_head(lit) {
        return false;
    }
    match trim_to_words(lit) {
        Some(t) => t.len() < MIN_LITERAL || is_frequent_word(t),
        None => true,
    }
}

/// A literal made only of frequent words (`NCCL INFO `: NCCL_DEBUG=INFO puts it on half of
/// a rank's lines). Allowed as a pattern's only literal (punctuation around it, as in
/// `'train_loss': `, can make it rare), but a pattern that also holds another literal is keyed
/// on that one.
pub fn is_weak(lit: &[u8]) -> bool {
    if is_rare_head(lit) {
        return false;
    }
    trim_to_words(lit).is_none_or(|t| {
        t.split(|b| !word_byte(b))
            .filter(|w| !w.is_empty())
            .all(is_frequent_word)
    })
}

/// A case-sensitive literal that starts with a message head healthy logs do not write: one
/// frequent word spelled capitalised (`Error`), then `: ` (`HEALTHY_HEADS`). Only an exact
/// literal can hold a capital: a case-insensitive one is lower-cased.
fn is_rare_head(lit: &[u8]) -> bool {
    let Some(word) = lit.iter().position(|b| !b.is_ascii_alphabetic()) else {
        return false;
    };
    let (w, rest) = lit.split_at(word);
    w.len() >= 2
        && w[0].is_ascii_uppercase()
        && w[1..].iter().all(u8::is_ascii_lowercase)
        && rest.starts_with(b": ")
        && is_frequent_word(w)
        && !HEALTHY_HEADS.iter().any(|h| lit.starts_with(h.as_bytes()))
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
                // of frequent words, then sets with no member healthy logs hold, then the
                // longest shortest member, then fewer members.
                let score = |s: &Vec<Lit>| {
                    let min = s.iter().map(|l| l.bytes.len()).min().unwrap_or(0);
                    let rare = !s.iter().any(|l| is_frequent(&l.bytes));
                    let strong = !s.iter().any(|l| is_weak(&l.bytes));
                    let unheld = min >= MIN_LITERAL && !s.iter().any(|l| held(&l.bytes));
                    (rare, strong, unheld, min.min(32), usize::MAX - s.len())
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
            // An alternation of plain literals just before the run (`(?:Error|Exception): `):
            // each alternative followed by the run is a longer literal set.
            let mut before: Option<Vec<Lit>> = None;
            let extend = |before: &Option<Vec<Lit>>, run: &Lit, best: &mut Option<Vec<Lit>>| {
                if let Some(alts) = before
                    && !run.bytes.is_empty()
                {
                    let set = alts
                        .iter()
                        .map(|a| {
                            let folded = a.folded || run.folded;
                            let mut bytes = [&a.bytes[..], &run.bytes[..]].concat();
                            if folded {
                                bytes.make_ascii_lowercase();
                            }
                            Lit { bytes, folded }
                        })
                        .collect();
                    consider(set, best);
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
                        extend(&before, &run, &mut best);
                        flush(&mut run, &mut best);
                        before = literal_alternation(s);
                        if let Some(set) = required_literals(s) {
                            consider(set, &mut best);
                        }
                    }
                }
            }
            extend(&before, &run, &mut best);
            flush(&mut run, &mut best);
            best
        }
        _ => None,
    }
}

/// The alternatives of an alternation (or a group around one) whose every branch is one plain
/// literal, exact bytes: what a literal that follows it can be appended to.
fn literal_alternation(hir: &Hir) -> Option<Vec<Lit>> {
    match hir.kind() {
        HirKind::Capture(c) => literal_alternation(&c.sub),
        HirKind::Alternation(subs) => subs
            .iter()
            .map(|s| match s.kind() {
                HirKind::Literal(l) => Some(Lit {
                    bytes: l.0.to_vec(),
                    folded: false,
                }),
                _ => None,
            })
            .collect(),
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
