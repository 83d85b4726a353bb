//! One login, a token for every cluster (`--shared-login`): the real kubectl against several
//! API stand-ins of the test bed (option `audienceApis`), each accepting only tokens for its own
//! audience. One browser login (one refresh token) per issuer, client and account; each
//! cluster's token derived from it by a refresh for the cluster's resource (`--derive refresh`,
//! the default), a token exchange of the login's access token (`--derive token-exchange`), or,
//! as Entra ID does it, a refresh for the cluster's `api://NAME/.default` scope
//! (`--target-scope`). The cluster's target comes from the cluster extension kubectl passes with
//! `provideClusterInfo: true` (`resource`, `audience`, `targetScope`).

use crate::support::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

const A: &str = "https://a.example";
const B: &str = "https://b.example";
const C: &str = "https://c.example";
const D: &str = "https://d.example";
/// What the bed answers every derived token for under `derivedAudienceOverride`.
const DEFAULT_AUDIENCE: &str = "https://default.example";

/// A cluster of the kubeconfig: its context name, the audience its stand-in accepts, and its
/// `client.authentication.k8s.io/exec` extension.
struct Cluster {
    name: &'static str,
    audience: String,
    extension: Value,
}

impl Cluster {
    fn resource(name: &'static str, audience: &str) -> Cluster {
        Cluster {
            name,
            audience: audience.into(),
            extension: json!({"resource": audience}),
        }
    }

    fn target_scope(name: &'static str, audience: &str) -> Cluster {
        Cluster {
            name,
            audience: audience.into(),
            extension: json!({"targetScope": format!("{audience}/.default")}),
        }
    }
}

/// The three clusters a, b and c, each with the extension `{resource: https://X.example}`.
fn abc() -> Vec<Cluster> {
    vec![
        Cluster::resource("a", A),
        Cluster::resource("b", B),
        Cluster::resource("c", C),
    ]
}

/// The user's exec args: a browser login with the public client, shared, whose one login asks
/// for `login_resources`.
fn shared_args(bed: &Testbed, login_resources: &[&str]) -> Vec<String> {
    let mut args = authcode_args(bed);
    args.push("--shared-login".into());
    if !login_resources.is_empty() {
        args.push(format!("--login-resource={}", login_resources.join(",")));
    }
    args
}

/// One test's world: the bed with a stand-in per audience, the test env, the browser launch log.
struct World {
    bed: Testbed,
    env: TestEnv,
    log: PathBuf,
}

impl World {
    fn start(options: Value) -> World {
        let bed = Testbed::start_with(options);
        let env = TestEnv::new();
        let log = env.dir.path().join("browser.log");
        World { bed, env, log }
    }

    fn with_audiences(audiences: &[&str]) -> World {
        World::start(json!({ "audienceApis": audiences }))
    }

    /// `args` with the test's cache, as the exec stanza runs them.
    fn exec_args(&self, args: &[String]) -> Vec<String> {
        let mut args = args.to_vec();
        args.push(format!("--cache-dir={}", self.env.cache_dir().display()));
        args.push("--cache-storage=disk".into());
        args
    }

