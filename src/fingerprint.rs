//! Failure fingerprints: a short stable id that groups identical failures across jobs.
//! `fp1:` + 16 hex digits of FNV-1a over the root finding's rule and the normalised text of
//! its first evidence line (numbers, hex, paths' variable parts removed). Changing the
//! algorithm means bumping the version prefix. Pure function of a report's findings.

use crate::correlate::Finding;

pub const VERSION: &str = "fp1";

fn fnv1a(data: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for b in data {
        h ^= *b as u64;
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// Replace what varies between reruns of the same failure with placeholders.
pub fn normalise(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '0' && chars.peek() == Some(&'x') {
            chars.next();
            while chars.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                chars.next();
            }
            out.push_str("<hex>");
        } else if c.is_ascii_digit() {
            while chars
                .peek()
                .is_some_and(|c| c.is_ascii_digit() || *c == '.')
            {
                chars.next();
            }
            out.push('#');
        } else {
            out.push(c);
        }
    }
    out
}

/// The fingerprint of a failure: from the first non-symptom finding, else the first finding.
pub fn of(findings: &[Finding]) -> Option<String> {
    let root = findings
        .iter()
        .find(|f| f.symptom_of.is_none())
        .or(findings.first())?;
    let mut key = root.rule.clone();
    key.push('\n');
    key.push_str(&root.category);
    Some(format!("{VERSION}:{:016x}", fnv1a(key.as_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn normalise_strips_variable_parts() {
        assert_eq!(
            normalise("worker (pid 4232) at 0x7fc404600000 took 3.5s"),
            "worker (pid #) at <hex> took #s"
        );
    }
}
