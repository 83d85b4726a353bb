//! The manual's error lines are the binary's. Every line the manual (README.md and the pages of
//! docs/, `support::manual`) quotes — the first column of its "the error line says" tables
//! (docs/troubleshooting.md, docs/networks.md's Behind a proxy) and every `kubecred: …` line in
//! its prose — has exactly one witness here, and each witness must hold:
//!
//! - **Triggered**: a trigger in this file makes the binary print the line, and the quote must match
//!   a line of what it wrote on stderr;
//! - **Test**: a test elsewhere (in `tests/it/` or a unit test in `src/`) triggers it and asserts
//!   its text: each part of the quote must be in that test function's string literals;
//! - **Source**: where no test can trigger it on this machine (macOS only, a name that must not
//!   resolve, …; the reason is given), each part of the quote must be in a message the code
//!   defines (a string literal outside tests).
//!
//! In a quote, `…` stands for any text (a URL, a reason, a number): the parts between are
//! matched in order. A quoted line without a witness, a witness for a line the manual no longer
//! quotes, and a witness that does not hold each fail; `the_check_can_fail` shows that they do.

use crate::support::rust_text::{SourceText, format_segments, rust_files};
use crate::support::*;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;

/// How a quoted line is shown to be one the binary prints.
enum Witness {
    /// A trigger here; the quote must match a line of its stderr.
    Triggered(Trigger),
    /// A test that triggers the line and asserts its text: `file::function`, the file relative to
    /// the repository.
    Test(&'static str),
    /// A message the code defines; why no test here can trigger it.
    Source(&'static str),
}

/// What a trigger needs: nothing but the binary, the test bed, or a browser too.
enum Trigger {
    Local(fn(&TestEnv) -> Run),
    Bed(fn(&TestEnv, &Testbed) -> Run),
    Browser(fn(&TestEnv, &Testbed) -> Run),
    Proxy(fn(&TestEnv) -> Run),
}

use Trigger::*;
use Witness::*;

/// Every quoted line, with its witness. Keep in the manual's order (README, then docs/SUMMARY.md's).
const WITNESSES: &[(&str, Witness)] = &[
    // ---- Troubleshooting ----
    (
        "no issuer URL: pass --issuer-url …",
        Test("tests/it/exec_protocol.rs::missing_settings_say_what_to_do"),
    ),
    (
        "no client ID: pass --client-id …",
        Test("tests/it/exec_protocol.rs::missing_settings_say_what_to_do"),
    ),
    (
        "issuer URL … must use https",
        Test("tests/it/exec_protocol.rs::missing_settings_say_what_to_do"),
    ),
    (
        "the OpenID discovery document at … answered HTTP 404 Not Found; check the URL",
        Triggered(Bed(discovery_not_found)),
    ),
    (
        "the OpenID discovery document of … names the issuer …; set --issuer-url to exactly that",
        Test(
            "tests/it/sessions.rs::discovery_messages_and_verbose_lines_name_the_issuer_as_written",
        ),
    ),
    (
        "… (Entra ID's multi-tenant endpoint); use your tenant's own issuer, https://login.microsoftonline.com/<tenant ID>/v2.0",
        Test("tests/it/quirks.rs::entra_multi_tenant_template_issuer_names_the_tenant_issuer"),
    ),
    (
        "warn  discovery does not list the client_credentials grant; the list is informational …",
        Test("tests/it/quirks.rs::setup_tries_a_grant_that_discovery_leaves_out"),
    ),
    (
        "… answered HTTP 3… (a redirect to …); kubecred does not follow redirects",
        Triggered(Local(discovery_redirected)),
    ),
    (
        "the host name does not resolve; check the URL and your DNS or VPN",
        Source(
            "a name that does not resolve would be asked of this machine's DNS servers: tests never reach the network",
        ),
    ),
    (
        "connection refused: nothing is listening there",
        Triggered(Local(nothing_listening)),
    ),
    (
        "the connection was dropped (…); a proxy or firewall may be in the way",
        Triggered(Local(connection_dropped)),
    ),
    (
        "the proxy … (from HTTPS_PROXY) …",
        Test("tests/it/proxy.rs::a_proxy_that_is_down_is_named_as_such"),
    ),
    (
        "--local-server-cert … and --local-server-key … cannot serve TLS (…)",
        Source(
            "src/login/listener/tests.rs::an_unusable_certificate_or_key_is_an_input_error_naming_the_file triggers it with a key of another certificate",
        ),
    ),
    (
        "the server's TLS certificate is signed by an authority this machine does not trust",
        Triggered(Bed(untrusted_certificate)),
    ),
    (
        "the server's TLS certificate is not valid for this host name",
        Source(
            "the test bed's certificate names every loopback name it listens on; another name would need a DNS entry",
        ),
    ),
    (
        "… refused the … token request: invalid_client …; check --client-id and the client secret",
        Triggered(Bed(wrong_client_secret)),
    ),
    (
        "… unauthorized_client … the client is not allowed this grant type at the provider; check --grant-type",
        Source(
            "the test provider (oidc-provider) answers a grant the client lacks with invalid_request",
        ),
    ),
    (
        "… refused the device flow for the client … (…): …",
        Triggered(Bed(device_flow_refused)),
    ),
    (
        "no browser can open here (…), … refused the device flow for this client … ago (…), and …",
        Test(
            "tests/it/remote_login.rs::a_refused_device_flow_with_no_terminal_to_paste_into_says_where_a_login_can_happen",
        ),
    ),
    (
        "… refused the device login after you signed in (… AADSTS53003 …)",
        Test(
            "tests/it/remote_login.rs::a_device_flow_refused_at_the_poll_says_so_and_auto_goes_on_with_the_pasted_login",
        ),
    ),
    (
        "ignored the pasted text: it is a relay line of version \"…\"",
        Test(
            "tests/it/paste.rs::pasted_lines_of_another_login_or_version_are_set_aside_and_say_why",
        ),
    ),
    (
        "… its redirect_uri … is not this login's …",
        Test(
            "tests/it/paste.rs::pasted_lines_of_another_login_or_version_are_set_aside_and_say_why",
        ),
    ),
    (
        "refused the pasted text: its state is not the one this login sent …",
        Test(
            "tests/it/paste.rs::pasted_lines_of_another_login_or_version_are_set_aside_and_say_why",
        ),
    ),
    (
        "--remote-bootstrap \"…\" is not a whole authorization request: it has no …",
        Triggered(Local(bootstrap_url_cut_at_an_ampersand)),
    ),
    (
        "… is in use here, so the browser is sent to http://localhost:…",
        Triggered(Local(bootstrap_port_in_use)),
    ),
    (
        "… invalid_scope … check --scope",
        Source("the test provider grants client credentials whatever the scope"),
    ),
    (
        "the client credentials token request to … answered HTTP 403 Forbidden, not an OAuth 2.0 response",
        Triggered(Local(bare_403)),
    ),
    (
        "warn  the provider granted the scope …, without offline_access that was asked for",
        Test("tests/it/quirks.rs::setup_names_a_narrower_scope_than_asked"),
    ),
    (
        "warn  no refresh token was issued: every expiry means a new login; …",
        Test("tests/it/quirks.rs::setup_names_a_narrower_scope_than_asked"),
    ),
    (
        "… it names no key (no kid) and the provider publishes 2 RS256 keys",
        Test("tests/it/conformance.rs::oidcc_client_test_kid_absent_multiple_jwks"),
    ),
    (
        "… invalid_target … check --resource / --audience",
        Source("the test provider accepts any absolute URI as a resource"),
    ),
    (
        "no login completed within … (--auth-timeout): the browser never came back to …; if its tab shows the provider's error about the redirect URI, …",
        Triggered(Bed(unregistered_redirect_uri)),
    ),
    (
        "the identity provider refused the login: unauthorized_client …; the client is not set up for this login at the provider: check --client-id, --redirect-url and the redirect URIs registered for the client",
        Triggered(Bed(login_refused_for_the_client)),
    ),
    (
        "… its audience … does not include the client ID",
        Test("tests/it/conformance.rs::oidcc_client_test_invalid_aud"),
    ),
    (
        "… it is signed with HS256, a shared-secret algorithm kubecred does not accept",
        Test("tests/it/conformance.rs::oidcc_client_test_invalid_sig_hs256"),
    ),
    (
        "… it expired at …",
        Test("tests/it/conformance.rs::kubecred_id_token_expired"),
    ),
    (
        "check this machine's clock",
        Test("src/oidc/tests.rs::bad_claims_are_rejected_with_a_reason_and_a_next_step"),
    ),
    (
        "no ID token; request the openid scope, or pass --use-access-token",
        Source(
            "kubecred always asks for openid; only a provider that ignores it answers without an ID token",
        ),
    ),
    (
        "kubecred: … refused the refresh token (…); the cached token is used until …, then a login is needed (kubecred login)",
        Triggered(Browser(refresh_token_refused_while_the_token_is_valid)),
    ),
    (
        "kubecred: … refused the refresh token (…); logging in again",
        Triggered(Browser(refresh_token_refused_after_the_token_expired)),
    ),
    (
        "kubecred: … failed: …; using the cached token, valid until …",
        Triggered(Local(stale_if_error)),
    ),
    (
        "no terminal to log in on and no desktop here (…), so --grant-type auto will not open a browser or prompt (a CI job, a service, a container?); choose a non-interactive grant: …",
        Triggered(Local(no_terminal_for_auto)),
    ),
    (
        "--grant-type authcode-keyboard needs an interactive terminal …",
        Triggered(Local(keyboard_without_a_terminal)),
    ),
    (
        "cannot ask for the login code: stdin is not an interactive terminal …",
        Source(
            "the preflight check refuses authcode-keyboard without a terminal first; this is the same refusal where a login reaches the prompt",
        ),
    ),
    (
        "no browser could be opened and this session cannot take a pasted code",
        Triggered(Bed(no_browser_and_no_terminal)),
    ),
    (
        "cannot listen for the login callback: … in use",
        Triggered(Bed(callback_port_in_use)),
    ),
    (
        "no login completed within … (--auth-timeout): the browser never came back to …; …",
        Triggered(Bed(login_tab_closed)),
    ),
    (
        "no login completed within … (--auth-timeout); …",
        Test(
            "src/login/wait/tests.rs::a_browser_that_came_back_without_this_logins_callback_times_out_without_the_redirect_hint",
        ),
    ),
    (
        "a login for this cluster failed …s ago (…); not opening another browser for …",
        Triggered(Bed(cool_down_after_a_failed_login)),
    ),
    (
        "the identity provider refused the login: access_denied …",
        Triggered(Bed(login_denied)),
    ),
    (
        "the login was denied; …",
        Source("the test provider's device flow has no way to deny from a test"),
    ),
    (
        "the code expired before the login was approved",
        Triggered(Bed(device_code_expired)),
    ),
    (
        "no device login completed within …",
        Triggered(Bed(device_login_not_approved)),
    ),
    (
        "no OS keyring is reachable (…); start a Secret Service …; or use --cache-storage disk",
        Triggered(Bed(no_keyring)),
    ),
    (
        "kubecred: warning: the new token is handed out but not cached: the kernel keyring refused the cache entry (too large: over 32767 bytes …",
        Test(
            "tests/it/cache_storage.rs::a_keyring_that_refuses_the_entry_says_so_and_the_login_is_still_handed_out",
        ),
    ),
    (
        "the macOS Keychain refused the … (locked: …)",
        Test("src/cache/store_failure.rs::a_refusal_says_refused_and_why_not_unreachable"),
    ),
    (
        "cannot lock …",
        Source("a lock refused by the file system needs a network file system that refuses flock"),
    ),
    (
        "cannot write the token cache file …",
        Test("tests/it/faults_local.rs::a_login_is_never_lost_to_a_cache_that_cannot_keep_it"),
    ),
    (
        "cannot find a home directory for the token cache; pass --cache-dir",
        Source("needs a user with no home directory in the password database"),
    ),
    (
        "KUBERNETES_EXEC_INFO is not valid ExecCredential JSON …",
        Test("tests/it/exec_protocol.rs::malformed_exec_info_fails_with_one_line_and_no_stdout"),
    ),
    (
        "… has apiVersion …, which kubecred does not speak",
        Test("tests/it/exec_protocol.rs::unknown_api_version_fails_with_one_line"),
    ),
    (
        "the kubeconfig … cannot be read (…); nothing was changed: …",
        Triggered(Local(convert_unreadable_kubeconfig)),
    ),
    (
        "the kubeconfig … cannot be read (…); fix it, or pass --kubeconfig with another file",
        Triggered(Bed(setup_unreadable_kubeconfig)),
    ),
    (
        "skipped \"…\": its tokens cannot be verified now (…), and they would be lost",
        Triggered(Local(convert_with_the_provider_down)),
    ),
    (
        "--shared-login needs this cluster's target: --resource, --audience or --target-scope (…)",
        Triggered(Local(shared_login_without_a_target)),
    ),
    (
        "--shared-login takes one target per cluster: …",
        Triggered(Local(shared_login_with_two_targets)),
    ),
    (
        "--target-scope names a cluster's target for --shared-login; …",
        Triggered(Local(target_scope_without_a_shared_login)),
    ),
    (
        "--shared-login hands out access tokens (…): drop --use-access-token=false",
        Triggered(Local(shared_login_asked_for_an_id_token)),
    ),
    (
        "--shared-login shares a person's login, and --grant-type … logs nobody in: drop --shared-login; …",
        Triggered(Local(shared_login_for_a_machine)),
    ),
    (
        "the shared login for … was not granted … (it holds …), and refreshing it for one it was not granted would spend it; add --login-resource=… (loginResources in the cluster extension) to this cluster's settings, then run kubectl again to log in once for every cluster",
        Triggered(Browser(shared_login_for_a_resource_outside_it)),
    ),
    (
        "… answered the request for audience … with a token for audience …; nothing was cached — …",
        Triggered(Browser(shared_login_answered_for_another_audience)),
    ),
    (
        "… with an access token that is not a JWT, so its audience cannot be checked against …; nothing was cached …",
        Triggered(Browser(shared_login_answered_with_an_opaque_token)),
    ),
    (
        "… refused to refresh the shared login for … (…), which the login was granted: the provider no longer grants it to this login's refresh token, …; not asked again until the next login, …",
        Triggered(Browser(shared_login_narrowed_at_the_provider)),
    ),
    (
        "the shared login for … no longer serves …: the provider refused to refresh it for this target after granting it, so it is not asked again until the next login; …",
        Triggered(Browser(shared_login_narrowed_then_asked_again)),
    ),
    (
        "cluster extension derive … is not refresh or token-exchange",
        Triggered(Local(shared_login_derived_some_other_way)),
    ),
    (
        "cluster extension client.authentication.k8s.io/exec: … must be …",
        Triggered(Local(extension_of_the_wrong_type)),
    ),
    // ---- Behind a proxy ----
    (
        "HTTPS_PROXY=ftp://****@… names a ftp proxy, which kubecred cannot use; …",
        Test(
            "tests/it/proxy.rs::a_setting_that_cannot_work_fails_before_any_request_and_a_cache_hit_still_answers",
        ),
    ),
    (
        "… is not a proxy URL (invalid port number); …",
        Test(
            "tests/it/proxy.rs::a_setting_that_cannot_work_fails_before_any_request_and_a_cache_hit_still_answers",
        ),
    ),
    (
        "the proxy … answered 407 Proxy Authentication Required: it wants a user name and password; give them in … as http://USER:PASSWORD@HOST:PORT",
        Test("tests/it/proxy.rs::a_proxy_with_a_password_and_wrong_or_missing_ones"),
    ),
    (
        "the proxy … answered …: it refused the user name and password; check them in HTTPS_PROXY",
        Test("tests/it/proxy.rs::a_proxy_with_a_password_and_wrong_or_missing_ones"),
    ),
    (
        "the proxy … refused the connection: nothing is listening there; check HTTPS_PROXY and that the proxy is running (after 4 attempts)",
        Test("tests/it/proxy.rs::a_proxy_that_is_down_is_named_as_such"),
    ),
    (
        "… is unreachable (no answer); …",
        Source("a proxy that never answers needs a network that drops packets"),
    ),
    (
        "…: its host name does not resolve; …",
        Source(
            "a name that does not resolve would be asked of this machine's DNS servers: tests never reach the network",
        ),
    ),
    (
        "the proxy … refused the tunnel to … (403 Forbidden); …",
        Triggered(Proxy(proxy_forbids_the_port)),
    ),
    (
        "the proxy … could not reach … (it answered 500 Internal Server Error); …",
        Triggered(Proxy(proxy_cannot_reach_the_provider)),
    ),
    (
        "the SOCKS proxy … (from ALL_PROXY) refused the user name and password",
        Test(
            "tests/it/proxy.rs::socks5h_leaves_the_name_to_the_proxy_and_a_refused_password_is_one_line",
        ),
    ),
    (
        "the SOCKS proxy … wants a user name and password",
        Triggered(Proxy(socks_proxy_wants_a_password)),
    ),
    (
        "the SOCKS proxy … could not connect to … (…)",
        Triggered(Proxy(socks_proxy_cannot_connect)),
    ),
    // ---- prose ----
    (
        "kubecred: error: refusing the cache directory: the directory … belongs to uid …, not to this user (uid …), and kubecred keeps tokens only in directories of their own user; pass a --cache-dir of your own",
        Test(
            "tests/it/faults_local.rs::another_users_directory_below_the_cache_dir_is_refused_on_a_hit_and_before_a_login",
        ),
    ),
    (
        "kubecred: error: refusing the token cache file …: it belongs to uid …, not to this user (uid …); someone else may have planted it …",
        Test(
            "tests/it/faults_local.rs::another_users_entry_or_cache_dir_is_refused_and_left_alone",
        ),
    ),
    (
        "kubecred: error: invalid value 'maybe' in KUBECRED_FORCE_REFRESH (for --force-refresh); it takes 1, true, yes or on to turn it on, and 0, false, no or off to turn it off (see kubecred get-token --help)",
        Test(
            "tests/it/cli_behaviour.rs::usage_errors_name_what_to_type_and_the_help_of_the_command_run",
        ),
    ),
    (
        "kubecred: the client credentials token request to … failed: …; using the cached token, valid until …",
        Triggered(Local(stale_if_error)),
    ),
];

// ---- the quotes ----

/// The manual's quoted lines, in order, each once: the code spans in the first column of every table
/// whose first header is "the error line says", and every code span starting with `kubecred: `
/// that quotes a line (not a form such as `kubecred: error: <what failed>`, nor a bare prefix).
fn quoted_lines(readme: &str) -> Vec<String> {
    let mut quotes = Vec::new();
    let mut in_error_table = false;
    for line in readme.lines() {
        if line.starts_with("| the error line says |") {
            in_error_table = true;
            continue;
        }
        if !line.starts_with('|') {
            in_error_table = false;
        }
        if in_error_table && !line.starts_with("|---") {
            let first = cells(line).into_iter().next().unwrap_or_default();
            quotes.extend(code_spans(&first));
        }
        quotes.extend(
            code_spans(line)
                .into_iter()
                .filter(|span| span.starts_with("kubecred: ") && !span.contains('<'))
                .filter(|span| !pieces(span).is_empty() && !is_bare_prefix(span)),
        );
    }
    let mut seen = std::collections::HashSet::new();
    quotes.retain(|quote| seen.insert(quote.clone()));
    quotes
}

/// `kubecred: warning:`: the start of a kind of line, not a line.
fn is_bare_prefix(span: &str) -> bool {
    span.strip_prefix("kubecred: ")
        .and_then(|rest| rest.strip_suffix(':'))
        .is_some_and(|word| word.chars().all(|c| c.is_ascii_lowercase()))
}

/// The cells of a Markdown table row (`\|` inside a cell stays).
pub(crate) fn cells(row: &str) -> Vec<String> {
    let inner = row.trim().trim_start_matches('|').trim_end_matches('|');
    let mut cells = vec![String::new()];
    let mut chars = inner.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cells.last_mut().unwrap().push('|');
                chars.next();
            }
            '|' => cells.push(String::new()),
            _ => cells.last_mut().unwrap().push(c),
        }
    }
    cells.iter().map(|cell| cell.trim().to_string()).collect()
}