    /// A kubeconfig with one user (kubecred with `args`, `provideClusterInfo: true`) and one
    /// cluster and context per `clusters`, each cluster's server its audience's stand-in.
    fn kubeconfig(&self, args: &[String], clusters: &[Cluster]) -> PathBuf {
        let path = self.env.dir.path().join("kubeconfig.json");
        let exec = json!({
            "apiVersion": V1,
            "command": kubecred_bin(),
            "args": self.exec_args(args),
            "interactiveMode": "Never",
            "provideClusterInfo": true,
        });
        let config = json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": clusters.iter().map(|c| json!({"name": c.name, "cluster": {
                "server": self.bed.audience_api_url(&c.audience),
                "certificate-authority-data": self.bed.ca_data,
                "extensions": [{"name": "client.authentication.k8s.io/exec", "extension": c.extension}],
            }})).collect::<Vec<_>>(),
            "users": [{"name": "sso", "user": {"exec": exec}}],
            "contexts": clusters.iter().map(|c| json!({"name": c.name, "context": {"cluster": c.name, "user": "sso"}})).collect::<Vec<_>>(),
            "current-context": clusters[0].name,
        });
        std::fs::write(&path, serde_json::to_vec_pretty(&config).unwrap()).unwrap();
        path
    }

    /// `kubectl --context <context> auth whoami -o json`, the browser launches logged.
    fn whoami_command(&self, kubeconfig: &Path, context: &str) -> Command {
        let mut cmd = self.env.kubectl(
            kubeconfig,
            &["--context", context, "auth", "whoami", "-o", "json"],
        );
        cmd.env("TESTBED_BROWSER_LOG", &self.log);
        cmd
    }

    fn whoami(&self, kubeconfig: &Path, context: &str) -> Run {
        self.whoami_command(kubeconfig, context).run()
    }

    /// kubectl on `context` succeeds as alice.
    #[track_caller]
    fn works(&self, kubeconfig: &Path, context: &str) {
        let run = self.whoami(kubeconfig, context).success();
        let review: Value = serde_json::from_str(&run.stdout()).unwrap();
        assert_eq!(
            review["status"]["userInfo"]["username"],
            "alice",
            "{}",
            run.stdout()
        );
    }

    /// What kubectl hands kubecred for `cluster` (`KUBERNETES_EXEC_INFO` with the cluster and its
    /// extension).
    fn exec_info(&self, cluster: &Cluster) -> String {
        json!({
            "kind": "ExecCredential",
            "apiVersion": V1,
            "spec": {
                "interactive": false,
                "cluster": {
                    "server": self.bed.audience_api_url(&cluster.audience),
                    "certificate-authority-data": self.bed.ca_data,
                    "config": cluster.extension,
                },
            },
        })
        .to_string()
    }

    /// `kubecred <args>` run as kubectl runs it for `cluster`.
    fn kubecred_for(&self, args: &[String], cluster: &Cluster) -> Command {
        let mut cmd = self.env.kubecred_owned(args);
        cmd.env("KUBERNETES_EXEC_INFO", self.exec_info(cluster))
            .env("TESTBED_BROWSER_LOG", &self.log);
        cmd
    }

    /// The token kubecred hands out for `cluster` (`get-token` with `args`).
    fn token_for(&self, args: &[String], cluster: &Cluster) -> String {
        self.kubecred_for(args, cluster).run().success().token()
    }

    fn launches(&self) -> usize {
        browser_launches(&self.log)
    }

    /// The provider refused no token request (none answered 4xx or 5xx): a refresh token
    /// used twice, a resource not granted, would be.
    #[track_caller]
    fn no_token_request_refused(&self) {
        let refused: Vec<(String, u16)> = self
            .bed
            .token_answers()
            .into_iter()
            .filter(|(_, status)| *status >= 400)
            .collect();
        assert!(refused.is_empty(), "refused token requests: {refused:?}");
    }

    /// Every cluster's stand-in saw requests and refused none of them.
    #[track_caller]
    fn no_stand_in_refused_a_request(&self, clusters: &[Cluster]) {
        for cluster in clusters {
            let counts = self.bed.audience_api_stats(&cluster.audience);
            assert!(
                counts["requests"].as_u64().unwrap() > 0,
                "{}: {counts}",
                cluster.audience
            );
            assert_eq!(counts["unauthorized"], 0, "{}: {counts}", cluster.audience);
        }
    }

    /// `cluster`'s token has its own audience alone, and only its stand-in accepts it.
    #[track_caller]
    fn token_is_for_its_cluster_alone(&self, token: &str, cluster: &Cluster, clusters: &[Cluster]) {
        assert_eq!(
            audiences(token),
            [cluster.audience.as_str()],
            "cluster {}",
            cluster.name
        );
        for other in clusters {
            let status = self
                .bed
                .api_status(&self.bed.audience_api_url(&other.audience), token);
            let expected = if other.audience == cluster.audience {
                200
            } else {
                401
            };
            assert_eq!(
                status, expected,
                "{}'s token at {}'s stand-in",
                cluster.name, other.name
            );
        }
    }
}

/// A JWT's `aud` as a list (a string is a list of one).
fn audiences(token: &str) -> Vec<String> {
    match &jwt_claims(token)["aud"] {
        Value::String(aud) => vec![aud.clone()],
        Value::Array(auds) => auds
            .iter()
            .map(|a| a.as_str().unwrap().to_string())
            .collect(),
        other => panic!("aud {other} in {}", jwt_claims(token)),
    }
}

fn file_names(files: Vec<PathBuf>) -> BTreeSet<PathBuf> {
    files.into_iter().collect()
}

#[test]
fn one_login_serves_three_clusters_each_with_a_token_of_its_own() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::with_audiences(&[A, B, C]);
    let clusters = abc();
    let args = shared_args(&w.bed, &[A, B, C]);
    let kubeconfig = w.kubeconfig(&args, &clusters);

    for cluster in &clusters {
        w.works(&kubeconfig, cluster.name);
    }
    assert_eq!(w.launches(), 1, "one browser login for the three clusters");
    assert_eq!(w.bed.stats()["authorization"], 1);
    assert_eq!(w.bed.token_requests("authorization_code"), 1);
    assert_eq!(
        w.bed.token_requests("refresh_token"),
        2,
        "the login answers a; b and c each cost one refresh"
    );
    assert_eq!(w.bed.token_requests(TOKEN_EXCHANGE_GRANT), 0);
    w.no_token_request_refused();
    w.no_stand_in_refused_a_request(&clusters);

    // Each cluster's token is for it alone, and is answered from the cache.
    let exec_args = w.exec_args(&args);
    let requests = w.bed.total_token_requests();
    for cluster in &clusters {
        let token = w.token_for(&exec_args, cluster);
        w.token_is_for_its_cluster_alone(&token, cluster, &clusters);
    }
    // The three kubectl runs again: the cache answers, nobody asks the provider.
    for cluster in &clusters {
        w.works(&kubeconfig, cluster.name);
    }
    assert_eq!(w.bed.total_token_requests(), requests, "cache hits only");
    assert_eq!(w.launches(), 1);

    // `status` shows the login and each cluster's token with its audience.
    let status = crate::sessions::kubecred_plain(&w.env, &["status"])
        .run()
        .success()
        .stdout();
    let rows: Vec<&str> = status.lines().skip(1).collect();
    assert_eq!(rows.len(), 4, "{status}");
    assert_eq!(
        rows.iter()
            .filter(|row| row.contains("(shared login)") && row.contains(" yes"))
            .count(),
        1,
        "one login entry, holding the refresh token:\n{status}"
    );
    for cluster in &clusters {
        let derived = format!("{} (derived)", cluster.audience);
        assert_eq!(
            rows.iter()
                .filter(|row| row.contains(&derived) && row.trim_end().ends_with(" no"))
                .count(),
            1,
            "{derived}, without a refresh token:\n{status}"
        );
    }
}

