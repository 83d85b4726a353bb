//! House rules checked on the source tree itself: every file under `src/` opens with a `//!`
//! paragraph that says what the module is for (ARCHITECTURE.md's code map points at them), and
//! imports between modules follow ARCHITECTURE.md's module layers (no cycles). The package
//! builds one binary, `kubecred`.

use crate::support::repo_root;
use crate::support::rust_text::rust_files;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

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

/// ARCHITECTURE.md's module layers, top first: the modules of each line.
fn documented_layers() -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(repo_root().join("ARCHITECTURE.md")).unwrap();
    let section = text
        .split("### Module layers")
        .nth(1)
        .expect("ARCHITECTURE.md has a \"### Module layers\" section");
    let block = section
        .split("```text\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the module layers are in a ```text block");
    block
        .lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            line.split(',')
                .map(|name| name.trim().to_string())
                .collect()
        })
        .collect()
}

/// The top-level module a file under `src/` belongs to (`cache/lock.rs` → `cache`); `None` for
/// the crate root and the binary.
fn module_of(relative: &Path) -> Option<String> {
    let first = relative.components().next()?.as_os_str().to_str()?;
    match first {
        "lib.rs" | "main.rs" => None,
        file => Some(file.trim_end_matches(".rs").to_string()),
    }
}

/// The modules `text` (Rust source, its tests cut off) names as `crate::<module>`, comments
/// aside: `use crate::a::b`, `crate::a::f()`, `use crate::{a, b::{c, d}}`, a group spread over
/// several lines as rustfmt writes a long one included.
fn crate_imports(text: &str) -> Vec<String> {
    let code = match text.find("#[cfg(test)]\nmod tests {") {
        Some(tests) => &text[..tests],
        None => text,
    };
    // Comments out, lines kept: a group may span them.
    let code: String = code
        .lines()
        .map(|line| {
            let line = line.trim_start();
            if line.starts_with("//") {
                ""
            } else {
                line.split(" // ").next().unwrap_or(line)
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    for (index, _) in code.match_indices("crate::") {
        // `$crate::` is a macro's own path (debug! naming log), not an import of this file's.
        if code[..index].ends_with('$') {
            continue;
        }
        let rest = &code[index + "crate::".len()..];
        let names = match rest.strip_prefix('{') {
            Some(group) => top_level_items(group),
            None => vec![rest],
        };
        for name in names {
            let module: String = name
                .trim()
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !module.is_empty() && module != "debug" {
                found.push(module);
            }
        }
    }
    found
}

/// The items of a `{…}` group whose text starts after its `{`: split at its own commas, up to
/// its closing brace; nested groups stay inside their item (`a::{b, c}` is one item, `a`).
fn top_level_items(group: &str) -> Vec<&str> {
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (at, c) in group.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&group[start..at]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&group[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&group[start..]);
    items
}

/// Every import that goes up or sideways in `layers`, and every module `layers` lacks.
fn layer_violations(layers: &[Vec<String>], sources: &[(PathBuf, String)]) -> Vec<String> {
    let layer_of: BTreeMap<&str, usize> = layers
        .iter()
        .enumerate()
        .flat_map(|(depth, names)| names.iter().map(move |name| (name.as_str(), depth)))
        .collect();
    let mut violations = Vec::new();
    for (relative, text) in sources {
        let Some(module) = module_of(relative) else {
            continue;
        };
        let Some(&own) = layer_of.get(module.as_str()) else {
            violations.push(format!(
                "{}: module {module} is in no layer",
                relative.display()
            ));
            continue;
        };
        let in_tests = relative.ends_with("tests.rs")
            || relative.components().any(|c| c.as_os_str() == "tests");
        if in_tests {
            continue;
        }
        for import in crate_imports(text) {
            if import == module {
                continue;
            }
            match layer_of.get(import.as_str()) {
                Some(&other) if other > own => {}
                Some(_) => violations.push(format!(
                    "{}: {module} uses crate::{import}, which is not below it",
                    relative.display()
                )),
                None => violations.push(format!(
                    "{}: crate::{import} is in no layer",
                    relative.display()
                )),
            }
        }
    }
    violations.sort();
    violations.dedup();
    violations
}

#[test]
fn imports_follow_the_documented_module_layers() {
    let layers = documented_layers();
    assert!(layers.len() > 5, "{layers:?}");
    let src = repo_root().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let sources: Vec<(PathBuf, String)> = files
        .iter()
        .map(|path| {
            let relative = path.strip_prefix(&src).unwrap().to_path_buf();
            (relative, std::fs::read_to_string(path).unwrap())
        })
        .collect();
    let violations = layer_violations(&layers, &sources);
    assert!(
        violations.is_empty(),
        "imports against ARCHITECTURE.md's module layers:\n{}",
        violations.join("\n")
    );
}

#[test]
fn the_layer_check_can_fail() {
    let layers: Vec<Vec<String>> = [&["acquire"][..], &["cache", "oidc"], &["log"]]
        .iter()
        .map(|line| line.iter().map(|name| name.to_string()).collect())
        .collect();
    let source = |path: &str, text: &str| (PathBuf::from(path), text.to_string());
    let clean = [
        source(
            "acquire/mod.rs",
            "use crate::cache::TokenCache;\nuse crate::{log, oidc::X};",
        ),
        source(
            "cache/mod.rs",
            "// crate::acquire in a comment\ncrate::log::notice(x);",
        ),
        source("cache/tests.rs", "use crate::acquire;"),
        source(
            "log.rs",
            "#[cfg(test)]\nmod tests {\n    use crate::acquire;\n}",
        ),
    ];
    assert_eq!(layer_violations(&layers, &clean), Vec::<String>::new());
    let up = [source("log.rs", "use crate::acquire::credential;")];
    assert_eq!(layer_violations(&layers, &up).len(), 1);
    let sideways = [source("cache/key.rs", "use crate::{oidc, log};")];
    assert_eq!(layer_violations(&layers, &sideways).len(), 1);
    // A test module declared at the top does not hide the imports below it.
    let after_tests = [source(
        "log.rs",
        "#[cfg(test)]\nmod tests;\nuse crate::cache;",
    )];
    assert_eq!(layer_violations(&layers, &after_tests).len(), 1);
    let unlisted = [source("new.rs", "")];
    assert_eq!(layer_violations(&layers, &unlisted).len(), 1);
    // A group rustfmt spread over several lines, with a nested group, is read whole: the import
    // on its third line goes up.
    let multi_line = [source(
        "cache/mod.rs",
        "use crate::{\n    log::{self, notice},\n    acquire::credential, // why\n};",
    )];
    assert_eq!(layer_violations(&layers, &multi_line).len(), 1);
    assert_eq!(
        crate_imports("use crate::{\n    log::{a, b},\n    oidc,\n};\ncrate::cache::f();"),
        ["log", "oidc", "cache"]
    );
}

#[test]
fn the_package_builds_one_binary() {
    let output = std::process::Command::new(env!("CARGO"))
        .args(["metadata", "--no-deps", "--format-version=1", "--offline"])
        .current_dir(repo_root())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let binaries: Vec<&str> = metadata["packages"][0]["targets"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|target| {
            target["kind"]
                .as_array()
                .unwrap()
                .iter()
                .any(|k| k == "bin")
        })
        .map(|target| target["name"].as_str().unwrap())
        .collect();
    assert_eq!(binaries, ["kubecred"], "one binary, installed alone");
}
