//! Shows what kubecred's cache holds for a set of get-token flags, without printing a secret:
//! the cache key, where the entry lives, which tokens it has and until when, and whether the
//! next `get-token` would be a cache hit. Useful for "why did kubectl open my browser again?".
//!
//!     cargo run --example inspect_cache -- --issuer-url=https://idp.example --client-id=kubernetes
//!
//! It takes the same flags (and KUBECRED_* variables) as `kubecred get-token`, and reads the
//! cache exactly as the cache-hit path does: it never contacts the identity provider.

use chrono::Utc;
use clap::Parser;
use kubecred::cache::TokenCache;
use kubecred::cli::{Cli, Command};
use kubecred::config::{Config, Environment, TokenKind};
use kubecred::exec_credential::ExecInfo;

fn main() -> anyhow::Result<()> {
    let argv = std::iter::once("kubecred".to_string())
        .chain(std::iter::once("get-token".to_string()))
        .chain(std::env::args().skip(1));
    let Command::GetToken(args) = Cli::parse_from(argv).command else {
        unreachable!("get-token is prepended")
    };
    let config = Config::resolve(&args, &Environment::from_process(), ExecInfo::absent())?;
    // A shared login's cluster reads its own (derived) entry; any other configuration its own.
    let entry = match &config.shared_login {
        Some(shared) => kubecred::cache::Entry::shared(&config, shared).0,
        None => kubecred::cache::Entry::of(&config),
    };
    let cache = TokenCache::new(entry);
    println!("issuer:        {}", config.issuer);
    println!("client:        {}", config.client.id);
    println!("grant:         {}", config.grant.name());
    println!("storage:       {:?}", cache.storage());
    println!("cache key:     {}", cache.key().as_str());
    println!("entry file:    {}", cache.entry_path().display());
    let Some(cached) = cache.load()? else {
        println!("entry:         none (the next get-token logs in or runs the grant)");
        return Ok(());
    };
    let now = Utc::now();
    let tokens = &cached.tokens;
    for (name, kind) in [
        ("ID token", TokenKind::IdToken),
        ("access token", TokenKind::AccessToken),
    ] {
        match tokens.credential(kind) {
            Some((_, expiry)) => {
                let left = (expiry - now).num_seconds();
                println!("{name:<14} valid until {expiry} ({left}s left)");
            }
            None => println!("{name:<14} none"),
        }
    }
    println!(
        "refresh token: {}",
        if cached.has_refresh_token() {
            "yes"
        } else {
            "no"
        }
    );
    let hit = tokens
        .fresh_credential(config.token_kind, now, config.min_validity)
        .is_some();
    println!(
        "next get-token: {}",
        if hit {
            "cache hit"
        } else if cached.has_refresh_token() {
            "refresh (one request to the token endpoint)"
        } else {
            "new grant or login"
        }
    );
    Ok(())
}