/// The single-backtick code spans of a line.
pub(crate) fn code_spans(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// The fixed parts of a quote: what is left between its `…`, after the `kubecred: ` that every
/// line starts with and the `error: ` of the one error line.
fn pieces(quote: &str) -> Vec<&str> {
    let text = quote.strip_prefix("kubecred: ").unwrap_or(quote);
    let text = text.strip_prefix("error: ").unwrap_or(text);
    text.split('…')
        .map(str::trim)
        .filter(|piece| !piece.is_empty())
        .collect()
}

/// Whether `line` says what `quote` quotes: its pieces, in order.
fn matches_line(quote: &str, line: &str) -> bool {
    let mut rest = line;
    for piece in pieces(quote) {
        match rest.find(piece) {
            Some(at) => rest = &rest[at + piece.len()..],
            None => return false,
        }
    }
    true
}

/// The pieces of `quote` that none of `literals` holds: each piece must lie within one of
/// them, between the holes of a format string.
fn pieces_missing_from<'a>(quote: &'a str, literals: &[String]) -> Vec<&'a str> {
    let segments: Vec<String> = literals.iter().flat_map(|l| format_segments(l)).collect();
    pieces(quote)
        .into_iter()
        .filter(|piece| !segments.iter().any(|segment| segment.contains(piece)))
        .collect()
}

