//! Fuzz target `exec_info`: arbitrary bytes through `kubecred::fuzzing::exec_info`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubecred::fuzzing::exec_info(data));
