//! A cheap upper bound on what a user regex costs of the rule set's budget: the memory of its
//! Thompson NFA (`regex-automata`'s `NFA::memory_usage`, what `charge_user_regex` measures
//! exactly by compiling) and of the builder while compiling it (what the compiler's size limit
//! is checked against), from one walk of the parsed regex. The loader charges the bound where it
//! fits and compiles to measure only where it does not, so ordinary signatures skip the compile.
//!
//! It must never be below the exact figure (a test checks it on every built-in regex, the
//! generated benchmark shapes and random regexes); it compiles nothing and knows nothing of
//! rules.

use regex_syntax::hir::{Class, Hir, HirKind};

/// One builder state (`size_of::<builder::State>()` on 64-bit targets; the final NFA's states
/// are smaller). Every state the compiler adds is counted at this size.
const STATE: u64 = 32;
/// One transition of a sparse state, or one alternate of a union (at most 8 bytes each).
const EDGE: u64 = 8;
/// What the compiler adds around every pattern (the unanchored `(?s-u:.)*?` prefix, the
/// implicit group 0, the match state) and what the final NFA holds besides its states (its
/// header, byte classes, look-around sets, start table, group table).
const FIXED: u64 = 4096;
/// Each capture group's entries in the group table, besides its name.
const PER_GROUP: u64 = 256;

/// An upper bound, in bytes, on both the builder's peak memory and the final NFA's memory when
/// `hir` is compiled forward (as `charge_user_regex` compiles it).
pub fn nfa_bytes_bound(hir: &Hir) -> u64 {
    FIXED.saturating_add(bound(hir))
}

/// The compiler (`thompson::Compiler::c`, regex-automata 0.4), node by node: what each adds
/// besides its children, every state counted at `STATE` bytes and every transition or union
/// alternate at `EDGE` (which covers the 4-byte alternates the builder charges a union).
fn bound(hir: &Hir) -> u64 {
    match hir.kind() {
        // One empty state.
        HirKind::Empty => STATE,
        // One byte-range state a byte (an empty one for no bytes).
        HirKind::Literal(l) => STATE * (l.0.len() as u64 + 1),
        // An empty end state and one sparse state with a transition per range; a non-ASCII
        // Unicode class goes through the UTF-8 compiler: at most one state and one transition
        // for each byte range of each UTF-8 sequence of its ranges, plus its root and target.
        HirKind::Class(Class::Bytes(c)) => 2 * STATE + EDGE * c.ranges().len() as u64,
        HirKind::Class(Class::Unicode(c)) => {
            let ascii = c.ranges().last().is_none_or(|r| r.end() <= '\x7f');
            if ascii {
                2 * STATE + EDGE * c.ranges().len() as u64
            } else {
                unicode_class_bound(c)
            }
        }
        // One look-around state.
        HirKind::Look(_) => STATE,
        // A capture start and end state, a name kept in the group table.
        HirKind::Capture(c) => {
            let name = c.name.as_ref().map_or(0, |n| 2 * n.len() as u64);
            (2 * STATE + PER_GROUP + name).saturating_add(bound(&c.sub))
        }
        // The children, chained (an empty state when there are none).
        HirKind::Concat(subs) => subs
            .iter()
            .fold(STATE, |acc, s| acc.saturating_add(bound(s))),
        // A union with an alternate per child and an empty end; an alternation of literals
        // only is compiled as a trie: at most a state, a transition and a union alternate per
        // byte and per literal.
        HirKind::Alternation(subs) => {
            let children = subs
                .iter()
                .fold(0u64, |acc, s| acc.saturating_add(bound(s)));
            let literals: Option<u64> = subs
                .iter()
                .map(|s| match s.kind() {
                    HirKind::Literal(l) => Some(l.0.len() as u64),
                    _ => None,
                })
                .sum();
            let general = (2 * STATE + EDGE * subs.len() as u64).saturating_add(children);
            match literals {
                Some(bytes) => {
                    general.max((2 * STATE + 2 * EDGE) * (bytes + subs.len() as u64 + 2))
                }
                None => general,
            }
        }
        // `min` copies, then for `{min,max}` a union, a copy and an empty per optional copy,
        // for `{min,}` one more copy and up to two unions and an empty.
        HirKind::Repetition(r) => {
            let sub = bound(&r.sub);
            let copies = match r.max {
                Some(max) => u64::from(max.max(1)),
                None => u64::from(r.min) + 1,
            };
            let extra = match r.max {
                Some(max) => u64::from(max - r.min) + 2,
                None => 2,
            };
            sub.saturating_mul(copies)
                .saturating_add((2 * STATE + 2 * EDGE).saturating_mul(extra))
        }
    }
}

