//! Changing entries of a kubeconfig file the way a careful person would: only the entries that
//! change are written anew, and every other byte of the file — other users, clusters, contexts,
//! extensions, unknown fields, comments, quoting, key order — stays as it was. For
//! `convert-kubeconfig` (a user's credentials) and `setup --write-kubeconfig` (a user, a
//! cluster, a context, the current context).
//!
//! A [`Document`] keeps two things: the file's text, edited line by line, and the document's
//! value (serde_norway), edited as data. The text edits understand the block layout kubectl
//! (and nearly everyone) writes — top-level keys at column 0, each section a block sequence of
//! `- name: …` entries — and replace or append whole entries, each rendered by the YAML
//! serializer at the entry's indentation. Before anything is written, the edited text is parsed
//! again and must equal the edited value; when it does not, or the layout is one the text edits
//! do not handle (a flow-style section, a JSON file), the file is written as a whole from the
//! value instead: the same kubeconfig to kubectl, but comments and formatting are lost, and
//! [`Layout::Whole`] says why so that the user is told. A JSON file is written back as JSON.

use serde_norway::{Mapping, Value};

/// The sections of a kubeconfig whose entries are `- name: NAME` with one body key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Section {
    Users,
    Clusters,
    Contexts,
}

impl Section {
    fn key(self) -> &'static str {
        match self {
            Section::Users => "users",
            Section::Clusters => "clusters",
            Section::Contexts => "contexts",
        }
    }

    /// The key of an entry's body: `user`, `cluster`, `context`.
    fn body_key(self) -> &'static str {
        match self {
            Section::Users => "user",
            Section::Clusters => "cluster",
            Section::Contexts => "context",
        }
    }
}

/// How a rendered document relates to the file's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Only the changed entries are new; every other byte is the file's.
    Kept,
    /// Written as a whole from the document's value, for this reason.
    Whole(String),
}

/// A kubeconfig file's text and value, edited together.
#[derive(Debug, Clone)]
pub struct Document {
    text: String,
    value: Value,
    json: bool,
    /// Set when a text edit was impossible: why the document is written as a whole.
    whole: Option<String>,
    changed: bool,
}

impl Document {
    /// Parses a kubeconfig file's text. An empty file (or one of comments only) is an empty
    /// kubeconfig, as kubectl reads it. The error says what is wrong, for one line.
    pub fn parse(text: &str) -> Result<Document, String> {
        let value: Value = serde_norway::from_str(text).map_err(|err| {
            crate::text::printable_brief(&err.to_string().replace('\n', " "), 300).into_owned()
        })?;
        let json = text.trim_start().starts_with('{');
        let mut document = Document {
            text: text.to_string(),
            value,
            json,
            whole: None,
            changed: false,
        };
        match &document.value {
            Value::Null => {
                // What kubectl writes at the top of a new file.
                let mut top = Mapping::new();
                top.insert("apiVersion".into(), "v1".into());
                top.insert("kind".into(), "Config".into());
                document.value = Value::Mapping(top);
                if !document.text.is_empty() && !document.text.ends_with('\n') {
                    document.text.push('\n');
                }
                document.text.push_str("apiVersion: v1\nkind: Config\n");
                document.json = false;
            }
            Value::Mapping(_) => {}
            _ => {
                return Err(
                    "it is not a YAML mapping (apiVersion, clusters, contexts, users, …)".into(),
                );
            }
        }
        for section in [Section::Users, Section::Clusters, Section::Contexts] {
            document.check_section(section)?;
        }
        Ok(document)
    }

    /// Whether an edit changed the document's value.
    pub fn changed(&self) -> bool {
        self.changed
    }

    /// The entries of a section: name and body (`None` when the entry has none).
    pub fn entries(&self, section: Section) -> Vec<(String, Option<&Value>)> {
        let Some(Value::Sequence(items)) = self.value.get(section.key()) else {
            return Vec::new();
        };
        items
            .iter()
            .filter_map(|item| {
                let name = item.get("name")?.as_str()?.to_string();
                Some((name, item.get(section.body_key())))
            })
            .collect()
    }

