//! The login step: where only a person (or a new grant) renews an entry's tokens, the one
//! sequence every entry takes — the checks that make a login that cannot or should not happen
//! fail at once, before any network round trip ([`preflight_login`]: who is here for a login
//! that needs a person, [`who_cannot_log_in`]; the cool-down after a failed login of
//! `cooldown.rs`), the notices that say why a person is asked, then the grant ([`run_grant`])
//! and the tokens kept. The miss path calls it with the entry's own settings and entry, or for
//! a `--shared-login` cluster with the login's settings and the login's entry (`shared.rs`).
//! [`run_grant`] is also how the background renewal runs a grant that needs nobody.

use super::cooldown;
use super::locked::Locked;
use super::source::{Grantor, LazyProvider};
use super::{Occasion, Presence};
use crate::cache::{EntryState, Note};
use crate::clock::Clock;
use crate::config::{BrowserChoice, Config, Grant, PasswordSettings};
use crate::error::{Exit, transient};
use crate::tokens::Tokens;

/// The provider's refusal of the refresh token that led to this login: said once the login goes
/// ahead.
pub(super) struct Refused {
    pub(super) reason: String,
    /// The refresh token, as the message names it (the entry's, or the shared login's).
    pub(super) whose: &'static str,
}

/// Logs in (or runs the configured grant) with `settings`, into `entry`, under its lock:
/// preflight, the notices, the grant, the tokens kept. `provider`: the one a refresh may have
/// built for these settings already.
#[allow(clippy::too_many_arguments)]
pub(super) fn log_in<'a>(
    settings: &'a Config,
    entry: &Locked,
    grantor: Grantor,
    occasion: Occasion,
    refused: Option<Refused>,
    mut provider: LazyProvider<'a>,
    presence: &Presence,
    clock: &'a dyn Clock,
) -> anyhow::Result<Tokens> {
    preflight_login(settings, &entry.state(), occasion, presence, clock)?;
    // Why a browser tab opens (or a device code shows) for someone who was logged in: said
    // once the login goes ahead. Where it cannot, its own error is the one line.
    if let Some(Refused { reason, whose }) = refused
        && settings.grant.needs_a_person()
    {
        crate::log::notice(format!(
            "{} refused {whose} ({reason}); logging in again",
            settings.issuer_as_given
        ));
    }
    notice_secrets_on_command_line(settings);
    let tokens = run_grant(
        settings,
        grantor,
        Some(entry),
        &mut provider,
        presence,
        clock,
    )?;
    entry.keep(&tokens);
    Ok(tokens)
}

/// The checks that make a login that cannot or should not happen fail at once, before any
/// network round trip: nobody here for a login that needs a person ([`who_cannot_log_in`]), and
/// the cool-down after a failed login (which `kubecred login` and --force-refresh bypass) and
/// the hold-off of callers without a terminal. Grants without a user pass. Each refusal is
/// transient: it says nothing about the cached token, which may still be handed out.
fn preflight_login(
    config: &Config,
    state: &EntryState,
    occasion: Occasion,
    presence: &Presence,
    clock: &dyn Clock,
) -> anyhow::Result<()> {
    if let Some(why) = who_cannot_log_in(config, presence) {
        return Err(transient(Exit::Login, why));
    }
    if !config.grant.is_user_login() || !occasion.held_off_after_a_failed_login() {
        return Ok(());
    }
    cooldown::check(
        state.login_failed.as_ref(),
        config.login.cooldown,
        clock.now(),
    )?;
    if !presence.terminal() && state.login_without_terminal {
        cooldown::hold_off(
            state.login_failed.as_ref(),
            config.login.holdoff,
            clock.now(),
        )?;
    }
    Ok(())
}

