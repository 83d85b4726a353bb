//! The AWS shared config and credentials files (`~/.aws/config` and `~/.aws/credentials`, or
//! where `AWS_CONFIG_FILE` and `AWS_SHARED_CREDENTIALS_FILE` say), read as the AWS CLI reads them
//! (botocore's `configloader`, on Python's `configparser`): `[profile NAME]` and `[default]`
//! sections in the config file, `[NAME]` in the credentials file, whose keys win over the config
//! file's key by key; `[sso-session NAME]` and `[services NAME]` sections; `key = value` or
//! `key: value` lines, keys in any case, `#` and `;` comment lines, indented lines continuing the
//! value above, and a value that starts on the next line read as nested `key = value` pairs
//! (`sts =` then `  endpoint_url = …`). A file that does not exist is an empty one; one that
//! cannot be parsed is an error that names the file and the line.

use super::vars;
use crate::error::{Exit, fail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// One section's keys (lower case) and values (trimmed). A value written as nested pairs is in
/// `nested`, under its key.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Section {
    pub values: BTreeMap<String, String>,
    pub nested: BTreeMap<String, BTreeMap<String, String>>,
}

impl Section {
    /// A key's value, if set and not empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.values
            .get(key)
            .map(String::as_str)
            .filter(|value| !value.is_empty())
    }

    fn merge(&mut self, other: Section) {
        self.values.extend(other.values);
        self.nested.extend(other.nested);
    }
}

/// Both files, read.
#[derive(Debug, Default)]
pub(super) struct SharedFiles {
    pub config_path: PathBuf,
    pub credentials_path: PathBuf,
    /// The profiles of both files, the credentials file's keys over the config file's.
    profiles: BTreeMap<String, Section>,
    /// Whether each profile is in the credentials file (for messages).
    in_credentials_file: BTreeMap<String, bool>,
    sso_sessions: BTreeMap<String, Section>,
    services: BTreeMap<String, Section>,
}

impl SharedFiles {
    /// Reads both files, where the environment puts them (`~` is the home directory).
    pub fn load(
        env: &dyn Fn(&str) -> Option<String>,
        home: Option<&Path>,
    ) -> anyhow::Result<SharedFiles> {
        let config_path = file_path(env, home, vars::AWS_CONFIG_FILE, "config");
        let credentials_path =
            file_path(env, home, vars::AWS_SHARED_CREDENTIALS_FILE, "credentials");
        let config = match &config_path {
            Some(path) => read(path)?,
            None => Vec::new(),
        };
        let credentials = match &credentials_path {
            Some(path) => read(path)?,
            None => Vec::new(),
        };
        let config_path = config_path.unwrap_or_else(|| PathBuf::from("~/.aws/config"));
        let credentials_path =
            credentials_path.unwrap_or_else(|| PathBuf::from("~/.aws/credentials"));
        Ok(SharedFiles::from_sections(
            config_path,
            credentials_path,
            config,
            credentials,
        ))
    }

    #[cfg(test)]
    pub fn from_texts(config: &str, credentials: &str) -> SharedFiles {
        SharedFiles::from_sections(
            PathBuf::from("/home/u/.aws/config"),
            PathBuf::from("/home/u/.aws/credentials"),
            parse(config).unwrap(),
            parse(credentials).unwrap(),
        )
    }

    fn from_sections(
        config_path: PathBuf,
        credentials_path: PathBuf,
        config: Vec<(String, Section)>,
        credentials: Vec<(String, Section)>,
    ) -> SharedFiles {
        let mut files = SharedFiles {
            config_path,
            credentials_path,
            ..SharedFiles::default()
        };
        for (name, section) in config {
            if name == "default" {
                merge_into(&mut files.profiles, "default", section);
                continue;
            }
            // botocore splits a section's name as a shell would: `[profile "my name"]`.
            let words = shlex::split(&name).unwrap_or_default();
            let [kind, named] = words.as_slice() else {
                continue;
            };
            let map = match kind.as_str() {
                "profile" => &mut files.profiles,
                "sso-session" => &mut files.sso_sessions,
                "services" => &mut files.services,
                // Other sections (`[preview]`) are not profiles: botocore ignores them too.
                _ => continue,
            };
            merge_into(map, named, section);
        }
        for (name, section) in credentials {
            files.in_credentials_file.insert(name.clone(), true);
            merge_into(&mut files.profiles, &name, section);
        }
        files
    }

    pub fn profile(&self, name: &str) -> Option<&Section> {
        self.profiles.get(name)
    }

    pub fn sso_session(&self, name: &str) -> Option<&Section> {
        self.sso_sessions.get(name)
    }

    pub fn services(&self, name: &str) -> Option<&Section> {
        self.services.get(name)
    }

    /// "~/.aws/config or ~/.aws/credentials" as the files are named here, for messages.
    pub fn both(&self) -> String {
        format!(
            "{} or {}",
            self.config_path.display(),
            self.credentials_path.display()
        )
    }

