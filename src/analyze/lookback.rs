//! The lines a `preceded_by` window looks back over: kept from one chunk to the next, read
//! from the file before a byte range, and searched for the window's pattern. Bounded by the
//! longest window and `limits::LOOKBACK_BYTES`; it knows nothing of rules beyond the pattern
//! it is given.

/// Is there a line matching `pre` among the `within` lines before the line at `start`, each
/// starting at most `limits::LOOKBACK_BYTES` before it? `before` holds the complete lines
/// just before the chunk (`keep_lookback`), so a chunk or range edge changes nothing.
pub(super) fn preceded(
    before: &[u8],
    chunk: &[u8],
    start: usize,
    within: u32,
    pre: &crate::scan::LazyRegex,
) -> bool {
    // Positions count from the start of `before`, as if it and the chunk were one text.
    let at = before.len() + start;
    let line = |s: usize, e: usize| match s.checked_sub(before.len()) {
        Some(s) => &chunk[s..e - before.len()],
        None => &before[s..e],
    };
    let mut end = at;
    for _ in 0..within {
        if end == 0 {
            return false;
        }
        let prev_end = end - 1; // the '\n' ending the previous line
        let prev_start = match prev_end.checked_sub(before.len()) {
            Some(e) => memchr::memrchr(b'\n', &chunk[..e]).map(|i| before.len() + i),
            None => None,
        }
        .or_else(|| memchr::memrchr(b'\n', &before[..prev_end.min(before.len())]))
        .map_or(0, |i| i + 1);
        if at - prev_start > crate::limits::LOOKBACK_BYTES {
            return false;
        }
        if pre.is_match(line(prev_start, prev_end)) {
            return true;
        }
        end = prev_start;
    }
    false
}

/// After `chunk`: the complete lines a look-back from the next chunk can reach (the last
/// `lines` of `before` and `chunk` together, starting at most `LOOKBACK_BYTES` before the
/// end). A chunk that ends inside a line (a cut over-long one) leaves none.
pub(super) fn keep_lookback(before: &mut Vec<u8>, chunk: &[u8], lines: usize) {
    if lines == 0 {
        return;
    }
    if chunk.last() != Some(&b'\n') {
        before.clear();
        return;
    }
    let total = before.len() + chunk.len();
    let from = last_lines_start(before, chunk, lines);
    if from >= before.len() {
        before.clear();
        before.extend_from_slice(&chunk[from - (total - chunk.len())..]);
    } else {
        before.drain(..from);
        before.extend_from_slice(chunk);
    }
}

/// Where the last `lines` complete lines of `before` + `chunk` (which ends in a newline)
/// start, none starting more than `LOOKBACK_BYTES` before the end.
fn last_lines_start(before: &[u8], chunk: &[u8], lines: usize) -> usize {
    let total = before.len() + chunk.len();
    let min = total.saturating_sub(crate::limits::LOOKBACK_BYTES);
    let mut from = total;
    for _ in 0..lines {
        if from == 0 {
            break;
        }
        let end = from - 1;
        let s = match end.checked_sub(before.len()) {
            Some(e) => memchr::memrchr(b'\n', &chunk[..e]).map(|i| before.len() + i),
            None => None,
        }
        .or_else(|| memchr::memrchr(b'\n', &before[..end.min(before.len())]))
        .map_or(0, |i| i + 1);
        if s < min {
            break;
        }
        from = s;
    }
    from
}

/// The complete lines before `pos` (a line start) that a look-back from there reaches, read
/// from the file: what a whole read holds before that line (`keep_lookback`).
pub(super) fn lookback_before(file: &std::fs::File, pos: u64, lines: usize) -> Vec<u8> {
    use std::os::unix::fs::FileExt;
    if lines == 0 || pos == 0 {
        return Vec::new();
    }
    // One byte more than the window: a line starting at its first byte follows a newline.
    let from = pos.saturating_sub(crate::limits::LOOKBACK_BYTES as u64 + 1);
    let mut buf = vec![0u8; (pos - from) as usize];
    let mut n = 0;
    while n < buf.len() {
        match file.read_at(&mut buf[n..], from + n as u64) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        }
    }
    buf.truncate(n);
    if n < (pos - from) as usize || buf.last() != Some(&b'\n') {
        return Vec::new();
    }
    if from > 0 {
        match memchr::memchr(b'\n', &buf) {
            Some(i) => drop(buf.drain(..=i)),
            None => return Vec::new(),
        }
    }
    let start = last_lines_start(&[], &buf, lines);
    buf.drain(..start);
    buf
}
