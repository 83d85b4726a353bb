//! The login step: where only a person (or a new grant) renews an entry's tokens, the one
//! sequence every entry takes — the checks that make a login that cannot or should not happen
//! fail at once, before any network round trip ([`preflight_login`]: no terminal for a login
//! that needs one, the cool-down after a failed login of `cooldown.rs`), the notices that say
//! why a person is asked, then the grant ([`run_grant`]) and the tokens kept. The miss path
//! calls it with the entry's own settings and entry, or for a `--shared-login` cluster with the
//! login's settings and the login's entry (`shared.rs`). [`run_grant`] is also how the
//! background renewal runs a grant that needs nobody.

use super::{Held, Trigger, cooldown, keep};
use crate::cache::{EntryState, Note};
use crate::clock::Clock;
use crate::config::{BrowserChoice, Config, Grant, PasswordSettings};
use crate::error::{Exit, transient};
use crate::grants::ProviderClient;
use crate::tokens::Tokens;

/// The provider's refusal of the refresh token that led to this login: said once the login goes
/// ahead.
pub(super) struct Refused {
    pub(super) reason: String,
    /// The refresh token, as the message names it (the entry's, or the shared login's).
    pub(super) whose: &'static str,
}

/// Logs in (or runs the configured grant) with `settings`, into `entry`, under its lock:
/// preflight, the notices, the grant, the tokens kept. `provider`: one a refresh already built
/// for these settings.
pub(super) fn log_in<'a>(
    settings: &'a Config,
    entry: Held<'_>,
    trigger: Trigger,
    refused: Option<Refused>,
    provider: Option<ProviderClient<'a>>,
    clock: &'a dyn Clock,
) -> anyhow::Result<Tokens> {
    let state = entry
        .cache
        .state(entry.cached.map(|cached| cached.tokens.obtained_at));
    preflight_login(settings, &state, trigger, clock)?;
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
    let tokens = if settings.grant == Grant::FederatedToken {
        // The subject token itself is the credential: no provider, no discovery.
        crate::grants::federated_token(settings, clock)?
    } else {
        let provider = match provider {
            Some(provider) => provider,
            None => ProviderClient::new(settings, clock)?,
        };
        run_grant(settings, Some(entry), &provider, clock)?
    };
    keep(entry.cache, &tokens, entry.lock);
    Ok(tokens)
}

/// The checks that make a login that cannot or should not happen fail at once, before any
/// network round trip: a keyboard login without a terminal, and the cool-down after a failed
/// login (which `kubecred login` and --force-refresh bypass). Grants without a user pass. Each
/// refusal is transient: it says nothing about the cached token, which may still be handed out.
fn preflight_login(
    config: &Config,
    state: &EntryState,
    trigger: Trigger,
    clock: &dyn Clock,
) -> anyhow::Result<()> {
    let terminal = crate::presence::terminal_attached();
    // Without a terminal, `auto` logs in where a person's desktop is (an IDE, a dashboard: the
    // browser opens there); where neither is (CI, cron, a service, a container), nobody can.
    if config.grant_is_automatic
        && config.login.browser == BrowserChoice::System
        && !terminal
        && let Err(no_desktop) = crate::presence::desktop::here()
    {
        return Err(transient(Exit::Login, no_one_to_log_in(&no_desktop)));
    }
    if config
        .password
        .as_ref()
        .is_some_and(PasswordSettings::needs_a_person)
        && !crate::presence::stdin_is_interactive(config.exec.interactive)
    {
        return Err(transient(
            Exit::Login,
            "--grant-type password has no user name or no password and this session is not interactive (no terminal, or kubectl's interactiveMode Never): pass --username, and set KUBECRED_PASSWORD or pass --password-file",
        ));
    }
    if !config.grant.is_user_login() {
        return Ok(());
    }
    if config.grant == Grant::AuthcodeKeyboard
        && !crate::presence::stdin_is_interactive(config.exec.interactive)
    {
        return Err(transient(
            Exit::Login,
            "--grant-type authcode-keyboard needs an interactive terminal (kubectl passes stdin only with interactiveMode IfAvailable/Always on a TTY); use --grant-type device-code or authcode",
        ));
    }
    if trigger == Trigger::GetToken && !config.force_refresh {
        cooldown::check(
            state.login_failed.as_ref(),
            config.login.cooldown,
            clock.now(),
        )?;
        if !terminal && state.login_without_terminal {
            cooldown::hold_off(
                state.login_failed.as_ref(),
                config.login.holdoff,
                clock.now(),
            )?;
        }
    }
    Ok(())
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
    noted: Option<Held<'_>>,
    provider: &ProviderClient,
    clock: &dyn Clock,
) -> anyhow::Result<Tokens> {
    let Some(entry) = noted.filter(|_| settings.grant.is_user_login()) else {
        return provider.obtain();
    };
    // A login nobody at a terminal started holds off the next tab longer (`--login-holdoff`):
    // an IDE or a dashboard asks again and again, whether or not anybody saw the last one. Only
    // a login that opens a browser or shows a code: a password grant opens no tab to storm.
    let without_terminal = settings.grant.needs_a_person() && !crate::presence::terminal_attached();
    let note_failure = |reason: &str| {
        entry.cache.update_state(entry.lock, |state| {
            state.login_failed = Some(Note::new(reason, clock.now()));
            state.login_without_terminal = without_terminal;
        });
    };
    // Written before the browser opens: a login that is abandoned (Ctrl-C, or an IDE killing
    // the plugin) must hold off the next tab as much as one that failed.
    note_failure("a login was started and did not finish");
    provider.obtain().inspect_err(|err| {
        // A login that failed before it asked anybody (the provider refused the device
        // authorization request, a setting is wrong, nothing could open) leaves no cool-down:
        // there is no tab storm to hold off, and the next run must say the real cause, not "not
        // opening another browser". (`password` is held off either way: each retry is another
        // password the provider may count against the account.)
        if provider.asked_a_person() || !settings.grant.needs_a_person() {
            note_failure(&crate::error::one_line(err));
        } else {
            entry.cache.update_state(entry.lock, |state| {
                state.login_failed = None;
                state.login_without_terminal = false;
            });
        }
    })
}