    /// The file a profile's keys are in, for messages: the credentials file when it has the
    /// profile, else the config file.
    pub fn file_of(&self, profile: &str) -> &Path {
        if self.in_credentials_file.contains_key(profile) {
            &self.credentials_path
        } else {
            &self.config_path
        }
    }
}

fn merge_into(map: &mut BTreeMap<String, Section>, name: &str, section: Section) {
    map.entry(name.to_string()).or_default().merge(section);
}

/// The file a variable names (`~` expanded), else `~/.aws/<name>`; `None` when that needs a home
/// directory and none is known (the file is then not there: botocore would find none either).
fn file_path(
    env: &dyn Fn(&str) -> Option<String>,
    home: Option<&Path>,
    variable: &str,
    name: &str,
) -> Option<PathBuf> {
    match env(variable).filter(|value| !value.is_empty()) {
        Some(value) => match value.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with(['/', '\\']) => {
                Some(home?.join(rest.trim_start_matches(['/', '\\'])))
            }
            _ => Some(PathBuf::from(value)),
        },
        None => Some(home?.join(".aws").join(name)),
    }
}

/// A file's sections, in order; none when it does not exist.
fn read(path: &Path) -> anyhow::Result<Vec<(String, Section)>> {
    let bytes = match std::fs::read(path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(err) => {
            return Err(fail(
                Exit::Input,
                format!(
                    "cannot read the AWS file {}: {err}; check its permissions",
                    path.display()
                ),
            ));
        }
    };
    let text = String::from_utf8(bytes).map_err(|_| {
        fail(
            Exit::Input,
            format!(
                "the AWS file {} is not UTF-8 text; fix it (the AWS CLI cannot read it either)",
                path.display()
            ),
        )
    })?;
    parse(&text).map_err(|ParseError { line, reason }| {
        fail(
            Exit::Input,
            format!(
                "the AWS file {} cannot be read: line {line}: {reason}; fix that line (the AWS CLI cannot read it either)",
                path.display()
            ),
        )
    })
}

#[derive(Debug, PartialEq, Eq)]
pub(super) struct ParseError {
    pub line: usize,
    pub reason: &'static str,
}

