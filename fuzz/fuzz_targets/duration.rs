//! Fuzz target `duration`: arbitrary bytes through `kubecred::fuzzing::duration`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubecred::fuzzing::duration(data));
