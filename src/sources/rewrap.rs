//! A terminal's wrapped rows read back as the lines they were: rows cut at the terminal's
//! width (as long as the longest line of the chunk), and rows a screen copy glued back with
//! their padding kept inside. Gives the pieces of each logical line; the stream rescans them
//! for rule signatures only. Looks only at a file's first chunk (a paste, not a multi-GB
//! log); it never invents text: each logical line is made of the chunk's own bytes.

/// Files are looked at for a terminal's wrapped rows in a first chunk read before this
/// many bytes.
pub(crate) const WRAP_SCAN_BYTES: u64 = 1 << 20;

/// Lines shorter than this are never taken for a terminal's wrap.
const MIN_WRAP: usize = 60;

/// Lines a terminal probably hard-wrapped: as long as the longest line of the chunk (a
/// terminal cuts every row at its width, so no line is longer) and at least `MIN_WRAP`
/// bytes. Each run of them with the line that ends it is one logical line: its first line
/// number and its pieces' byte ranges. A program's log rarely has more than a few lines of
/// exactly its longest length, so joining costs little there: the pass that finds the
/// longest length keeps where lines of it start, and only those are walked again.
pub fn wrapped_lines(chunk: &[u8], first: u64) -> Vec<(u64, Vec<(usize, usize)>)> {
    let mut longest = 0;
    // Lines (index in the chunk, start) of the longest length so far.
    let mut starts: Vec<(u64, usize)> = Vec::new();
    let mut at = 0;
    for (k, nl) in memchr::memchr_iter(b'\n', chunk).enumerate() {
        if nl - at > longest {
            longest = nl - at;
            starts.clear();
        }
        if nl - at == longest {
            starts.push((k as u64, at));
        }
        at = nl + 1;
    }
    let mut out: Vec<(u64, Vec<(usize, usize)>)> = Vec::new();
    if longest < MIN_WRAP {
        return out;
    }
    let line_end = |at: usize| memchr::memchr(b'\n', &chunk[at..]).map_or(chunk.len(), |i| at + i);
    // A run starts at a longest line after the last run's end; it takes the longest lines
    // that follow and the line that ends it (unless blank).
    let mut done = 0;
    for (k, start) in starts {
        if start < done {
            continue;
        }
        let mut run = vec![(start, start + longest)];
        let mut at = start + longest + 1;
        while at < chunk.len() {
            let end = line_end(at);
            let len = end - at;
            if len > 0 {
                run.push((at, end));
            }
            at = end + 1;
            if len != longest {
                break;
            }
        }
        done = at;
        if run.len() > 1 {
            out.push((first + k, run));
        }
    }
    out
}

/// A run of at least this many spaces inside a line, after at least `MIN_WRAP` bytes of it,
/// is taken for a wrapped row's padding kept by a screen copy (fixtures/pastes/P26_*).
const MIN_PAD: usize = 16;

/// Up to this many padding runs in one line, every way of closing them is read.
const MAX_PAD_RUNS: usize = 3;

