//! Fuzz target `token_response`: arbitrary bytes through `kubecred::fuzzing::token_response`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubecred::fuzzing::token_response(data));
