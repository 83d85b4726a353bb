//! Go command lines read the way the peers' own parser reads them: spf13/pflag under cobra, which
//! both int128/kubelogin and Azure's kubelogin use. `convert-kubeconfig` must know exactly what
//! a peer's stanza means to that peer before it writes kubecred's equivalent, and pflag's rules
//! differ from clap's in ways that change meaning: a switch takes `--flag=false` (and `t`, `TRUE`,
//! `0`, … as Go's `strconv.ParseBool`), a flag that takes a value takes the next word whatever it
//! looks like, `-v1` is the shorthand `v` with the value `1`, a slice flag splits its value as
//! CSV, a map flag (`stringToString`) splits only a value with several `=`, and cobra finds the
//! subcommand among flags that may come before it.
//!
//! Only reading: no help, no defaults. The callers (`kubelogin/command_line.rs`,
//! `commands/convert/azure.rs`) hold each tool's flag table and what the values mean.

/// One flag of a Go command: its long name, its one-letter shorthand, and whether it is a
/// boolean (pflag's `NoOptDefVal` "true": `--flag` alone sets it, a value only with `=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Flag {
    pub name: &'static str,
    pub short: Option<char>,
    pub boolean: bool,
}

impl Flag {
    /// A flag that takes a value.
    pub(crate) const fn value(name: &'static str) -> Flag {
        Flag {
            name,
            short: None,
            boolean: false,
        }
    }

    /// A boolean flag.
    pub(crate) const fn boolean(name: &'static str) -> Flag {
        Flag {
            name,
            short: None,
            boolean: true,
        }
    }

    /// The same flag with a one-letter shorthand.
    pub(crate) const fn with_short(self, short: char) -> Flag {
        Flag {
            short: Some(short),
            ..self
        }
    }
}

/// A command line read against a flag table: every occurrence in order (a boolean's value is
/// checked and given as `true` or `false`), and the words that are not flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub flags: Vec<(&'static str, String)>,
    pub positionals: Vec<String>,
}

impl Parsed {
    /// The last value given to `name` (pflag: a later occurrence replaces an earlier one).
    pub(crate) fn last<'a>(&'a self, name: &'a str) -> Option<&'a str> {
        self.all(name).last()
    }

    /// Every value given to `name`, in order.
    pub(crate) fn all<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.flags
            .iter()
            .filter(move |(flag, _)| *flag == name)
            .map(|(_, value)| value.as_str())
    }

    /// Whether `name` was given at all.
    pub(crate) fn given(&self, name: &str) -> bool {
        self.all(name).next().is_some()
    }

    /// A boolean flag's value: its last occurrence, false when not given.
    pub(crate) fn on(&self, name: &str) -> bool {
        self.last(name) == Some("true")
    }
}

/// Reads `words` (the arguments after the command's own name) against `table`, as pflag's
/// `FlagSet.Parse` does with interspersed arguments. The error is pflag's complaint, worded
/// for a person.
pub(crate) fn parse(words: &[String], table: &[Flag]) -> Result<Parsed, String> {
    let mut parsed = Parsed::default();
    for read in read(words, table) {
        match read.item {
            Item::Flag { name, value } => parsed.flags.push((name, value.to_string())),
            Item::Argument(word) => parsed.positionals.push(word.to_string()),
            Item::EndOfFlags => {}
            Item::Refused { why, .. } => return Err(why),
        }
    }
    Ok(parsed)
}

/// One thing pflag reads on a command line (its values borrowed from the words).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Item<'w> {
    /// A flag of the table and its value (a boolean's checked, and given as `true` or `false`).
    Flag { name: &'static str, value: &'w str },
    /// A word that is not a flag.
    Argument(&'w str),
    /// `--`: every word after it is an argument.
    EndOfFlags,
    /// What pflag refuses (an unknown flag, a value missing or not a boolean): its complaint,
    /// worded for a person, and the flag of the table it is about, if any.
    Refused {
        why: String,
        name: Option<&'static str>,
    },
}

/// An [`Item`] and the words it was read from (`words[range]`: a flag and the next word when
/// that is its value; several shorthands of one word share it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Read<'w> {
    pub item: Item<'w>,
    pub words: std::ops::Range<usize>,
}