    /// The `current-context`, when it names one.
    pub fn current_context(&self) -> Option<&str> {
        self.value
            .get("current-context")
            .and_then(Value::as_str)
            .filter(|name| !name.is_empty())
    }

    /// Sets the body of the entry `name` of `section` (the first of that name), or appends the
    /// entry when there is none. The entry's other keys stay.
    pub fn set_entry(&mut self, section: Section, name: &str, body: Value) {
        let top = self.top_mut();
        let items = top.entry(section.key().into()).or_insert(Value::Null);
        if !items.is_sequence() {
            *items = Value::Sequence(Vec::new());
        }
        let Value::Sequence(items) = items else {
            unreachable!("made a sequence above")
        };
        let position = items
            .iter()
            .position(|item| item.get("name").and_then(Value::as_str) == Some(name));
        let index = match position {
            Some(index) => {
                let Value::Mapping(item) = &mut items[index] else {
                    unreachable!("check_section: every entry is a mapping")
                };
                if item.get(section.body_key()) == Some(&body) {
                    return;
                }
                item.insert(section.body_key().into(), body);
                index
            }
            None => {
                let mut item = Mapping::new();
                item.insert("name".into(), name.into());
                item.insert(section.body_key().into(), body);
                items.push(Value::Mapping(item));
                items.len() - 1
            }
        };
        let item = items[index].clone();
        self.changed = true;
        if self.whole.is_none()
            && !self.json
            && let Err(reason) = self.write_entry(section, index, position.is_some(), &item)
        {
            self.whole = Some(reason);
        }
    }

    /// Sets `current-context`.
    pub fn set_current_context(&mut self, name: &str) {
        if self.current_context() == Some(name) {
            return;
        }
        self.top_mut().insert("current-context".into(), name.into());
        self.changed = true;
        if self.whole.is_none() && !self.json {
            let line = format!("current-context: {}\n", scalar(name));
            let lines = scan(&self.text);
            match top_key_line(&self.text, &lines, "current-context") {
                Some(index) => {
                    let Line { start, end, .. } = lines[index];
                    self.text.replace_range(start..end, &line);
                }
                None => self.append(&line),
            }
        }
    }

    /// The file's new text, and whether it kept the file's layout.
    pub fn render(&self) -> (String, Layout) {
        if self.json
            && let Ok(json) = serde_json::to_value(&self.value)
            && let Ok(text) = serde_json::to_string_pretty(&json)
        {
            return (
                text + "\n",
                Layout::Whole("the file is JSON, written anew with its entries".into()),
            );
        }
        let reason = match &self.whole {
            Some(reason) => reason.clone(),
            None => match serde_norway::from_str::<Value>(&self.text) {
                Ok(parsed) if parsed == self.value => return (self.text.clone(), Layout::Kept),
                Ok(_) => "editing its text in place did not give the intended document".into(),
                Err(err) => format!("editing its text in place did not give valid YAML ({err})"),
            },
        };
        let text = serde_norway::to_string(&self.value).unwrap_or_default();
        (text, Layout::Whole(reason))
    }

    fn top_mut(&mut self) -> &mut Mapping {
        match &mut self.value {
            Value::Mapping(top) => top,
            _ => unreachable!("parse: the document is a mapping"),
        }
    }