// ---- the witnesses that read source ----

/// The string literals of kubecred's code, tests left out: the messages it can print.
fn message_literals() -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&repo_root().join("src"), &mut files);
    let mut literals = Vec::new();
    for path in files {
        let name = path.file_name().unwrap().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") || name == "test_server.rs" {
            continue;
        }
        let source = SourceText::new(&std::fs::read_to_string(&path).unwrap());
        let tests = source.test_only_ranges();
        literals.extend(
            source
                .literals
                .iter()
                .filter(|l| !tests.iter().any(|range| range.contains(&l.at)))
                .map(|l| l.text.clone()),
        );
    }
    literals
}

/// The string literals of the test `file::function`, or why there are none.
fn test_literals(witness: &str) -> Result<Vec<String>, String> {
    let (file, function) = witness
        .rsplit_once("::")
        .ok_or_else(|| format!("{witness}: not file::function"))?;
    let text = std::fs::read_to_string(repo_root().join(file))
        .map_err(|err| format!("{witness}: {err}"))?;
    let source = SourceText::new(&text);
    let body = source
        .function_body(function)
        .ok_or_else(|| format!("{witness}: no such function"))?;
    let before = &source.code[..body.start];
    let is_test = before
        .rfind("fn ")
        .is_some_and(|at| before[..at].trim_end().ends_with("#[test]"));
    if !is_test {
        return Err(format!("{witness}: not a #[test] function"));
    }
    Ok(source.literals_in(&body).map(|l| l.text.clone()).collect())
}