/// Every item of `words` read against `table`, in order, as pflag reads them; where pflag would
/// stop at a refusal, the reading goes on with the next word, so that a caller may take the
/// rest (kubecred's run of a kubelogin command line: `kubelogin/command_line.rs`).
pub(crate) fn read<'w>(words: &'w [String], table: &[Flag]) -> Vec<Read<'w>> {
    let mut out = Vec::new();
    let mut at = 0;
    while at < words.len() {
        let word = &words[at];
        let start = at;
        at += 1;
        if word == "--" {
            out.push(Read {
                item: Item::EndOfFlags,
                words: start..at,
            });
            out.extend((at..words.len()).map(|i| Read {
                item: Item::Argument(&words[i]),
                words: i..i + 1,
            }));
            break;
        }
        if let Some(long) = word.strip_prefix("--") {
            let item = long_flag(long, words, &mut at, table);
            out.push(Read {
                item,
                words: start..at,
            });
            continue;
        }
        match word.strip_prefix('-').filter(|s| !s.is_empty()) {
            Some(shorts) => shorthands(word, shorts, words, &mut at, table, &mut out),
            None => out.push(Read {
                item: Item::Argument(word),
                words: start..at,
            }),
        }
    }
    out
}

/// `--name`, `--name=value` or `--name value` (`at` is past the flag's word; a value from the
/// next word moves it on).
fn long_flag<'w>(long: &'w str, words: &'w [String], at: &mut usize, table: &[Flag]) -> Item<'w> {
    let (name, inline) = match long.split_once('=') {
        Some((name, value)) => (name, Some(value)),
        None => (long, None),
    };
    let Some(flag) = table.iter().find(|flag| flag.name == name) else {
        return refused(format!("unknown flag --{name}"), None);
    };
    let value = match (inline, flag.boolean) {
        (Some(value), _) => value,
        (None, true) => "true",
        (None, false) => match words.get(*at) {
            Some(next) => {
                *at += 1;
                next
            }
            None => return refused(format!("flag --{name} needs a value"), Some(flag.name)),
        },
    };
    flag_item(flag, value)
}

/// `-abc`: shorthands in a row; one that takes a value takes the rest of the word (after an
/// `=`, if any), or else the next word.
fn shorthands<'w>(
    word: &str,
    shorts: &'w str,
    words: &'w [String],
    at: &mut usize,
    table: &[Flag],
    out: &mut Vec<Read<'w>>,
) {
    let start = *at - 1;
    for (offset, short) in shorts.char_indices() {
        let Some(flag) = table.iter().find(|flag| flag.short == Some(short)) else {
            out.push(Read {
                item: refused(format!("unknown shorthand flag '{short}' in {word}"), None),
                words: start..*at,
            });
            return;
        };
        let after = &shorts[offset + short.len_utf8()..];
        if flag.boolean {
            let value = after.strip_prefix('=');
            out.push(Read {
                item: flag_item(flag, value.unwrap_or("true")),
                words: start..*at,
            });
            if value.is_some() {
                return;
            }
            continue;
        }
        let item = if !after.is_empty() {
            flag_item(flag, after.strip_prefix('=').unwrap_or(after))
        } else if let Some(next) = words.get(*at) {
            *at += 1;
            flag_item(flag, next)
        } else {
            refused(
                format!("flag -{short} (--{}) needs a value", flag.name),
                Some(flag.name),
            )
        };
        out.push(Read {
            item,
            words: start..*at,
        });
        return;
    }
}

/// One occurrence; a boolean's value must be one of Go's spellings.
fn flag_item<'w>(flag: &Flag, value: &'w str) -> Item<'w> {
    if !flag.boolean {
        return Item::Flag {
            name: flag.name,
            value,
        };
    }
    match parse_bool(value) {
        Ok(on) => Item::Flag {
            name: flag.name,
            value: if on { "true" } else { "false" },
        },
        Err(why) => refused(format!("--{}={value}: {why}", flag.name), Some(flag.name)),
    }
}

fn refused<'w>(why: String, name: Option<&'static str>) -> Item<'w> {
    Item::Refused { why, name }
}

/// Where cobra finds the subcommand among `words`: the first word that is neither a flag nor a
/// flag's value, as `stripFlags` tells them apart with the root command's flags (`root`; an
/// unknown `--flag` without `=` is taken to have a value, as cobra does). `None`: there is none.
pub(crate) fn subcommand_at(words: &[String], root: &[Flag]) -> Option<usize> {
    let boolean_long = |name: &str| root.iter().any(|f| f.name == name && f.boolean);
    let boolean_short = |c: char| root.iter().any(|f| f.short == Some(c) && f.boolean);
    let mut at = 0;
    while at < words.len() {
        let word = &words[at];
        if word == "--" {
            return None;
        }
        let takes_next = if let Some(long) = word.strip_prefix("--") {
            !long.contains('=') && !boolean_long(long)
        } else if let Some(short) = word.strip_prefix('-') {
            let mut chars = short.chars();
            match (chars.next(), chars.next()) {
                (Some(c), None) => !boolean_short(c),
                _ => false,
            }
        } else if !word.is_empty() {
            return Some(at);
        } else {
            false
        };
        at += if takes_next { 2 } else { 1 };
    }
    None
}

