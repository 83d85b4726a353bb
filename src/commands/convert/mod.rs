//! `kubecred convert-kubeconfig`: switches the users of the kubeconfig kubectl reads from
//! `auth-provider: oidc`, int128/kubelogin and Azure's kubelogin to kubecred stanzas, and carries
//! their tokens into kubecred's cache, so that the next kubectl call logs nobody in.
//!
//! In three steps, so that nothing is half done:
//! 1. **Read and plan, writing nothing.** Every file (`--kubeconfig`, else each of `$KUBECONFIG`,
//!    else `~/.kube/config`: `kubeconfig::Kubeconfig`) is parsed first: one that cannot be is
//!    the one error line, before any change. Each user is planned (`plan.rs`, made by
//!    `sources.rs` and `azure.rs`: the old stanza read as the program it runs reads it) and its
//!    new stanza resolved with the stanza's args and env exactly as get-token will resolve it
//!    when kubectl runs it (`stanza::resolve`) — so the cache entry the tokens go to is the one
//!    get-token will read, a stanza kubecred would refuse is never written, and one that would
//!    read otherwise than kubelogin reads the old is left (`sources::differs_from_kubelogin`). A user is changed in the file that defines it (kubectl uses the
//!    first definition of a name; later ones are left alone and said so).
//! 2. **Carry the tokens** (`acquire::adopt`: verified, saved under the entry's lock, with the
//!    configured storage): from the kubeconfig (auth-provider) or kubelogin's cache, the entry
//!    kubelogin keys on the stanza's own settings (`kubelogin_cache.rs`). A user whose tokens cannot be checked now (the provider is
//!    unreachable) is left unconverted — its tokens would be lost otherwise — to be converted by
//!    the next run.
//! 3. **Write** every changed file together (`Kubeconfig::write`: a 0600 backup beside each,
//!    atomic replace, the mode kept; all or none), each user's `exec` the typed stanza
//!    (`stanza::kubecred_stanza`), each file edited in place where its layout allows.
//!
//! The report (stdout: kubectl never runs this) has one line per user — converted, with what
//! was carried and where to, or why not, or skipped and why — and one per file. `--dry-run`
//! does step 1 and makes step 2's decisions (`acquire::preview`: the same cache read, the ID
//! token's claims checked, all but its signature, which would fetch and cache the provider's
//! keys), so that it says what the real run will, and writes nothing. A second run finds
//! kubecred stanzas and changes nothing.

mod aws;
mod azure;
mod gke;
mod kubelogin_cache;
mod plan;
#[cfg(test)]
mod readme_tables;
mod sources;

use super::stanza::{self, Unresolved};
use crate::acquire::{self, Adopted};
use crate::cli::ConvertArgs;
use crate::clock::Clock;
use crate::config::Config;
use crate::error::{Exit, fail, one_line};
use crate::exec_credential::{ExecInfo, V1};
use crate::kubeconfig::{self, Change, ExecStanza, Kubeconfig, Layout, LoadError, Section};
use chrono::{DateTime, Utc};
use plan::{Conversion, Plan, Tokens};
use serde_norway::{Mapping, Value};
use std::fmt::Write;

