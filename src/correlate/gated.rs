//! Correlation's fixed regexes (the verdict's death and error signs, the traceback lines, the
//! fingerprint's replacements, the stall readers), each compiled only for a text that could
//! match it. Every match of such a regex holds one of its required literals: the literals the
//! scanner's own extraction finds in it (`scan::literals::literal_alternatives`), written out
//! here beside the regex and checked against that extraction by a test. A text holding none of
//! them is answered "no match" without the regex, so a small input whose last lines say nothing
//! of exceptions, signals or start-up compiles none of them (each costs 1 to 3.5 M instructions
//! with its Unicode classes). A regex with no such literal is compiled on its first use, as
//! before. It only matches: it reads no input and decides nothing.

use regex::{Captures, Regex};
use std::sync::OnceLock;

/// A regex with the literals one of which every match holds (`(bytes, folded)`: folded
/// literals are lower-case and compared ignoring ASCII case). No literals: no gate.
pub struct Gated {
    src: &'static str,
    literals: &'static [(&'static str, bool)],
    re: OnceLock<Option<Regex>>,
}

impl Gated {
    pub const fn new(src: &'static str, literals: &'static [(&'static str, bool)]) -> Gated {
        Gated {
            src,
            literals,
            re: OnceLock::new(),
        }
    }

    /// Whether `text` may match: it holds one of the literals (always, without a gate). In
    /// Unicode mode `(?i)s` also matches the long s and `(?i)k` the Kelvin sign, which the
    /// extraction folds away: a text holding either passes whatever its literals.
    pub fn may_match(&self, text: &str) -> bool {
        self.literals.is_empty()
            || self.literals.iter().any(|&(lit, folded)| {
                if folded {
                    text.as_bytes()
                        .windows(lit.len())
                        .any(|w| w.eq_ignore_ascii_case(lit.as_bytes()))
                } else {
                    memchr::memmem::find(text.as_bytes(), lit.as_bytes()).is_some()
                }
            })
            || (self.literals.iter().any(|l| l.1) && text.contains(['\u{17f}', '\u{212a}']))
    }

    /// The compiled regex (compiled now if it was not); `None` if it does not compile.
    pub fn get(&self) -> Option<&Regex> {
        self.re.get_or_init(|| Regex::new(self.src).ok()).as_ref()
    }

    /// The regex, for a text that may match it (`may_match`).
    pub fn for_text(&self, text: &str) -> Option<&Regex> {
        if self.may_match(text) {
            self.get()
        } else {
            None
        }
    }

    pub fn is_match(&self, text: &str) -> bool {
        self.for_text(text).is_some_and(|re| re.is_match(text))
    }

    pub fn captures<'t>(&self, text: &'t str) -> Option<Captures<'t>> {
        self.for_text(text)?.captures(text)
    }

    /// The pattern (the tests check it compiles).
    #[cfg(test)]
    pub fn as_str(&self) -> &'static str {
        self.src
    }

    /// The gate's literals (the tests check them against the scanner's extraction).
    #[cfg(test)]
    pub fn literals(&self) -> &'static [(&'static str, bool)] {
        self.literals
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_gate_holds_the_literals_the_scanners_extraction_finds() {
        for g in crate::correlate::gated_regexes() {
            let found: Vec<(String, bool)> =
                match crate::scan::literals::literal_alternatives(g.as_str()) {
                    Ok(lits) => lits
                        .into_iter()
                        .map(|l| (String::from_utf8(l.bytes).unwrap(), l.folded))
                        .collect(),
                    Err(_) => Vec::new(),
                };
            let written: Vec<(String, bool)> = g
                .literals()
                .iter()
                .map(|&(l, f)| (l.to_string(), f))
                .collect();
            assert_eq!(written, found, "the gate of {}", g.as_str());
            assert!(g.get().is_some(), "{} compiles", g.as_str());
        }
    }

    #[test]
    fn a_gated_regex_answers_as_the_regex_does() {
        let step = Gated::new(
            r"(?i)\b(?:step|iter(?:ation)?|forward|backward)\b",
            &[
                ("step", true),
                ("iter", true),
                ("forward", true),
                ("backward", true),
            ],
        );
        let texts = [
            "hello",
            "STEP 3",
            "at step 3",
            "ſtep 3",
            "bac\u{212a}ward",
            "iteration 9",
            "stepping",
            "",
        ];
        let re = Regex::new(step.as_str()).unwrap();
        for t in texts {
            assert_eq!(step.is_match(t), re.is_match(t), "{t:?}");
        }
        // Not compiled for a text without its literals.
        let exc = Gated::new(r"(\w+Error): (.*)", &[("Error: ", false)]);
        assert!(exc.captures("all fine").is_none());
        assert!(exc.re.get().is_none());
        let c = exc.captures("x ValueError: bad").unwrap();
        assert_eq!(&c[1], "ValueError");
    }
}
