//! Fuzz target `redirect_uri`: arbitrary bytes through `kubecred::fuzzing::redirect_uri`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubecred::fuzzing::redirect_uri(data));