/// Clusters a and b of one shared login whose tokens are in the refresh-ahead window (the bed's
/// tokens live 600 s: `--refresh-ahead=599s` opens it a second after they are issued): the
/// world, the clusters, the exec args, and b's cached token.
fn in_the_refresh_ahead_window() -> (World, [Cluster; 2], Vec<String>, String) {
    let w = World::with_audiences(&[A, B]);
    let clusters = [Cluster::resource("a", A), Cluster::resource("b", B)];
    let mut args = shared_args(&w.bed, &[A, B]);
    args.extend(["--refresh-ahead=599s".into(), "--min-validity=5s".into()]);
    let args = w.exec_args(&args);
    w.token_for(&args, &clusters[0]);
    let b = w.token_for(&args, &clusters[1]);
    std::thread::sleep(std::time::Duration::from_millis(1500));
    (w, clusters, args, b)
}

#[test]
fn refresh_ahead_derives_a_cluster_s_token_from_the_login_in_the_background() {
    if !have(Need::Browser) {
        return;
    }
    let (w, clusters, args, first) = in_the_refresh_ahead_window();
    assert_eq!(w.bed.token_requests("refresh_token"), 1);

    // A hit in the window: the cached token at once, nothing on stderr, and one renewal in
    // the background that derives b's token from the login (a refresh for b's resource).
    let hit = w.kubecred_for(&args, &clusters[1]).run().success();
    assert_eq!(hit.token(), first);
    assert_eq!(
        hit.stderr(),
        "",
        "nothing of the background on kubectl's stderr"
    );
    wait_until(
        "the background derivation",
        std::time::Duration::from_secs(30),
        || w.bed.token_requests("refresh_token") >= 2 && !an_entry_lock_is_held(&w.env.cache_dir()),
    );
    let renewed = w.token_for(&args, &clusters[1]);
    assert_ne!(
        renewed, first,
        "the hit after the renewal hands out the derived token"
    );
    assert_eq!(audiences(&renewed), [B]);
    assert_eq!(w.bed.token_requests("refresh_token"), 2, "one renewal");
    assert_eq!(w.launches(), 1, "never a login");
    w.no_token_request_refused();
    // The login's rotated refresh token was kept: a's token still comes from it.
    expire_cached_tokens(&w.env.cache_dir());
    let a = w.token_for(&w.exec_args(&shared_args(&w.bed, &[A, B])), &clusters[0]);
    assert_eq!(audiences(&a), [A]);
    assert_eq!(w.launches(), 1);
    w.no_token_request_refused();
}

#[test]
fn expired_tokens_of_three_clusters_are_renewed_at_once_from_the_one_login() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::with_audiences(&[A, B, C]);
    let clusters = abc();
    let args = shared_args(&w.bed, &[A, B, C]);
    let kubeconfig = w.kubeconfig(&args, &clusters);
    for cluster in &clusters {
        w.works(&kubeconfig, cluster.name);
    }
    let refreshes = w.bed.token_requests("refresh_token");

    // Three kubectl at once, every token expired: the refresh token rotates at each use, and
    // its reuse revokes the whole login at this provider, so the three refreshes must follow
    // one another, each with the newest refresh token.
    expire_cached_tokens(&w.env.cache_dir());
    let outputs = run_all_at_once(
        clusters
            .iter()
            .map(|cluster| w.whoami_command(&kubeconfig, cluster.name)),
    );
    for output in outputs {
        let review: Value = serde_json::from_str(&output).unwrap();
        assert_eq!(review["status"]["userInfo"]["username"], "alice");
    }
    assert_eq!(w.launches(), 1, "no new login");
    assert_eq!(w.bed.token_requests("authorization_code"), 1);
    w.no_token_request_refused();
    assert_eq!(
        w.bed.token_requests("refresh_token"),
        refreshes + 3,
        "one refresh per cluster"
    );
    w.no_stand_in_refused_a_request(&clusters);
}

