//! Fuzz target: A record area (optionally lz4/zstd-compressed, with a declared decoded size: decompression bombs) framed with a valid CRC and read back like a fetch.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kafko_core::fuzzing::record_area(data);
});
