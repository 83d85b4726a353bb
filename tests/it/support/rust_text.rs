//! Rust source read as text, for the tests that hold README to the code: the string literals of
//! a file (decoded, with where each starts), the file with literals and comments blanked out
//! (so that braces and `fn` can be found), a function's body, and the parts of a format string
//! between its `{…}` holes. A small lexer, not a parser: enough for kubecred's own sources,
//! which rustfmt keeps in one style.

use std::ops::Range;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, recursively.
pub fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// A string literal: its decoded text and the byte offset where it starts.
#[derive(Debug, Clone)]
pub struct Literal {
    pub at: usize,
    pub text: String,
}

/// A source file split into its string literals and its code, the code being the file with
/// every literal's and comment's bytes replaced by spaces (offsets stay the same).
pub struct SourceText {
    pub code: String,
    pub literals: Vec<Literal>,
}

impl SourceText {
    pub fn new(text: &str) -> SourceText {
        let bytes = text.as_bytes();
        let mut code = bytes.to_vec();
        let mut literals = Vec::new();
        let mut i = 0;
        let blank = |code: &mut Vec<u8>, range: Range<usize>| {
            for byte in &mut code[range] {
                if *byte != b'\n' {
                    *byte = b' ';
                }
            }
        };
        while i < bytes.len() {
            let rest = &bytes[i..];
            let after_identifier =
                i > 0 && (bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_');
            if rest.starts_with(b"//") {
                let end = rest
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(bytes.len(), |n| i + n);
                blank(&mut code, i..end);
                i = end;
            } else if rest.starts_with(b"/*") {
                let mut depth = 0;
                let mut j = i;
                while j < bytes.len() {
                    if bytes[j..].starts_with(b"/*") {
                        depth += 1;
                        j += 2;
                    } else if bytes[j..].starts_with(b"*/") {
                        depth -= 1;
                        j += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        j += 1;
                    }
                }
                blank(&mut code, i..j);
                i = j;
            } else if let Some((hashes, open)) =
                raw_string_start(rest).filter(|_| !after_identifier)
            {
                let body = i + open;
                let closing: Vec<u8> = std::iter::once(b'"')
                    .chain(std::iter::repeat_n(b'#', hashes))
                    .collect();
                let end = bytes[body..]
                    .windows(closing.len())
                    .position(|w| w == closing.as_slice())
                    .map_or(bytes.len(), |n| body + n);
                literals.push(Literal {
                    at: i,
                    text: text[body..end].to_string(),
                });
                let stop = (end + closing.len()).min(bytes.len());
                blank(&mut code, i..stop);
                i = stop;
            } else if rest.starts_with(b"\"") || (rest.starts_with(b"b\"") && !after_identifier) {
                let body = i + if rest[0] == b'b' { 2 } else { 1 };
                let (decoded, end) = decode_string(text, body);
                literals.push(Literal {
                    at: i,
                    text: decoded,
                });
                blank(&mut code, i..end);
                i = end;
            } else if rest.starts_with(b"'") {
                // A char literal ('x', '\n', '"') or a lifetime ('a).
                let end = if rest.get(1) == Some(&b'\\') {
                    rest[2..]
                        .iter()
                        .position(|&b| b == b'\'')
                        .map_or(bytes.len(), |n| i + 2 + n + 1)
                } else {
                    let ch_len = text[i + 1..].chars().next().map_or(0, char::len_utf8);
                    if bytes.get(i + 1 + ch_len) == Some(&b'\'') {
                        i + 1 + ch_len + 1
                    } else {
                        i + 1
                    }
                };
                blank(&mut code, i..end);
                i = end;
            } else {
                i += 1;
            }
        }
        SourceText {
            code: String::from_utf8(code).expect("blanking keeps UTF-8 boundaries"),
            literals,
        }
    }

    /// The body of `fn name` (from its `{` to the matching `}`), if the file defines it.
    pub fn function_body(&self, name: &str) -> Option<Range<usize>> {
        let needle = format!("fn {name}");
        let mut from = 0;
        while let Some(found) = self.code[from..].find(&needle) {
            let at = from + found;
            let after = at + needle.len();
            let boundary = self.code[after..]
                .chars()
                .next()
                .is_some_and(|c| !(c.is_alphanumeric() || c == '_'));
            if boundary && let Some(open) = self.code[after..].find('{') {
                return self.block_from(after + open);
            }
            from = after;
        }
        None
    }

    /// The block that opens at the `{` at `open`, to its matching `}`.
    pub fn block_from(&self, open: usize) -> Option<Range<usize>> {
        let mut depth = 0;
        for (offset, c) in self.code[open..].char_indices() {
            match c {
                '{' => depth += 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(open..open + offset + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The items behind `#[cfg(test)]` (test modules written inline, test-only functions).
    pub fn test_only_ranges(&self) -> Vec<Range<usize>> {
        let mut ranges = Vec::new();
        let mut from = 0;
        while let Some(found) = self.code[from..].find("#[cfg(test)]") {
            let at = from + found;
            let rest = &self.code[at..];
            let item_end = match (rest.find('{'), rest.find(';')) {
                (Some(brace), Some(semi)) if semi < brace => at + semi + 1,
                (Some(brace), _) => self
                    .block_from(at + brace)
                    .map_or(self.code.len(), |r| r.end),
                (None, Some(semi)) => at + semi + 1,
                (None, None) => self.code.len(),
            };
            ranges.push(at..item_end);
            from = item_end;
        }
        ranges
    }

    /// The literals that start inside `range`.
    pub fn literals_in(&self, range: &Range<usize>) -> impl Iterator<Item = &Literal> {
        self.literals.iter().filter(move |l| range.contains(&l.at))
    }
}

/// `r"`, `r#"`, `br"`, … at the start of `rest`: the number of `#` and the length of the opening.
fn raw_string_start(rest: &[u8]) -> Option<(usize, usize)> {
    let after_prefix = if rest.starts_with(b"br") {
        2
    } else if rest.starts_with(b"r") {
        1
    } else {
        return None;
    };
    let hashes = rest[after_prefix..]
        .iter()
        .take_while(|&&b| b == b'#')
        .count();
    (rest.get(after_prefix + hashes) == Some(&b'"')).then_some((hashes, after_prefix + hashes + 1))
}

/// Decodes a normal string literal whose text starts at `body` (after the opening quote):
/// its value, and the offset after the closing quote.
fn decode_string(text: &str, body: usize) -> (String, usize) {
    let mut out = String::new();
    let mut chars = text[body..].char_indices().peekable();
    while let Some((offset, c)) = chars.next() {
        match c {
            '"' => return (out, body + offset + 1),
            '\\' => match chars.next().map(|(_, c)| c) {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some('0') => out.push('\0'),
                Some('\n') => {
                    // A line continuation: the newline and the next line's indentation go.
                    while chars.peek().is_some_and(|(_, c)| c.is_whitespace()) {
                        chars.next();
                    }
                }
                Some('u') => {
                    let mut hex = String::new();
                    for (_, c) in chars.by_ref() {
                        match c {
                            '{' => {}
                            '}' => break,
                            _ => hex.push(c),
                        }
                    }
                    if let Some(c) = u32::from_str_radix(&hex, 16).ok().and_then(char::from_u32) {
                        out.push(c);
                    }
                }
                Some('x') => {
                    let hex: String = chars.by_ref().take(2).map(|(_, c)| c).collect();
                    if let Ok(byte) = u8::from_str_radix(&hex, 16) {
                        out.push(char::from(byte));
                    }
                }
                Some(other) => out.push(other),
                None => {}
            },
            _ => out.push(c),
        }
    }
    (out, text.len())
}

/// The parts of a format string between its holes (`{}`, `{name}`, `{:?}`), with `{{` and `}}`
/// read as braces. A literal that is no format string splits the same way, harmlessly.
pub fn format_segments(literal: &str) -> Vec<String> {
    let mut segments = vec![String::new()];
    let mut chars = literal.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '{' if chars.peek() == Some(&'{') => {
                chars.next();
                segments.last_mut().unwrap().push('{');
            }
            '}' if chars.peek() == Some(&'}') => {
                chars.next();
                segments.last_mut().unwrap().push('}');
            }
            '{' => {
                for c in chars.by_ref() {
                    if c == '}' {
                        break;
                    }
                }
                segments.push(String::new());
            }
            _ => segments.last_mut().unwrap().push(c),
        }
    }
    segments
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_comments_and_bodies() {
        let text = r##"
// a comment with "quotes" and { braces
fn one() -> &'static str {
    let c = '{';
    let d = '"';
    let s = "a {x} \"b\" \
             c";
    /* block "not a literal" */
    r#"raw "quoted" {}"#
}
fn one_more() { "other" }
#[cfg(test)]
mod tests { fn t() { "test only" } }
"##;
        let source = SourceText::new(text);
        let texts: Vec<&str> = source.literals.iter().map(|l| l.text.as_str()).collect();
        assert_eq!(
            texts,
            ["a {x} \"b\" c", "raw \"quoted\" {}", "other", "test only"]
        );
        let body = source.function_body("one").unwrap();
        let inside: Vec<&str> = source.literals_in(&body).map(|l| l.text.as_str()).collect();
        assert_eq!(inside, ["a {x} \"b\" c", "raw \"quoted\" {}"]);
        let tests = source.test_only_ranges();
        assert_eq!(tests.len(), 1);
        assert_eq!(source.literals_in(&tests[0]).count(), 1);
        assert!(source.function_body("missing").is_none());
        assert_eq!(
            format_segments("the {grant} request to {} failed{{x}}: {err:?}"),
            ["the ", " request to ", " failed{x}: ", ""]
        );
    }
}