/// What is wrong with the manual's quotes and their witnesses: quotes without one, witnesses for
/// quotes the manual does not have, Test and Source witnesses that do not hold, a Source witness
/// that does not say why it is one. (Triggered witnesses are checked by running them.)
fn witness_problems(quotes: &[String], witnesses: &[(&str, Witness)]) -> Vec<String> {
    let mut problems = Vec::new();
    for quote in quotes {
        match witnesses.iter().filter(|(q, _)| q == quote).count() {
            0 => problems.push(format!("the manual quotes {quote:?}, which has no witness")),
            1 => {}
            n => problems.push(format!("{quote:?} has {n} witnesses")),
        }
    }
    let messages = message_literals();
    for (quote, witness) in witnesses {
        if !quotes.iter().any(|q| q == quote) {
            problems.push(format!(
                "the manual does not quote {quote:?}, though it has a witness"
            ));
        }
        let missing = match witness {
            Triggered(_) => continue,
            Source(why) => {
                if why.trim().is_empty() {
                    problems.push(format!(
                        "{quote:?}: a Source witness must say why no test triggers it"
                    ));
                }
                pieces_missing_from(quote, &messages)
            }
            Test(test) => match test_literals(test) {
                Ok(literals) => pieces_missing_from(quote, &literals),
                Err(err) => {
                    problems.push(err);
                    continue;
                }
            },
        };
        if !missing.is_empty() {
            let whose = match witness {
                Test(test) => format!("the literals of {test}"),
                _ => "kubecred's messages".to_string(),
            };
            problems.push(format!("{quote:?}: {missing:?} not found in {whose}"));
        }
    }
    problems
}

fn manual_text() -> String {
    crate::support::manual::all_text()
}

#[test]
fn every_quoted_line_has_one_witness_and_the_static_ones_hold() {
    let quotes = quoted_lines(&manual_text());
    assert!(quotes.len() > 60, "found only {quotes:#?}");
    let problems = witness_problems(&quotes, WITNESSES);
    assert!(problems.is_empty(), "{problems:#?}");
}

#[test]
fn the_check_can_fail() {
    // A line the binary never printed (README said so once): no message holds it, no run
    // prints it.
    let invented = "refresh token rejected (…); dropping the cache entry";
    assert_eq!(
        pieces_missing_from(invented, &message_literals()),
        ["refresh token rejected (", "); dropping the cache entry"]
    );
    assert!(!matches_line(
        invented,
        "kubecred: https://idp refused the refresh token (invalid_grant); the cached token is used until …"
    ));
    // The prefix every line has is not part of what must match; the order of the parts is.
    assert!(matches_line(
        "kubecred: notice: … failed",
        "kubecred: notice: x failed"
    ));
    assert!(!matches_line(
        "kubecred: notice: … failed",
        "kubecred: x failed"
    ));
    assert!(!matches_line("b … a", "a b"));
    // A quote without a witness, a witness without a quote, a test that asserts other text, a
    // function that is no test.
    let quotes = vec![
        "no issuer URL: pass --issuer-url …".to_string(),
        "a line nobody wrote".to_string(),
    ];
    let witnesses = [
        ("no issuer URL: pass --issuer-url …", Source("")),
        (
            "a quote README lost",
            Test("tests/it/exec_protocol.rs::missing_settings_say_what_to_do"),
        ),
        (
            "refresh token rejected",
            Test("tests/it/exec_protocol.rs::missing_settings_say_what_to_do"),
        ),
        (
            "anything",
            Test("tests/it/troubleshooting.rs::quoted_lines"),
        ),
    ];
    let problems = witness_problems(&quotes, &witnesses);
    for expected in [
        "a Source witness must say why",
        "\"a line nobody wrote\", which has no witness",
        "the manual does not quote \"a quote README lost\"",
        "[\"refresh token rejected\"] not found in the literals of tests/it/exec_protocol.rs::missing_settings_say_what_to_do",
        "troubleshooting.rs::quoted_lines: not a #[test] function",
    ] {
        assert!(
            problems.iter().any(|p| p.contains(expected)),
            "{expected:?} not among {problems:#?}"
        );
    }
    // Quotes are read from the error tables and from prose, forms and prefixes left out.
    let readme = "\
| the error line says | fix |
|---|---|
| `one …` / `two` (from `setup`) | x |

Text `kubecred: error: <what failed>; <what to do>` and `kubecred: warning:` and `kubecred: three …`.
| other | table |
|---|---|
| `not a line` | y |
";
    assert_eq!(
        quoted_lines(readme),
        ["one …", "two", "setup", "kubecred: three …"]
    );
}

