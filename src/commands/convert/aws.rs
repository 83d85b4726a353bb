//! EKS users: `aws eks get-token` (as `aws eks update-kubeconfig` writes it: `--region R eks
//! get-token --cluster-name X --output json`, `--role ARN`, `AWS_PROFILE` in `env`) and
//! aws-iam-authenticator's `token -i X [-r ROLE]`, read as each tool reads its command line (the
//! AWS CLI's argparse: `--opt value`, `--opt=value`, a unique prefix for the name, global options
//! anywhere; aws-iam-authenticator's pflag and its variables), and planned as kubecred's
//! `get-token --grant-type aws --eks-cluster X [--aws-region R] [--aws-profile P] [--aws-role-arn
//! A] [--aws-role-session-name S]` with the same identity: the same credentials (the stanza's
//! `env` is kept whole, `AWS_PROFILE` in it too, so that the chain reads what the tool read, in
//! the same order) signing for the same cluster, as the same role. What kubecred cannot do alike
//! is left with the tool, with the reason.
//!
//! get-token does not take these flags until the AWS source is wired (issue 45, phase 2): until
//! then `sources.rs` does not route these stanzas here, and convert leaves them as before.
#![cfg_attr(
    not(test),
    expect(
        dead_code,
        reason = "sources.rs routes aws and aws-iam-authenticator here once get-token takes --grant-type aws"
    )
)]

use super::plan::{Conversion, Plan, Tokens};
use crate::kubeconfig::EnvVar;
use crate::peers::pflag::{self, Flag};

/// The plan for an `exec` stanza running `program` (its name, without directory or `.exe`), or
/// `None` when it is neither the AWS CLI nor aws-iam-authenticator.
pub(super) fn plan(program: &str, args: &[String], env: &[(String, String)]) -> Option<Plan> {
    match program {
        "aws" => Some(aws_cli(args, env)),
        "aws-iam-authenticator" => Some(iam_authenticator(args, env)),
        _ => None,
    }
}

fn skip(reason: impl Into<String>) -> Plan {
    Plan::Skip(reason.into())
}

/// What kubecred will be given.
#[derive(Default)]
struct Eks {
    cluster: Option<String>,
    region: Option<String>,
    profile: Option<String>,
    role_arn: Option<String>,
    session_name: Option<String>,
}

impl Eks {
    fn conversion(
        self,
        from: &str,
        env: Vec<EnvVar>,
        notes: Vec<String>,
    ) -> Result<Conversion, String> {
        let cluster = self
            .cluster
            .filter(|c| !c.is_empty())
            .ok_or("it names no cluster")?;
        let mut args = vec![
            "get-token".to_string(),
            "--grant-type=aws".to_string(),
            format!("--eks-cluster={cluster}"),
        ];
        for (flag, value) in [
            ("--aws-region", self.region),
            ("--aws-profile", self.profile),
            ("--aws-role-arn", self.role_arn),
            ("--aws-role-session-name", self.session_name),
        ] {
            if let Some(value) = value.filter(|v| !v.is_empty()) {
                args.push(format!("{flag}={value}"));
            }
        }
        Ok(Conversion {
            from: from.into(),
            args,
            env,
            // The credentials stay where the tool found them; nothing of kubecred's to carry.
            tokens: Tokens::NotNeeded,
            notes,
            kubelogin: None,
        })
    }
}

fn env_vars(env: &[(String, String)], leave_out: &[&str]) -> Vec<EnvVar> {
    env.iter()
        .filter(|(name, _)| !leave_out.contains(&name.as_str()))
        .map(|(name, value)| EnvVar::new(name.clone(), value.clone()))
        .collect()
}

