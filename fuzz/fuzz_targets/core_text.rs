//! Any text as coredumpctl / journal / gdb output: the parser must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;
use trainwreck::sources::SourceKind;
use trainwreck::sources::{FactOut, fact_parser};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Some(mut p) = fact_parser(SourceKind::CoreText, "gdb-bt.txt") {
        let mut out = FactOut::default();
        for (i, l) in text.lines().enumerate() {
            p.line(i as u64 + 1, l, &mut out);
        }
        p.finish(&mut out);
    }
});