#[test]
fn a_background_derivation_the_provider_refuses_backs_off_and_changes_nothing_kubectl_sees() {
    if !have(Need::Browser) {
        return;
    }
    let (w, clusters, args, b) = in_the_refresh_ahead_window();
    w.bed.revoke_refresh_tokens();
    let refreshes = w.bed.token_requests("refresh_token");

    // A hit in the window starts a renewal, which the provider refuses: kubectl sees the
    // cached token and nothing else, and nobody is asked to log in.
    let hit = w.kubecred_for(&args, &clusters[1]).run().success();
    assert_eq!((hit.token(), hit.stderr()), (b.clone(), String::new()));
    wait_until(
        "the background renewal",
        std::time::Duration::from_secs(30),
        || {
            w.bed.token_requests("refresh_token") > refreshes
                && !an_entry_lock_is_held(&w.env.cache_dir())
        },
    );
    // Give a (wrongly) retrying renewal the time to show itself.
    std::thread::sleep(std::time::Duration::from_millis(500));
    let status: Value = serde_json::from_str(
        &crate::sessions::kubecred_plain(&w.env, &["status", "--output=json"])
            .run()
            .success()
            .stdout(),
    )
    .unwrap();
    let derived_b = status["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["derived_from"].is_string() && e["audience"] == B)
        .unwrap_or_else(|| panic!("b's entry in {status}"));
    let failed = &derived_b["renewal_failed"];
    assert!(
        failed["reason"]
            .as_str()
            .is_some_and(|r| r.contains("refused")),
        "{derived_b}"
    );
    assert!(
        failed["retry_at"].is_null(),
        "not again for this token: {failed}"
    );
    // Later hits answer from the cache and start nothing more.
    for _ in 0..3 {
        let hit = w.kubecred_for(&args, &clusters[1]).run().success();
        assert_eq!((hit.token(), hit.stderr()), (b.clone(), String::new()));
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    assert_eq!(
        w.bed.token_requests("refresh_token"),
        refreshes + 1,
        "the refused refresh token was sent once"
    );
    assert_eq!(w.launches(), 1, "never a login in the background");
}

#[test]
fn a_refused_login_leaves_each_cluster_its_valid_token_until_it_runs_out() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::with_audiences(&[A, B]);
    let clusters = [Cluster::resource("a", A), Cluster::resource("b", B)];
    // The bed's tokens live 600 s: with --min-validity=599s they are no longer fresh a second
    // after they are issued, but still valid for ten minutes.
    let mut args = shared_args(&w.bed, &[A, B]);
    args.push("--min-validity=599s".into());
    let args = w.exec_args(&args);
    let a = w.token_for(&args, &clusters[0]);
    let b = w.token_for(&args, &clusters[1]);
    std::thread::sleep(std::time::Duration::from_millis(1500));

    // The provider revokes the login: the refresh for b is refused once, said once, and b's
    // token, still valid, is handed out (no terminal here: a login could not happen).
    w.bed.revoke_refresh_tokens();
    let refreshes = w.bed.token_requests("refresh_token");
    let run = w.kubecred_for(&args, &clusters[1]).run().success();
    assert_eq!(run.token(), b);
    run.stderr_contains("refused the shared login's refresh token")
        .stderr_contains("this cluster's cached token is used until");
    assert_eq!(w.bed.token_requests("refresh_token"), refreshes + 1);
    // The refusal is remembered: a's valid token too, with no request and nothing said.
    let run = w.kubecred_for(&args, &clusters[0]).run().success();
    assert_eq!(run.token(), a);
    assert_eq!(run.stderr(), "");
    let run = w.kubecred_for(&args, &clusters[1]).run().success();
    assert_eq!(run.token(), b);
    assert_eq!(
        w.bed.token_requests("refresh_token"),
        refreshes + 1,
        "never sent again"
    );
    assert_eq!(w.launches(), 1);
}

#[test]
fn a_grant_narrowed_at_the_provider_is_said_to_be_so_and_nothing_is_cached() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::with_audiences(&[A, B]);
    let clusters = [Cluster::resource("a", A), Cluster::resource("b", B)];
    let args = w.exec_args(&shared_args(&w.bed, &[A, B]));
    w.token_for(&args, &clusters[0]);
    let files = file_names(cache_token_files(&w.env.cache_dir()));
    // The provider stops knowing b after the login was granted it: the refresh for b, which
    // kubecred rightly sends, is answered invalid_target.
    w.bed.configure(json!({ "resources": [A] }));
    let run = w
        .kubecred_for(&args, &clusters[1])
        .run()
        .failure(3)
        .stderr_contains(&format!(
            "refused to refresh the shared login for resource {B}"
        ))
        .stderr_contains("no longer grants it");
    assert_eq!(run.stdout(), "");
    assert_eq!(
        file_names(cache_token_files(&w.env.cache_dir())),
        files,
        "nothing cached for b"
    );
}

#[test]
fn a_target_the_provider_stopped_granting_is_not_asked_again_until_the_next_login() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::with_audiences(&[A, B]);
    let clusters = [Cluster::resource("a", A), Cluster::resource("b", B)];
    let args = w.exec_args(&shared_args(&w.bed, &[A, B]));
    w.token_for(&args, &clusters[0]);
    // The provider stops granting b to the login's refresh token (as glewlwyd narrows a rotated
    // refresh token to the last resource asked for): the one refresh for b is refused, and the
    // message says what happened and what can help — not another login, which would be
    // narrowed the same way.
    w.bed.configure(json!({ "resources": [A] }));
    let refreshes = w.bed.token_requests("refresh_token");
    w.kubecred_for(&args, &clusters[1])
        .run()
        .failure(3)
        .stderr_contains("not asked again until the next login")
        .stderr_contains("without --shared-login");
    assert_eq!(w.bed.token_requests("refresh_token"), refreshes + 1);
    // Each later run says why at once, and sends nothing.
    let run = w
        .kubecred_for(&args, &clusters[1])
        .run()
        .failure(3)
        .stderr_contains(&format!("no longer serves resource {B}"));
    assert_eq!(run.stdout(), "");
    assert_eq!(
        w.bed.token_requests("refresh_token"),
        refreshes + 1,
        "the refused refresh is never sent again"
    );
    // A login asks again: granted once more, b works, from the new login.
    w.bed.configure(json!({ "resources": [A, B] }));
    let mut login = args.clone();
    login[0] = "login".into();
    w.kubecred_for(&login, &clusters[1]).run().success();
    assert_eq!(w.launches(), 2);
    let b = w.token_for(&args, &clusters[1]);
    assert_eq!(audiences(&b), [B]);
}

