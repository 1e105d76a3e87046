//! Test-only: the xorshift64 generator the randomised unit tests draw from, written once.
//! Reproducible by seed; never used outside `#[cfg(test)]` code.

/// xorshift64 from `seed` (nonzero): each call gives the next 64-bit state.
pub(crate) fn xorshift(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    }
}

/// xorshift64 from `seed`, each call a number below `n`.
pub(crate) fn below(seed: u64) -> impl FnMut(usize) -> usize {
    let mut next = xorshift(seed);
    move |n| (next() % n as u64) as usize
}