/// Runs the triggers of one kind, each in a world of its own, and checks each quote against
/// what the binary wrote.
fn run_witnesses(kind: fn(&Trigger) -> bool, bed: Option<&Testbed>) {
    let quotes = quoted_lines(&manual_text());
    let mut failures = Vec::new();
    let mut ran = 0;
    for (quote, witness) in WITNESSES {
        let Triggered(trigger) = witness else {
            continue;
        };
        if !kind(trigger) {
            continue;
        }
        assert!(
            quotes.iter().any(|q| q == quote),
            "the manual lost {quote:?}"
        );
        let env = TestEnv::new();
        let run = match (trigger, bed) {
            (Local(trigger) | Proxy(trigger), _) => trigger(&env),
            (Bed(trigger) | Browser(trigger), Some(bed)) => trigger(&env, bed),
            _ => unreachable!("a test bed for every trigger that needs one"),
        };
        ran += 1;
        // A report line (convert-kubeconfig's) is on stdout; every other one on stderr.
        let written = format!("{}{}", run.stderr(), run.stdout());
        if !written.lines().any(|line| matches_line(quote, line)) {
            failures.push(format!(
                "{quote:?} is not what {} wrote:\n{written}",
                run.command
            ));
        }
    }
    assert!(ran > 0, "no trigger of this kind");
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn local_failures_print_the_quoted_lines() {
    run_witnesses(|t| matches!(t, Local(_)), None);
}

#[test]
fn provider_failures_print_the_quoted_lines() {
    let bed = Testbed::start_with(json!({"deviceCodeTtl": 2}));
    run_witnesses(|t| matches!(t, Bed(_)), Some(&bed));
}

#[test]
fn refused_refresh_tokens_print_the_quoted_lines() {
    if !have(Need::Browser) {
        return;
    }
    let bed = Testbed::start();
    run_witnesses(|t| matches!(t, Browser(_)), Some(&bed));
}

#[test]
fn proxy_failures_print_the_quoted_lines() {
    if !have(Need::ProxyServers) {
        return;
    }
    run_witnesses(|t| matches!(t, Proxy(_)), None);
}

// ---- triggers: the binary alone, or with a small server of our own ----

/// get-token for a client-credentials client at `issuer`, the secret from the environment.
fn cc_at(env: &TestEnv, issuer: &str) -> std::process::Command {
    let mut command = env.kubecred(&[
        "get-token",
        &format!("--issuer-url={issuer}"),
        "--client-id=ci-bot",
        "--grant-type=client-credentials",
        "--http-timeout=5s",
    ]);
    command.env("KUBECRED_CLIENT_SECRET", "ci-bot-secret");
    command
}

/// A loopback server answering each connection with `answer(path)` (a whole HTTP response, or
/// `None` to close the connection unanswered). Lives as long as the test process.
fn canned_server(answer: fn(&str, &str) -> Option<String>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let shown = base.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut request = [0; 8192];
            let read = stream.read(&mut request).unwrap_or(0);
            let request = String::from_utf8_lossy(&request[..read]).into_owned();
            let path = request.split_whitespace().nth(1).unwrap_or("").to_string();
            if let Some(response) = answer(&shown, &path) {
                let _ = stream.write_all(response.as_bytes());
            }
        }
    });
    base
}

fn http_response(status: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    format!("{head}\r\n{body}")
}