/// Most bytes one long bounded repetition (`x{m,n}`, `n` 16 or more) of a built-in regex may
/// add to its NFA bound: a confirming matcher is compiled on the scan threads for the first
/// candidate line holding its literal, so every run that meets the literal pays for the
/// copies (`.{0,300}?` is 300 copies of `.`'s UTF-8 automaton, 160 KB). A capture meant to be
/// cut short (python_exception's `(?P<msg>.{0,160})`, 86 KB) fits.
#[cfg(test)]
pub const BUILTIN_REPETITION_BYTES: u64 = 96 * 1024;

/// The lint of a built-in regex's compile cost (run over every built-in rule by the test
/// below, so `cargo test` refuses a costly one): `Err` naming the long bounded repetition and
/// the fix where one passes `BUILTIN_REPETITION_BYTES`; else its NFA bound.
#[cfg(test)]
pub fn lint_cost(src: &str) -> Result<u64, String> {
    let hir = crate::scan::literals::parse(src).map_err(|e| e.to_string())?;
    match costliest_repetition(&hir) {
        Some((c, piece)) if c > BUILTIN_REPETITION_BYTES => Err(format!(
            "{src:?}: the bounded repetition `{}` adds up to {c} bytes of NFA (more than \
             BUILTIN_REPETITION_BYTES = {BUILTIN_REPETITION_BYTES}) to compile on the candidate \
             lines: write `.*?` (or `[^X]*?`, X the character it must not cross) instead of a \
             long bounded repetition of a wide class, or anchor the pattern tighter",
            piece.escape_debug()
        )),
        _ => Ok(nfa_bytes_bound(&hir)),
    }
}

/// The long bounded repetition (`x{m,n}`, `n` 16 or more) of `hir` whose copies weigh most in
/// `nfa_bytes_bound`: what they add (`n` copies of the repeated piece and their unions) and
/// the piece written as a regex (`[^\n]{0,300}?`). `None` when it has none. What the lint of
/// built-in regexes names when one costs too much to compile on the candidate lines.
#[cfg(test)]
pub fn costliest_repetition(hir: &Hir) -> Option<(u64, String)> {
    let here = match hir.kind() {
        HirKind::Repetition(r) if r.max.is_some_and(|m| m >= 16) => {
            Some((bound(hir), hir.to_string()))
        }
        _ => None,
    };
    let inner = match hir.kind() {
        HirKind::Capture(c) => costliest_repetition(&c.sub),
        HirKind::Repetition(r) => costliest_repetition(&r.sub),
        HirKind::Concat(subs) | HirKind::Alternation(subs) => subs
            .iter()
            .filter_map(costliest_repetition)
            .max_by_key(|c| c.0),
        _ => None,
    };
    match (here, inner) {
        (Some(a), Some(b)) => Some(if b.0 > a.0 { b } else { a }),
        (a, b) => a.or(b),
    }
}

/// A non-ASCII Unicode class: the UTF-8 compiler's target (an empty state) and one sparse
/// state per distinct node of its shared UTF-8 automaton, with their transitions. For a small
/// class, at most one state and one transition per byte range of its UTF-8 sequences; a
/// large one (`\d`, `\w`: the piece count is ten times its real states) is compiled alone once
/// per thread and its states counted.
fn unicode_class_bound(c: &regex_syntax::hir::ClassUnicode) -> u64 {
    let pieces: u64 = c
        .ranges()
        .iter()
        .map(|r| utf8_pieces_bound(u32::from(r.start()), u32::from(r.end())))
        .sum();
    let by_pieces = (STATE + EDGE) * (pieces + 4);
    if pieces <= 64 {
        return by_pieces;
    }
    thread_local! {
        static MEASURED: std::cell::RefCell<std::collections::HashMap<Vec<(char, char)>, u64>> =
            Default::default();
    }
    let key: Vec<(char, char)> = c.ranges().iter().map(|r| (r.start(), r.end())).collect();
    if let Some(b) = MEASURED.with(|m| m.borrow().get(&key).copied()) {
        return b;
    }
    let class = Hir::class(Class::Unicode(c.clone()));
    let measured = match (nfa_shape(&class), nfa_shape(&Hir::empty())) {
        // The class's states are those its NFA has beyond the empty pattern's (the empty
        // states of both are removed in the final NFA); in the builder, each also had its
        // target, and every transition of a state made a byte range was a sparse one.
        (Some((states, edges)), Some((base_states, base_edges))) => {
            let states = states.saturating_sub(base_states) + 2;
            (STATE * states + EDGE * edges.saturating_sub(base_edges)).min(by_pieces)
        }
        _ => by_pieces,
    };
    MEASURED.with(|m| m.borrow_mut().insert(key, measured));
    measured
}

