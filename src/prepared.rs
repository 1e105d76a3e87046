//! The built-in rule files and token table as the build read them (`build.rs`): each file as
//! JSON, and the required literals and capture names of every regex in them, linted at build
//! time by the code that lints at run time (`scan::literals`), with each literal's prefilter
//! window. Start-up reads these instead of parsing TOML and ~350 regexes. A lookup that finds nothing (a file or regex the build could
//! not read, a user's regex) sends the caller down the ordinary path, which reports any fault.
//! Lookups only: it validates nothing and builds no rule.

use crate::scan::Lit;

#[allow(clippy::type_complexity)] // the generated tables' row types, written out
mod generated {
    include!(concat!(env!("OUT_DIR"), "/prepared.rs"));
}

/// The JSON of built-in rule file `name` (`gpu_oom.toml`).
pub fn rule_file(name: &str) -> Option<&'static str> {
    generated::RULE_FILES
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, json)| *json)
}

/// The JSON of `data/tokens.toml`.
pub fn tokens() -> Option<&'static str> {
    generated::TOKENS
}

/// A built-in regex the build parsed: its required literals (`None` when it fails the lint,
/// which only a context regex may) and its named capture groups.
pub fn regex(src: &str) -> Option<(Option<Vec<Lit>>, Vec<String>)> {
    let rows = generated::REGEXES;
    let i = rows.binary_search_by(|(s, _, _)| (*s).cmp(src)).ok()?;
    let (_, lits, names) = rows[i];
    let lits = lits.map(|l| {
        l.iter()
            .map(|&(bytes, folded)| Lit {
                bytes: bytes.to_vec(),
                folded,
            })
            .collect()
    });
    Some((lits, names.iter().map(|n| n.to_string()).collect()))
}

/// The prefilter window of a literal of a built-in regex (`scan::literals::rare_window`, which
/// the build ran on it).
pub fn window(lit: &[u8]) -> Option<&[u8]> {
    let rows = generated::WINDOWS;
    let i = rows.binary_search_by(|(l, _)| (*l).cmp(lit)).ok()?;
    let start = usize::from(rows[i].1);
    lit.get(start..(start + crate::scan::literals::WINDOW).min(lit.len()))
}

/// Every literal whose window the build found, with that window (for tests).
#[cfg(test)]
pub fn windows() -> impl Iterator<Item = (&'static [u8], &'static [u8])> {
    generated::WINDOWS
        .iter()
        .map(|&(l, _)| (l, window(l).expect("a row of the table")))
}

/// Every prepared regex with its row (for tests).
#[cfg(test)]
pub fn regexes() -> impl Iterator<Item = (&'static str, Option<Vec<Lit>>, Vec<String>)> {
    generated::REGEXES.iter().map(|(s, _, _)| {
        let (l, n) = regex(s).expect("a row of the table");
        (*s, l, n)
    })
}