/// A discovery document for `base` whose token endpoint is `base/token`.
fn discovery_of(base: &str) -> String {
    json!({
        "issuer": base,
        "authorization_endpoint": format!("{base}/auth"),
        "token_endpoint": format!("{base}/token"),
        "jwks_uri": format!("{base}/jwks"),
        "response_types_supported": ["code"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": ["RS256"],
    })
    .to_string()
}

fn discovery_redirected(env: &TestEnv) -> Run {
    let base = canned_server(|base, _| {
        Some(http_response(
            "302 Found",
            &[("Location", &format!("{base}/elsewhere"))],
            "",
        ))
    });
    cc_at(env, &base).run().failure(3)
}

fn nothing_listening(env: &TestEnv) -> Run {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    cc_at(env, &issuer).run().failure(3)
}

fn connection_dropped(env: &TestEnv) -> Run {
    let base = canned_server(|_, _| None);
    cc_at(env, &base).run().failure(3)
}

fn bare_403(env: &TestEnv) -> Run {
    let base = canned_server(|base, path| {
        Some(match path {
            "/.well-known/openid-configuration" => http_response(
                "200 OK",
                &[("Content-Type", "application/json")],
                &discovery_of(base),
            ),
            _ => http_response("403 Forbidden", &[], ""),
        })
    });
    cc_at(env, &base).run().failure(3)
}

/// A provider that issues client-credentials tokens (with a refresh token) until it stops.
fn stale_if_error(env: &TestEnv) -> Run {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let served = base.clone();
    let serving = std::thread::spawn(move || {
        // Discovery, then one token request; then the port closes.
        for stream in listener.incoming().take(2) {
            let mut stream = stream.unwrap();
            let mut request = [0; 8192];
            let read = stream.read(&mut request).unwrap_or(0);
            let request = String::from_utf8_lossy(&request[..read]);
            let answer = if request.starts_with("GET /.well-known/openid-configuration") {
                discovery_of(&served)
            } else {
                json!({"access_token": "cc-token", "token_type": "Bearer", "expires_in": 3600})
                    .to_string()
            };
            let _ = stream.write_all(
                http_response("200 OK", &[("Content-Type", "application/json")], &answer)
                    .as_bytes(),
            );
        }
    });
    cc_at(env, &base).run().success();
    serving.join().unwrap();
    // The token is valid for another hour, but asked for two: the provider is gone.
    cc_at(env, &base).arg("--min-validity=2h").run().success()
}

fn no_terminal_for_auto(env: &TestEnv) -> Run {
    env.kubecred(&[
        "get-token",
        "--issuer-url=https://idp.example",
        "--client-id=kubernetes",
    ])
    .run()
    .failure(4)
}

fn keyboard_without_a_terminal(env: &TestEnv) -> Run {
    env.kubecred(&[
        "get-token",
        "--issuer-url=https://idp.example",
        "--client-id=kubernetes",
        "--grant-type=authcode-keyboard",
    ])
    .run()
    .failure(4)
}

/// The authorization URL as a shell leaves it when the `&` after `response_type=code` ends the
/// command: no client_id, redirect_uri or state.
fn bootstrap_url_cut_at_an_ampersand(env: &TestEnv) -> Run {
    env.kubecred(&[
        "login",
        "--remote-bootstrap",
        "https://idp.example/auth?response_type=code",
    ])
    .run()
    .failure(1)
}

/// A relayed login whose redirect port is taken where the browser is: kubecred listens on
/// another and says so (then nobody signs in; the wait ends at --auth-timeout).
fn bootstrap_port_in_use(env: &TestEnv) -> Run {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = taken.local_addr().unwrap().port();
    let url = format!(
        "https://idp.example/auth?response_type=code&client_id=kubernetes&state=s1&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256&redirect_uri=http%3A%2F%2Flocalhost%3A{port}%2Fcallback"
    );
    let run = env
        .kubecred(&[
            "login",
            "--remote-bootstrap",
            &url,
            "--browser-command=true",
            "--auth-timeout=1s",
        ])
        .run()
        .failure(4);
    drop(taken);
    run
}

fn extension_of_the_wrong_type(env: &TestEnv) -> Run {
    let info = json!({
        "kind": "ExecCredential",
        "apiVersion": V1,
        "spec": {"interactive": false, "cluster": {
            "server": "https://api.example",
            "config": {"issuerURL": "https://idp.example", "clientID": 5},
        }},
    });
    env.kubecred(&["get-token"])
        .env("KUBERNETES_EXEC_INFO", info.to_string())
        .run()
        .failure(1)
}

/// `get-token` with `--shared-login` settings that cannot work: refused while the settings are
/// resolved, before any request.
fn shared_login_settings(env: &TestEnv, extra: &[&str]) -> Run {
    let mut args = vec![
        "get-token",
        "--issuer-url=https://idp.example",
        "--client-id=kubernetes",
    ];
    args.extend_from_slice(extra);
    env.kubecred(&args).run().failure(1)
}

fn shared_login_without_a_target(env: &TestEnv) -> Run {
    shared_login_settings(env, &["--shared-login"])
}

fn shared_login_with_two_targets(env: &TestEnv) -> Run {
    shared_login_settings(
        env,
        &[
            "--shared-login",
            "--resource=https://a.example",
            "--audience=https://a.example",
        ],
    )
}

fn target_scope_without_a_shared_login(env: &TestEnv) -> Run {
    shared_login_settings(env, &["--target-scope=api://cluster-b/.default"])
}

fn shared_login_asked_for_an_id_token(env: &TestEnv) -> Run {
    shared_login_settings(
        env,
        &[
            "--shared-login",
            "--resource=https://a.example",
            "--use-access-token=false",
        ],
    )
}

/// A machine's exchange with `--shared-login`: the subject token file is not read (the
/// settings are refused first).
fn shared_login_for_a_machine(env: &TestEnv) -> Run {
    shared_login_settings(
        env,
        &[
            "--grant-type=token-exchange",
            "--subject-token-file=/nonexistent/token",
            "--shared-login",
            "--audience=https://b.example",
        ],
    )
}

/// A kubeconfig that does not parse, in the test's home.
fn broken_kubeconfig(env: &TestEnv) -> PathBuf {
    let path = env.dir.path().join("broken-kubeconfig");
    std::fs::write(&path, "users: [this is: not yaml\n").unwrap();
    path
}

fn convert_unreadable_kubeconfig(env: &TestEnv) -> Run {
    let kubeconfig = broken_kubeconfig(env);
    crate::sessions::kubecred_plain(env, &["convert-kubeconfig"])
        .env("KUBECONFIG", &kubeconfig)
        .run()
        .failure(1)
}

/// An `auth-provider: oidc` user whose provider is down: its tokens cannot be checked.
fn convert_with_the_provider_down(env: &TestEnv) -> Run {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer = format!("http://{}", closed.local_addr().unwrap());
    drop(closed);
    let kubeconfig = env.dir.path().join("legacy-kubeconfig");
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": "https://api.example"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "legacy"}}],
        "current-context": "c",
        "users": [{"name": "legacy", "user": {"auth-provider": {"name": "oidc", "config": {
            "idp-issuer-url": issuer,
            "client-id": "kubernetes",
            "id-token": "eyJhbGciOiJSUzI1NiJ9.eyJpc3MiOiJ4In0.c2ln",
            "refresh-token": "legacy-refresh",
        }}}}],
    });
    std::fs::write(&kubeconfig, config.to_string()).unwrap();
    crate::sessions::kubecred_plain(env, &["convert-kubeconfig"])
        .env("KUBECONFIG", &kubeconfig)
        .run()
        .success()
}

// ---- triggers at the test bed ----

fn discovery_not_found(env: &TestEnv, bed: &Testbed) -> Run {
    cc_at(env, &format!("{}/realms/missing", bed.issuer))
        .run()
        .failure(3)
}

fn untrusted_certificate(env: &TestEnv, bed: &Testbed) -> Run {
    // The API stand-in speaks TLS with a certificate of the test CA, which is not given.
    cc_at(env, &bed.api_server).run().failure(3)
}

fn wrong_client_secret(env: &TestEnv, bed: &Testbed) -> Run {
    let mut args = env.cc_args(bed);
    args.retain(|arg| !arg.starts_with("--client-secret"));
    env.kubecred_owned(&args)
        .env("KUBECRED_CLIENT_SECRET", "not-the-secret")
        .run()
        .failure(3)
}

/// kubecred arguments for a browser login at the bed, with `browser` as the browser.
fn login_args(bed: &Testbed, browser: &str) -> Vec<String> {
    vec![
        "get-token".into(),
        format!("--issuer-url={}", bed.issuer),
        format!("--client-id={PUBLIC_CLIENT}"),
        "--grant-type=authcode".into(),
        "--listen-address=127.0.0.1:0".into(),
        format!("--browser-command={browser}"),
        "--auth-timeout=3s".into(),
    ]
}

