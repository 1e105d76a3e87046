//! Fuzz the text-encoding layer (src/sources/encoding.rs): any bytes are sniffed (UTF-16, and
//! chardetng's guess among the CJK encodings), decoded as
//! each encoding read there through the streaming decoder (in reads of a size the first byte
//! picks), and counted line by line; the decoder's output must always be UTF-8, the counts
//! must stay within the lines given, and nothing may panic. `cargo +nightly fuzz run
//! text_encoding` from the repo root.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Read;
use trainwreck::sources::encoding::{NotUtf8, TextEncoding, Transcode, decode_line, sniff};

fuzz_target!(|data: &[u8]| {
    let Some((&pick, text)) = data.split_first() else {
        return;
    };
    let _ = sniff(text);
    let read_size = 1 + usize::from(pick) * 37;
    for e in [
        TextEncoding::Utf16Le,
        TextEncoding::Utf16Be,
        TextEncoding::Gb18030,
        TextEncoding::Big5,
        TextEncoding::EucKr,
        TextEncoding::EucJp,
        TextEncoding::ShiftJis,
    ] {
        let mut t = Transcode::new(text, e);
        let mut out = Vec::new();
        let mut buf = vec![0u8; read_size];
        loop {
            let k = t.read(&mut buf).expect("reading a slice cannot fail");
            if k == 0 {
                break;
            }
            out.extend_from_slice(&buf[..k]);
        }
        assert!(std::str::from_utf8(&out).is_ok(), "decoded text is UTF-8");
    }
    let mut n = NotUtf8::default();
    n.count(text, 1);
    let lines = text.split(|&b| b == b'\n').count() as u64;
    assert!(n.gb18030 <= n.lines && n.lines <= lines);
    assert!(n.lines == 0 || (1..=lines).contains(&n.first));
    for line in text.split(|&b| b == b'\n') {
        let _ = decode_line(line);
    }
});
