//! Any bytes as a Flight Recorder dump (a pickle): the unpickler and the dump reader must
//! never panic, however deep, long or damaged the input.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = trainwreck::sources::flight_recorder::read("nccl_trace_rank_0", data);
});