pub(super) fn run(args: &ConvertArgs, clock: &dyn Clock) -> anyhow::Result<Option<String>> {
    let mut files = load(args)?;
    let mut users = select(&files, &args.users)?;
    let (command, command_note) = stanza_command();

    // 1. Plans and settings.
    for user in &mut users {
        let step = std::mem::replace(&mut user.step, Step::Skipped(String::new()));
        user.step = match step {
            Step::Planned(conversion) => {
                match stanza::resolve(&conversion.args, &conversion.env, ExecInfo::absent()) {
                    Ok(config) => match conversion
                        .kubelogin
                        .as_ref()
                        .and_then(|line| sources::differs_from_kubelogin(&config, line))
                    {
                        Some(difference) => {
                            Step::Skipped(format!("stays with int128/kubelogin: {difference}"))
                        }
                        None => Step::Ready {
                            conversion,
                            config: Box::new(config),
                        },
                    },
                    Err(refused) => Step::Skipped(format!(
                        "kubecred would refuse the converted stanza: {}",
                        match refused {
                            Unresolved::NotGetToken => {
                                "the converted stanza does not run get-token".into()
                            }
                            Unresolved::Usage(line) => line,
                            Unresolved::Settings(err) => one_line(&err),
                        }
                    )),
                }
            }
            other => other,
        };
    }

    // 2. Tokens.
    for user in &mut users {
        let Step::Ready { conversion, config } = &user.step else {
            continue;
        };
        match carry(config, conversion, args.dry_run, clock) {
            Ok(text) => user.carried = Some(text),
            Err(left) => user.step = Step::Skipped(left),
        }
    }

    // 3. The files.
    for user in &users {
        let Step::Ready { conversion, config } = &user.step else {
            continue;
        };
        let body = files.entry(Section::Users, &user.name).cloned();
        let exec = exec_stanza(&command, conversion, config);
        files.set_entry(Section::Users, &user.name, with_exec(body, exec.to_value()));
    }
    let changes = if args.dry_run {
        files.changes()
    } else {
        files
            .write(clock.now())
            .map_err(|failure| fail(Exit::Input, failure.to_string()))?
    };
    Ok(Some(report(
        &files,
        &users,
        &changes,
        args.dry_run,
        command_note,
    )))
}

/// One user of the files, and how far its conversion got.
struct User {
    /// Index into the files.
    file: usize,
    name: String,
    step: Step,
    /// What was carried, or why not.
    carried: Option<String>,
}

enum Step {
    /// Its kubecred stanza is planned.
    Planned(Box<Conversion>),
    /// And resolved: the settings get-token will run with.
    Ready {
        conversion: Box<Conversion>,
        config: Box<Config>,
    },
    /// Left as it is, and why.
    Skipped(String),
}

/// The files kubectl would read, each parsed; none changed yet.
fn load(args: &ConvertArgs) -> anyhow::Result<Kubeconfig> {
    let paths = kubeconfig::paths(args.kubeconfig.as_deref());
    let files = Kubeconfig::load(&paths).map_err(|err| match err {
        LoadError::Unreadable { path, error } => fail(
            Exit::Input,
            format!(
                "cannot read the kubeconfig {}: {error}; nothing was changed",
                path.display()
            ),
        ),
        LoadError::Invalid { path, reason } => fail(
            Exit::Input,
            format!(
                "the kubeconfig {} cannot be read ({reason}); nothing was changed: fix that file (kubectl cannot read it either), or leave it out of KUBECONFIG",
                path.display()
            ),
        ),
    })?;
    // kubectl skips the files of KUBECONFIG that do not exist; one named by --kubeconfig must.
    if args.kubeconfig.is_some()
        && let Some(file) = files.files().first()
        && let Some(error) = &file.missing
    {
        return Err(fail(
            Exit::Input,
            format!(
                "cannot read the kubeconfig {}: {error}; nothing was changed",
                file.path.display()
            ),
        ));
    }
    if files.files().iter().all(|f| f.missing.is_some()) {
        let shown: Vec<String> = files
            .files()
            .iter()
            .map(|f| f.path.display().to_string())
            .collect();
        return Err(fail(
            Exit::Input,
            format!(
                "no kubeconfig to convert: {} does not exist; pass --kubeconfig, or set KUBECONFIG",
                shown.join(", ")
            ),
        ));
    }
    Ok(files)
}

/// The users to look at, in the files' order, each planned (or skipped); `--user` names must
/// all exist.
fn select(files: &Kubeconfig, wanted: &[String]) -> anyhow::Result<Vec<User>> {
    let mut users = Vec::new();
    let mut first_file: std::collections::HashMap<String, usize> = Default::default();
    for (index, file) in files.files().iter().enumerate() {
        for (name, body) in file.entries(Section::Users) {
            if !wanted.is_empty() && !wanted.contains(&name) {
                continue;
            }
            let step = match first_file.get(&name) {
                Some(first) => Step::Skipped(format!(
                    "kubectl uses its definition in {}",
                    files.files()[*first].path.display()
                )),
                None => {
                    first_file.insert(name.clone(), index);
                    match sources::plan(body) {
                        Plan::Convert(conversion) => Step::Planned(Box::new(conversion)),
                        Plan::Skip(reason) => Step::Skipped(reason),
                    }
                }
            };
            users.push(User {
                file: index,
                name,
                step,
                carried: None,
            });
        }
    }
    let missing: Vec<String> = wanted
        .iter()
        .filter(|name| !first_file.contains_key(*name))
        .map(|name| format!("{:?}", crate::text::printable(name)))
        .collect();
    if !missing.is_empty() {
        let shown: Vec<String> = files
            .files()
            .iter()
            .filter(|f| f.missing.is_none())
            .map(|f| f.path.display().to_string())
            .collect();
        return Err(fail(
            Exit::Input,
            format!(
                "no user {} in the kubeconfig ({}); `kubectl config get-users` lists them",
                missing.join(", "),
                shown.join(", ")
            ),
        ));
    }
    Ok(users)
}

