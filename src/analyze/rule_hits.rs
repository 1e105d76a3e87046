//! The rule consumer: a signature's hit kept as evidence when its kinds, its `preceded_by`
//! window and, on joined rows, its "only what neither row says alone" all hold; at most
//! `MAX_HITS_PER_SIG_FILE` per signature and file, the rest counted. Builds each hit's text,
//! attribution and captures; which rule explains the run is `correlate`'s.

use super::lookback::preceded;
use super::stream::{Consumer, Seen};
use super::{Engine, FileResult, MAX_HITS_PER_SIG_FILE, MAX_TEXT, RuleHit};
use crate::model::Attribution;
use crate::scan::FullRegex;
use crate::sources::SourceKind;
use crate::sources::encoding::decode_line;
use crate::sources::prefix;

/// The rule hits of one stream.
pub(super) struct RuleHits<'e, 'kb> {
    engine: &'e Engine<'kb>,
    kind: SourceKind,
    base_attr: Attribution,
    per_sig: std::collections::HashMap<usize, usize>,
    hits: Vec<RuleHit>,
    dropped: Vec<(usize, u64)>,
}

impl<'e, 'kb> RuleHits<'e, 'kb> {
    pub(super) fn new(engine: &'e Engine<'kb>, kind: SourceKind, path: &str) -> Self {
        RuleHits {
            engine,
            kind,
            base_attr: prefix::from_path(path),
            per_sig: Default::default(),
            hits: Vec::new(),
            dropped: Vec::new(),
        }
    }
}

impl Consumer for RuleHits<'_, '_> {
    fn take(&mut self, sig_ix: usize, seen: &Seen<'_>) {
        let (kb, scanner) = (self.engine.kb, &self.engine.scanner);
        let (hit, chunk, line, joint) = (seen.hit, seen.text, seen.line, seen.joint);
        let (ri, si) = kb.sig_of[sig_ix];
        let sig = &kb.rules[ri].signatures[si];
        if !sig.applies_to(self.kind) {
            return;
        }
        // A reading of a flattened line (a repr) may hold its context itself.
        let raw = &chunk[hit.start..hit.end];
        // Joined rows look back from their first row, in the chunk they were read from.
        let (back, at) = seen.origin.unwrap_or((chunk, hit.start));
        if let Some((pre, within)) = &sig.preceded_by
            && !preceded(seen.before, back, at, *within, pre)
            && !(line.len() != raw.len() && pre.is_match(raw))
        {
            return;
        }
        // The scanner already compiled this signature's regex to confirm the hit.
        let Some(re) = scanner.regex_for(hit.id) else {
            return;
        };
        // A joined pair counts only for what neither physical line holds alone.
        if let Some(j) = joint
            && j.len() > 1
            && j.windows(2).any(|w| re.is_match(&chunk[w[0]..w[1]]))
        {
            return;
        }
        // Only a hit that would be kept counts toward the cap.
        let count = self.per_sig.entry(sig_ix).or_default();
        *count += 1;
        if *count > MAX_HITS_PER_SIG_FILE {
            match self.dropped.iter_mut().find(|(r, _)| *r == ri) {
                Some(e) => e.1 += 1,
                None => self.dropped.push((ri, 1)),
            }
            return;
        }
        self.hits
            .push(make_hit(ri, si, re, hit.lineno, line, raw, &self.base_attr));
    }

    fn takes_rewritten(&self) -> bool {
        true
    }

    fn finish(&mut self, res: &mut FileResult, _ranged: bool) {
        res.hits.append(&mut self.hits);
        for (rule, n) in self.dropped.drain(..) {
            match res.dropped.iter_mut().find(|(r, _)| *r == rule) {
                Some(e) => e.1 += n,
                None => res.dropped.push((rule, n)),
            }
        }
    }
}

/// The line's text for citing: whole when short; otherwise a window around the match
/// (a one-line JSON error file or a glued progress bar can be kilobytes long).
fn excerpt(full: &str, re: &FullRegex) -> String {
    let t = full.trim();
    if t.len() <= MAX_TEXT {
        return t.to_string();
    }
    let (ms, me) = re.find(t.as_bytes()).map_or((0, 0), |m| (m.start, m.end));
    let mut start = ms.saturating_sub(120);
    let mut end = (me + 200).min(t.len()).max((start + MAX_TEXT).min(t.len()));
    while !t.is_char_boundary(start) {
        start -= 1;
    }
    while !t.is_char_boundary(end) {
        end += 1;
    }
    format!(
        "{}{}{}",
        if start > 0 { "…" } else { "" },
        &t[start..end],
        if end < t.len() { "…" } else { "" }
    )
}

/// Build a hit: the `\r`-segment holding the match as text (progress bars redraw with `\r`
/// and glue the next message on), prefixes peeled into attribution, captures kept. `bytes`
/// is what matched: the line, or a reading of it (`raw`), whose prefixes then attribute it.
fn make_hit(
    rule: usize,
    signature: usize,
    re: &FullRegex,
    line: u64,
    bytes: &[u8],
    raw: &[u8],
    base: &Attribution,
) -> RuleHit {
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    let m = re.find(bytes);
    let seg = match m {
        Some(m) => {
            let s = memchr::memrchr(b'\r', &bytes[..m.start]).map_or(0, |i| i + 1);
            let e = memchr::memchr(b'\r', &bytes[m.end..]).map_or(bytes.len(), |i| m.end + i);
            &bytes[s..e]
        }
        None => bytes,
    };
    let full = decode_line(seg).replace('\0', "");
    let (mut attr, _) = prefix::peel(&full);
    if bytes.len() != raw.len() {
        // A reading has lost the line's prefixes: attribute from the line's last segment.
        let seg = memchr::memrchr(b'\r', raw).map_or(raw, |i| &raw[i + 1..]);
        let text = decode_line(seg);
        let start = text
            .find(|c: char| c.is_ascii() && c != '`' && !c.is_whitespace())
            .unwrap_or(0);
        let (a, _) = prefix::peel(&text[start..]);
        attr.rank = attr.rank.or(a.rank);
        attr.local_rank = attr.local_rank.or(a.local_rank);
        attr.host = attr.host.take().or(a.host);
        attr.pid = attr.pid.or(a.pid);
        attr.time = attr.time.take().or(a.time);
    }
    if attr.rank.is_none() {
        attr.rank = base.rank;
    }
    if attr.local_rank.is_none() {
        attr.local_rank = base.local_rank;
    }
    if attr.host.is_none() {
        attr.host = base.host.clone();
    }
    let captures = re
        .named_captures(seg)
        .into_iter()
        .map(|(name, v)| (name.to_string(), String::from_utf8_lossy(v).into_owned()))
        .collect();
    let text = excerpt(&full, re);
    RuleHit {
        rule,
        signature,
        input: 0,
        line,
        text,
        attr,
        captures,
    }
}
