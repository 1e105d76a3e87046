//! Any bytes as an ELF core: the parser must return (partial facts + warnings), never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = trainwreck::sources::elfcore::parse_core_bytes(data);
});