/// `tests/support/browser-stub.mjs` with its arguments, as a --browser-command.
fn browser_stub(args: &str) -> String {
    format!(
        "node {} {args}",
        repo_root().join("tests/support/browser-stub.mjs").display()
    )
}

fn unregistered_redirect_uri(env: &TestEnv, bed: &Testbed) -> Run {
    ensure_node_test_bed();
    let page = env.dir.path().join("provider-page.html");
    let mut args = login_args(bed, &browser_stub(&format!("open {}", page.display())));
    args.push("--redirect-url=http://localhost/not-registered".into());
    let run = env.kubecred_owned(&args).run().failure(4);
    // What the person saw instead of a login form: the provider's own refusal, no way back.
    let shown = std::fs::read_to_string(&page).unwrap_or_default();
    assert!(
        shown.contains("redirect_uri did not match any of the client")
            && shown.contains("registered redirect_uris"),
        "{shown}"
    );
    run
}

/// A browser that opens and is closed (or left) before the login: nothing comes back.
fn login_tab_closed(env: &TestEnv, bed: &Testbed) -> Run {
    let args = login_args(bed, "true");
    env.kubecred_owned(&args).run().failure(4)
}

fn login_refused_for_the_client(env: &TestEnv, bed: &Testbed) -> Run {
    let args = login_args(bed, &browser_stub("answer unauthorized_client"));
    env.kubecred_owned(&args).run().failure(4)
}

fn login_denied(env: &TestEnv, bed: &Testbed) -> Run {
    let args = login_args(bed, &browser_stub("answer access_denied"));
    env.kubecred_owned(&args).run().failure(4)
}

fn cool_down_after_a_failed_login(env: &TestEnv, bed: &Testbed) -> Run {
    let args = login_args(bed, &browser_stub("answer access_denied"));
    env.kubecred_owned(&args).run().failure(4);
    env.kubecred_owned(&args).run().failure(4)
}

fn no_browser_and_no_terminal(env: &TestEnv, bed: &Testbed) -> Run {
    // No display, no $BROWSER, no launcher on PATH, no terminal.
    let mut args = login_args(bed, "");
    args.retain(|arg| !arg.starts_with("--browser-command"));
    let mut command = env.kubecred_owned(&args);
    command.env("PATH", env.dir.path());
    command.run().failure(4)
}

fn callback_port_in_use(env: &TestEnv, bed: &Testbed) -> Run {
    let taken = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut args = login_args(bed, &browser_stub("answer access_denied"));
    args.retain(|arg| !arg.starts_with("--listen-address"));
    args.push(format!("--listen-address={}", taken.local_addr().unwrap()));
    let run = env.kubecred_owned(&args).run().failure(4);
    drop(taken);
    run
}

/// `--grant-type device-code` for a client the provider does not allow the device flow.
fn device_flow_refused(env: &TestEnv, bed: &Testbed) -> Run {
    let mut args = device_args(bed);
    args.retain(|arg| !arg.starts_with("--client-id"));
    args.push(format!("--client-id={NO_DEVICE_CLIENT}"));
    env.kubecred_owned(&args).run().failure(3)
}

/// A device-flow login nobody approves (login.rs's, without its browser).
fn device_args(bed: &Testbed) -> Vec<String> {
    let mut args = crate::login::device_args(bed);
    args.retain(|arg| !arg.starts_with("--browser-command"));
    args
}

fn device_code_expired(env: &TestEnv, bed: &Testbed) -> Run {
    // The bed's device codes live 2 s here; nobody approves.
    let mut args = device_args(bed);
    args.push("--auth-timeout=20s".into());
    env.kubecred_owned(&args).run().failure(4)
}

fn device_login_not_approved(env: &TestEnv, bed: &Testbed) -> Run {
    let mut args = device_args(bed);
    args.push("--auth-timeout=1s".into());
    env.kubecred_owned(&args).run().failure(4)
}

fn no_keyring(env: &TestEnv, bed: &Testbed) -> Run {
    let mut args = env.cc_args(bed);
    args.push("--cache-storage=keyring".into());
    env.kubecred_owned(&args)
        .env("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/bus")
        .run()
        .failure(5)
}

fn setup_unreadable_kubeconfig(env: &TestEnv, bed: &Testbed) -> Run {
    let kubeconfig = broken_kubeconfig(env);
    env.kubecred_owned(&[
        "setup".into(),
        format!("--issuer-url={}", bed.issuer),
        format!("--client-id={CC_CLIENT}"),
        "--grant-type=client-credentials".into(),
        "--write-kubeconfig".into(),
        format!("--kubeconfig={}", kubeconfig.display()),
    ])
    .env("KUBECRED_CLIENT_SECRET", CC_SECRET)
    .run()
    .failure(1)
}

// ---- triggers with a login in the real browser ----

/// A browser login whose refresh token the provider refuses from now on.
fn logged_in_then_refused(env: &TestEnv, bed: &Testbed) -> Vec<String> {
    bed.configure(json!({"refreshError": null}));
    let mut args = authcode_args(bed);
    args.push("--scope=offline_access".into());
    env.kubecred_owned(&args).run().success();
    bed.configure(json!({"refreshError": "invalid_grant"}));
    args.retain(|arg| !arg.starts_with("--browser-command") && arg != "--grant-type=authcode");
    args
}

fn refresh_token_refused_while_the_token_is_valid(env: &TestEnv, bed: &Testbed) -> Run {
    let mut args = logged_in_then_refused(env, bed);
    // Asking for more life than the token has left: a refresh, refused; the token still serves.
    args.push("--min-validity=1h".into());
    env.kubecred_owned(&args).run().success()
}

fn refresh_token_refused_after_the_token_expired(env: &TestEnv, bed: &Testbed) -> Run {
    // No terminal and the system browser: the login the refusal calls for cannot happen, and
    // the line that says so is the only one.
    let elsewhere = TestEnv::new();
    let args = logged_in_then_refused(&elsewhere, bed);
    expire_cached_tokens(&elsewhere.cache_dir());
    let run = elsewhere.kubecred_owned(&args).run().failure(4);
    let line = run.only_kubecred_line();
    assert!(
        line.starts_with("kubecred: error: no terminal to log in on"),
        "{line}"
    );
    // With a browser, the login goes ahead, and the line says why it is needed.
    let mut args = logged_in_then_refused(env, bed);
    expire_cached_tokens(&env.cache_dir());
    args.push("--grant-type=authcode".into());
    args.push(format!("--browser-command={}", browser_command()));
    env.kubecred_owned(&args).run().success()
}

