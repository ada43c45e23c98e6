//! Fuzz target: A compressed payload with a declared decoded size: never more than the 64 MiB cap, never a different length.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kafko_core::fuzzing::decompress(data);
});