    /// A section must be absent, null or a list of mappings, each named by a string: what
    /// kubectl reads. Anything else is refused before any change.
    fn check_section(&self, section: Section) -> Result<(), String> {
        match self.value.get(section.key()) {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Sequence(items)) => {
                for item in items {
                    if !item.is_mapping() || !item.get("name").is_some_and(Value::is_string) {
                        return Err(format!(
                            "an entry of {} is not a mapping with a name",
                            section.key()
                        ));
                    }
                }
                Ok(())
            }
            Some(_) => Err(format!("{} is not a list", section.key())),
        }
    }

    /// The text edit of [`Document::set_entry`]: entry `index` of `section` replaced
    /// (`existed`) or appended, rendered from `item`.
    fn write_entry(
        &mut self,
        section: Section,
        index: usize,
        existed: bool,
        item: &Value,
    ) -> Result<(), String> {
        let lines = scan(&self.text);
        let Some(key_line) = top_key_line(&self.text, &lines, section.key()) else {
            // No such section yet: a new one at the end.
            let text = format!("{}:\n{}", section.key(), render_entry(item, 0)?);
            self.append(&text);
            return Ok(());
        };
        let layout = section_layout(&self.text, &lines, key_line)?;
        if existed {
            let (start, end) = *layout
                .entries
                .get(index)
                .ok_or("its entries are not laid out one per `- ` line")?;
            let text = render_entry(item, layout.indent)?;
            self.text.replace_range(start..end, &text);
            return Ok(());
        }
        if layout.entries.len() != index {
            return Err("its entries are not laid out one per `- ` line".into());
        }
        match layout.entries.last() {
            Some(&(_, end)) => {
                let mut text = render_entry(item, layout.indent)?;
                if !self.text[..end].ends_with('\n') {
                    text.insert(0, '\n');
                }
                self.text.insert_str(end, &text);
            }
            None => {
                // `users:`, `users: []` or `users: null`: the key line gets the first entry.
                let Line { start, end, .. } = lines[key_line];
                let text = format!("{}:\n{}", section.key(), render_entry(item, 0)?);
                self.text.replace_range(start..end, &text);
            }
        }
        Ok(())
    }

    /// Appends `text` (whole lines) at the end of the file.
    fn append(&mut self, text: &str) {
        if !self.text.is_empty() && !self.text.ends_with('\n') {
            self.text.push('\n');
        }
        self.text.push_str(text);
    }
}

/// A line of the text: byte range (with its line break), indentation, and what it holds.
#[derive(Debug, Clone, Copy)]
struct Line {
    start: usize,
    end: usize,
    indent: usize,
    kind: Kind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Blank,
    Comment,
    Content,
}

fn scan(text: &str) -> Vec<Line> {
    let mut lines = Vec::new();
    let mut start = 0;
    for piece in text.split_inclusive('\n') {
        let content = piece.trim_end_matches(['\n', '\r']);
        let indent = content.len() - content.trim_start_matches(' ').len();
        let rest = content[indent..].trim_start();
        let kind = if rest.is_empty() {
            Kind::Blank
        } else if rest.starts_with('#') {
            Kind::Comment
        } else {
            Kind::Content
        };
        lines.push(Line {
            start,
            end: start + piece.len(),
            indent,
            kind,
        });
        start += piece.len();
    }
    lines
}

fn line_text<'a>(text: &'a str, line: &Line) -> &'a str {
    text[line.start..line.end].trim_end_matches(['\n', '\r'])
}

/// The line of the top-level `key:` (column 0), if there is one.
fn top_key_line(text: &str, lines: &[Line], key: &str) -> Option<usize> {
    lines.iter().position(|line| {
        line.kind == Kind::Content
            && line.indent == 0
            && line_text(text, line)
                .strip_prefix(key)
                .and_then(|rest| rest.strip_prefix(':'))
                .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
    })
}

/// Where a section's entries are in the text.
#[derive(Debug)]
struct SectionLayout {
    /// The column of the entries' `-`.
    indent: usize,
    /// Each entry's bytes: from its `-` line to the end of its last line that is not blank or
    /// a comment (comments and blank lines after it stay where they are).
    entries: Vec<(usize, usize)>,
}

