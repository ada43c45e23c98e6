//! Fuzz target: one Kafka request frame as the listener decodes it (header, version
//! check, array and tagged-field guard, message codec, a produce's record batches), then
//! handled whole by a broker on a small log in a temporary directory: served, answered
//! and encoded, or the connection closed. `scripts/fuzz.sh` bounds the process's memory
//! (`-rss_limit_mb`) and any single allocation (`-malloc_limit_mb`).
#![no_main]

use std::sync::OnceLock;

static TARGET: OnceLock<kafko_kafka::RequestTarget> = OnceLock::new();

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let _ = kafko_kafka::decode_request(data);
    let target = TARGET.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("kafko-fuzz-{}", std::process::id()));
        kafko_kafka::RequestTarget::open(&dir).expect("a log in the temporary directory")
    });
    let _ = target.handle(data);
});
