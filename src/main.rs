//! The `kubecred` binary: what kubectl runs on every command. It answers `get-token` from the
//! cache and hands every other run to `kubecred-full` beside it; see front.rs for why, and for
//! how the two stay in agreement.
#![cfg_attr(unix, no_main)]

#[cfg(unix)]
#[no_mangle]
pub extern "C" fn main(_argc: libc::c_int, _argv: *const *const libc::c_char) -> libc::c_int {
    kubecred::entry::c_main(kubecred::front::run)
}

#[cfg(not(unix))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(kubecred::front::run())
}