fn section_layout(text: &str, lines: &[Line], key_line: usize) -> Result<SectionLayout, String> {
    let key = &lines[key_line];
    let inline = line_text(text, key)
        .split_once(':')
        .map(|(_, rest)| rest.trim())
        .unwrap_or("");
    let inline = if inline.starts_with('#') { "" } else { inline };
    if matches!(inline, "[]" | "null" | "~") {
        return Ok(SectionLayout {
            indent: 0,
            entries: Vec::new(),
        });
    }
    if !inline.is_empty() {
        return Err("a section is written in flow style ([…])".into());
    }
    let mut body = lines[key_line + 1..]
        .iter()
        .filter(|line| line.kind == Kind::Content)
        .peekable();
    let is_dash = |line: &Line| {
        let content = &line_text(text, line)[line.indent..];
        content == "-" || content.starts_with("- ")
    };
    let indent = match body.peek() {
        Some(first) if is_dash(first) => first.indent,
        // `users:` with nothing under it: null.
        _ => {
            return Ok(SectionLayout {
                indent: 0,
                entries: Vec::new(),
            });
        }
    };
    let mut entries: Vec<(usize, usize)> = Vec::new();
    for line in body {
        if line.indent < indent || (line.indent == indent && !is_dash(line)) {
            break;
        }
        if line.indent == indent {
            entries.push((line.start, line.end));
        } else if let Some(entry) = entries.last_mut() {
            entry.1 = line.end;
        }
    }
    Ok(SectionLayout { indent, entries })
}

/// One entry as block YAML at `indent`: `- name: …` and its body, from the serializer.
fn render_entry(item: &Value, indent: usize) -> Result<String, String> {
    let yaml = serde_norway::to_string(&Value::Sequence(vec![item.clone()]))
        .map_err(|err| format!("its entry cannot be written as YAML ({err})"))?;
    let pad = " ".repeat(indent);
    Ok(yaml
        .split_inclusive('\n')
        .map(|line| {
            if line.trim().is_empty() {
                line.to_string()
            } else {
                format!("{pad}{line}")
            }
        })
        .collect())
}

