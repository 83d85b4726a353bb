//! House rules checked on the source tree itself: every file under `src/` opens with a `//!`
//! paragraph that says what the module is for (ARCHITECTURE.md's code map points at them).

use crate::support::repo_root;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// Whether `text` starts with a `//!` paragraph: its first line that is not blank is `//!`
/// followed by words.
fn opens_with_purpose(text: &str) -> bool {
    text.lines()
        .find(|line| !line.trim().is_empty())
        .and_then(|line| line.strip_prefix("//!"))
        .is_some_and(|rest| rest.trim().len() > 10)
}

#[test]
fn every_source_file_says_what_it_is_for() {
    let mut files = Vec::new();
    rust_files(&repo_root().join("src"), &mut files);
    assert!(files.len() > 20, "found only {files:?}");
    let missing: Vec<String> = files
        .iter()
        .filter(|path| !opens_with_purpose(&std::fs::read_to_string(path).unwrap()))
        .map(|path| {
            path.strip_prefix(repo_root())
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    assert!(
        missing.is_empty(),
        "these files do not open with a //! purpose paragraph: {missing:?}"
    );
}

#[test]
fn the_purpose_check_can_fail() {
    assert!(opens_with_purpose("//! Reads the cache.\n\nuse x;"));
    assert!(!opens_with_purpose("use x;\n//! Too late."));
    assert!(!opens_with_purpose("// A plain comment.\nfn f() {}"));
    assert!(!opens_with_purpose("//!\nfn f() {}"));
}
