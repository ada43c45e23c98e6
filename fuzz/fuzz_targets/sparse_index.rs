//! Fuzz target: The .index/.timeindex pair of a segment: accepted indexes only point inside the log.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    kafko_core::fuzzing::sparse_index(data);
});