/// The AWS CLI's options a get-token line may carry: (name, takes a value).
const AWS_CLI_OPTIONS: [(&str, bool); 18] = [
    // get-token's own.
    ("--cluster-name", true),
    ("--cluster-id", true),
    ("--role-arn", true),
    // The CLI's global ones.
    ("--region", true),
    ("--profile", true),
    ("--output", true),
    ("--endpoint-url", true),
    ("--debug", false),
    ("--query", true),
    ("--no-paginate", false),
    ("--color", true),
    ("--no-cli-pager", false),
    ("--cli-read-timeout", true),
    ("--cli-connect-timeout", true),
    ("--no-verify-ssl", false),
    ("--ca-bundle", true),
    ("--no-sign-request", false),
    ("--version", false),
];

/// `--name`, `--name=value` or a unique prefix of a name, as argparse reads them.
fn aws_cli_option(word: &str) -> Result<(&'static str, bool, Option<String>), String> {
    let (name, inline) = match word.split_once('=') {
        Some((name, value)) => (name, Some(value.to_string())),
        None => (word, None),
    };
    if let Some(&(exact, takes)) = AWS_CLI_OPTIONS.iter().find(|(n, _)| *n == name) {
        return Ok((exact, takes, inline));
    }
    let matches: Vec<&(&str, bool)> = AWS_CLI_OPTIONS
        .iter()
        .filter(|(n, _)| n.starts_with(name))
        .collect();
    match matches.as_slice() {
        [(only, takes)] => Ok((only, *takes, inline)),
        [] => Err(format!(
            "it gives {}, which kubecred does not know",
            crate::text::printable_brief(name, 40)
        )),
        _ => Err(format!(
            "its option {} is ambiguous (the AWS CLI refuses it too)",
            crate::text::printable_brief(name, 40)
        )),
    }
}

/// `aws [global options] eks get-token [options]`.
fn aws_cli(args: &[String], env: &[(String, String)]) -> Plan {
    let mut words = args.iter();
    let mut positionals = Vec::new();
    let mut eks = Eks::default();
    let mut notes = Vec::new();
    let mut endpoint = None;
    while let Some(word) = words.next() {
        if !word.starts_with("--") || word == "--" {
            positionals.push(word.as_str());
            continue;
        }
        let (name, takes, inline) = match aws_cli_option(word) {
            Ok(option) => option,
            Err(why) => return skip(format!("stays with aws: {why}")),
        };
        let value = match (takes, inline) {
            (true, Some(value)) => Some(value),
            (true, None) => match words.next() {
                Some(value) => Some(value.clone()),
                None => return skip(format!("stays with aws: {name} has no value")),
            },
            (false, Some(_)) => {
                return skip(format!("stays with aws: {name} takes no value"));
            }
            (false, None) => None,
        };
        match name {
            "--cluster-name" | "--cluster-id" => eks.cluster = value,
            "--role-arn" => eks.role_arn = value,
            "--region" => eks.region = value,
            "--profile" => eks.profile = value,
            "--endpoint-url" => endpoint = value,
            // kubecred prints the ExecCredential, as JSON, whatever these say.
            "--output" | "--no-paginate" | "--color" | "--no-cli-pager" => {}
            "--debug" => notes.push("dropped --debug (kubecred's log is -v)".to_string()),
            "--cli-read-timeout" | "--cli-connect-timeout" => notes.push(format!(
                "dropped {name} (kubecred's bound is --http-timeout)"
            )),
            other => {
                return skip(format!(
                    "stays with aws: it gives {other}, which kubecred does not do alike"
                ));
            }
        }
    }
    if positionals != ["eks", "get-token"] {
        return skip(format!(
            "runs aws {}, not eks get-token: it prints no credential for kubectl",
            crate::text::printable_brief(&positionals.join(" "), 60)
        ));
    }
    let mut env = env_vars(env, &[]);
    if let Some(url) = endpoint {
        // The CLI's --endpoint-url is where its STS client goes, and so the token's signed host:
        // the variable that moves kubecred's STS endpoint alike.
        env.retain(|var| var.name != "AWS_ENDPOINT_URL_STS");
        env.push(EnvVar::new("AWS_ENDPOINT_URL_STS", url));
        notes.push("--endpoint-url became AWS_ENDPOINT_URL_STS in its env".into());
    }
    match eks.conversion("aws eks get-token", env, notes) {
        Ok(conversion) => Plan::Convert(conversion),
        Err(why) => skip(format!(
            "stays with aws: {why} (--cluster-name or --cluster-id)"
        )),
    }
}

