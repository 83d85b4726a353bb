//! Fuzz target `id_token_claims`: arbitrary bytes through `kubecred::fuzzing::id_token_claims`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubecred::fuzzing::id_token_claims(data));
