//! Fuzz target: one Kafka request frame as the listener decodes it: header, version
//! check, array guard, message codec, and a produce's record batches.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = kafko_http::kafka::decode_request(data);
});