/// aws-iam-authenticator's flags (its `token` command and the persistent ones of its root).
const IAM_AUTHENTICATOR_FLAGS: [Flag; 12] = [
    Flag::value("cluster-id").with_short('i'),
    Flag::value("role").with_short('r'),
    Flag::value("region"),
    Flag::value("session-name").with_short('s'),
    Flag::value("external-id").with_short('e'),
    Flag::boolean("forward-session-name"),
    Flag::boolean("token-only"),
    Flag::boolean("cache"),
    Flag::value("config").with_short('c'),
    Flag::value("log-format").with_short('l'),
    Flag::value("log-verbosity").with_short('v'),
    Flag::value("feature-gates"),
];

/// `aws-iam-authenticator token -i X [-r ROLE] [-s NAME] [--region R]`.
fn iam_authenticator(args: &[String], env: &[(String, String)]) -> Plan {
    let parsed = match pflag::parse(args, &IAM_AUTHENTICATOR_FLAGS) {
        Ok(parsed) => parsed,
        Err(why) => return skip(format!("aws-iam-authenticator refuses it too: {why}")),
    };
    if parsed.positionals.first().map(String::as_str) != Some("token") {
        return skip(format!(
            "runs aws-iam-authenticator {}, not token: it prints no credential for kubectl",
            crate::text::printable_brief(&parsed.positionals.join(" "), 60)
        ));
    }
    let var = |name: &str| {
        env.iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
            .filter(|v| !v.is_empty())
    };
    for (flag, why) in [
        (
            "external-id",
            "--external-id, which kubecred's --aws-role-arn does not send",
        ),
        (
            "forward-session-name",
            "--forward-session-name, a session name taken from the caller's identity, which kubecred does not do",
        ),
        (
            "token-only",
            "--token-only: it prints no ExecCredential, so kubectl does not run it",
        ),
        (
            "config",
            "--config, a file of its own settings, which kubecred does not read: convert it by hand",
        ),
    ] {
        let given = if matches!(flag, "forward-session-name" | "token-only") {
            parsed.on(flag)
        } else {
            parsed.given(flag)
        };
        if given {
            return skip(format!("stays with aws-iam-authenticator: it gives {why}"));
        }
    }
    let mut notes = Vec::new();
    if parsed.on("cache") {
        notes.push("dropped --cache (kubecred caches every token)".to_string());
    }
    let role_arn = parsed
        .last("role")
        .map(str::to_string)
        .or_else(|| var("DEFAULT_ROLE"));
    let session_name = parsed.last("session-name").map(str::to_string);
    if role_arn.is_some() && session_name.is_none() {
        notes.push(
            "its role sessions were named anew by the AWS SDK on every run; kubecred names them EKSGetTokenAuth (give --aws-role-session-name to choose)"
                .into(),
        );
    }
    let region = parsed.last("region").map(str::to_string);
    let eks = Eks {
        cluster: parsed
            .last("cluster-id")
            .map(str::to_string)
            .or_else(|| var("KUBERNETES_AWS_AUTHENTICATOR_CLUSTER_ID")),
        region,
        profile: None,
        role_arn,
        session_name,
    };
    // The variables that became flags leave the env; the rest (AWS_PROFILE, …) stays.
    let env = env_vars(
        env,
        &["KUBERNETES_AWS_AUTHENTICATOR_CLUSTER_ID", "DEFAULT_ROLE"],
    );
    match eks.conversion("aws-iam-authenticator", env, notes) {
        Ok(conversion) => Plan::Convert(conversion),
        Err(why) => skip(format!(
            "stays with aws-iam-authenticator: {why} (-i, or KUBERNETES_AWS_AUTHENTICATOR_CLUSTER_ID)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<String> {
        text.split_whitespace().map(str::to_string).collect()
    }

    fn converted(program: &str, args: &str, env: &[(&str, &str)]) -> Conversion {
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        match plan(program, &words(args), &env).expect("an AWS stanza") {
            Plan::Convert(conversion) => conversion,
            Plan::Skip(why) => panic!("{program} {args}: skipped: {why}"),
        }
    }

    fn reason(program: &str, args: &str) -> String {
        match plan(program, &words(args), &[]).expect("an AWS stanza") {
            Plan::Skip(why) => why,
            Plan::Convert(c) => panic!("{program} {args}: converted {:?}", c.args),
        }
    }

    fn env_of(conversion: &Conversion) -> Vec<(String, String)> {
        conversion
            .env
            .iter()
            .map(|var| (var.name.clone(), var.value.expose().to_string()))
            .collect()
    }

    /// What `aws eks update-kubeconfig` writes (awscli's update_kubeconfig.py `get_user_entry`):
    /// the region from the cluster's ARN, `--role` when given `--role-arn`, `AWS_PROFILE` when
    /// run with a profile; `--cluster-id` for a cluster on Outposts.
    #[test]
    fn the_stanzas_aws_eks_update_kubeconfig_writes_keep_their_identity() {
        let c = converted(
            "aws",
            "--region eu-west-1 eks get-token --cluster-name prod --output json",
            &[],
        );
        assert_eq!(c.from, "aws eks get-token");
        assert_eq!(
            c.args,
            [
                "get-token",
                "--grant-type=aws",
                "--eks-cluster=prod",
                "--aws-region=eu-west-1"
            ]
        );
        assert!(c.env.is_empty() && c.notes.is_empty());
        assert!(matches!(c.tokens, Tokens::NotNeeded));

        let c = converted(
            "aws",
            "--region us-east-1 eks get-token --cluster-name prod --output json --role arn:aws:iam::1:role/eks",
            &[("AWS_PROFILE", "dev")],
        );
        assert_eq!(
            c.args,
            [
                "get-token",
                "--grant-type=aws",
                "--eks-cluster=prod",
                "--aws-region=us-east-1",
                "--aws-role-arn=arn:aws:iam::1:role/eks"
            ]
        );
        // AWS_PROFILE stays in the env: read there alike, it keeps the AWS CLI's order (the
        // environment's keys before the profile), which --aws-profile would not.
        assert_eq!(env_of(&c), [("AWS_PROFILE".into(), "dev".into())]);

        let c = converted(
            "aws",
            "--region us-west-2 eks get-token --cluster-id 9f8e7d6c --output json",
            &[],
        );
        assert_eq!(c.args[2], "--eks-cluster=9f8e7d6c");
    }

    #[test]
    fn the_aws_clis_own_spellings_are_read_as_argparse_reads_them() {
        let c = converted(
            "aws",
            "eks get-token --cluster-name=prod --profile ops --role-arn=arn:aws:iam::1:role/r --region=ap-south-1 --debug",
            &[("AWS_DEFAULT_REGION", "x")],
        );
        assert_eq!(
            c.args,
            [
                "get-token",
                "--grant-type=aws",
                "--eks-cluster=prod",
                "--aws-region=ap-south-1",
                "--aws-profile=ops",
                "--aws-role-arn=arn:aws:iam::1:role/r"
            ]
        );
        assert_eq!(c.notes, ["dropped --debug (kubecred's log is -v)"]);
        let c = converted(
            "aws",
            "eks get-token --cluster-n prod --endpoint-url http://127.0.0.1:4566",
            &[],
        );
        assert_eq!(c.args[2], "--eks-cluster=prod");
        assert_eq!(
            env_of(&c),
            [(
                "AWS_ENDPOINT_URL_STS".into(),
                "http://127.0.0.1:4566".into()
            )]
        );
        assert_eq!(
            reason("aws", "eks get-token --cluster prod"),
            "stays with aws: its option --cluster is ambiguous (the AWS CLI refuses it too)"
        );
        assert_eq!(
            reason("aws", "eks get-token --cluster-name prod --no-verify-ssl"),
            "stays with aws: it gives --no-verify-ssl, which kubecred does not do alike"
        );
        assert_eq!(
            reason("aws", "eks get-token --region eu-west-1"),
            "stays with aws: it names no cluster (--cluster-name or --cluster-id)"
        );
        assert_eq!(
            reason("aws", "eks describe-cluster --name prod"),
            "stays with aws: it gives --name, which kubecred does not know"
        );
        assert_eq!(
            reason("aws", "sts get-caller-identity"),
            "runs aws sts get-caller-identity, not eks get-token: it prints no credential for kubectl"
        );
        assert!(plan("kubectl", &[], &[]).is_none());
    }

    /// aws-iam-authenticator's own forms (its README's kubeconfig and `token --help`).
    #[test]
    fn aws_iam_authenticator_token_stanzas_keep_their_identity() {
        let c = converted("aws-iam-authenticator", "token -i prod", &[]);
        assert_eq!(c.from, "aws-iam-authenticator");
        assert_eq!(
            c.args,
            ["get-token", "--grant-type=aws", "--eks-cluster=prod"]
        );
        let c = converted(
            "aws-iam-authenticator",
            "token -i prod -r arn:aws:iam::1:role/eks --region eu-west-1 --cache",
            &[("AWS_PROFILE", "dev")],
        );
        assert_eq!(
            c.args,
            [
                "get-token",
                "--grant-type=aws",
                "--eks-cluster=prod",
                "--aws-region=eu-west-1",
                "--aws-role-arn=arn:aws:iam::1:role/eks"
            ]
        );
        assert_eq!(env_of(&c), [("AWS_PROFILE".into(), "dev".into())]);
        assert_eq!(
            c.notes,
            [
                "dropped --cache (kubecred caches every token)",
                "its role sessions were named anew by the AWS SDK on every run; kubecred names them EKSGetTokenAuth (give --aws-role-session-name to choose)"
            ]
        );
        let c = converted(
            "aws-iam-authenticator",
            "token --cluster-id=prod --role=arn:aws:iam::1:role/eks -s ana",
            &[],
        );
        assert_eq!(c.args[4], "--aws-role-session-name=ana");
        assert!(c.notes.is_empty());
        // Its variables, which leave the env as flags.
        let c = converted(
            "aws-iam-authenticator",
            "token",
            &[
                ("KUBERNETES_AWS_AUTHENTICATOR_CLUSTER_ID", "prod"),
                ("DEFAULT_ROLE", "arn:aws:iam::1:role/eks"),
                ("AWS_REGION", "eu-west-1"),
            ],
        );
        assert_eq!(
            c.args[2..],
            [
                "--eks-cluster=prod",
                "--aws-role-arn=arn:aws:iam::1:role/eks"
            ]
        );
        assert_eq!(env_of(&c), [("AWS_REGION".into(), "eu-west-1".into())]);

        for (args, why) in [
            (
                "token -i prod -r arn:aws:iam::1:role/eks -e ext",
                "stays with aws-iam-authenticator: it gives --external-id",
            ),
            (
                "token -i prod --forward-session-name",
                "stays with aws-iam-authenticator: it gives --forward-session-name",
            ),
            (
                "token -i prod --token-only",
                "stays with aws-iam-authenticator: it gives --token-only",
            ),
            (
                "token -c /etc/aws-iam-authenticator.yaml",
                "stays with aws-iam-authenticator: it gives --config",
            ),
            (
                "token",
                "stays with aws-iam-authenticator: it names no cluster (-i, or KUBERNETES_AWS_AUTHENTICATOR_CLUSTER_ID)",
            ),
            (
                "verify -i prod -t x",
                "aws-iam-authenticator refuses it too: ",
            ),
            ("init -i prod", "runs aws-iam-authenticator init, not token"),
        ] {
            let got = reason("aws-iam-authenticator", args);
            assert!(got.starts_with(why), "{args}: {got}");
        }
    }
}
