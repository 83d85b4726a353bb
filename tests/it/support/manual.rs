//! The manual as the tests read it: README.md and the pages under docs/, in the order of
//! docs/SUMMARY.md, and the heading anchors GitHub and mdBook give them. The tests that hold the
//! text to the binary (troubleshooting.rs, docs.rs, samples.rs) read the page a passage lives on
//! through here, so that a passage may move between pages without its check going blind.

use super::repo_root;

/// A page of the manual: its path relative to the repository, and its text.
pub struct Page {
    pub path: String,
    pub text: String,
}

/// The text of `path` (relative to the repository).
pub fn read(path: &str) -> String {
    std::fs::read_to_string(repo_root().join(path)).unwrap_or_else(|err| panic!("{path}: {err}"))
}

/// README.md, then every page docs/SUMMARY.md lists, in its order, each once.
pub fn pages() -> Vec<Page> {
    let mut paths = vec!["README.md".to_string()];
    for target in summary_targets(&read("docs/SUMMARY.md")) {
        let path = format!("docs/{target}");
        if !paths.contains(&path) {
            paths.push(path);
        }
    }
    paths
        .into_iter()
        .map(|path| Page {
            text: read(&path),
            path,
        })
        .collect()
}

/// The pages' texts joined, README first: what "the manual says" means to a test.
pub fn all_text() -> String {
    pages()
        .iter()
        .map(|page| page.text.as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The file links of SUMMARY.md (`- [Title](page.md)`), in order.
fn summary_targets(summary: &str) -> Vec<String> {
    summary
        .lines()
        .filter_map(|line| {
            let start = line.find("](")? + 2;
            let end = start + line[start..].find(')')?;
            Some(line[start..end].to_string())
        })
        .filter(|target| target.ends_with(".md"))
        .collect()
}

/// The anchor GitHub (and mdBook, which follows it) gives a heading's text: lower case, every
/// character but letters, digits, `-`, `_` and spaces dropped (backticks, dots, colons,
/// commas), each space a `-`.
pub fn slug(heading: &str) -> String {
    heading
        .trim()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            c if c.is_alphanumeric() || c == '-' || c == '_' => Some(c.to_ascii_lowercase()),
            _ => None,
        })
        .collect()
}

/// The anchors of a Markdown text's headings (`#` lines outside fenced code), a repeated one
/// numbered `-1`, `-2`, … as GitHub and mdBook number them.
pub fn anchors(text: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in outside_fences(text) {
        let hashes = line.chars().take_while(|&c| c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while found.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        found.push(anchor);
    }
    found
}

/// The lines of a Markdown text outside fenced code blocks (those are examples: their `#`
/// lines are no headings, their brackets no links).
pub fn outside_fences(text: &str) -> impl Iterator<Item = &str> {
    let mut fenced = false;
    text.lines().filter(move |line| {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            return false;
        }
        !fenced
    })
}

/// The text of a Markdown section: from its heading line to the next heading of its level or
/// higher.
pub fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let line = format!("{heading}\n");
    let start = match text.strip_prefix(&line) {
        Some(_) => line.len(),
        None => {
            text.find(&format!("\n{line}"))
                .unwrap_or_else(|| panic!("no section {heading:?}"))
                + 1
                + line.len()
        }
    };
    let level = heading.chars().take_while(|&c| c == '#').count();
    let body = &text[start..];
    let end = body
        .match_indices("\n#")
        .find(|(at, _)| {
            let hashes = body[at + 1..].chars().take_while(|&c| c == '#').count();
            hashes <= level && body[at + 1 + hashes..].starts_with(' ')
        })
        .map_or(body.len(), |(at, _)| at);
    &body[..end]
}

#[test]
fn slugs_and_anchors_are_githubs() {
    assert_eq!(
        slug("Switching a kubeconfig to kubecred: `kubecred convert-kubeconfig`"),
        "switching-a-kubeconfig-to-kubecred-kubecred-convert-kubeconfig"
    );
    assert_eq!(
        slug("Migrating from int128/kubelogin"),
        "migrating-from-int128kubelogin"
    );
    assert_eq!(slug("`--issuer-url`"), "--issuer-url");
    assert_eq!(
        slug("Who am I, and why does the cluster say 401"),
        "who-am-i-and-why-does-the-cluster-say-401"
    );
    assert_eq!(
        anchors("# A\n```sh\n# not a heading\n```\n## A\n#no\n### B b\n"),
        ["a", "a-1", "b-b"]
    );
    assert_eq!(
        section("# T\n\n## One\n\nx\n### Sub\ny\n## Two\nz\n", "## One"),
        "\nx\n### Sub\ny"
    );
}