/// A string as a YAML scalar, as the serializer writes it (quoted only when it must be).
fn scalar(text: &str) -> String {
    serde_norway::to_string(&Value::String(text.to_string()))
        .map(|yaml| yaml.trim_end().to_string())
        .unwrap_or_else(|_| serde_json::to_string(text).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KUBECONFIG: &str = "\
# Managed by hand. Keep this comment.
apiVersion: v1
kind: Config
clusters:
- cluster:
    certificate-authority-data: LS0tQ0E=
    server: https://prod.example:6443   # the load balancer
  name: prod
contexts:
- context: {cluster: prod, user: legacy}
  name: prod
current-context: prod
preferences: {}
users:
# The old login, to be converted.
- name: legacy
  user:
    auth-provider:
      name: oidc
      config:
        idp-issuer-url: https://idp.example
        client-id: kubernetes
- name: static
  user:
    token: 'abc'   # quoted on purpose

# trailing comment
";

    fn exec_body() -> Value {
        serde_norway::from_str(
            "exec:\n  apiVersion: client.authentication.k8s.io/v1\n  command: kubecred\n  args: [get-token, --issuer-url=https://idp.example]\n  interactiveMode: IfAvailable\n  installHint: |\n    line one\n    line two\n",
        )
        .unwrap()
    }

    #[test]
    fn only_the_changed_entry_is_new_and_every_other_byte_stays() {
        let mut doc = Document::parse(KUBECONFIG).unwrap();
        assert_eq!(doc.entries(Section::Users).len(), 2);
        doc.set_entry(Section::Users, "legacy", exec_body());
        assert!(doc.changed());
        let (text, layout) = doc.render();
        assert_eq!(layout, Layout::Kept, "{text}");
        let before = KUBECONFIG.split("- name: legacy").collect::<Vec<_>>();
        assert!(text.starts_with(before[0]), "{text}");
        assert!(
            text.ends_with("- name: static\n  user:\n    token: 'abc'   # quoted on purpose\n\n# trailing comment\n"),
            "{text}"
        );
        assert!(!text.contains("auth-provider"), "{text}");
        let value: Value = serde_norway::from_str(&text).unwrap();
        assert_eq!(value["users"][0]["user"], exec_body());
        assert_eq!(
            value["users"][0]["user"]["exec"]["installHint"],
            "line one\nline two\n"
        );
        // The same edit again changes nothing.
        let mut again = Document::parse(&text).unwrap();
        again.set_entry(Section::Users, "legacy", exec_body());
        assert!(!again.changed());
        assert_eq!(again.render().0, text);
    }

    #[test]
    fn new_entries_are_appended_and_the_current_context_set() {
        let mut doc = Document::parse(KUBECONFIG).unwrap();
        doc.set_entry(
            Section::Clusters,
            "dev",
            serde_norway::from_str("server: https://dev.example").unwrap(),
        );
        doc.set_entry(
            Section::Contexts,
            "dev",
            serde_norway::from_str("{cluster: dev, user: legacy}").unwrap(),
        );
        doc.set_current_context("dev");
        let (text, layout) = doc.render();
        assert_eq!(layout, Layout::Kept, "{text}");
        assert!(
            text.contains(
                "  name: prod\n- name: dev\n  cluster:\n    server: https://dev.example\n"
            ),
            "{text}"
        );
        assert!(
            text.contains("current-context: dev\npreferences: {}\n"),
            "{text}"
        );
        assert!(
            text.contains("# Managed by hand. Keep this comment.\n"),
            "{text}"
        );
    }

    #[test]
    fn an_empty_file_becomes_a_kubeconfig_and_indented_sections_keep_their_indent() {
        let mut doc = Document::parse("").unwrap();
        doc.set_entry(Section::Users, "sso", exec_body());
        doc.set_current_context("sso");
        let (text, layout) = doc.render();
        assert_eq!(layout, Layout::Kept);
        assert!(
            text.starts_with("apiVersion: v1\nkind: Config\nusers:\n- name: sso\n"),
            "{text}"
        );

        let indented = "users:\n  - name: a\n    user:\n      token: x\n  - name: b\n    user: {token: y}\nkind: Config\n";
        let mut doc = Document::parse(indented).unwrap();
        doc.set_entry(Section::Users, "b", exec_body());
        doc.set_entry(Section::Users, "c", exec_body());
        let (text, layout) = doc.render();
        assert_eq!(layout, Layout::Kept, "{text}");
        assert!(text.starts_with("users:\n  - name: a\n    user:\n      token: x\n  - name: b\n    user:\n      exec:\n"), "{text}");
        assert!(text.contains("\n  - name: c\n"), "{text}");
        assert!(text.ends_with("kind: Config\n"), "{text}");

        let mut doc = Document::parse("kind: Config\nusers: []\n").unwrap();
        doc.set_entry(Section::Users, "a", exec_body());
        assert_eq!(doc.render().1, Layout::Kept);
    }

    #[test]
    fn layouts_the_text_edits_do_not_handle_are_written_whole_and_json_stays_json() {
        let flow = "users: [{name: a, user: {token: x}}]\n# gone after a whole rewrite\n";
        let mut doc = Document::parse(flow).unwrap();
        doc.set_entry(Section::Users, "a", exec_body());
        let (text, layout) = doc.render();
        assert!(
            matches!(layout, Layout::Whole(ref why) if why.contains("flow style")),
            "{layout:?}"
        );
        let value: Value = serde_norway::from_str(&text).unwrap();
        assert_eq!(value["users"][0]["user"], exec_body());

        let json = "{\n    \"kind\": \"Config\",\n    \"users\": [{\"name\": \"a\", \"user\": {\"token\": \"x\"}}]\n}\n";
        let mut doc = Document::parse(json).unwrap();
        doc.set_entry(Section::Users, "a", exec_body());
        let (text, layout) = doc.render();
        assert!(matches!(layout, Layout::Whole(_)));
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["users"][0]["user"]["exec"]["command"], "kubecred");
    }

    #[test]
    fn what_kubectl_cannot_read_is_refused() {
        assert!(Document::parse("users: [a\n").is_err());
        assert!(Document::parse("- a\n- b\n").is_err());
        assert!(
            Document::parse("users: {a: 1}\n")
                .unwrap_err()
                .contains("users is not a list")
        );
        assert!(
            Document::parse("users:\n- user: {token: x}\n")
                .unwrap_err()
                .contains("with a name")
        );
    }
}