/// Why the configured login cannot happen in this session (`presence`), if it cannot: the
/// decision table of who may be asked (tested per caller below). The terminal is looked at
/// first; the desktop is probed only for `auto` without one.
/// - `auto` with the system browser: a terminal, or a person's desktop (an IDE, a dashboard: the
///   browser opens there); with neither (CI, cron, a service, a container) nobody can log in.
/// - `password` without a user name or a password, and `authcode-keyboard`: stdin to type on.
fn who_cannot_log_in(config: &Config, presence: &Presence) -> Option<String> {
    if config.grant_is_automatic
        && config.login.browser == BrowserChoice::System
        && !presence.terminal()
        && let Err(no_desktop) = presence.desktop()
    {
        return Some(no_one_to_log_in(no_desktop));
    }
    let asks_for_a_password = config
        .password
        .as_ref()
        .is_some_and(PasswordSettings::needs_a_person);
    if asks_for_a_password && !presence.stdin() {
        return Some("--grant-type password has no user name or no password and this session is not interactive (no terminal, or kubectl's interactiveMode Never): pass --username, and set KUBECRED_PASSWORD or pass --password-file".into());
    }
    if config.grant == Grant::AuthcodeKeyboard && !presence.stdin() {
        return Some("--grant-type authcode-keyboard needs an interactive terminal (kubectl passes stdin only with interactiveMode IfAvailable/Always on a TTY); use --grant-type device-code or authcode".into());
    }
    None
}

/// The refusal of `--grant-type auto` where nobody can log in (no terminal, and no desktop:
/// `why`), naming the grants that work.
fn no_one_to_log_in(why: &crate::presence::desktop::NoDesktop) -> String {
    format!(
        "no terminal to log in on and no desktop here ({why}), so --grant-type auto will not open a browser or prompt (a CI job, a service, a container?); choose a non-interactive grant: --grant-type client-credentials, token-exchange, federated-token or password (with KUBECRED_PASSWORD), or run `kubecred login` with the same flags where a browser can open"
    )
}

/// A secret given as a command-line flag shows in `ps` to every user of the machine: say so
/// when it is about to be used (not on the cache-hit path, where it is not).
fn notice_secrets_on_command_line(config: &Config) {
    for secret in &config.secrets_on_command_line {
        crate::log::notice(format!(
            "{} on the command line is visible to other users in `ps`; use {}",
            secret.flag, secret.instead
        ));
    }
}

