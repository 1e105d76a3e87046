//! Which tokens of the table a text holds, in one pass: every token's strings in one
//! Aho-Corasick automaton, built once on first use. A token whose regex is only strings, word
//! boundaries and short runs of non-word characters (`\bOOMKilled\b`, `[Bb]us error`,
//! `(?:exitcode|return code)\W{0,4}-7\b`) is decided here, from where its strings occur: its
//! regex is never compiled. Any other token is a candidate where one of its required literals
//! (the lint's: every match holds one) occurs, and only then is its regex run. The answer is
//! the regexes' answer (`tokens::tests` checks both on every example line of the table, glued,
//! flattened and recased). Matching only: it never reads files or decides what a token means.

use super::Token;
use aho_corasick::{AhoCorasick, AhoCorasickBuilder, AhoCorasickKind, MatchKind};
use std::sync::Arc;

/// The most strings one literal set of a regex expands to; a larger one is left to the regex.
const MAX_EXPANSION: usize = 64;

/// One step of a regex the finder reads itself.
#[derive(Clone, Debug, PartialEq)]
enum Item {
    /// One of these strings (`[Ss]egmentation`, `exit(?:ed)? code`: expanded).
    Lits(Vec<Vec<u8>>),
    /// An ASCII word boundary (`\b`, made `(?-u:\b)` by the table).
    Bound,
    /// `\W{min,max}`: that many characters that are not (Unicode) word characters.
    NonWord(usize, usize),
}

/// One alternative of a token's regex, read: word boundaries before its first strings, the
/// strings (what the automaton finds), then the rest, checked from where a string ends.
#[derive(Debug, PartialEq)]
struct Alt {
    lead: bool,
    first: Vec<Vec<u8>>,
    rest: Vec<Item>,
}

/// What an occurrence of an automaton string means for one token.
enum How {
    /// The token's regex is read (`Alt`): the occurrence, with the rest of its alternative
    /// checked, is a match.
    Read(Arc<Alt>),
    /// One of the token's required literals (the lint's): the token is a candidate and its
    /// regex decides.
    Candidate,
}

/// A string of an automaton, and (token, what an occurrence means) for every token that
/// holds it (a string is in an automaton once).
type Owned = (Vec<u8>, Vec<(usize, How)>);

/// Strings in one automaton, and their owners.
#[derive(Default)]
struct Strings {
    ac: Option<AhoCorasick>,
    owners: Vec<Owned>,
    /// The automaton could not be built: each of its tokens is a candidate everywhere.
    failed: bool,
}

impl Strings {
    fn own(&mut self, bytes: &[u8], o: (usize, How)) {
        match self.owners.iter_mut().find(|x| x.0 == bytes) {
            Some(x) => x.1.push(o),
            None => self.owners.push((bytes.to_vec(), vec![o])),
        }
    }

    /// Build the automaton (none for no strings): the cheapest kind to build, as it runs
    /// once a run on a few hundred short lines.
    fn build(mut self, fold: bool) -> Strings {
        if !self.owners.is_empty() {
            self.ac = AhoCorasickBuilder::new()
                .kind(Some(AhoCorasickKind::NoncontiguousNFA))
                .match_kind(MatchKind::Standard)
                .ascii_case_insensitive(fold)
                .build(self.owners.iter().map(|o| &o.0))
                .ok();
            self.failed = self.ac.is_none();
        }
        self
    }

    /// The tokens decided at the strings' occurrences in `text` go to `found`; the
    /// candidates to `cand`.
    fn scan(&self, text: &str, found: &mut Vec<usize>, cand: &mut Vec<usize>) {
        if self.failed {
            cand.extend(self.owners.iter().flat_map(|o| o.1.iter().map(|x| x.0)));
        }
        let Some(ac) = &self.ac else { return };
        let bytes = text.as_bytes();
        for m in ac.find_overlapping_iter(bytes) {
            let (s, e) = (m.start(), m.end());
            for (k, how) in &self.owners[m.pattern().as_usize()].1 {
                match how {
                    How::Read(alt) => {
                        if (!alt.lead || boundary(bytes, s)) && rest(text, &alt.rest, e) {
                            found.push(*k);
                        }
                    }
                    How::Candidate => cand.push(*k),
                }
            }
        }
    }
}

pub(super) struct Finder {
    /// Strings matched exactly, and the lint's literals matched ignoring ASCII case.
    exact: Strings,
    folded: Strings,
    /// Tokens with no literal at all: always candidates (the lint makes this rare).
    always: Vec<usize>,
}

