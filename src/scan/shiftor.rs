//! The chunk prefilter for many literals: one pass over the bytes finds the lines that may
//! hold one of them, at a speed that does not depend on how many there are (up to a few
//! thousand). A bucketed shift-or over hashed byte pairs, after Hyperscan's FDR: each
//! literal contributes one window of up to `WINDOW` bytes; the literals are spread over 8
//! buckets; a table indexed by a hash of two adjacent input bytes says, for every bucket
//! and every distance from a window's end, whether that pair can sit there. Eight such
//! constraints must hold at once for a line to become a candidate.
//!
//! It must never miss a line that holds a literal; it may report lines that do not (the
//! per-line matcher decides). It knows nothing of regexes or rules.

/// Bytes of each literal used by the filter: 8 adjacent pairs, one per state lane.
pub const WINDOW: usize = 9;
const DOMAIN_BITS: u32 = 12;
const DOMAIN: usize = 1 << DOMAIN_BITS;

/// One literal's window as the filter sees it.
#[derive(Debug, Clone)]
pub struct Window {
    pub bytes: Vec<u8>,
    /// Match ASCII letters in either case.
    pub folded: bool,
}

pub struct ShiftOr {
    /// Per pair hash: 8 lanes (distance from a window's end, lane 7 = the end) of 8 bucket
    /// bits; a 0 bit means "compatible".
    reach: Box<[u64]>,
    /// The same entries laid out for the SSE2 block loop (`Wide`).
    wide: Wide,
    /// Where the table says a window may end, the confirm step looks the window up: one
    /// set per length 1..=9 (index = length) of exact windows, and one of the
    /// ASCII-lower-cased case-insensitive windows (keys: `window_key`).
    tails: [TailSet; WINDOW + 1],
    folded_tails: [TailSet; WINDOW + 1],
    /// Per set of flagged buckets (bit b = bucket b): the window lengths (bit L) in them.
    lens_of: Box<[u16; 256]>,
    /// A bit per hash of the last 4 bytes (ASCII lower-cased) of every window of 4 bytes or
    /// more: where the flagged buckets hold no shorter window, a window end whose 4 bytes
    /// have no bit here is no window's, and the exact sets are not probed (flags no window
    /// confirms come from hashed pairs, and from the 8 pair checks of a lane being met by
    /// different windows of its bucket). A quarter of the confirm step's cost on the
    /// generated logs.
    tail4: Box<[u64; TAIL4_WORDS]>,
    /// Lines holding this byte are candidates too (bucket 0 flags it).
    marker: Option<u8>,
}

const TAIL4_BITS: u32 = 16;
const TAIL4_WORDS: usize = (1 << TAIL4_BITS) / 64;

/// The `tail4` bit of the 4 bytes ending a window, as a little-endian u32.
#[inline]
fn tail4_bit(last4: u32) -> usize {
    (fold_key(u64::from(last4)).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - TAIL4_BITS)) as usize
}

/// An open-addressing set of up-to-8-byte keys (0 = empty: no window is all NUL bytes).
#[derive(Default)]
struct TailSet {
    slots: Vec<u64>,
    /// Keys held: the load factor is checked without counting the slots (an insert stays
    /// O(1), so building the prefilter stays linear in the number of literals).
    len: usize,
}

impl TailSet {
    fn hash(key: u64, mask: usize) -> usize {
        (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 40) as usize & mask
    }