/// Go's `strconv.ParseBool`, which pflag's booleans use: `1 t T TRUE true True` and
/// `0 f F FALSE false False`, nothing else.
pub(crate) fn parse_bool(value: &str) -> Result<bool, String> {
    match value {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Ok(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Ok(false),
        _ => Err(format!(
            "{value:?} is not a boolean (Go reads 1, t, T, TRUE, true, True and 0, f, F, FALSE, false, False)"
        )),
    }
}

/// A `stringSlice` value (`--oidc-extra-scope=a,b`): one line of CSV, as Go's `encoding/csv`
/// reads it (fields in double quotes may hold commas, `""` is a quote); empty is no value.
pub(crate) fn csv_fields(value: &str) -> Result<Vec<String>, String> {
    if value.is_empty() {
        return Ok(Vec::new());
    }
    let mut fields = Vec::new();
    let mut chars = value.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err(format!("{value:?}: a quoted field is not closed")),
                }
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(',') => fields.push(field),
                Some(_) => return Err(format!("{value:?}: text after a closing quote")),
            }
        } else {
            loop {
                match chars.next() {
                    Some(',') => {
                        fields.push(std::mem::take(&mut field));
                        break;
                    }
                    Some('"') => {
                        return Err(format!("{value:?}: a quote inside an unquoted field"));
                    }
                    Some(c) => field.push(c),
                    None => {
                        fields.push(field);
                        return Ok(fields);
                    }
                }
            }
        }
    }
}

/// A `stringToString` value (`--oidc-request-header=a=1,b=2`) as pflag reads it: with one `=`
/// the whole value is one pair (surrounding quotes dropped: `acr_values=a,b` keeps its comma),
/// with more it is CSV, each field a pair.
pub(crate) fn string_to_string(value: &str) -> Result<Vec<(String, String)>, String> {
    let pairs = match value.matches('=').count() {
        0 => return Err(format!("{value:?} is not KEY=VALUE")),
        1 => vec![value.trim_matches('"').to_string()],
        _ => csv_fields(value)?,
    };
    pairs
        .into_iter()
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => Ok((key.to_string(), value.to_string())),
            None => Err(format!("{pair:?} is not KEY=VALUE")),
        })
        .collect()
}

/// The map a `stringToString` flag holds after all its occurrences: the first replaces the
/// default, later ones add to it, a key given again keeps its last value. In first-seen order.
pub(crate) fn string_map<'a>(
    values: impl Iterator<Item = &'a str>,
) -> Result<Vec<(String, String)>, String> {
    let mut map: Vec<(String, String)> = Vec::new();
    for value in values {
        for (key, item) in string_to_string(value)? {
            match map.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = item,
                None => map.push((key, item)),
            }
        }
    }
    Ok(map)
}

