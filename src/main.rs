//! The `kubecred` binary: what kubectl runs on every command (`get-token`), and `login`,
//! `logout` and `status`. `setup`, `whoami`, `completion` and `man` are handed to the sibling
//! binary `kubecred-tools` (commands/tools_binary.rs), so that their code and dependencies (CEL,
//! YAML, the man page and completion generators) are not in this one: every cache hit would pay
//! for loading them. The process wrapper is `entry.rs`, shared by both.
#![cfg_attr(unix, no_main)]

#[cfg(unix)]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    kubecred::entry::c_main(kubecred::commands::run)
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(kubecred::entry::run(kubecred::commands::run))
}
