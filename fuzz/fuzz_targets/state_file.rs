//! Fuzz target: A state file (topic.json, log-start-offset, <topic>.offsets, group.json, members.json, the marker): framing, CRC, JSON.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kafko_core::fuzzing::state_file(data);
});
