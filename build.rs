//! What `kubecred version` (and `--version`) says about the build, as compile-time variables:
//! - `KUBECRED_GIT_COMMIT`: the commit in full (`git rev-parse HEAD`) when the source is a git
//!   checkout and git is installed, else the `KUBECRED_GIT_COMMIT` a packager sets, else
//!   "unknown" (a build from a tarball must not fail); and `KUBECRED_GIT_COMMIT_SHORT`, its first
//!   7 characters (not `git rev-parse --short`, whose length grows with the repository: a shallow
//!   clone would build other bytes);
//! - `KUBECRED_BUILD_DATE`: `SOURCE_DATE_EPOCH` when set, else the commit's time, as a UTC date
//!   and time; "unknown" without either. Never the clock: the same commit builds to the same bytes
//!   whenever it is built (scripts/reproduce.sh);
//! - `KUBECRED_TARGET` and `KUBECRED_RUSTC`: the target triple, and `rustc -V` of the compiler.
//!
//! Cheap: two git commands and one `rustc -V`, and cargo reruns this only when HEAD or the branch
//! it points at moves (not on every build), when one of the variables above changes, or when the
//! compiler does (a new compiler rebuilds everything, this included).

use std::path::PathBuf;
use std::process::Command;

fn output_of(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_string())
}

fn git(args: &[&str]) -> Option<String> {
    output_of("git", args)
}

fn non_empty_var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|value| !value.is_empty())
}

/// The commit HEAD names and its time (seconds since the epoch), when this crate is the top of
/// a git checkout; asks cargo to rerun this when HEAD moves.
fn git_head() -> Option<(String, Option<i64>)> {
    // A tarball unpacked inside another repository must not take that one's commit.
    let toplevel = PathBuf::from(git(&["rev-parse", "--show-toplevel"])?);
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR")?);
    if toplevel.canonicalize().ok()? != manifest_dir.canonicalize().ok()? {
        return None;
    }
    let commit = git(&["rev-parse", "HEAD"])?;
    let time = git(&["show", "-s", "--format=%ct", "HEAD"]).and_then(|t| t.parse().ok());
    // Rerun when HEAD moves to another branch or commit, or the branch moves. In a worktree HEAD
    // is in its own git dir and the refs are in the common one.
    let git_dir = PathBuf::from(git(&["rev-parse", "--git-dir"])?);
    let common_dir = PathBuf::from(git(&["rev-parse", "--git-common-dir"])?);
    // A path that does not exist would make cargo rerun this on every build: skip those.
    let mut watched = vec![git_dir.join("HEAD"), common_dir.join("packed-refs")];
    if let Some(reference) = git(&["symbolic-ref", "-q", "HEAD"]) {
        watched.push(common_dir.join(reference));
    }
    for path in watched.iter().filter(|path| path.exists()) {
        println!("cargo:rerun-if-changed={}", path.display());
    }
    Some((commit, time))
}

/// Seconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`. Howard Hinnant's days-to-civil algorithm:
/// a date library as a build dependency would be compiled for the host in every build.
fn utc_date_time(seconds: i64) -> String {
    let (days, rest) = (seconds.div_euclid(86_400), seconds.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=KUBECRED_GIT_COMMIT");
    println!("cargo:rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let head = git_head();
    let commit = non_empty_var("KUBECRED_GIT_COMMIT")
        .or_else(|| head.as_ref().map(|(commit, _)| commit.clone()))
        .unwrap_or_else(|| "unknown".to_string());
    let date = non_empty_var("SOURCE_DATE_EPOCH")
        .and_then(|epoch| epoch.parse().ok())
        .or_else(|| head.and_then(|(_, time)| time))
        .map_or_else(|| "unknown".to_string(), utc_date_time);
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_string());
    let rustc = output_of(&rustc, &["-V"]).unwrap_or_else(|| "unknown".to_string());
    let target = std::env::var("TARGET").unwrap_or_else(|_| "unknown".to_string());
    // The first line of --version names the commit short; the full name is on its own line.
    let short: String = commit.chars().take(7).collect();
    println!("cargo:rustc-env=KUBECRED_GIT_COMMIT={commit}");
    println!("cargo:rustc-env=KUBECRED_GIT_COMMIT_SHORT={short}");
    println!("cargo:rustc-env=KUBECRED_BUILD_DATE={date}");
    println!("cargo:rustc-env=KUBECRED_TARGET={target}");
    println!("cargo:rustc-env=KUBECRED_RUSTC={rustc}");
}