/// An INI text as `configparser` reads it, with botocore's nested values.
pub(super) fn parse(text: &str) -> Result<Vec<(String, Section)>, ParseError> {
    // The key whose value is being read, with its indentation: a deeper-indented line continues it.
    struct Open {
        key: String,
        indent: usize,
        value: String,
        line: usize,
    }
    let mut sections: Vec<(String, Section)> = Vec::new();
    let mut open: Option<Open> = None;

    fn close(
        open: Option<Open>,
        section: Option<&mut (String, Section)>,
    ) -> Result<(), ParseError> {
        let (Some(open), Some((_, section))) = (open, section) else {
            return Ok(());
        };
        if open.value.starts_with('\n') {
            // botocore: a value that starts on the next line is `key = value` pairs.
            let mut nested = BTreeMap::new();
            for line in open.value.lines().map(str::trim).filter(|l| !l.is_empty()) {
                let (key, value) = line.split_once('=').ok_or(ParseError {
                    line: open.line,
                    reason: "a nested value's line has no '='",
                })?;
                nested.insert(key.trim().to_string(), value.trim().to_string());
            }
            section.nested.insert(open.key.clone(), nested);
        }
        section.values.insert(open.key, open.value);
        Ok(())
    }

    for (index, raw) in text.lines().enumerate() {
        let number = index + 1;
        let line = raw.trim_end_matches('\r');
        let trimmed = line.trim();
        let indent = line.len() - line.trim_start().len();
        if trimmed.starts_with('#') || trimmed.starts_with(';') {
            continue;
        }
        if trimmed.is_empty() {
            // configparser keeps empty lines inside a value; they change nothing botocore reads.
            continue;
        }
        if let Some(value) = open.as_mut()
            && indent > value.indent
        {
            value.value.push('\n');
            value.value.push_str(trimmed);
            continue;
        }
        if trimmed.starts_with('[') {
            close(open.take(), sections.last_mut())?;
            let name = trimmed
                .strip_prefix('[')
                .and_then(|rest| rest.split_once(']'))
                .map(|(name, _)| name)
                .ok_or(ParseError {
                    line: number,
                    reason: "a section header without ']'",
                })?;
            sections.push((name.to_string(), Section::default()));
            continue;
        }
        if sections.is_empty() {
            return Err(ParseError {
                line: number,
                reason: "a line before the first [section]",
            });
        }
        let delimiter = trimmed.find(['=', ':']).ok_or(ParseError {
            line: number,
            reason: "neither a [section], a key = value, nor a comment",
        })?;
        let key = trimmed[..delimiter].trim().to_lowercase();
        if key.is_empty() {
            return Err(ParseError {
                line: number,
                reason: "a value without a key",
            });
        }
        close(open.take(), sections.last_mut())?;
        open = Some(Open {
            key,
            indent,
            value: trimmed[delimiter + 1..].trim().to_string(),
            line: number,
        });
    }
    close(open.take(), sections.last_mut())?;
    Ok(sections)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(text: &str, name: &str) -> Section {
        parse(text)
            .unwrap()
            .into_iter()
            .find(|(n, _)| n == name)
            .unwrap()
            .1
    }

    #[test]
    fn keys_values_comments_and_nested_values_are_read_as_botocore_reads_them() {
        let text = "# comment\n[profile dev]\nRegion = eu-west-1\n; another\nrole_arn: arn:aws:iam::1:role/r\n  continued\nservices = s\n\n[services s]\nsts =\n  endpoint_url = http://127.0.0.1:9\n  other = x\n";
        let dev = section(text, "profile dev");
        assert_eq!(dev.get("region"), Some("eu-west-1"));
        assert_eq!(dev.values["role_arn"], "arn:aws:iam::1:role/r\ncontinued");
        let services = section(text, "services s");
        assert_eq!(services.nested["sts"]["endpoint_url"], "http://127.0.0.1:9");
        assert_eq!(services.nested["sts"]["other"], "x");
    }

    #[test]
    fn an_empty_value_is_unset() {
        let text = "[default]\nregion =\naws_access_key_id = AKID\n";
        let default = section(text, "default");
        assert_eq!(default.get("region"), None);
        assert_eq!(default.get("aws_access_key_id"), Some("AKID"));
    }

    #[test]
    fn malformed_lines_are_errors_with_their_line() {
        assert_eq!(
            parse("region = x\n").unwrap_err(),
            ParseError {
                line: 1,
                reason: "a line before the first [section]"
            }
        );
        assert_eq!(
            parse("[default]\nregion = x\njust words\n").unwrap_err(),
            ParseError {
                line: 3,
                reason: "neither a [section], a key = value, nor a comment"
            }
        );
        assert_eq!(
            parse("[default\n").unwrap_err(),
            ParseError {
                line: 1,
                reason: "a section header without ']'"
            }
        );
        assert_eq!(
            parse("[s]\nsts =\n  no delimiter here\n").unwrap_err().line,
            2
        );
    }

    #[test]
    fn the_credentials_file_wins_key_by_key_and_other_sections_are_not_profiles() {
        let files = SharedFiles::from_texts(
            "[default]\nregion = eu-west-1\naws_access_key_id = FROMCONFIG\n[preview]\nx = 1\n[profile default]\noutput = json\n",
            "[default]\naws_access_key_id = FROMCREDENTIALS\naws_secret_access_key = s\n[other]\naws_access_key_id = O\n",
        );
        let default = files.profile("default").unwrap();
        assert_eq!(default.get("aws_access_key_id"), Some("FROMCREDENTIALS"));
        assert_eq!(default.get("region"), Some("eu-west-1"));
        assert_eq!(default.get("output"), Some("json"));
        assert!(files.profile("preview").is_none());
        assert_eq!(
            files.file_of("other"),
            Path::new("/home/u/.aws/credentials")
        );
    }

    #[test]
    fn the_files_are_where_the_variables_say_with_the_home_directory_for_tilde() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".aws")).unwrap();
        std::fs::write(dir.path().join(".aws/config"), "[profile a]\nregion = r1\n").unwrap();
        std::fs::write(dir.path().join("creds"), "[b]\naws_access_key_id = K\n").unwrap();
        let env =
            |name: &str| (name == vars::AWS_SHARED_CREDENTIALS_FILE).then(|| "~/creds".into());
        let files = SharedFiles::load(&env, Some(dir.path())).unwrap();
        assert_eq!(files.profile("a").unwrap().get("region"), Some("r1"));
        assert_eq!(
            files.profile("b").unwrap().get("aws_access_key_id"),
            Some("K")
        );
        assert_eq!(files.credentials_path, dir.path().join("creds"));

        std::fs::write(dir.path().join(".aws/config"), "[profile a]\n= x\n").unwrap();
        let err = SharedFiles::load(&env, Some(dir.path())).unwrap_err();
        assert_eq!(
            crate::error::one_line(&err),
            format!(
                "the AWS file {} cannot be read: line 2: a value without a key; fix that line (the AWS CLI cannot read it either)",
                dir.path().join(".aws/config").display()
            )
        );
        assert_eq!(crate::error::exit_code_of(&err), Exit::Input);

        // Without a home directory there are no files, as for botocore.
        let nothing = |_: &str| None;
        let files = SharedFiles::load(&nothing, None).unwrap();
        assert!(files.profile("default").is_none());
        assert_eq!(files.both(), "~/.aws/config or ~/.aws/credentials");
    }
}
