//! Other readings of one line a paste may have mangled: the text after its last `\r` (a
//! progress bar redrawn in front), the message with launcher prefixes, markdown backticks
//! and prose in another script peeled off both ends, and the lines of a Python string repr
//! (`'…\n…'`) unescaped; and the one line two ranks wrote at once, each write doubled
//! (`undouble`). The scanner tries them only for a line that already holds a
//! signature's literal but did not match it whole (anchored signatures), so healthy lines
//! never pay for them. It must not invent text: every reading is a piece of the line, or the
//! repr's own content.

use super::prefix;

/// A Python string repr, quotes included, no longer than this is unescaped (a longer line is
/// a log record, not a repr someone pasted).
const MAX_REPR: usize = 64 * 1024;

/// Push the other readings of `line` (not `line` itself) into `out`, most faithful first.
pub fn readings(line: &[u8], out: &mut Vec<Vec<u8>>) {
    let mut rest = line;
    if let Some(i) = memchr::memrchr(b'\r', rest) {
        rest = &rest[i + 1..];
        push(out, rest);
    }
    let start = bare_start(rest);
    let bare = trim_end_junk(start);
    if bare.len() != rest.len() {
        push(out, bare);
    }
    // A message in another script glued to the end of an ASCII line (the zh_CN shell's
    // `已杀死` after a progress bar) is not prose when only backticks follow it: the same
    // line with only its backticks and blanks off the end.
    let ticks = trim_end_blanks(start);
    if start[ticks.len()..].contains(&b'`') && ticks.len() != bare.len() {
        push(out, ticks);
    }
    if let Some(inner) = repr_body(bare) {
        for l in unescape(inner).split(|&b| b == b'\n') {
            if !l.is_empty() {
                push(out, l);
            }
        }
    }
}

fn push(out: &mut Vec<Vec<u8>>, v: &[u8]) {
    if !out.iter().any(|o| o == v) {
        out.push(v.to_vec());
    }
}

/// The message's start: prose in another script, backticks, bullets and launcher prefixes
/// peeled off (in any order, as often as they come). `trim_end_junk` then takes prose,
/// backticks and spaces off its end.
fn bare_start(mut s: &[u8]) -> &[u8] {
    loop {
        let before = s.len();
        s = trim_start_junk(s);
        if let Ok(t) = std::str::from_utf8(s) {
            s = &s[prefix::message_start(t)..];
        }
        s = level_and_place(s);
        if s.len() == before {
            break;
        }
    }
    s
}

/// A logger's level and source place after its timestamp (DeepSpeed's
/// `[INFO] [launch.py:351:main] `), which `prefix::peel` leaves to the message on purpose
/// (the level is part of what its other readers see).
fn level_and_place(s: &[u8]) -> &[u8] {
    static RE: std::sync::OnceLock<regex::bytes::Regex> = std::sync::OnceLock::new();
    let re = RE.get_or_init(|| {
        regex::bytes::Regex::new(
            r"^\[(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL)\] (?:\[[\w.-]+:\d+(?::\w+)?\] ?)?",
        )
        .expect("level regex")
    });
    re.find(s).map_or(s, |m| &s[m.end()..])
}

/// Non-ASCII prose (a question in Chinese), markdown backticks and blanks before a message.
/// A text with nothing ASCII after them is the message itself (a shell's `已杀死` under a
/// Chinese locale): only its blanks and backticks go.
fn trim_start_junk(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .position(|&b| b.is_ascii() && !matches!(b, b'`' | b' ' | b'\t'))
        .or_else(|| s.iter().position(|b| !blank(b)))
        .unwrap_or(s.len());
    &s[n..]
}

fn trim_end_junk(s: &[u8]) -> &[u8] {
    let n = s
        .iter()
        .rposition(|&b| b.is_ascii() && !matches!(b, b'`' | b' ' | b'\t' | b'\r'))
        .or_else(|| s.iter().rposition(|b| !blank(b)))
        .map_or(0, |i| i + 1);
    &s[..n]
}

fn trim_end_blanks(s: &[u8]) -> &[u8] {
    let n = s.iter().rposition(|b| !blank(b)).map_or(0, |i| i + 1);
    &s[..n]
}

fn blank(b: &u8) -> bool {
    matches!(b, b'`' | b' ' | b'\t' | b'\r')
}

