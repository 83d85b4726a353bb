//! Fuzz target `cache_entry`: arbitrary bytes through `kubecred::fuzzing::cache_entry`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubecred::fuzzing::cache_entry(data));