#[test]
fn a_cluster_outside_the_login_resources_is_refused_until_the_login_asks_for_it() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::with_audiences(&[A, B, C, D]);
    let mut clusters = abc();
    clusters.push(Cluster::resource("d", D));
    let kubeconfig = w.kubeconfig(&shared_args(&w.bed, &[A, B, C]), &clusters);
    for cluster in &clusters[..3] {
        w.works(&kubeconfig, cluster.name);
    }
    let requests = w.bed.total_token_requests();

    // d's resource is not among those the login was granted: a refresh for it would be
    // refused with invalid_target, and oidc-provider consumes the refresh token doing so (the
    // login would be lost). kubecred says so without asking.
    let run = w.whoami(&kubeconfig, "d");
    assert!(!run.output.status.success(), "kubectl on d must fail");
    run.stderr_contains(D).stderr_contains("--login-resource");
    assert_eq!(
        w.bed.total_token_requests(),
        requests,
        "no token request for d"
    );
    assert_eq!(w.launches(), 1);
    for cluster in &clusters[..3] {
        w.works(&kubeconfig, cluster.name);
    }
    assert_eq!(
        w.bed.total_token_requests(),
        requests,
        "a, b and c still from the cache"
    );

    // The user adds d to --login-resource: one more login, then d works, and so do a, b, c.
    let kubeconfig = w.kubeconfig(&shared_args(&w.bed, &[A, B, C, D]), &clusters);
    w.works(&kubeconfig, "d");
    assert_eq!(w.launches(), 2, "exactly one more browser login");
    assert_eq!(w.bed.token_requests("authorization_code"), 2);
    for cluster in &clusters {
        w.works(&kubeconfig, cluster.name);
    }
    assert_eq!(w.launches(), 2);
    w.no_token_request_refused();
    w.no_stand_in_refused_a_request(&clusters);
}

#[test]
fn a_derived_token_for_the_wrong_audience_is_refused_and_not_cached() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::with_audiences(&[A, B, C]);
    let clusters = abc();
    let kubeconfig = w.kubeconfig(&shared_args(&w.bed, &[A, B, C]), &clusters);
    w.works(&kubeconfig, "a");
    let files_before = file_names(cache_token_files(&w.env.cache_dir()));

    // The provider answers b's refresh with a token for its default audience, silently (Auth0).
    w.bed
        .configure(json!({"derivedAudienceOverride": DEFAULT_AUDIENCE}));
    let refreshes = w.bed.token_requests("refresh_token");
    let run = w.whoami(&kubeconfig, "b");
    assert!(!run.output.status.success(), "kubectl on b must fail");
    run.stderr_contains(B).stderr_contains(DEFAULT_AUDIENCE);
    assert!(
        w.bed.token_requests("refresh_token") > refreshes,
        "b's token was asked for"
    );
    assert_eq!(
        file_names(cache_token_files(&w.env.cache_dir())),
        files_before,
        "nothing cached for b"
    );
    // Nor kept anywhere else: the next kubectl on b fails as well, without b's stand-in ever
    // seeing that token.
    let run = w.whoami(&kubeconfig, "b");
    assert!(!run.output.status.success(), "kubectl on b must fail again");
    run.stderr_contains(DEFAULT_AUDIENCE);
    assert_eq!(
        w.bed.audience_api_stats(B)["unauthorized"],
        0,
        "the wrong token never reached b"
    );

    // The provider is fixed: b works, without a new login (the refresh token the refused
    // answer rotated in was kept).
    w.bed.configure(json!({"derivedAudienceOverride": null}));
    w.works(&kubeconfig, "b");
    let token = w.token_for(&w.exec_args(&shared_args(&w.bed, &[A, B, C])), &clusters[1]);
    assert_eq!(audiences(&token), [B]);
    assert_eq!(w.launches(), 1, "no new login");
    assert_eq!(w.bed.token_requests("authorization_code"), 1);
    w.works(&kubeconfig, "a");
}