/// A shared login asked for `https://a.example` and `https://b.example`, logged in in the
/// browser through cluster A; returns the arguments of cluster `resource` (no browser, so
/// nothing can log in again unseen).
fn shared_login_then(env: &TestEnv, bed: &Testbed, resource: &str) -> Vec<String> {
    bed.configure(json!({"refreshError": null, "tokenResponsePatch": null}));
    let mut args = authcode_args(bed);
    args.push("--shared-login".into());
    args.push("--login-resource=https://a.example,https://b.example".into());
    let mut first = args.clone();
    first.push("--resource=https://a.example".into());
    env.kubecred_owned(&first).run().success();
    args.retain(|arg| !arg.starts_with("--browser-command") && arg != "--grant-type=authcode");
    args.push(format!("--resource={resource}"));
    args
}

/// The provider stops granting B after the login was granted it: the refresh for B, which
/// kubecred rightly sends, is answered `invalid_target`.
fn shared_login_narrowed_at_the_provider(env: &TestEnv, bed: &Testbed) -> Run {
    let args = shared_login_then(env, bed, "https://b.example");
    bed.configure(json!({"resources": ["https://a.example"]}));
    let run = env.kubecred_owned(&args).run();
    bed.configure(json!({"resources": null}));
    run.failure(3)
}

/// The same cluster asked again after its target was refused: refused at once, nothing sent.
fn shared_login_narrowed_then_asked_again(env: &TestEnv, bed: &Testbed) -> Run {
    let args = shared_login_then(env, bed, "https://b.example");
    bed.configure(json!({"resources": ["https://a.example"]}));
    env.kubecred_owned(&args).run().failure(3);
    let run = env.kubecred_owned(&args).run();
    bed.configure(json!({"resources": null}));
    run.failure(3)
}

/// A `derive` in the cluster extension that names no way of deriving.
fn shared_login_derived_some_other_way(env: &TestEnv) -> Run {
    let info = json!({
        "kind": "ExecCredential",
        "apiVersion": V1,
        "spec": {"interactive": false, "cluster": {
            "server": "https://api.example",
            "config": {"sharedLogin": true, "resource": "https://b.example", "derive": "exchange"},
        }},
    });
    env.kubecred(&[
        "get-token",
        "--issuer-url=https://idp.example",
        "--client-id=kubernetes",
    ])
    .env("KUBERNETES_EXEC_INFO", info.to_string())
    .run()
    .failure(1)
}

fn shared_login_for_a_resource_outside_it(env: &TestEnv, bed: &Testbed) -> Run {
    let args = shared_login_then(env, bed, "https://c.example");
    let run = env.kubecred_owned(&args).run().failure(1);
    // Refused before any request: the resource never reached the provider on the refresh token.
    let sent_c = bed.requests().iter().any(|request| {
        request["form"]["resource"]
            .as_array()
            .is_some_and(|values| values.iter().any(|v| v == "https://c.example"))
    });
    assert!(!sent_c, "https://c.example was sent to the provider");
    run
}

/// An unsigned JWT with `payload`: what a provider's answer is made to carry (kubecred reads a
/// derived token's `aud` before anything verifies it; the API server verifies it).
fn unsigned_jwt(payload: serde_json::Value) -> String {
    use base64::Engine;
    let encode = |v: serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
    };
    format!(
        "{}.{}.c2ln",
        encode(json!({"alg": "RS256", "typ": "at+jwt"})),
        encode(payload)
    )
}

/// Cluster B's token derived while every token answer carries `access_token`: refused, nothing
/// cached for B, and the login's rotated refresh token kept (the next derivation for B, with
/// honest answers, succeeds: a lost rotation would have revoked the login).
fn shared_login_answered_with(env: &TestEnv, bed: &Testbed, access_token: String) -> Run {
    let args = shared_login_then(env, bed, "https://b.example");
    bed.configure(json!({"tokenResponsePatch": {"access_token": access_token}}));
    let run = env.kubecred_owned(&args).run();
    bed.configure(json!({"tokenResponsePatch": null}));
    let run = run.failure(3);
    let status: serde_json::Value = serde_json::from_str(
        &crate::sessions::kubecred_plain(env, &["status", "--output=json"])
            .run()
            .success()
            .stdout(),
    )
    .unwrap();
    let entries = status["entries"].as_array().unwrap();
    assert!(
        !entries.iter().any(|e| e["resource"] == "https://b.example"),
        "B's token was cached: {status:#}"
    );
    env.kubecred_owned(&args).run().success();
    run
}

fn shared_login_answered_for_another_audience(env: &TestEnv, bed: &Testbed) -> Run {
    let other = unsigned_jwt(json!({"aud": "https://default.example", "sub": "alice"}));
    shared_login_answered_with(env, bed, other)
}

fn shared_login_answered_with_an_opaque_token(env: &TestEnv, bed: &Testbed) -> Run {
    shared_login_answered_with(env, bed, "an-opaque-access-token".into())
}

// ---- triggers with real proxies ----

fn proxied_cc(env: &TestEnv, issuer: &str, variable: &str, proxy: &str) -> Run {
    cc_at(env, issuer).env(variable, proxy).run().failure(3)
}

fn proxy_forbids_the_port(env: &TestEnv) -> Run {
    let proxy = crate::proxy::ProxyServer::tinyproxy_with(env, "ConnectPort 443\n");
    let provider = TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer = format!("https://{}", provider.local_addr().unwrap());
    proxied_cc(
        env,
        &issuer,
        "HTTPS_PROXY",
        &format!("http://127.0.0.1:{}", proxy.port),
    )
}

fn proxy_cannot_reach_the_provider(env: &TestEnv) -> Run {
    let proxy = crate::proxy::ProxyServer::tinyproxy_with(env, "");
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer = format!("https://{}", closed.local_addr().unwrap());
    drop(closed);
    proxied_cc(
        env,
        &issuer,
        "HTTPS_PROXY",
        &format!("http://127.0.0.1:{}", proxy.port),
    )
}

fn socks_proxy_wants_a_password(env: &TestEnv) -> Run {
    let proxy = crate::proxy::ProxyServer::microsocks(env, Some(("ada", "socks-pass")));
    proxied_cc(
        env,
        "https://127.0.0.1:1",
        "ALL_PROXY",
        &format!("socks5://127.0.0.1:{}", proxy.port),
    )
}

fn socks_proxy_cannot_connect(env: &TestEnv) -> Run {
    let proxy = crate::proxy::ProxyServer::microsocks(env, None);
    let closed = TcpListener::bind("127.0.0.1:0").unwrap();
    let issuer = format!("https://{}", closed.local_addr().unwrap());
    drop(closed);
    proxied_cc(
        env,
        &issuer,
        "ALL_PROXY",
        &format!("socks5://127.0.0.1:{}", proxy.port),
    )
}
