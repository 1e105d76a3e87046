//! Any text as a user rule file: the loader (TOML, schema, regex lint and size check,
//! templates, examples) must answer with rules or errors, never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let (mut rules, mut errors) = (Vec::new(), Vec::new());
    trainwreck::rules::load_text("fuzz.toml", &text, &mut rules, &mut errors);
    for e in &errors {
        let _ = e.to_string();
    }
});