impl Finder {
    pub(super) fn new(tokens: &[Token]) -> Finder {
        let (mut exact, mut folded) = (Strings::default(), Strings::default());
        let mut always = Vec::new();
        for (k, t) in tokens.iter().enumerate() {
            // The regex as written (`Table::validate` made its boundaries ASCII ones).
            let src = t.regex.as_str().replace(r"(?-u:\b)", r"\b");
            match read(&src) {
                Some(alts) => {
                    for alt in alts {
                        let alt = Arc::new(alt);
                        for f in &alt.first {
                            exact.own(f, (k, How::Read(alt.clone())));
                        }
                    }
                }
                None if t.regex.literals().is_empty() => always.push(k),
                None => {
                    for l in t.regex.literals() {
                        let set = if l.folded { &mut folded } else { &mut exact };
                        set.own(&l.bytes, (k, How::Candidate));
                    }
                }
            }
        }
        Finder {
            exact: exact.build(false),
            folded: folded.build(true),
            always,
        }
    }

    /// Add to `found` the tokens `text` holds that it does not list yet (in no order, a token
    /// perhaps twice): `is` answers for a candidate, by its regex.
    pub(super) fn find(&self, text: &str, is: impl Fn(usize) -> bool, found: &mut Vec<usize>) {
        let mut cand: Vec<usize> = self.always.clone();
        self.exact.scan(text, found, &mut cand);
        self.folded.scan(text, found, &mut cand);
        cand.sort_unstable();
        cand.dedup();
        for k in cand {
            if !found.contains(&k) && is(k) {
                found.push(k);
            }
        }
    }
}

/// Does `items` match `text` from `at` on (the regex needs nothing after them)?
fn rest(text: &str, items: &[Item], at: usize) -> bool {
    let Some((item, more)) = items.split_first() else {
        return true;
    };
    match item {
        Item::Bound => boundary(text.as_bytes(), at) && rest(text, more, at),
        Item::Lits(set) => set
            .iter()
            .any(|l| text.as_bytes()[at..].starts_with(l) && rest(text, more, at + l.len())),
        Item::NonWord(min, max) => {
            let mut pos = at;
            for n in 0..=*max {
                if n >= *min && rest(text, more, pos) {
                    return true;
                }
                // At a character boundary: every step before ended a string or a character.
                let Some(c) = text.get(pos..).and_then(|t| t.chars().next()) else {
                    return false;
                };
                if n == *max || regex_syntax::is_word_character(c) {
                    return false;
                }
                pos += c.len_utf8();
            }
            false
        }
    }
}

/// An ASCII word boundary at `at` (as `(?-u:\b)`): the bytes either side differ in being word
/// bytes, the text's ends counting as non-word.
fn boundary(text: &[u8], at: usize) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let before = at > 0 && word(text[at - 1]);
    let after = at < text.len() && word(text[at]);
    before != after
}

/// A token's regex read as alternatives the finder decides itself, when it is only these:
/// literal characters (plain, or escaped punctuation), classes of listed characters (`[Ss]`),
/// non-capturing groups of such alternatives, `?` after a character or a group, ASCII word
/// boundaries, and `\W{m,n}`; each alternative's first step (after boundaries) a string.
/// `None` for anything else (another class, a repetition, a flag, a capture): the regex
/// decides those.
fn read(src: &str) -> Option<Vec<Alt>> {
    let chars: Vec<char> = src.chars().collect();
    let mut at = 0;
    let alts = alternation(&chars, &mut at)?;
    if at != chars.len() {
        return None;
    }
    alts.into_iter()
        .map(|seq| {
            let seq = merge(seq)?;
            let lead = seq.iter().take_while(|i| **i == Item::Bound).count();
            let mut tail = seq[lead..].iter().cloned();
            match tail.next() {
                Some(Item::Lits(first)) if first.iter().all(|f| !f.is_empty()) => Some(Alt {
                    lead: lead > 0,
                    first,
                    rest: tail.collect(),
                }),
                _ => None,
            }
        })
        .collect()
}

/// Sequences separated by `|`, up to the end or a `)` (left for the caller).
fn alternation(c: &[char], at: &mut usize) -> Option<Vec<Vec<Item>>> {
    let mut out = vec![sequence(c, at)?];
    while *at < c.len() && c[*at] == '|' {
        *at += 1;
        out.push(sequence(c, at)?);
    }
    Some(out)
}