#[test]
fn token_exchange_derives_each_cluster_token_from_the_login_access_token() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::with_audiences(&[A, B, C]);
    let clusters = abc();
    let mut args = shared_args(&w.bed, &[A, B, C]);
    args.push("--derive=token-exchange".into());
    let kubeconfig = w.kubeconfig(&args, &clusters);
    for cluster in &clusters {
        w.works(&kubeconfig, cluster.name);
    }
    assert_eq!(w.launches(), 1);
    assert_eq!(w.bed.token_requests("authorization_code"), 1);
    let exchanges = w.bed.token_requests(TOKEN_EXCHANGE_GRANT);
    assert!(
        exchanges >= 2,
        "b and c at least by an exchange: {}",
        w.bed.stats()
    );
    w.no_token_request_refused();
    w.no_stand_in_refused_a_request(&clusters);
    // What the exchanges asked for: an access token as the subject, a JWT for a cluster.
    let targets: BTreeSet<&str> = [A, B, C].into();
    for request in w.bed.requests() {
        let form = &request["form"];
        if form["grant_type"][0] != TOKEN_EXCHANGE_GRANT {
            continue;
        }
        assert_eq!(
            form["subject_token_type"][0],
            "urn:ietf:params:oauth:token-type:access_token"
        );
        let named: Vec<&str> = ["audience", "resource"]
            .iter()
            .flat_map(|name| form[name].as_array().into_iter().flatten())
            .filter_map(Value::as_str)
            .collect();
        assert!(
            !named.is_empty() && named.iter().all(|t| targets.contains(t)),
            "{request}"
        );
    }
    let exec_args = w.exec_args(&args);
    for cluster in &clusters {
        let token = w.token_for(&exec_args, cluster);
        w.token_is_for_its_cluster_alone(&token, cluster, &clusters);
    }

    // Everything expired: b's new token costs one refresh (the login's access token), then one
    // exchange of it.
    expire_cached_tokens(&w.env.cache_dir());
    w.bed.reset_stats();
    w.works(&kubeconfig, "b");
    let grants: Vec<String> = w.bed.token_answers().into_iter().map(|(g, _)| g).collect();
    assert_eq!(grants, ["refresh_token", TOKEN_EXCHANGE_GRANT]);
    w.no_token_request_refused();
    assert_eq!(w.launches(), 1);
}