/// The command the stanzas run: the name kubectl finds this binary by on PATH (the rule setup
/// follows, `command_on_path`), else its path (and a note saying so).
fn stanza_command() -> (String, Option<String>) {
    use crate::commands::command_on_path::{ExecCommand, for_kubeconfig};
    let path = match for_kubeconfig() {
        Ok(ExecCommand::Path(path)) => path.display().to_string(),
        Ok(name) => return (name.as_command(), None),
        Err(_) => "kubecred".to_string(),
    };
    let note = format!(
        "note: neither kubecred nor kubectl-kubecred on PATH is this binary, so the converted users run {path}; put kubecred on PATH to keep them working when that file moves"
    );
    (path, Some(note))
}

/// The user's tokens into kubecred's cache (or, in a dry run, what would go there: the same
/// decisions short of the ID token's signature, `acquire::preview`): the report text, worded
/// alike for both. `Err`: the user is left as it is, and why.
fn carry(
    config: &Config,
    conversion: &Conversion,
    dry_run: bool,
    clock: &dyn Clock,
) -> Result<String, String> {
    let logs_in = |why: &str| format!("tokens not carried: {why}; the first kubectl call logs in");
    let (carried, place) = match &conversion.tokens {
        Tokens::NotNeeded => return Ok("no tokens to carry: its grant needs no person".into()),
        Tokens::Unreadable(why) => return Ok(logs_in(why)),
        Tokens::InKubeconfig(carried) => (carried.clone(), None),
        Tokens::KubeloginCache(cache) => match kubelogin_cache::find(cache) {
            Ok(found) => (found.carried, Some(found.place)),
            Err(why) => return Ok(logs_in(&why)),
        },
    };
    if carried.id_token.is_none() && carried.refresh_token.is_none() {
        return Ok(logs_in("it holds no ID token or refresh token"));
    }
    let from = place.map(|p| format!(" from {p}")).unwrap_or_default();
    let (taken, carry) = if dry_run {
        (acquire::preview(config, carried, clock), "would carry")
    } else {
        (acquire::adopt(config, carried, clock), "carried")
    };
    // Where the tokens go: kubecred's cache the stanza resolves to (its env may move it), and
    // the keyring where its storage puts them there.
    let into = match config.cache.storage {
        crate::config::CacheStorage::Keyring => format!(
            " into the OS keyring (kubecred's index in {})",
            config.cache.dir.display()
        ),
        _ => format!(" into {}", config.cache.dir.display()),
    };
    match taken {
        Ok(Adopted::Saved {
            id_token_until,
            id_token_expired_at,
            refresh_token,
        }) => Ok(match (id_token_until, refresh_token) {
            (Some(until), true) => format!(
                "{carry} the ID token (valid until {}) and the refresh token{from}{into}",
                utc(until)
            ),
            (Some(until), false) => format!(
                "{carry} the ID token (valid until {}){from}{into}; it has no refresh token, so a login follows when it runs out",
                utc(until)
            ),
            (None, _) => match id_token_expired_at {
                Some(at) => format!(
                    "{carry} the refresh token{from}{into}; the ID token expired at {} and {} dropped (the first kubectl call refreshes it)",
                    utc(at),
                    if dry_run { "would be" } else { "was" }
                ),
                None => format!(
                    "{carry} the refresh token{from}{into} (the first kubectl call refreshes)"
                ),
            },
        }),
        Ok(Adopted::AlreadyCached) => Ok(format!(
            "tokens not carried: kubecred's cache {} already holds a login for these settings, which is kept",
            config.cache.dir.display()
        )),
        Ok(Adopted::Nothing(why)) => Ok(logs_in(&why)),
        Err(err) if crate::error::is_transient(&err) => Err(format!(
            "its tokens cannot be verified now ({}), and they would be lost: run convert-kubeconfig again when {} answers",
            one_line(&err),
            config.issuer_as_given
        )),
        Err(err) => Ok(logs_in(&one_line(&err))),
    }
}

