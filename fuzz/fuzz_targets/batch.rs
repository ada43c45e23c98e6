//! Fuzz target: One framed batch: header parse, CRC check, record decode (whatever the CRC says).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kafko_core::fuzzing::batch(data);
});