/// A Go `time.Duration` as `time.ParseDuration` takes it (`90s`, `1h30m`, `1.5h`, `300ms`,
/// `0`), checked only: the callers keep no duration of Azure's.
pub(crate) fn is_go_duration(value: &str) -> bool {
    let body = value.strip_prefix(['-', '+']).unwrap_or(value);
    if body == "0" {
        return true;
    }
    let mut rest = body;
    if rest.is_empty() {
        return false;
    }
    while !rest.is_empty() {
        let number_end = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..number_end];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return false;
        }
        rest = &rest[number_end..];
        let unit = ["ns", "us", "µs", "μs", "ms", "s", "m", "h"]
            .iter()
            .filter(|unit| rest.starts_with(**unit))
            .max_by_key(|unit| unit.len());
        match unit {
            Some(unit) => rest = &rest[unit.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    const TABLE: [Flag; 5] = [
        Flag::value("issuer"),
        Flag::boolean("legacy"),
        Flag::value("v").with_short('v'),
        Flag::value("login").with_short('l'),
        Flag::boolean("help").with_short('h'),
    ];

    #[test]
    fn flags_are_read_as_pflag_reads_them() {
        let parsed = parse(
            &words("get-token --issuer https://i --legacy=TRUE -v1 -l=spn -ldevicecode --login -x -- --not-a-flag"),
            &TABLE,
        )
        .unwrap();
        assert_eq!(
            parsed.flags,
            [
                ("issuer", "https://i".to_string()),
                ("legacy", "true".into()),
                ("v", "1".into()),
                ("login", "spn".into()),
                ("login", "devicecode".into()),
                // A value is the next word, whatever it looks like.
                ("login", "-x".into()),
            ]
        );
        assert_eq!(parsed.positionals, ["get-token", "--not-a-flag"]);
        assert_eq!(parsed.last("login"), Some("-x"));
        assert!(parsed.on("legacy"));
        // A switch takes a value only with `=`: `--legacy false` is the switch and a word.
        let parsed = parse(&words("--legacy false"), &TABLE).unwrap();
        assert!(parsed.on("legacy"));
        assert_eq!(parsed.positionals, ["false"]);
        for off in ["0", "f", "F", "FALSE", "false", "False"] {
            assert!(
                !parse(&words(&format!("--legacy={off}")), &TABLE)
                    .unwrap()
                    .on("legacy")
            );
        }
        for on in ["1", "t", "T", "TRUE", "true", "True"] {
            assert!(
                parse(&words(&format!("--legacy={on}")), &TABLE)
                    .unwrap()
                    .on("legacy")
            );
        }
        assert!(
            parse(&words("--legacy=yes"), &TABLE)
                .unwrap_err()
                .contains("not a boolean")
        );
        assert!(
            parse(&words("--bogus"), &TABLE)
                .unwrap_err()
                .contains("unknown flag --bogus")
        );
        assert!(
            parse(&words("--issuer"), &TABLE)
                .unwrap_err()
                .contains("needs a value")
        );
        assert!(parse(&words("-q"), &TABLE).unwrap_err().contains("'q'"));
        // -hv 2: the boolean, then the shorthand that takes the next word.
        let parsed = parse(&words("-hv 2"), &TABLE).unwrap();
        assert_eq!(parsed.flags, [("help", "true".into()), ("v", "2".into())]);
    }

    #[test]
    fn a_refusal_is_read_and_the_reading_goes_on() {
        let words = words("--bogus x --legacy=yes -v 2 -hv1 -- --issuer");
        let items: Vec<(Item, std::ops::Range<usize>)> = read(&words, &TABLE)
            .into_iter()
            .map(|read| (read.item, read.words))
            .collect();
        let flag = |name: &'static str, value: &'static str| Item::Flag { name, value };
        assert_eq!(
            items,
            [
                (refused("unknown flag --bogus".into(), None), 0..1),
                (Item::Argument("x"), 1..2),
                (
                    refused(
                        "--legacy=yes: \"yes\" is not a boolean (Go reads 1, t, T, TRUE, true, True and 0, f, F, FALSE, false, False)".into(),
                        Some("legacy")
                    ),
                    2..3
                ),
                (flag("v", "2"), 3..5),
                // Shorthands in one word share it.
                (flag("help", "true"), 5..6),
                (flag("v", "1"), 5..6),
                (Item::EndOfFlags, 6..7),
                (Item::Argument("--issuer"), 7..8),
            ]
        );
    }

    #[test]
    fn the_subcommand_is_found_among_flags_before_it() {
        assert_eq!(subcommand_at(&words("-v1 get-token"), &TABLE), Some(1));
        assert_eq!(subcommand_at(&words("-v 1 get-token"), &TABLE), Some(2));
        assert_eq!(subcommand_at(&words("--legacy get-token"), &TABLE), Some(1));
        // An unknown flag without `=` is taken to have a value, as cobra takes it.
        assert_eq!(subcommand_at(&words("--x y get-token"), &TABLE), Some(2));
        assert_eq!(
            subcommand_at(&words("--issuer=i get-token"), &TABLE),
            Some(1)
        );
        assert_eq!(subcommand_at(&words("-- get-token"), &TABLE), None);
        assert_eq!(subcommand_at(&words("-v1"), &TABLE), None);
    }

    #[test]
    fn slices_and_maps_split_as_pflag_splits_them() {
        assert_eq!(csv_fields("email,profile").unwrap(), ["email", "profile"]);
        assert_eq!(csv_fields(r#""a,b",c"#).unwrap(), ["a,b", "c"]);
        assert_eq!(csv_fields(r#""say ""hi""""#).unwrap(), [r#"say "hi""#]);
        assert!(csv_fields(r#"a"b"#).is_err());
        assert!(csv_fields("").unwrap().is_empty());
        assert_eq!(
            string_to_string("acr_values=a,b").unwrap(),
            [("acr_values".to_string(), "a,b".to_string())]
        );
        assert_eq!(
            string_to_string("a=1,b=2").unwrap(),
            [("a".to_string(), "1".into()), ("b".into(), "2".into())]
        );
        assert!(string_to_string("a=1,b,c=2").is_err());
        assert_eq!(
            string_to_string("a=1,b").unwrap(),
            [("a".to_string(), "1,b".to_string())]
        );
        assert!(string_to_string("plain").is_err());
        assert_eq!(
            string_map(["a=1,b=2", "a=3"].into_iter()).unwrap(),
            [("a".to_string(), "3".into()), ("b".into(), "2".into())]
        );
    }

    #[test]
    fn go_durations() {
        for ok in ["90s", "1h30m", "1.5h", "300ms", "0", "-1s", "2us", "1µs"] {
            assert!(is_go_duration(ok), "{ok}");
        }
        for bad in ["", "90", "1d", "s", "1..5s", "abc"] {
            assert!(!is_go_duration(bad), "{bad}");
        }
    }
}