/// Runs the configured grant (not the refresh); the caller keeps the tokens. In the
/// foreground (`noted`: the entry being logged in to), an interactive login leaves a cool-down
/// record behind unless it succeeds or fails before it asked a person, so that kubectl retries
/// and background callers do not open a browser tab each. (Saving the tokens clears the record,
/// also when they cannot be kept.) The background renewal passes `None`: it never changes what
/// the foreground answers, and its own failures are noted and backed off by `renew_ahead`.
pub(super) fn run_grant(
    settings: &Config,
    grantor: Grantor,
    noted: Option<&Locked>,
    provider: &mut LazyProvider,
    presence: &Presence,
    clock: &dyn Clock,
) -> anyhow::Result<Tokens> {
    let provider = match grantor {
        // The subject token itself is the credential: no provider, no discovery.
        Grantor::Federated => return crate::grants::federated_token(settings, clock),
        // The cloud's own credentials: no provider either.
        Grantor::Cloud(cloud) => return crate::clouds::obtain(cloud, settings, clock),
        Grantor::Provider => provider.get()?,
    };
    let Some(entry) = noted.filter(|_| settings.grant.is_user_login()) else {
        return provider.obtain(presence);
    };
    // A login nobody at a terminal started holds off the next tab longer (`--login-holdoff`):
    // an IDE or a dashboard asks again and again, whether or not anybody saw the last one. Only
    // a login that opens a browser or shows a code: a password grant opens no tab to storm.
    let without_terminal = settings.grant.needs_a_person() && !presence.terminal();
    let note_failure = |reason: &str| {
        entry.cache.update_state(&entry.lock, |state| {
            state.login_failed = Some(Note::new(reason, clock.now()));
            state.login_without_terminal = without_terminal;
        });
    };
    // Written before the browser opens: a login that is abandoned (Ctrl-C, or an IDE killing
    // the plugin) must hold off the next tab as much as one that failed.
    note_failure("a login was started and did not finish");
    provider.obtain(presence).inspect_err(|err| {
        // A login that failed before it asked anybody (the provider refused the device
        // authorization request, a setting is wrong, nothing could open) leaves no cool-down:
        // there is no tab storm to hold off, and the next run must say the real cause, not "not
        // opening another browser". (`password` is held off either way: each retry is another
        // password the provider may count against the account.)
        if provider.asked_a_person() || !settings.grant.needs_a_person() {
            note_failure(&crate::error::one_line(err));
        } else {
            entry.cache.update_state(&entry.lock, |state| {
                state.login_failed = None;
                state.login_without_terminal = false;
            });
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::presence::callers::*;

    fn config(flags: &[&str]) -> Config {
        super::super::tests::config_with(std::path::Path::new("/nonexistent/kubecred"), flags)
    }

    /// Who may be asked to log in, per caller and grant: `None` goes on to the login, a word
    /// names the refusal (the message's subject).
    #[test]
    fn each_caller_is_asked_only_for_a_login_it_can_do() {
        let grants: [(&str, Config); 7] = [
            ("auto", config(&[])),
            ("authcode", config(&["--grant-type=authcode"])),
            ("device-code", config(&["--grant-type=device-code"])),
            ("keyboard", config(&["--grant-type=authcode-keyboard"])),
            ("password?", config(&["--grant-type=password"])),
            (
                "client-credentials",
                config(&["--grant-type=client-credentials", "--client-secret=s"]),
            ),
            (
                "auto --browser-command",
                config(&["--browser-command=open-it"]),
            ),
        ];
        let refusal = |config: &Config, presence: &Presence| {
            who_cannot_log_in(config, presence).map(|why| {
                [
                    "auto will not",
                    "password has no",
                    "authcode-keyboard needs",
                ]
                .into_iter()
                .find(|subject| why.contains(subject))
                .unwrap_or_else(|| panic!("an unknown refusal: {why}"))
            })
        };
        let (none, auto, password, keyboard) = (
            None,
            Some("auto will not"),
            Some("password has no"),
            Some("authcode-keyboard needs"),
        );
        let table = [
            ("terminal on a desktop", terminal_on_a_desktop(), [none; 7]),
            ("SSH terminal", ssh_terminal(), [none; 7]),
            (
                "terminal on stderr only",
                terminal_without_stdin(),
                [none, none, none, keyboard, password, none, none],
            ),
            (
                "IDE on a desktop",
                ide_on_a_desktop(),
                [none, none, none, keyboard, password, none, none],
            ),
            (
                "IDE, no launcher",
                ide_without_a_launcher(),
                [none, none, none, keyboard, password, none, none],
            ),
            (
                "CI",
                ci(),
                [auto, none, none, keyboard, password, none, none],
            ),
        ];
        for (caller, presence, expected) in table {
            for ((grant, config), expected) in grants.iter().zip(expected) {
                assert_eq!(
                    refusal(config, &presence),
                    expected,
                    "{caller}, --grant-type {grant}"
                );
            }
        }
    }

    #[test]
    fn nobody_here_for_auto_is_told_which_grants_work() {
        let why = who_cannot_log_in(&config(&[]), &ci()).unwrap();
        assert_eq!(
            why,
            "no terminal to log in on and no desktop here (no graphical session: DISPLAY and WAYLAND_DISPLAY unset), so --grant-type auto will not open a browser or prompt (a CI job, a service, a container?); choose a non-interactive grant: --grant-type client-credentials, token-exchange, federated-token or password (with KUBECRED_PASSWORD), or run `kubecred login` with the same flags where a browser can open"
        );
    }
}