#[test]
fn entra_scopes_derive_each_cluster_token_by_a_refresh_for_its_scope() {
    if !have(Need::Browser) {
        return;
    }
    const CLUSTER_A: &str = "api://cluster-a";
    const CLUSTER_B: &str = "api://cluster-b";
    let w = World::start(json!({
        "audienceApis": [CLUSTER_A, CLUSTER_B],
        "scopeAudiences": true,
    }));
    let clusters = vec![
        Cluster::target_scope("a", CLUSTER_A),
        Cluster::target_scope("b", CLUSTER_B),
    ];
    // No --login-scope: Entra ID refuses an authorization request for the scopes of several
    // resources, and its refresh token serves every resource the user consented to; the login
    // asks for the first cluster's scope (the current target), the other's comes by refresh.
    let args = shared_args(&w.bed, &[]);
    let kubeconfig = w.kubeconfig(&args, &clusters);
    for cluster in &clusters {
        w.works(&kubeconfig, cluster.name);
    }
    assert_eq!(w.launches(), 1);
    assert_eq!(w.bed.token_requests("authorization_code"), 1);
    assert!(w.bed.token_requests("refresh_token") >= 1);
    w.no_token_request_refused();
    w.no_stand_in_refused_a_request(&clusters);
    // The refreshes carry one cluster's scope each (Entra: one resource per request).
    let refresh_scopes: Vec<String> = w
        .bed
        .requests()
        .iter()
        .filter(|r| r["form"]["grant_type"][0] == "refresh_token")
        .map(|r| {
            r["form"]["scope"][0]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert!(
        refresh_scopes
            .iter()
            .any(|scope| scope.split(' ').any(|s| s == "api://cluster-b/.default")),
        "{refresh_scopes:?}"
    );
    let exec_args = w.exec_args(&args);
    for cluster in &clusters {
        let token = w.token_for(&exec_args, cluster);
        w.token_is_for_its_cluster_alone(&token, cluster, &clusters);
    }
}

#[test]
fn logout_for_one_cluster_ends_the_login_of_every_cluster() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::with_audiences(&[A, B, C]);
    let clusters = abc();
    let args = shared_args(&w.bed, &[A, B, C]);
    let kubeconfig = w.kubeconfig(&args, &clusters);
    for cluster in &clusters {
        w.works(&kubeconfig, cluster.name);
    }
    let exec_args = w.exec_args(&args);
    let old_b = w.token_for(&exec_args, &clusters[1]);
    let old_c = w.token_for(&exec_args, &clusters[2]);
    assert_eq!(w.launches(), 1);

    let mut logout = exec_args.clone();
    logout[0] = "logout".into();
    w.kubecred_for(&logout, &clusters[0]).run().success();

    // b needs a new login; c's token is no longer the cached one either.
    w.works(&kubeconfig, "b");
    assert_eq!(w.launches(), 2, "b needed a new login");
    assert_eq!(w.bed.token_requests("authorization_code"), 2);
    w.works(&kubeconfig, "c");
    assert_eq!(w.launches(), 2, "c is derived from b's new login");
    let new_b = w.token_for(&exec_args, &clusters[1]);
    let new_c = w.token_for(&exec_args, &clusters[2]);
    assert_ne!(new_b, old_b);
    assert_ne!(new_c, old_c, "c's old token was not kept after the logout");
    assert_eq!(audiences(&new_c), [C]);
}

/// The login's refresh token in the OS keyring (`auto` storage, a real Secret Service): one login
/// serves both clusters, `status` shows where each piece is, and `logout` with either cluster's
/// settings revokes the refresh token once and leaves no entry, in the keyring or on disk.
#[test]
fn with_the_refresh_token_in_the_keyring_logout_ends_every_cluster_s_token() {
    if !have(Need::Browser) {
        return;
    }
    let Some(env) = TestEnv::with_keyring() else {
        return;
    };
    let w = World {
        bed: Testbed::start_with(json!({ "audienceApis": [A, B] })),
        log: env.dir.path().join("browser.log"),
        env,
    };
    let clusters = [Cluster::resource("a", A), Cluster::resource("b", B)];
    let mut args = shared_args(&w.bed, &[A, B]);
    args.push(format!("--cache-dir={}", w.env.cache_dir().display()));
    args.push("--cache-storage=auto".into());
    let a = w.token_for(&args, &clusters[0]);
    let b = w.token_for(&args, &clusters[1]);
    assert_eq!(
        (audiences(&a), audiences(&b)),
        (vec![A.to_string()], vec![B.to_string()])
    );
    assert_eq!(w.launches(), 1);
    assert_eq!(w.bed.token_requests("refresh_token"), 1);

    let status = |env: &TestEnv| -> Value {
        let run = crate::sessions::kubecred_plain(env, &["status", "--output=json"])
            .run()
            .success();
        serde_json::from_str(&run.stdout()).unwrap()
    };
    let status_now = status(&w.env);
    let entries = status_now["entries"].as_array().unwrap();
    assert_eq!(entries.len(), 3, "{entries:?}");
    let login: Vec<&Value> = entries.iter().filter(|e| e["granted"].is_array()).collect();
    assert_eq!(login.len(), 1, "{entries:?}");
    assert_eq!(
        login[0]["refresh_token_in"], "secret-service",
        "the login's refresh token is in the keyring: {entries:?}"
    );
    for entry in entries.iter().filter(|e| e["derived_from"].is_string()) {
        assert_eq!(entry["derived_from"], login[0]["key"]);
        assert_eq!(entry["refresh_token"], false, "{entry}");
    }

    let revocations = || {
        w.bed
            .requests()
            .iter()
            .filter(|r| {
                r["path"]
                    .as_str()
                    .is_some_and(|p| p.ends_with("/revocation"))
            })
            .count()
    };
    let mut logout = args.clone();
    logout[0] = "logout".into();
    w.kubecred_for(&logout, &clusters[1])
        .run()
        .success()
        .stderr_contains("forgot the 2 cluster tokens derived from the shared login");
    assert_eq!(revocations(), 1, "the one refresh token, revoked once");
    assert_eq!(
        status(&w.env)["entries"],
        json!([]),
        "no entry left anywhere"
    );
}

/// The keyring lost the login's refresh token (deleted by hand from the Secret Service; the
/// login entry still says it is there): the cluster whose token ran out logs in once more,
/// sending nothing stale, and the other cluster's token comes from that new login.
#[test]
fn a_login_whose_refresh_token_the_keyring_lost_is_replaced_by_one_login() {
    if !have(Need::Browser) {
        return;
    }
    let Some(env) = TestEnv::with_keyring() else {
        return;
    };
    let w = World {
        bed: Testbed::start_with(json!({ "audienceApis": [A, B] })),
        log: env.dir.path().join("browser.log"),
        env,
    };
    let clusters = [Cluster::resource("a", A), Cluster::resource("b", B)];
    let mut args = shared_args(&w.bed, &[A, B]);
    args.push(format!("--cache-dir={}", w.env.cache_dir().display()));
    args.push("--cache-storage=auto".into());
    w.token_for(&args, &clusters[0]);
    let status: Value = serde_json::from_str(
        &crate::sessions::kubecred_plain(&w.env, &["status", "--output=json"])
            .run()
            .success()
            .stdout(),
    )
    .unwrap();
    let login = status["entries"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["granted"].is_array())
        .unwrap_or_else(|| panic!("the login entry in {status}"));
    assert_eq!(login["refresh_token_in"], "secret-service", "{login}");
    let cleared = Command::new("secret-tool")
        .args([
            "clear",
            "service",
            "kubecred",
            "username",
            &format!("{}:refresh", login["key"].as_str().unwrap()),
        ])
        .status()
        .expect("secret-tool (Debian's libsecret-tools; scripts/test.sh installs it)");
    assert!(cleared.success());

    let requests = w.bed.total_token_requests();
    let b = w.token_for(&args, &clusters[1]);
    assert_eq!(audiences(&b), [B]);
    assert_eq!(w.launches(), 2, "one more login");
    assert_eq!(
        w.bed.total_token_requests(),
        requests + 1,
        "the new login's code exchange, and nothing sent with a lost token"
    );
    w.no_token_request_refused();
    expire_cached_tokens(&w.env.cache_dir());
    let a = w.token_for(&args, &clusters[0]);
    assert_eq!(audiences(&a), [A]);
    assert_eq!(w.launches(), 2, "a's token comes from the new login");
    w.no_token_request_refused();
}

/// The bed and this file's harness with today's flags (no `--shared-login`): each cluster's
/// resource from its extension, one login per cluster, each token for its cluster alone.
#[test]
fn without_shared_login_each_cluster_logs_in_on_its_own() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::with_audiences(&[A, B, C]);
    let clusters = abc();
    let args = with_flag(&authcode_args(&w.bed), "--use-access-token");
    let kubeconfig = w.kubeconfig(&args, &clusters);
    for cluster in &clusters {
        w.works(&kubeconfig, cluster.name);
    }
    assert_eq!(w.launches(), 3, "a login per cluster");
    assert_eq!(w.bed.token_requests("authorization_code"), 3);
    w.no_token_request_refused();
    w.no_stand_in_refused_a_request(&clusters);
    let exec_args = w.exec_args(&args);
    for cluster in &clusters {
        let token = w.token_for(&exec_args, cluster);
        w.token_is_for_its_cluster_alone(&token, cluster, &clusters);
    }
}

