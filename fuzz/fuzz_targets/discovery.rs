//! Fuzz target `discovery`: arbitrary bytes through `kubecred::fuzzing::discovery`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubecred::fuzzing::discovery(data));
