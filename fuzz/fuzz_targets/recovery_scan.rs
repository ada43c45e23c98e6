//! Fuzz target: A whole segment file through the open-time recovery scan, then read back batch by batch.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kafko_core::fuzzing::recovery_scan(data);
});
