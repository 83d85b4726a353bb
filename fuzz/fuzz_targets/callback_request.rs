//! Fuzz target `callback_request`: arbitrary bytes through `kubecred::fuzzing::callback_request`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubecred::fuzzing::callback_request(data));