/// The bed's RFC 8693 exchange of a person's access token (what `--derive token-exchange`
/// asks), and its knobs for a provider that answers another audience or an opaque token.
#[test]
fn the_bed_exchanges_a_users_access_token_for_another_audience() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::with_audiences(&[A, B]);
    let args = with_flag(&authcode_args(&w.bed), "--use-access-token");
    let login = w.token_for(&w.exec_args(&args), &Cluster::resource("a", A));
    let exchange = |subject: &str, target: (&str, &str), requested: &str| {
        w.bed.post_token(&[
            ("grant_type", TOKEN_EXCHANGE_GRANT),
            ("client_id", PUBLIC_CLIENT),
            ("subject_token", subject),
            (
                "subject_token_type",
                "urn:ietf:params:oauth:token-type:access_token",
            ),
            ("requested_token_type", requested),
            target,
        ])
    };
    const JWT: &str = "urn:ietf:params:oauth:token-type:jwt";
    for target in [("audience", B), ("resource", B)] {
        let (status, answer) = exchange(&login, target, JWT);
        assert_eq!(status, 200, "{answer}");
        assert_eq!(answer["issued_token_type"], JWT);
        assert_eq!(answer["token_type"], "Bearer");
        let token = answer["access_token"].as_str().unwrap();
        let claims = jwt_claims(token);
        assert_eq!(claims["aud"], B);
        assert_eq!(claims["sub"], "alice");
        assert_eq!(claims["iss"], w.bed.issuer.as_str());
        assert_eq!(claims["groups"], json!(["developers"]));
        assert_eq!(w.bed.api_status(&w.bed.audience_api_url(B), token), 200);
        assert_eq!(w.bed.api_status(&w.bed.audience_api_url(A), token), 401);
    }
    // Refusals: another token type asked for, a subject token not the provider's, no target.
    let (status, answer) = exchange(
        &login,
        ("audience", B),
        "urn:ietf:params:oauth:token-type:id_token",
    );
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_request"))
    );
    let forged = format!("{login}x");
    let (status, answer) = exchange(&forged, ("audience", B), JWT);
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_grant"))
    );
    let (status, answer) = exchange(&login, ("scope", "openid"), JWT);
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_target"))
    );

    w.bed
        .configure(json!({"derivedAudienceOverride": DEFAULT_AUDIENCE}));
    let (_, answer) = exchange(&login, ("audience", B), JWT);
    assert_eq!(
        jwt_claims(answer["access_token"].as_str().unwrap())["aud"],
        DEFAULT_AUDIENCE
    );
    w.bed
        .configure(json!({"derivedAudienceOverride": null, "derivedOpaque": true}));
    let (_, answer) = exchange(&login, ("audience", B), JWT);
    assert_eq!(
        answer["access_token"]
            .as_str()
            .unwrap()
            .matches('.')
            .count(),
        0,
        "{answer}"
    );
    assert_eq!(w.bed.token_requests(TOKEN_EXCHANGE_GRANT), 7);
    let discovery: Value =
        reqwest::blocking::get(format!("{}/.well-known/openid-configuration", w.bed.issuer))
            .unwrap()
            .json()
            .unwrap();
    assert!(
        discovery["grant_types_supported"]
            .as_array()
            .unwrap()
            .contains(&json!(TOKEN_EXCHANGE_GRANT))
    );
}

/// The bed as Entra ID (`scopeAudiences`): an `api://NAME/.default` scope at the login gives
/// an access token for `api://NAME`, which that stand-in alone accepts; two such scopes in one
/// token request are refused.
#[test]
fn the_bed_derives_an_entra_audience_from_the_scope() {
    if !have(Need::Browser) {
        return;
    }
    let w = World::start(json!({
        "audienceApis": ["api://cluster-a", "api://cluster-b"],
        "scopeAudiences": true,
    }));
    let clusters = vec![
        Cluster::target_scope("a", "api://cluster-a"),
        Cluster::target_scope("b", "api://cluster-b"),
    ];
    let mut args = with_flag(&authcode_args(&w.bed), "--use-access-token");
    args.push("--scope=api://cluster-a/.default".into());
    let token = w.token_for(&w.exec_args(&args), &clusters[0]);
    w.token_is_for_its_cluster_alone(&token, &clusters[0], &clusters);
    let (status, answer) = w.bed.post_token(&[
        ("grant_type", "refresh_token"),
        ("client_id", PUBLIC_CLIENT),
        ("refresh_token", "whatever"),
        ("scope", "api://cluster-a/.default api://cluster-b/.default"),
    ]);
    assert_eq!(
        (status, answer["error"].as_str()),
        (400, Some("invalid_scope"))
    );
}
