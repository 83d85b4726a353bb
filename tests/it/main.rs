//! kubecred's integration tests: one binary, each test with its own temp HOME and cache, a real
//! OpenID Provider (npm `oidc-provider`) and an HTTPS stand-in for kube-apiserver's OIDC
//! authenticator on loopback (`tests/support/testbed.mjs`), the real kubectl, and Debian's
//! headless Chromium for browser logins; beside kubectl, the Python, JavaScript and kube-rs
//! clients run kubecred themselves. The harness installs the Node test bed (and the Python
//! client) itself on first use; scripts/test.sh also installs the system packages.
//!
//! Unix only: the harness drives kubectl, Node, Chromium, D-Bus and unix file modes and
//! processes. On Windows the binary itself is tested under Wine by scripts/cross-test.sh.
#![cfg(unix)]

mod support;

mod aws;
mod azure;
mod background;
mod cache_hit_io;
mod cache_storage;
mod cli_behaviour;
mod client_credentials;
mod concurrency;
mod conformance;
mod convert;
#[cfg(target_os = "linux")]
mod desktop;
mod docs;
mod examples;
mod exec_protocol;
mod faults_local;
mod faults_network;
mod federation;
mod glewlwyd;
mod google;
mod js_client;
mod kube_rs_client;
mod kubectl;
mod login;
mod paste;
mod proxy;
mod python_client;
mod quirks;
mod refresh;
mod remote_login;
mod request_headers;
mod resilience;
mod samples;
mod secrets;
mod sessions;
mod settings_reference;
mod setup;
mod shared_login;
mod tidy;
mod troubleshooting;
mod whoami;
