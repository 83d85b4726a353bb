//! The fuzz corpus as a regression test on stable: every file of `fuzz/corpus/<target>/` goes
//! through the same entry function as the nightly fuzz target (`kubecred::fuzzing`), and none
//! may panic. Inputs that once crashed a target are kept there with their fix.

use crate::support::repo_root;
use std::collections::BTreeSet;
use std::panic::{catch_unwind, AssertUnwindSafe};

#[test]
fn every_corpus_input_runs_through_its_target_without_a_panic() {
    let fuzz = repo_root().join("fuzz");
    let mut failures = Vec::new();
    let mut total = 0;
    for (name, target) in kubecred::fuzzing::TARGETS {
        let dir = fuzz.join("corpus").join(name);
        let files: Vec<_> = std::fs::read_dir(&dir)
            .unwrap_or_else(|err| panic!("{}: {err}", dir.display()))
            .map(|entry| entry.unwrap().path())
            .collect();
        assert!(!files.is_empty(), "{} is empty", dir.display());
        for file in files {
            let data = std::fs::read(&file).unwrap();
            total += 1;
            if catch_unwind(AssertUnwindSafe(|| target(&data))).is_err() {
                failures.push(file.display().to_string());
            }
        }
    }
    assert!(failures.is_empty(), "panicked on: {failures:#?}");
    assert!(total >= kubecred::fuzzing::TARGETS.len());
}

/// The nightly targets and the list the replay walks are the same set.
#[test]
fn every_fuzz_target_is_replayed() {
    let files: BTreeSet<String> = std::fs::read_dir(repo_root().join("fuzz/fuzz_targets"))
        .unwrap()
        .map(|entry| {
            let name = entry.unwrap().file_name().into_string().unwrap();
            name.trim_end_matches(".rs").to_string()
        })
        .collect();
    let listed: BTreeSet<String> = kubecred::fuzzing::TARGETS
        .iter()
        .map(|(name, _)| name.to_string())
        .collect();
    assert_eq!(files, listed);
}
