//! Single flight: many kubectl processes at once with an expired token cause exactly one
//! request to the token endpoint, and all of them succeed.

use crate::support::*;

const PARALLEL: usize = 32;

#[test]
fn thirty_two_kubectl_processes_with_an_expired_token_make_one_token_request() {
    // A slow token endpoint widens the window in which the processes overlap.
    let bed = Testbed::start_with(serde_json::json!({"tokenDelayMs": 300}));
    let env = TestEnv::new();
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, env.cc_args(&bed)));
    env.kubectl(&kubeconfig, &["get", "--raw", "/version"])
        .run()
        .success();
    expire_cached_tokens(&env.cache_dir());
    bed.reset_stats();

    let whoami = [
        "auth",
        "whoami",
        "-o",
        "jsonpath={.status.userInfo.username}",
    ];
    let users = run_all_at_once((0..PARALLEL).map(|_| env.kubectl(&kubeconfig, &whoami)));
    assert!(users.iter().all(|user| user == CC_CLIENT), "{users:?}");
    let stats = bed.stats();
    assert_eq!(stats["token"]["total"], 1, "{stats}");
    assert_eq!(stats["token"]["client_credentials"], 1, "{stats}");
}
