//! Fuzz the DWARF line and inline reader (src/sources/elfcore/dwarf.rs): the input holds
//! `.debug_info`, `.debug_abbrev`, `.debug_line`, `.debug_str`, `.debug_ranges` and
//! `.debug_aranges`, each behind a u16 length, then addresses to look up; parsing and lookups
//! must return for any bytes, never panic or loop. `cargo +nightly fuzz run dwarf_lines` from
//! the repo root.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trainwreck::sources::elfcore::dwarf::Lines;

const SECTIONS: [&str; 6] = [
    ".debug_info",
    ".debug_abbrev",
    ".debug_line",
    ".debug_str",
    ".debug_ranges",
    ".debug_aranges",
];

fuzz_target!(|data: &[u8]| {
    let mut data = data;
    let mut parts: Vec<(&str, Vec<u8>)> = Vec::new();
    for name in SECTIONS {
        let n = match data {
            [a, b, ..] => usize::from(u16::from_le_bytes([*a, *b])),
            _ => 0,
        };
        let rest = data.get(2..).unwrap_or(&[]);
        let (part, tail) = rest.split_at(n.min(rest.len()));
        parts.push((name, part.to_vec()));
        data = tail;
    }
    let Some(lines) = Lines::new(&mut |want| {
        parts
            .iter()
            .find(|(n, _)| *n == want)
            .map(|(_, d)| d.clone())
            .filter(|d| !d.is_empty())
    }) else {
        return;
    };
    for c in data.chunks_exact(8).take(16) {
        let addr = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        let _ = lines.frames(addr);
    }
});
