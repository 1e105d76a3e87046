//! Line numbers from a code object's line table, one decoder per format: `co_lnotab` (3.8,
//! 3.9; Objects/lnotab_notes.txt), 3.10's `co_linetable` (the same file at v3.10.0) and the
//! 3.11+ location table (Objects/locations.md). Pure functions of the table bytes; a damaged
//! table gives `None`, never a panic (the first line number comes from a damaged core as
//! readily as the table: all line arithmetic is checked).

use super::layout::LineTable;

/// The line of the instruction at `addr` (bytes for `Lnotab` and `Pairs310`, code units for
/// `Locations`), or `None` when the table has no line there.
pub fn line_at(table: LineTable, bytes: &[u8], firstlineno: i64, addr: i64) -> Option<u32> {
    let line = match table {
        LineTable::Lnotab => lnotab(bytes, firstlineno, addr),
        LineTable::Pairs310 => pairs310(bytes, firstlineno, addr),
        LineTable::Locations => locations(bytes, firstlineno, addr),
    }?;
    u32::try_from(line).ok().filter(|&l| l > 0)
}

fn lnotab(t: &[u8], first: i64, lasti: i64) -> Option<i64> {
    let mut line = first;
    let mut a: i64 = 0;
    for p in t.chunks_exact(2) {
        a += i64::from(p[0]);
        if a > lasti {
            break;
        }
        line = line.checked_add(i64::from(p[1] as i8))?;
    }
    Some(line)
}

fn pairs310(t: &[u8], first: i64, addr: i64) -> Option<i64> {
    let mut computed = first;
    let mut end: i64 = 0;
    for p in t.chunks_exact(2) {
        end += i64::from(p[0]);
        let delta = p[1] as i8;
        let line = if delta == -128 {
            None
        } else {
            computed = computed.checked_add(i64::from(delta))?;
            Some(computed)
        };
        if addr < end {
            return line;
        }
    }
    None
}

fn locations(t: &[u8], first: i64, addr: i64) -> Option<i64> {
    let mut line = first;
    let mut start: i64 = 0;
    let mut i = 0usize;
    let varint = |i: &mut usize| -> Option<u64> {
        let mut v: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = *t.get(*i)?;
            *i += 1;
            v |= u64::from(b & 0x3f).checked_shl(shift)?;
            if b & 0x40 == 0 {
                return Some(v);
            }
            shift += 6;
            if shift > 60 {
                return None;
            }
        }
    };
    let svarint = |i: &mut usize| -> Option<i64> {
        let v = varint(i)?;
        let m = (v >> 1) as i64;
        Some(if v & 1 != 0 { -m } else { m })
    };
    while i < t.len() {
        let head = t[i];
        i += 1;
        if head & 0x80 == 0 {
            return None;
        }
        let code = (head >> 3) & 15;
        let len = i64::from(head & 7) + 1;
        let has_line = match code {
            15 => false,
            14 => {
                line = line.checked_add(svarint(&mut i)?)?;
                varint(&mut i)?;
                varint(&mut i)?;
                varint(&mut i)?;
                true
            }
            13 => {
                line = line.checked_add(svarint(&mut i)?)?;
                true
            }
            10..=12 => {
                line = line.checked_add(i64::from(code - 10))?;
                i += 2;
                true
            }
            _ => {
                i += 1;
                true
            }
        };
        if addr < start + len {
            return has_line.then_some(line);
        }
        start += len;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by the python_frames fuzz target (fuzz/regressions/python_frames/): a first line
    /// number near the end of i64 read from a damaged core overflowed the line arithmetic.
    #[test]
    fn line_arithmetic_at_the_edge_of_i64_gives_no_line_not_a_panic() {
        for first in [i64::MAX, i64::MAX - 3, i64::MIN, i64::MIN + 3] {
            assert_eq!(
                line_at(LineTable::Lnotab, &[2, 127, 2, 0x80], first, 3),
                None
            );
            assert_eq!(
                line_at(LineTable::Pairs310, &[2, 127, 2, 0x80], first, 3),
                None
            );
            // Code 13 (a signed varint delta: +31 then -31), code 10..12 (+0..2).
            let loc = [
                0x80 | (13 << 3),
                62,
                0x80 | (13 << 3),
                63,
                0x80 | (12 << 3),
                0,
                0,
            ];
            assert_eq!(line_at(LineTable::Locations, &loc, first, 20), None);
        }
        // Ordinary numbers still work beside them.
        assert_eq!(line_at(LineTable::Lnotab, &[2, 1], 10, 3), Some(11));
    }

    #[test]
    fn lnotab_adds_line_deltas_up_to_the_instruction() {
        // Lines 10 (bytes 0-5), 12 (6-9), 11 (10-).
        let t = [6, 2, 4, (-1i8) as u8];
        assert_eq!(line_at(LineTable::Lnotab, &t, 10, 0), Some(10));
        assert_eq!(line_at(LineTable::Lnotab, &t, 10, 8), Some(12));
        assert_eq!(line_at(LineTable::Lnotab, &t, 10, 40), Some(11));
    }

    #[test]
    fn pairs_of_3_10_skip_no_line_entries() {
        let t = [4, 0, 6, 3, 2, 0x80, 4, 1];
        assert_eq!(line_at(LineTable::Pairs310, &t, 5, 2), Some(5));
        assert_eq!(line_at(LineTable::Pairs310, &t, 5, 6), Some(8));
        assert_eq!(line_at(LineTable::Pairs310, &t, 5, 10), None);
        assert_eq!(line_at(LineTable::Pairs310, &t, 5, 13), Some(9));
        assert_eq!(line_at(LineTable::Pairs310, &t, 5, 99), None);
    }

    #[test]
    fn location_table_forms_move_the_line() {
        // One-line form +1 (2 units), short form (1 unit), no-column -3 (svarint 7),
        // long form +5 (svarint 10), no-location.
        let t = [
            0x80 | (11 << 3) | 1,
            0,
            4,
            0x80,
            3,
            0x80 | (13 << 3),
            7,
            0x80 | (14 << 3) | 2,
            10,
            0,
            1,
            1,
            0x80 | (15 << 3),
        ];
        let at = |a| line_at(LineTable::Locations, &t, 20, a);
        assert_eq!((at(0), at(1), at(2)), (Some(21), Some(21), Some(21)));
        assert_eq!(at(3), Some(18));
        assert_eq!((at(4), at(6)), (Some(23), Some(23)));
        assert_eq!(at(7), None);
        assert_eq!(at(8), None);
        assert_eq!(line_at(LineTable::Locations, &[0x7f, 0xff], 1, 0), None);
    }
}
