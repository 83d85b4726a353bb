//! Fuzz target `pasted_line`: arbitrary bytes through `kubecred::fuzzing::pasted_line`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubecred::fuzzing::pasted_line(data));