/// Lines whose wrapped rows a copy glued back with the rows' padding kept inside
/// (`…_worker_l                oop`): each such line's pieces around its padding runs,
/// once per way of closing its runs (each closed, or one space of it kept).
/// Runs at the end of a line (torchrun's padded table) are not padding of a wrap.
pub fn padded_rows(chunk: &[u8], first: u64) -> Vec<(u64, Vec<(usize, usize)>)> {
    let pad = [b' '; MIN_PAD];
    let finder = memchr::memmem::Finder::new(&pad);
    let mut out = Vec::new();
    // Only lines holding a padding run are looked at: found by one search over the chunk,
    // their line numbers counted from the last one.
    let (mut next, mut counted, mut lineno) = (0, 0, first);
    while let Some(run) = finder.find(&chunk[next..]).map(|i| next + i) {
        let at = memchr::memrchr(b'\n', &chunk[..run]).map_or(0, |k| k + 1);
        lineno += memchr::memchr_iter(b'\n', &chunk[counted..at]).count() as u64;
        counted = at;
        let end = memchr::memchr(b'\n', &chunk[run..]).map_or(chunk.len(), |i| run + i);
        next = (end + 1).min(chunk.len());
        let line = &chunk[at..end];
        let mut pieces = Vec::new();
        let mut from = 0;
        while let Some(i) = finder.find(&line[from..]).map(|i| from + i) {
            let run_end = line[i..]
                .iter()
                .position(|&b| b != b' ')
                .map_or(line.len(), |k| i + k);
            if run_end == line.len() || line[run_end] == b'\r' {
                break;
            }
            if i - from >= MIN_WRAP {
                pieces.push((at + from, at + i));
                from = run_end;
            } else {
                break;
            }
        }
        if !pieces.is_empty() {
            // Each break fell mid-word (close the run) or on a space (keep one of it): read
            // every combination (a few runs at most), or all closed and all spaced.
            let k = pieces.len();
            let combos: Vec<u32> = if k <= MAX_PAD_RUNS {
                (0..1u32 << k).collect()
            } else {
                vec![0, u32::MAX]
            };
            for spaced in combos {
                let mut v: Vec<(usize, usize)> = pieces
                    .iter()
                    .enumerate()
                    .map(|(n, &(a, b))| (a, b + usize::from(spaced >> n.min(31) & 1 == 1)))
                    .collect();
                v.push((at + from, end));
                out.push((lineno, v));
            }
        }
        if end == chunk.len() {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `wrapped_lines` as it was first written: every line walked a second time.
    fn wrapped_lines_walking_every_line(
        chunk: &[u8],
        first: u64,
    ) -> Vec<(u64, Vec<(usize, usize)>)> {
        let mut longest = 0;
        let mut at = 0;
        for nl in memchr::memchr_iter(b'\n', chunk) {
            longest = longest.max(nl - at);
            at = nl + 1;
        }
        let mut out: Vec<(u64, Vec<(usize, usize)>)> = Vec::new();
        if longest < MIN_WRAP {
            return out;
        }
        let (mut at, mut lineno) = (0, first);
        let mut run: Vec<(usize, usize)> = Vec::new();
        let mut run_start = first;
        while at < chunk.len() {
            let end = memchr::memchr(b'\n', &chunk[at..]).map_or(chunk.len(), |i| at + i);
            if !run.is_empty() {
                if end > at {
                    run.push((at, end));
                }
                if end - at != longest || end == at {
                    if run.len() > 1 {
                        out.push((run_start, std::mem::take(&mut run)));
                    }
                    run.clear();
                }
            } else if end - at == longest {
                run_start = lineno;
                run.push((at, end));
            }
            at = end + 1;
            lineno += 1;
        }
        if run.len() > 1 {
            out.push((run_start, run));
        }
        out
    }

    /// Random chunks of lines of a few lengths (many of the longest, blank lines, runs at
    /// the start and at the end, with and without a final newline): the runs found are
    /// those of the walk over every line.
    #[test]
    fn wrapped_runs_are_those_of_the_walk_over_every_line() {
        let mut rnd = crate::testrand::below(0x51_7cc1_b727_220au64);
        for trial in 0..2000 {
            let width = MIN_WRAP - 2 + rnd(6);
            let mut chunk = Vec::new();
            for _ in 0..rnd(30) {
                let len = match rnd(5) {
                    0 | 1 => width,
                    2 => 0,
                    3 => rnd(width + 1),
                    _ => width - 1 - rnd(3).min(width - 1),
                };
                chunk.extend(std::iter::repeat_n(b'a' + rnd(3) as u8, len));
                chunk.push(b'\n');
            }
            if rnd(3) == 0 {
                chunk.extend(std::iter::repeat_n(b'z', rnd(width + 2)));
            }
            let first = 1 + rnd(100) as u64;
            assert_eq!(
                wrapped_lines(&chunk, first),
                wrapped_lines_walking_every_line(&chunk, first),
                "trial {trial}: {:?}",
                String::from_utf8_lossy(&chunk)
            );
        }
    }

    #[test]
    fn padded_rows_are_found_with_their_line_numbers() {
        let pad = " ".repeat(20);
        let wrapped = format!(
            "[default0]: RuntimeError: DataLoader worker (pid 12) is killed by sig{pad}nal: Bus error"
        );
        let chunk = format!(
            "ok\n{}\nplain line\n{wrapped}\ntable row{pad}\n",
            "x".repeat(30)
        );
        let rows = padded_rows(chunk.as_bytes(), 7);
        // Line 10 holds the run (1 way closed, 1 way with a space kept); the table row's run
        // ends its line and is not a wrap.
        assert_eq!(rows.len(), 2);
        assert!(rows.iter().all(|(n, _)| *n == 10));
        let text = |p: &[(usize, usize)]| p.iter().map(|&(a, b)| &chunk[a..b]).collect::<String>();
        assert!(
            rows.iter()
                .any(|(_, p)| text(p).contains("by signal: Bus error"))
        );
        assert!(
            rows.iter()
                .any(|(_, p)| text(p).contains("by sig nal: Bus error"))
        );
    }
}
