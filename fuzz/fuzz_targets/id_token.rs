//! Fuzz target `id_token`: arbitrary bytes through `kubecred::fuzzing::id_token`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubecred::fuzzing::id_token(data));