/// The inside of `'…'` / `"…"` when the whole text is one quoted Python string.
fn repr_body(s: &[u8]) -> Option<&[u8]> {
    if s.len() < 2 || s.len() > MAX_REPR {
        return None;
    }
    let q = s[0];
    (matches!(q, b'\'' | b'"') && s[s.len() - 1] == q && s[s.len() - 2] != b'\\')
        .then(|| &s[1..s.len() - 1])
}

/// Python's string escapes that a repr writes: `\n`, `\t`, `\\`, `\'`, `\"`.
fn unescape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'\\' && i + 1 < s.len() {
            let c = match s[i + 1] {
                b'n' => Some(b'\n'),
                b't' => Some(b'\t'),
                b'r' => Some(b'\r'),
                b'\\' => Some(b'\\'),
                b'\'' => Some(b'\''),
                b'"' => Some(b'"'),
                _ => None,
            };
            if let Some(c) = c {
                out.push(c);
                i += 2;
                continue;
            }
        }
        out.push(s[i]);
        i += 1;
    }
    out
}

/// Lines shorter than this are never taken for two ranks' writes interleaved.
const MIN_DOUBLED: usize = 16;

/// The line two writers printed at the same moment, when each run of word characters and
/// each run of other characters came twice (`KeyErrorKeyError: ': 'xx''` is
/// `KeyError: 'x'`); `None` when any run is not doubled. Runs of a class merge across the
/// two copies, so a doubled run is exactly a square; a line that happens to hold one
/// (`aa`) is not doubled everywhere.
pub(crate) fn undouble(line: &[u8]) -> Option<Vec<u8>> {
    if line.len() < MIN_DOUBLED {
        return None;
    }
    let text = std::str::from_utf8(line).ok()?;
    let word = |c: char| c.is_alphanumeric() || c == '_';
    let mut out = String::with_capacity(text.len() / 2);
    let mut rest = text;
    while let Some(first) = rest.chars().next() {
        let class = word(first);
        let end = rest.find(|c: char| word(c) != class).unwrap_or(rest.len());
        let (run, tail) = rest.split_at(end);
        let half = run.len() / 2;
        if run.len() % 2 != 0 || !run.is_char_boundary(half) || run[..half] != run[half..] {
            return None;
        }
        out.push_str(&run[..half]);
        rest = tail;
    }
    Some(out.into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(line: &str) -> Vec<String> {
        let mut out = Vec::new();
        readings(line.as_bytes(), &mut out);
        out.into_iter()
            .map(|v| String::from_utf8(v).unwrap())
            .collect()
    }

    #[test]
    fn the_text_after_the_last_carriage_return() {
        assert_eq!(
            r(" 45%|██▌ | 45/100\r 46%|██▌ | 46/100\rKilled"),
            vec!["Killed"]
        );
    }

    #[test]
    fn prose_backticks_and_prefixes_peeled_off_both_ends() {
        assert_eq!(
            r("训练报错了，求助：[rank3]: OSError: x请问怎么解决？"),
            vec!["OSError: x"]
        );
        assert_eq!(r("```RuntimeError: boom```"), vec!["RuntimeError: boom"]);
        assert!(r("RuntimeError: boom").is_empty());
        assert_eq!(
            r("[2026-11-29 18:57:00,219] [INFO] [launch.py:351:main] Killed"),
            vec!["Killed"]
        );
    }

    #[test]
    fn a_message_in_another_script_is_kept_when_nothing_else_is_left() {
        assert_eq!(r("[rank3]: 已杀死"), vec!["已杀死"]);
        assert_eq!(r("```已杀死```"), vec!["已杀死"]);
        assert_eq!(
            r("```ETA:  2386s已杀死```"),
            vec!["ETA:  2386s", "ETA:  2386s已杀死"]
        );
        // Prose around an ASCII message still goes.
        assert_eq!(r("求助：Killed 怎么办"), vec!["Killed"]);
    }

    #[test]
    fn two_ranks_writing_one_line_at_once_are_read_as_one() {
        assert_eq!(
            undouble(b"KeyErrorKeyError: ': 'label_idlabel_id''").as_deref(),
            Some(&b"KeyError: 'label_id'"[..])
        );
        // Ordinary lines have runs that are not doubled.
        assert_eq!(undouble(b"KeyError: 'label_id' in the batch"), None);
        assert_eq!(undouble(b"abab  cdcd::efef"), Some(b"ab cd:ef".to_vec()));
    }

    #[test]
    fn a_python_repr_is_read_as_its_lines() {
        assert_eq!(
            r(r"'  File \'a.py\', line 1\nKeyError: \'x\''"),
            vec!["  File 'a.py', line 1", "KeyError: 'x'"]
        );
    }
}
