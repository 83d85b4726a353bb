//! The `kubecred-tools` binary: `setup`, `whoami`, `completion` and `man`, the commands a person
//! runs now and then. `kubecred` hands these to it (commands/tools_binary.rs), so that what only
//! they need stays out of the binary kubectl starts on every command. Same command line, same
//! process wrapper (`entry.rs`); it refuses the other commands with a pointer to `kubecred`.
#![cfg_attr(unix, no_main)]

#[cfg(unix)]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    kubecred::entry::c_main(kubecred::commands::run_tools)
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(kubecred::entry::run(kubecred::commands::run_tools))
}
