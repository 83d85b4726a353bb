//! Fuzz target `device_response`: arbitrary bytes through `kubecred::fuzzing::device_response`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| kubecred::fuzzing::device_response(data));