fn utc(time: DateTime<Utc>) -> String {
    time.format("%Y-%m-%d %H:%M:%S UTC").to_string()
}

/// The user's new `exec`: kubecred, with the conversion's args and env, and a hint for a
/// kubectl that cannot find it.
fn exec_stanza(command: &str, conversion: &Conversion, config: &Config) -> ExecStanza {
    ExecStanza {
        install_hint: Some(format!(
            "kubecred is not installed, or not on PATH. This user was switched to kubecred from {} by `kubecred convert-kubeconfig`: install kubecred (see its README, Install), or restore this kubeconfig from its backup beside it (*.before-kubecred-*).",
            conversion.from
        )),
        ..stanza::kubecred_stanza(
            V1,
            command.to_string(),
            conversion.args.clone(),
            conversion.env.clone(),
            config.grant.is_user_login(),
        )
    }
}

/// The user's body with `exec` in place of its `auth-provider` or old `exec` (where the first
/// of them was), everything else kept.
fn with_exec(body: Option<Value>, exec: Value) -> Value {
    let mut out = Mapping::new();
    let mut placed = false;
    if let Some(Value::Mapping(body)) = body {
        for (key, value) in body {
            if matches!(key.as_str(), Some("auth-provider" | "exec")) {
                if !placed {
                    out.insert("exec".into(), exec.clone());
                    placed = true;
                }
            } else {
                out.insert(key, value);
            }
        }
    }
    if !placed {
        out.insert("exec".into(), exec);
    }
    Value::Mapping(out)
}

/// The report: per file, one line per user and one for the file.
fn report(
    files: &Kubeconfig,
    users: &[User],
    changes: &[Change],
    dry_run: bool,
    command_note: Option<String>,
) -> String {
    let mut out = String::new();
    let mut converted = 0;
    let existing = files.files().iter().enumerate();
    for (index, file) in existing.filter(|(_, f)| f.missing.is_none()) {
        let _ = writeln!(out, "{}", file.path.display());
        let mut any = false;
        for user in users.iter().filter(|u| u.file == index) {
            any = true;
            let name = format!("{:?}", crate::text::printable(&user.name));
            match &user.step {
                Step::Ready { conversion, .. } => {
                    converted += 1;
                    let verb = if dry_run {
                        "would convert"
                    } else {
                        "converted"
                    };
                    let _ = writeln!(
                        out,
                        "  {verb} {name} ({}): {}",
                        conversion.from,
                        user.carried.as_deref().unwrap_or("")
                    );
                    for note in &conversion.notes {
                        let _ = writeln!(out, "      {note}");
                    }
                }
                Step::Skipped(reason) => {
                    let _ = writeln!(out, "  skipped {name}: {reason}");
                }
                Step::Planned(_) => {}
            }
        }
        if !any {
            let _ = writeln!(out, "  no users to convert here");
        }
        let Some(change) = changes.iter().find(|c| c.file == index) else {
            let _ = writeln!(out, "  unchanged");
            continue;
        };
        if let Layout::Whole(reason) = &change.layout {
            let _ = writeln!(
                out,
                "  note: {} as a whole: comments and formatting are not kept ({reason})",
                if dry_run {
                    "would be written"
                } else {
                    "written"
                }
            );
        }
        let backup = change.written.as_ref().and_then(|w| w.backup.as_ref());
        let _ = match (backup, dry_run) {
            (_, true) => writeln!(out, "  would be written (--dry-run: nothing was)"),
            (Some(backup), false) => writeln!(out, "  written; backup: {}", backup.display()),
            (None, false) => writeln!(out, "  written"),
        };
    }
    if converted > 0
        && let Some(note) = command_note
    {
        let _ = writeln!(out, "{note}");
    }
    out
}