    fn insert(&mut self, key: u64) {
        if self.slots.is_empty() {
            self.slots = vec![0; 64];
        }
        if self.contains(key) {
            return;
        }
        if (self.len + 1) * 4 > self.slots.len() {
            let grown = vec![0; self.slots.len() * 2];
            let old = std::mem::replace(&mut self.slots, grown);
            self.len = 0;
            for k in old.into_iter().filter(|&k| k != 0) {
                self.insert(k);
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = Self::hash(key, mask);
        while self.slots[i] != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = key;
        self.len += 1;
    }

    fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    fn contains(&self, key: u64) -> bool {
        if self.slots.is_empty() {
            return false;
        }
        let mask = self.slots.len() - 1;
        let mut i = Self::hash(key, mask);
        loop {
            match self.slots[i] {
                0 => return false,
                k if k == key => return true,
                _ => i = (i + 1) & mask,
            }
        }
    }
}

/// Up to 8 bytes as a little-endian key.
#[inline]
fn tail_key(bytes: &[u8]) -> u64 {
    if let Ok(b) = <[u8; 8]>::try_from(bytes) {
        return u64::from_le_bytes(b);
    }
    let mut k = [0u8; 8];
    k[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(k)
}

/// The set key of a 1..=9-byte window, lower-cased when `folded`: its bytes themselves up
/// to 8; a 9-byte window's first byte is mixed into the key of the other 8 (never 0).
#[inline]
fn window_key(w: &[u8], folded: bool) -> u64 {
    let fold = |k: u64| if folded { fold_key(k) } else { k };
    if w.len() <= 8 {
        return fold(tail_key(w));
    }
    let first = if folded {
        w[0].to_ascii_lowercase()
    } else {
        w[0]
    };
    let rest = fold(tail_key(&w[1..9]));
    (rest ^ (first as u64).wrapping_mul(0x0101_0101_0101_0101)).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        | 1
}

/// A key with its ASCII capitals lower-cased (SWAR: bytes 0x41..=0x5a get 0x20).
#[inline]
fn fold_key(k: u64) -> u64 {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let ascii = !k & (ONES * 0x80);
    let ge_a = (k & (ONES * 0x7f)) + ONES * (0x80 - 0x41);
    let gt_z = (k & (ONES * 0x7f)) + ONES * (0x80 - 0x5b);
    k | ((ge_a & !gt_z & ascii) >> 2)
}

/// The table index of a byte pair: the first byte less its lowest bit and the low 5 bits of
/// the second (collisions only cost false candidates). A 16-bit load masked with `PAIR_MASK`
/// is the index times 2: times 8 (an x86 address's scale) it is the byte offset of the
/// index's 16-byte entry in the padded table (`Wide`), so the block loop spends one AND on
/// each position's index. (The high half of the first byte and all of the second, also one
/// AND, flagged nine times as many window ends on the generated logs.)
#[inline(always)]
fn domain(prev: u8, cur: u8) -> usize {
    pair_domain(u16::from_le_bytes([prev, cur]))
}

const PAIR_MASK: u16 = 0x1ffe;
const _: () = assert!((PAIR_MASK >> 1) as usize == DOMAIN - 1);

#[inline(always)]
fn pair_domain(pair: u16) -> usize {
    usize::from(pair & PAIR_MASK) >> 1
}

/// The case variants of a byte under `folded`.
fn variants(b: u8, folded: bool) -> impl Iterator<Item = u8> {
    let other = if folded && b.is_ascii_alphabetic() {
        Some(b ^ 0x20)
    } else {
        None
    };
    std::iter::once(b).chain(other)
}

impl ShiftOr {
    /// Windows must be 2..=`WINDOW` bytes long (longer ones are cut to their last
    /// `WINDOW` bytes; callers choose the window). Lines holding `marker` (if any) are
    /// candidates as well.
    pub fn new(windows: &[Window], marker: Option<u8>) -> ShiftOr {
        let mut reach = vec![!0u64; DOMAIN].into_boxed_slice();
        let mut tails: [TailSet; WINDOW + 1] = Default::default();
        let mut folded_tails: [TailSet; WINDOW + 1] = Default::default();
        let mut bucket_lens = [0u16; 8];
        let mut tail4 = Box::new([0u64; TAIL4_WORDS]);
        // A bucket's shortest window frees the lanes before it for the whole bucket, so
        // short windows get buckets of their own (by length class) and full-length ones
        // share the rest evenly.
        let len = |w: &Window| w.bytes.len().min(WINDOW);
        let class = |l: usize| match l {
            0..=5 => 0,
            6..=7 => 1,
            8..WINDOW => 2,
            _ => 3,
        };
        let mut groups: Vec<Vec<&Window>> = vec![Vec::new(); 4];
        for w in windows {
            groups[class(len(w))].push(w);
        }
        let mut long = groups.pop().unwrap_or_default();
        // Similar windows in one bucket share pairs, so its lanes admit fewer pairs.
        long.sort_by(|a, b| a.bytes.iter().rev().cmp(b.bytes.iter().rev()));
        groups.retain(|g| !g.is_empty());
        let first = usize::from(marker.is_some());
        let spare = (8 - first - groups.len()).max(1);
        if !long.is_empty() {
            groups.extend(long.chunks(long.len().div_ceil(spare)).map(|c| c.to_vec()));
        }
        if let Some(m) = marker {
            // Bucket 0: the marker byte followed by anything, at the end lane only.
            for r in reach.iter_mut() {
                *r &= !(1u64 | 1 << 8 | 1 << 16 | 1 << 24 | 1 << 32 | 1 << 40 | 1 << 48);
            }
            for y in 0..=255u8 {
                reach[domain(m, y)] &= !(1 << 56);
            }
        }
        for (bucket, group) in groups.iter().enumerate() {
            let bucket = bucket + first;
            let bit = 1u64 << bucket;
            let min_len = group
                .iter()
                .map(|w| w.bytes.len().min(WINDOW))
                .min()
                .unwrap_or(0);
            // Distances from the end at or beyond `min_len - 1` are unconstrained.
            for j in min_len.saturating_sub(1)..8 {
                let lane_bits = bit << (8 * (7 - j));
                for r in reach.iter_mut() {
                    *r &= !lane_bits;
                }
            }
            for w in group {
                let b = &w.bytes[w.bytes.len().saturating_sub(WINDOW)..];
                let set = if w.folded {
                    &mut folded_tails
                } else {
                    &mut tails
                };
                set[b.len()].insert(window_key(b, w.folded));
                if let Some(last4) = b.last_chunk::<4>() {
                    let bit = tail4_bit(u32::from_le_bytes(*last4));
                    tail4[bit / 64] |= 1 << (bit % 64);
                }
                bucket_lens[bucket] |= 1 << b.len();
                for p in 1..b.len() {
                    let j = b.len() - 1 - p;
                    let lane_bits = bit << (8 * (7 - j));
                    for x in variants(b[p - 1], w.folded) {
                        for y in variants(b[p], w.folded) {
                            reach[domain(x, y)] &= !lane_bits;
                        }
                    }
                }
            }
        }
        let mut lens_of = Box::new([0u16; 256]);
        for (mask, lens) in lens_of.iter_mut().enumerate() {
            for (b, l) in bucket_lens.iter().enumerate() {
                if mask & (1 << b) != 0 {
                    *lens |= l;
                }
            }
        }
        ShiftOr {
            wide: Wide::new(&reach),
            reach,
            tails,
            folded_tails,
            lens_of,
            tail4,
            marker,
        }
    }

    /// Does a window of one of `buckets` (bit set = flagged) really end at `end`?
    #[inline]
    fn confirm(&self, hay: &[u8], end: usize, buckets: u8) -> bool {
        if let Some(m) = self.marker
            && buckets & 1 != 0
            && end >= 1
            && hay[end - 1] == m
        {
            return true;
        }
        let mut lens = self.lens_of[usize::from(buckets)];
        if lens.trailing_zeros() >= 4 && end >= 3 {
            let last4: &[u8; 4] = hay[end - 3..=end].try_into().expect("4 bytes");
            let bit = tail4_bit(u32::from_le_bytes(*last4));
            if self.tail4[bit / 64] & (1 << (bit % 64)) == 0 {
                return false;
            }
        }
        while lens != 0 {
            let len = lens.trailing_zeros() as usize;
            lens &= lens - 1;
            if len > end + 1 {
                continue;
            }
            let w = &hay[end + 1 - len..=end];
            // (The folded key is made only where there are folded windows of this length.)
            if self.tails[len].contains(window_key(w, false))
                || (!self.folded_tails[len].is_empty()
                    && self.folded_tails[len].contains(window_key(w, true)))
            {
                return true;
            }
        }
        false
    }

    /// Push the start offset of every candidate line of `hay` (in order, once each).
    pub fn candidate_lines(&self, hay: &[u8], starts: &mut Vec<usize>) {
        let reach: &[u64; DOMAIN] = self.reach[..].try_into().expect("table size");
        let n = hay.len();
        // `line`: a line start at or before `i` (where a candidate's line start is searched
        // back to). `state`: lanes carried from before `i`; 0 (free) after a line start.
        let (mut i, mut line, mut state) = (0usize, 0usize, 0u64);
        while i < n {
            let end = if i >= 1 && i + 8 <= n {
                // Whole blocks of 8 positions until one flags a window end.
                let (at, lo, check) = self.skip_blocks(reach, hay, i, state);
                (i, state) = (at, lo);
                if check == !0 {
                    continue;
                }
                // Confirm the flagged window ends, earliest (highest lane) first.
                let mut flagged = !check;
                let mut found = None;
                while flagged != 0 {
                    let m = (63 - flagged.leading_zeros()) as usize / 8;
                    let end = i + 7 - m;
                    if self.confirm(hay, end, (flagged >> (8 * m)) as u8) {
                        found = Some(end);
                        break;
                    }
                    flagged &= !(0xff << (8 * m));
                }
                let Some(end) = found else {
                    state = lo;
                    i += 8;
                    continue;
                };
                end
            } else {
                let prev = if i == 0 { b'\n' } else { hay[i - 1] };
                state = (state << 8) | reach[domain(prev, hay[i])];
                if state >> 56 == 0xff || !self.confirm(hay, i, !(state >> 56) as u8) {
                    i += 1;
                    continue;
                }
                i
            };
            let start = memchr::memrchr(b'\n', &hay[line..end]).map_or(line, |k| line + k + 1);
            starts.push(start);
            match memchr::memchr(b'\n', &hay[end..]) {
                Some(k) => (i, line, state) = (end + k + 1, end + k + 1, 0),
                None => return,
            }
        }
    }
}

impl ShiftOr {
    /// From `i` (at least 1), shift whole blocks of 8 positions through the state until one
    /// flags a window end. Each position's reach entry shifts by its distance from the
    /// block's end into 16 lanes, with the carried state in lanes 8..15; lanes 7..14 are the
    /// window ends i+7 .. i. Returns the flagged block's start, its lanes 0..7 (the state it
    /// carries out) and lanes 7..14 (`check`, all ones when nothing is flagged: then `i` is
    /// where fewer than 8 bytes are left). Two forms give the same answer (a randomised test
    /// compares them): SSE2 on x86_64, u64 halves elsewhere. (An AVX2 form that fetched the
    /// 8 entries with gathers ran a fifth fewer instructions and was slower on both machines
    /// measured: it was removed.)
    #[inline(always)]
    fn skip_blocks(
        &self,
        reach: &[u64; DOMAIN],
        hay: &[u8],
        i: usize,
        state: u64,
    ) -> (usize, u64, u64) {
        #[cfg(target_arch = "x86_64")]
        {
            let _ = reach;
            skip_blocks_sse2(&self.wide, hay, i, state)
        }
        #[cfg(not(target_arch = "x86_64"))]
        return skip_blocks_u64(reach, hay, i, state);
    }
}

/// The reach table with each entry preceded by 8 zero bytes (and 8 more after the last):
/// the 16 bytes that start `s` bytes before an entry are the entry shifted left by `s`
/// lanes, zeros shifted in. The SSE2 block loop reads each position's entry already
/// shifted by its distance from the block's end this way, one load instead of a load and a
/// byte shift (which all compete for one shuffle port).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
struct Wide(Box<[u64; 2 * DOMAIN + 1]>);

impl Wide {
    fn new(reach: &[u64]) -> Wide {
        let mut t = Box::new([0u64; 2 * DOMAIN + 1]);
        for (k, &r) in reach.iter().enumerate() {
            t[2 * k + 1] = r;
        }
        Wide(t)
    }
}

/// The reach entries of the 8 positions of the block at `i` (pairs from `i - 1`).
#[inline(always)]
fn entries(reach: &[u64; DOMAIN], hay: &[u8], i: usize) -> [u64; 8] {
    let b: &[u8; 9] = hay[i - 1..i + 8].try_into().expect("9 bytes");
    let r = |k: usize| {
        let pair: &[u8; 2] = b[k..k + 2].try_into().expect("2 bytes");
        reach[pair_domain(u16::from_le_bytes(*pair))]
    };
    [r(0), r(1), r(2), r(3), r(4), r(5), r(6), r(7)]
}

/// `skip_blocks` with the 16 lanes as two u64 halves (any CPU).
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
#[inline(always)]
fn skip_blocks_u64(
    reach: &[u64; DOMAIN],
    hay: &[u8],
    mut i: usize,
    mut state: u64,
) -> (usize, u64, u64) {
    while i + 8 <= hay.len() {
        let [r0, r1, r2, r3, r4, r5, r6, r7] = entries(reach, hay, i);
        let lo = (r0 << 56 | r1 << 48 | r2 << 40 | r3 << 32) | (r4 << 24 | r5 << 16 | r6 << 8 | r7);
        let hi =
            (state | r0 >> 8 | r1 >> 16 | r2 >> 24) | (r3 >> 32 | r4 >> 40 | r5 >> 48 | r6 >> 56);
        let check = (lo >> 56) | (hi << 8);
        if check != !0 {
            return (i, lo, check);
        }
        state = lo;
        i += 8;
    }
    (i, state, !0)
}

/// `skip_blocks` with the 16 lanes in one SSE2 register. The state stays in a vector
/// register from block to block: the only dependency between blocks is one shift and one
/// OR. Two blocks go through an iteration and one test of their lanes ANDed says whether
/// either flagged a window end (a flagged lane is a 0 bit, which the AND keeps); the bytes
/// and the table are read without bounds checks (the loop's own bounds hold them in). Each
/// entry is read already shifted from the padded table (`Wide`): per position a 16-bit
/// load, a mask, a 16-byte load and an OR.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn skip_blocks_sse2(wide: &Wide, hay: &[u8], mut i: usize, state: u64) -> (usize, u64, u64) {
    use std::arch::x86_64::*;
    assert!(i >= 1, "a block's first pair starts one byte before it");
    let (n, bytes, table) = (hay.len(), hay.as_ptr(), wide.0.as_ptr().cast::<u8>());
    // SAFETY: SSE2 is part of the x86_64 baseline. `block(j, _)` reads bytes j - 1 .. j + 8,
    // called only with 1 <= i <= j and j + 8 <= n (the loops' conditions), so inside `hay`;
    // an entry's offset is masked to at most 16 * (DOMAIN - 1), and its 16 bytes read from
    // 8 - s (s <= 7) past it end at most at 16 * DOMAIN + 8, the padded table's length.
    unsafe {
        // The block at j: each position's entry shifted by its distance from the block's end,
        // ORed, with the carried lanes 0..7 of `st` in lanes 8..15.
        let block = |j: usize, st: __m128i| {
            let v = |k: usize| {
                let pair = bytes.add(j - 1 + k).cast::<u16>().read_unaligned();
                // 16 * pair_domain(pair): the entry's offset in the padded table.
                let at = usize::from(pair & PAIR_MASK) * 8 + 1 + k;
                _mm_loadu_si128(table.add(at).cast::<__m128i>())
            };
            let a = _mm_or_si128(_mm_or_si128(v(0), v(1)), _mm_or_si128(v(2), v(3)));
            let c = _mm_or_si128(_mm_or_si128(v(4), v(5)), _mm_or_si128(v(6), v(7)));
            _mm_or_si128(_mm_or_si128(a, c), _mm_slli_si128::<8>(st))
        };
        let check = |full: __m128i| _mm_cvtsi128_si64(_mm_srli_si128::<7>(full)) as u64;
        let low = |full: __m128i| _mm_cvtsi128_si64(full) as u64;
        let mut st = _mm_cvtsi64_si128(state as i64);
        while i + 16 <= n {
            let first = block(i, st);
            let second = block(i + 8, first);
            if check(_mm_and_si128(first, second)) != !0 {
                let c = check(first);
                if c != !0 {
                    return (i, low(first), c);
                }
                return (i + 8, low(second), check(second));
            }
            st = second;
            i += 16;
        }
        if i + 8 <= n {
            let full = block(i, st);
            let c = check(full);
            if c != !0 {
                return (i, low(full), c);
            }
            st = full;
            i += 8;
        }
        (i, low(st), !0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(words: &[(&str, bool)], hay: &str) -> Vec<usize> {
        let ws: Vec<Window> = words
            .iter()
            .map(|(w, f)| Window {
                bytes: w.as_bytes().to_vec(),
                folded: *f,
            })
            .collect();
        let mut out = Vec::new();
        ShiftOr::new(&ws, Some(0x1b)).candidate_lines(hay.as_bytes(), &mut out);
        out
    }

    /// Random windows over a tiny alphabet (so partial matches and bucket collisions are
    /// everywhere) in random text: the candidate lines are exactly the lines holding a
    /// window (folded ones in any case) or an escape byte followed by something.
    #[test]
    fn candidates_are_exactly_the_lines_with_a_window_randomised() {
        let mut rnd = crate::testrand::below(0x9E37_79B9_7F4A_7C15u64);
        const ALPHA: &[u8] = b"abcAB :x_(";
        for trial in 0..300 {
            let n = 1 + rnd(if trial % 3 == 0 { 400 } else { 12 });
            let windows: Vec<Window> = (0..n)
                .map(|_| {
                    let len = 2 + rnd(WINDOW - 1);
                    Window {
                        bytes: (0..len).map(|_| ALPHA[rnd(ALPHA.len())]).collect(),
                        folded: rnd(5) == 0,
                    }
                })
                .collect();
            let mut hay: Vec<u8> = Vec::new();
            let size = rnd(3000);
            while hay.len() < size {
                match rnd(40) {
                    0 => hay.push(b'\n'),
                    1 if rnd(10) == 0 => hay.push(0x1b),
                    2 => {
                        let w = &windows[rnd(windows.len())];
                        for &b in &w.bytes {
                            let flip = w.folded && b.is_ascii_alphabetic() && rnd(2) == 0;
                            hay.push(if flip { b ^ 0x20 } else { b });
                        }
                    }
                    _ => hay.push(ALPHA[rnd(ALPHA.len())]),
                }
            }
            let mut got = Vec::new();
            ShiftOr::new(&windows, Some(0x1b)).candidate_lines(&hay, &mut got);
            let mut want = Vec::new();
            let mut start = 0;
            for line in hay.split(|&b| b == b'\n') {
                let has = windows.iter().any(|w| {
                    line.windows(w.bytes.len()).any(|x| {
                        if w.folded {
                            x.eq_ignore_ascii_case(&w.bytes)
                        } else {
                            x == &w.bytes[..]
                        }
                    })
                });
                let esc = line
                    .iter()
                    .enumerate()
                    .any(|(i, &b)| b == 0x1b && start + i + 1 < hay.len());
                if has || esc {
                    want.push(start);
                }
                start += line.len() + 1;
            }
            assert_eq!(got, want, "trial {trial}: {n} windows, {} bytes", hay.len());
        }
    }

    /// The portable block loop and the SSE2 one agree, block for block.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn portable_and_sse2_blocks_agree() {
        let ws: Vec<Window> = ["Bus error", "abcd", "xception", "(pid"]
            .iter()
            .map(|w| Window {
                bytes: w.as_bytes().to_vec(),
                folded: false,
            })
            .collect();
        let so = ShiftOr::new(&ws, Some(0x1b));
        let reach: &[u64; DOMAIN] = so.reach[..].try_into().unwrap();
        let wide = &so.wide;
        let hay =
            b"x abcd Bus erro Bus error (pid 12) abcabcd xception \x1b[0m and so on, on and on ..";
        for start in 1..hay.len() - 8 {
            for state in [0u64, !0, 0x00ff_00ff_1234_5678] {
                let mut i = start;
                let mut st = state;
                loop {
                    let a = skip_blocks_u64(reach, hay, i, st);
                    let b = skip_blocks_sse2(wide, hay, i, st);
                    assert_eq!(a, b, "from {i}");
                    if a.2 == !0 {
                        break;
                    }
                    (i, st) = (a.0 + 8, a.1);
                }
            }
        }
    }

    /// The two block loops agree, block for block, on random window sets (over a small
    /// alphabet, so blocks flag often, and over all bytes) and random text, from every start
    /// and with carried states of every kind.
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn block_loops_agree_randomised() {
        let mut rnd = crate::testrand::below(0x2545_F491_4F6C_DD1Du64);
        const ALPHA: &[u8] = b"abcAB :x_(\n";
        for trial in 0..400 {
            let any_byte = trial % 4 == 0;
            let byte = |rnd: &mut dyn FnMut(usize) -> usize| {
                if any_byte {
                    rnd(256) as u8
                } else {
                    ALPHA[rnd(ALPHA.len())]
                }
            };
            let n = 1 + rnd(if trial % 3 == 0 { 300 } else { 10 });
            let windows: Vec<Window> = (0..n)
                .map(|_| Window {
                    bytes: (0..2 + rnd(WINDOW - 1)).map(|_| byte(&mut rnd)).collect(),
                    folded: rnd(4) == 0,
                })
                .collect();
            let so = ShiftOr::new(&windows, if rnd(2) == 0 { Some(0x1b) } else { None });
            let reach: &[u64; DOMAIN] = so.reach[..].try_into().unwrap();
            let wide = &so.wide;
            let mut hay: Vec<u8> = (0..1 + rnd(200)).map(|_| byte(&mut rnd)).collect();
            for _ in 0..rnd(4) {
                let w = &windows[rnd(windows.len())].bytes;
                let at = rnd(hay.len());
                hay.splice(at..at, w.iter().copied());
            }
            for start in 1..hay.len() {
                let state = match rnd(3) {
                    0 => 0,
                    1 => !0,
                    _ => (rnd(1 << 30) as u64) << 34 | rnd(1 << 30) as u64,
                };
                let (mut i, mut st) = (start, state);
                loop {
                    let a = skip_blocks_u64(reach, &hay, i, st);
                    let b = skip_blocks_sse2(wide, &hay, i, st);
                    assert_eq!(a, b, "trial {trial}: SSE2 from {i}");
                    if a.2 == !0 {
                        break;
                    }
                    (i, st) = (a.0 + 8, a.1);
                }
            }
        }
    }

    #[test]
    fn finds_every_line_with_a_literal() {
        let hay = "nothing here\nBus error at start\nxx Bus error\nBus\nmid Caught signal 7 end\nbus error\n";
        let got = lines(&[("Bus error", false), ("Caught signal", false)], hay);
        let want: Vec<usize> = hay
            .match_indices('\n')
            .map(|(i, _)| i + 1)
            .scan(0, |s, e| {
                let r = *s;
                *s = e;
                Some(r)
            })
            .filter(|&s| {
                let l = &hay[s..];
                let l = &l[..l.find('\n').unwrap()];
                l.contains("Bus error") || l.contains("Caught signal")
            })
            .collect();
        for w in &want {
            assert!(got.contains(w), "missed line at {w}: {got:?}");
        }
        assert!(got.windows(2).all(|p| p[0] < p[1]));
    }

    #[test]
    fn fold_key_lowers_only_ascii_capitals() {
        for b in 0..=255u8 {
            let k = u64::from_le_bytes([b, b'A', b'z', b'@', b'[', b'Z', 0x80 | b'A', b]);
            let want = u64::from_le_bytes([
                b.to_ascii_lowercase(),
                b'a',
                b'z',
                b'@',
                b'[',
                b'z',
                0x80 | b'A',
                b.to_ascii_lowercase(),
            ]);
            assert_eq!(fold_key(k), want, "byte {b:#x}");
        }
    }

    #[test]
    fn marker_byte_lines_are_candidates() {
        // (A final byte is not flagged: nothing can follow it to be hidden.)
        let hay = "plain\ncolour \x1b[31mred\nx\x1b\nok\nend\x1b";
        assert_eq!(lines(&[("absent!", false)], hay), vec![6, 22]);
    }

    #[test]
    fn case_sensitive_windows_confirm_exactly() {
        let hay = "an exception here\nAn Exception here\n";
        assert_eq!(lines(&[("Exception", false)], hay), vec![18]);
        assert_eq!(lines(&[("Exception", true)], hay), vec![0, 18]);
    }

    #[test]
    fn folded_short_and_edge_positions() {
        let hay = "BUS ERROR\nabcd\nzz\nxyz abcd";
        let got = lines(&[("bus error", true), ("abcd", false)], hay);
        assert!(
            got.contains(&0) && got.contains(&10) && got.contains(&18),
            "{got:?}"
        );
    }
}