/// The states and the transitions (union alternates included) of `hir`'s final NFA, compiled
/// as `charge_user_regex` compiles it.
fn nfa_shape(hir: &Hir) -> Option<(u64, u64)> {
    use regex_automata::nfa::thompson::{self, State};
    thread_local! {
        static NFA: std::cell::RefCell<thompson::Compiler> = {
            let mut c = thompson::Compiler::new();
            c.configure(thompson::Config::new().utf8(false));
            std::cell::RefCell::new(c)
        };
    }
    let nfa = NFA.with(|c| c.borrow().build_from_hir(hir).ok())?;
    let edges = nfa
        .states()
        .iter()
        .map(|s| match s {
            State::ByteRange { .. } => 1,
            State::Sparse(t) => t.transitions.len() as u64,
            State::Dense(_) => 256,
            State::Union { alternates } => alternates.len() as u64,
            State::BinaryUnion { .. } => 2,
            _ => 0,
        })
        .sum();
    Some((nfa.states().len() as u64, edges))
}

/// An upper bound on the total length (byte ranges) of the UTF-8 sequences of the code points
/// `start..=end` (`regex_syntax::utf8::Utf8Sequences`): a range within one encoded length `n`
/// splits into at most `2n - 1` sequences of `n` ranges, and a range is first cut at each
/// encoded length's end and around the surrogates.
fn utf8_pieces_bound(start: u32, end: u32) -> u64 {
    const CLASSES: [(u32, u32, u64); 5] = [
        (0, 0x7f, 1),
        (0x80, 0x7ff, 2),
        (0x800, 0xd7ff, 3),
        (0xe000, 0xffff, 3),
        (0x1_0000, 0x10_ffff, 4),
    ];
    CLASSES
        .iter()
        .filter(|&&(lo, hi, _)| start <= hi && end >= lo)
        .map(|&(_, _, n)| (2 * n - 1) * n)
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_automata::nfa::thompson;

    /// The exact figures `charge_user_regex` measures: the final NFA's memory, and whether the
    /// compiler accepts it under a size limit of the bound (its builder never passed it).
    fn exact(src: &str) -> (u64, u64, bool) {
        let hir = crate::scan::literals::parse(src).unwrap();
        let b = nfa_bytes_bound(&hir);
        let mut c = thompson::Compiler::new();
        c.configure(
            thompson::Config::new()
                .utf8(false)
                .nfa_size_limit(Some(b as usize)),
        );
        let fits = c.build_from_hir(&hir).is_ok();
        c.configure(thompson::Config::new().utf8(false).nfa_size_limit(None));
        let used = c.build_from_hir(&hir).unwrap().memory_usage() as u64;
        (b, used, fits)
    }

    fn check(src: &str) {
        let (b, used, fits) = exact(src);
        assert!(
            used <= b && fits,
            "{src:?}: bound {b}, exact {used}, fits {fits}"
        );
    }

    #[test]
    fn the_bound_holds_for_every_built_in_regex_and_the_benchmark_shapes() {
        let kb = crate::rules::KnowledgeBase::load(&[]).unwrap();
        let mut n = 0;
        for s in kb.rules.iter().flat_map(|r| &r.signatures) {
            check(s.regex.as_str());
            n += 1;
        }
        assert!(n > 200, "{n}");
        for re in [
            r"Qadrovex (\d+) stalled",
            r"(?i)zorbel \w+ failed: [A-Za-z0-9_]+",
            r"(?:alpha|beta|gamma) buffer (?P<id>\d{1,8}) lost",
            r"\bexitcode\s*: -7\b",
            r"\w{60}",
            r"[\p{L}\p{N}]{3,9} boom",
            r"(?s).{0,300}? boom",
            r"(?:a|b)*(?:cd|ef)+x{2,}y{0,3}z?",
            r"",
            r"(?-u:\xff)[^\n]+",
            r"[\x{10000}-\x{10FFFF}\x{E000}-\x{FFFF}\x{800}-\x{D7FF}]",
        ] {
            check(re);
        }
    }

    /// The lint of built-in regexes: no long bounded repetition adds more than
    /// `BUILTIN_REPETITION_BYTES` to what a confirming matcher compiles.
    #[test]
    fn no_built_in_regex_repeats_a_wide_class_at_length() {
        let kb = crate::rules::KnowledgeBase::load(&[]).unwrap();
        let mut over = Vec::new();
        for r in &kb.rules {
            let regexes = r.signatures.iter().flat_map(|s| {
                std::iter::once(&s.regex).chain(s.preceded_by.as_ref().map(|p| &p.0))
            });
            for re in regexes {
                if let Err(e) = lint_cost(re.as_str()) {
                    over.push(format!("rule {} ({}): {e}", r.code, r.name));
                }
            }
        }
        assert!(over.is_empty(), "{}", over.join("\n"));
        // What it refuses, and what it says.
        let e = lint_cost(r"Error: .{0,300}?\bplease set (?P<s>\w+)").unwrap_err();
        assert!(e.contains("{0,300}?`") && e.contains("write `.*?`"), "{e}");
        assert!(lint_cost(r"Error: .*?\bplease set (?P<s>\w+)").is_ok());
        assert!(lint_cost(r"Error: [^:]{0,80}?\bplease").is_ok());
    }

    /// Random regexes over the constructs the compiler treats differently (literals, ASCII,
    /// byte and Unicode classes, alternations of literals or not, every repetition form,
    /// captures, look-arounds), nested.
    #[test]
    fn the_bound_holds_for_random_regexes() {
        let mut rnd = crate::testrand::below(0x2545_F491_4F6C_DD1Du64);
        fn random_regex(rnd: &mut dyn FnMut(usize) -> usize, depth: usize) -> String {
            let leaf = [
                "abc",
                "x",
                r"\d",
                r"\w",
                r"\s",
                "[a-f]",
                r"[^\n]",
                ".",
                r"\p{Greek}",
                "é",
                r"\b",
                "^",
                "$",
                r"(?-u:\w)",
                r"[\x{80}-\x{10FFFF}]",
                r"\pL",
            ];
            if depth == 0 || rnd(3) == 0 {
                return leaf[rnd(leaf.len())].to_string();
            }
            let a = random_regex(rnd, depth - 1);
            let b = random_regex(rnd, depth - 1);
            match rnd(9) {
                0 => format!("{a}{b}"),
                1 => format!("(?:{a}|{b})"),
                2 => format!("(?:foo|ba|{}|q)", ["r", "zz", "x"][rnd(3)]),
                3 => format!("(?:{a})*"),
                4 => format!("(?:{a})+?"),
                5 => format!("(?:{a}){{{},{}}}", rnd(3), 3 + rnd(4)),
                6 => format!("(?:{a}){{{},}}", rnd(4)),
                7 => format!("(?P<g{}>{a})?", rnd(100)),
                _ => format!("(?i:{a}){b}"),
            }
        }
        for _ in 0..400 {
            let re = random_regex(&mut rnd, 4);
            check(&re);
        }
    }

    /// The UTF-8 piece count against the real split, on random ranges and every class edge.
    #[test]
    fn utf8_pieces_bound_covers_the_real_sequences() {
        let edges = [
            0u32, 0x7f, 0x80, 0x7ff, 0x800, 0xfff, 0x1000, 0xd7ff, 0xe000, 0xffff, 0x1_0000,
            0x3_ffff, 0x4_0000, 0x10_ffff,
        ];
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut pairs: Vec<(u32, u32)> = Vec::new();
        for &a in &edges {
            for &b in &edges {
                for d in [0u32, 1, 0x3f, 0x40] {
                    pairs.push((a, b.saturating_sub(d)));
                    pairs.push((a + d.min(0x10_ffff - a), b));
                }
            }
        }
        for _ in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            pairs.push((
                (seed & 0x1f_ffff) as u32 % 0x11_0000,
                (seed >> 32) as u32 % 0x11_0000,
            ));
        }
        for (a, b) in pairs {
            let (a, b) = (a.min(b), a.max(b));
            let (Some(s), Some(e)) = (
                char::from_u32(if (0xd800..0xe000).contains(&a) {
                    0xe000
                } else {
                    a
                }),
                char::from_u32(if (0xd800..0xe000).contains(&b) {
                    0xd7ff
                } else {
                    b
                }),
            ) else {
                continue;
            };
            if s > e {
                continue;
            }
            let real: u64 = regex_syntax::utf8::Utf8Sequences::new(s, e)
                .map(|q| q.as_slice().len() as u64)
                .sum();
            let b = utf8_pieces_bound(u32::from(s), u32::from(e));
            assert!(
                real <= b,
                "{:#x}..={:#x}: {real} > {b}",
                u32::from(s),
                u32::from(e)
            );
        }
    }
}