fn sequence(c: &[char], at: &mut usize) -> Option<Vec<Item>> {
    let mut seq: Vec<Item> = Vec::new();
    while *at < c.len() && c[*at] != '|' && c[*at] != ')' {
        let ch = c[*at];
        *at += 1;
        let item = match ch {
            '\\' => {
                let e = *c.get(*at)?;
                *at += 1;
                match e {
                    'b' => Item::Bound,
                    'W' => Item::NonWord(1, 1),
                    e if e.is_ascii_punctuation() => lit(e),
                    _ => return None,
                }
            }
            '[' => {
                let mut set = Vec::new();
                loop {
                    let x = *c.get(*at)?;
                    *at += 1;
                    match x {
                        ']' if !set.is_empty() => break,
                        '\\' => {
                            let e = *c.get(*at)?;
                            *at += 1;
                            if !e.is_ascii_punctuation() {
                                return None;
                            }
                            set.push(e.to_string().into_bytes());
                        }
                        '^' | '-' | '[' | ']' => return None,
                        x => set.push(x.to_string().into_bytes()),
                    }
                }
                Item::Lits(set)
            }
            '(' => {
                if c.get(*at..*at + 2)? != ['?', ':'] {
                    return None;
                }
                *at += 2;
                let alts = alternation(c, at)?;
                if c.get(*at) != Some(&')') {
                    return None;
                }
                *at += 1;
                let mut set = Vec::new();
                for a in alts {
                    match merge(a)?.as_slice() {
                        [Item::Lits(l)] => set.extend(l.iter().cloned()),
                        [] => set.push(Vec::new()),
                        _ => return None,
                    }
                }
                Item::Lits(set)
            }
            '?' => match seq.pop()? {
                Item::Lits(mut l) => {
                    l.push(Vec::new());
                    Item::Lits(l)
                }
                _ => return None,
            },
            '{' => match seq.pop()? {
                Item::NonWord(1, 1) => {
                    let close = c[*at..].iter().position(|&x| x == '}')? + *at;
                    let inner: String = c[*at..close].iter().collect();
                    *at = close + 1;
                    let (lo, hi) = inner.split_once(',')?;
                    Item::NonWord(lo.parse().ok()?, hi.parse().ok()?)
                }
                _ => return None,
            },
            '.' | '+' | '*' | '}' | '^' | '$' | ']' => return None,
            ch if ch.is_whitespace() && ch != ' ' => return None,
            // A plain character not under a quantifier joins the string before it.
            ch => match seq.last_mut() {
                Some(Item::Lits(l)) if l.len() == 1 && !matches!(c.get(*at), Some('?' | '{')) => {
                    let mut b = [0; 4];
                    l[0].extend_from_slice(ch.encode_utf8(&mut b).as_bytes());
                    continue;
                }
                _ => lit(ch),
            },
        };
        seq.push(item);
    }
    Some(seq)
}

fn lit(ch: char) -> Item {
    Item::Lits(vec![ch.to_string().into_bytes()])
}

/// Adjacent string sets joined into one (every combination, in order), while small.
fn merge(seq: Vec<Item>) -> Option<Vec<Item>> {
    let mut out: Vec<Item> = Vec::new();
    for item in seq {
        match (out.last_mut(), item) {
            (Some(Item::Lits(a)), Item::Lits(b)) => {
                if a.len() * b.len() > MAX_EXPANSION {
                    return None;
                }
                *a = a
                    .iter()
                    .flat_map(|x| b.iter().map(move |y| [x.as_slice(), y].concat()))
                    .collect();
            }
            (_, item) => out.push(item),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<Vec<u8>> {
        v.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn regexes_are_read_only_when_the_finder_can_decide_them() {
        let alts = read(r"\bOOMKilled\b|Too many open files|\[Errno 24\]").unwrap();
        assert_eq!(alts.len(), 3);
        assert!(alts[0].lead && alts[0].rest == [Item::Bound]);
        assert_eq!(alts[2].first, strings(&["[Errno 24]"]));
        let alts = read(r"[Ss]egfault|\b(?:CANCELLED|TIMEOUT)\b|oom_kill events?\b").unwrap();
        assert_eq!(alts[0].first, strings(&["Segfault", "segfault"]));
        assert_eq!(alts[1].first, strings(&["CANCELLED", "TIMEOUT"]));
        assert_eq!(
            alts[2].first,
            strings(&["oom_kill events", "oom_kill event"])
        );
        let alts = read(r"(?:exit(?:ed)? code|exitcode)\W{0,3}(?:139|-11)\b").unwrap();
        assert_eq!(
            alts[0].first,
            strings(&["exited code", "exit code", "exitcode"])
        );
        assert_eq!(
            alts[0].rest,
            [
                Item::NonWord(0, 3),
                Item::Lits(strings(&["139", "-11"])),
                Item::Bound
            ]
        );
        for not in [
            r"cudaError[A-Z]\w+",
            r"completion from peer .{0,80}status=\d+",
            r"yaml\.\w*(?:Error|error)",
            r"(?i:error)",
            r"a(b)",
            r"\W{0,3}x",
            r"(?:a)?",
        ] {
            assert_eq!(read(not), None, "{not}");
        }
    }

    #[test]
    fn the_rest_of_an_alternative_is_checked_where_its_string_ends() {
        let items = [
            Item::NonWord(0, 3),
            Item::Lits(strings(&["-9"])),
            Item::Bound,
        ];
        assert!(rest(": -9", &items, 0));
        assert!(rest("-9 x", &items, 0));
        assert!(!rest(" :  -9", &items, 0));
        assert!(!rest(": -90", &items, 0));
        assert!(rest(" ·-9", &items, 0));
        assert!(!rest(" é-9", &items, 0));
    }

    #[test]
    fn boundaries_are_ascii_ones() {
        assert!(boundary(b"x MemoryError", 2));
        assert!(!boundary(b"nMemoryError", 1));
        assert!(boundary("内存MemoryError".as_bytes(), 6));
        assert!(boundary(b"Error", 5) && boundary(b"Error", 0));
    }
}
