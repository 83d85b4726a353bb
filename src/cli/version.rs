//! What kubecred says about its own build (`kubecred version`, `--version`, `-V`), from the
//! variables build.rs sets: what a bug report and a reproduction of the build
//! (scripts/reproduce.sh) need — the version, the commit, the target, the build date (the
//! commit's time, never the clock: the same source builds to the same bytes) and the compiler.

/// `-V`, and the first line of `--version`: the version and the commit it was built from.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("KUBECRED_GIT_COMMIT_SHORT"),
    ")"
);

/// `--version` and `kubecred version` (after the name): the version line, then one line per
/// fact, `name: value`, for a person and for a script alike.
pub const LONG_VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("KUBECRED_GIT_COMMIT_SHORT"),
    ")\ncommit: ",
    env!("KUBECRED_GIT_COMMIT"),
    "\ntarget: ",
    env!("KUBECRED_TARGET"),
    "\nbuild date: ",
    env!("KUBECRED_BUILD_DATE"),
    "\nrustc: ",
    env!("KUBECRED_RUSTC"),
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_long_version_starts_with_the_short_one_and_names_each_fact_once() {
        let mut lines = LONG_VERSION.lines();
        assert_eq!(lines.next(), Some(VERSION));
        let names: Vec<&str> = lines
            .map(|line| line.split_once(": ").expect(line).0)
            .collect();
        assert_eq!(names, ["commit", "target", "build date", "rustc"]);
        let fact = |name: &str| {
            let prefix = format!("{name}: ");
            LONG_VERSION
                .lines()
                .find_map(|line| line.strip_prefix(prefix.as_str()))
                .unwrap()
        };
        assert!(
            fact("target").starts_with(std::env::consts::ARCH),
            "{LONG_VERSION}"
        );
        assert!(fact("rustc").starts_with("rustc 1."), "{LONG_VERSION}");
        // A git checkout knows its commit and the commit's time: 2026-11-27T23:05:01Z.
        assert_eq!(fact("commit").len(), 40, "{LONG_VERSION}");
        let date = fact("build date").as_bytes();
        assert!(date.len() == 20 && date[4] == b'-' && date[10] == b'T' && date[19] == b'Z');
    }
}
