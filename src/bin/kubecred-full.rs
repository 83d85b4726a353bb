//! The `kubecred-full` binary: every command, with clap's parser, the HTTP and TLS stack, the
//! keyring, the logins and the tools. The `kubecred` front hands it every run it does not answer
//! from the cache (front.rs); it can also be run directly.
#![cfg_attr(unix, no_main)]

#[cfg(unix)]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    kubecred::entry::c_main(|| kubecred::entry::run(kubecred::commands::run))
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(kubecred::entry::run(kubecred::commands::run))
}
