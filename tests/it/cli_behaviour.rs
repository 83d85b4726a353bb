//! The command line as people expect it: a later single-valued flag wins (a kubeconfig `args`
//! list can append an override), shell completions that load, a man page, `--version` (and
//! `version`) with the commit, an example in every command's help, and kubecred as a kubectl
//! plugin.

use crate::sessions::kubecred_plain;
use crate::support::*;
use std::process::Command;

#[test]
fn a_flag_appended_to_the_kubeconfig_args_overrides_the_earlier_one() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    // The stanza names a client that does not exist; a wrapper appends the real one.
    let mut args = env.cc_args(&bed);
    args.insert(1, "--client-id=no-such-client".into());
    args.insert(1, "--grant-type=device-code".into());
    args.push(format!("--client-id={CC_CLIENT}"));
    args.push("--grant-type=client-credentials".into());
    let kubeconfig = env.kubeconfig(&bed, KubeconfigSpec::new(V1, args));
    env.kubectl(&kubeconfig, &["get", "--raw", "/version"])
        .run()
        .success()
        .stdout_contains("v1.32.4-testbed");
    assert_eq!(bed.token_requests("client_credentials"), 1);
}

fn completion(env: &TestEnv, shell: &str) -> std::path::PathBuf {
    let run = kubecred_plain(env, &["completion", shell]).run().success();
    assert!(run.stdout().contains("kubecred"), "{shell}");
    let path = env.dir.path().join(format!("kubecred.{shell}"));
    std::fs::write(&path, run.stdout()).unwrap();
    path
}

fn shell_present(shell: &str) -> bool {
    let found = Command::new(shell)
        .arg("--version")
        .output()
        .is_ok_and(|out| out.status.success());
    if !found {
        skipped(&format!(
            "the {shell} completion check: {shell} is not installed"
        ));
    }
    found
}

#[test]
fn completions_load_in_bash_zsh_and_fish() {
    let env = TestEnv::new();
    let bash = completion(&env, "bash");
    let run = Command::new("bash")
        .arg("-c")
        .arg("source \"$0\" && complete -p kubecred")
        .arg(&bash)
        .run()
        .success();
    assert!(run.stdout().contains("kubecred"), "{}", run.stdout());
    // The subcommands and their flags are offered.
    let script = std::fs::read_to_string(&bash).unwrap();
    for word in ["get-token", "status", "logout", "--account", "--output"] {
        assert!(script.contains(word), "{word}");
    }
    if shell_present("zsh") {
        let zsh = completion(&env, "zsh");
        let run = Command::new("zsh")
            .args(["-f", "-c"])
            .arg("autoload -Uz compinit && compinit -u -D && source \"$0\" && print -r -- ${_comps[kubecred]}")
            .arg(&zsh)
            .env("HOME", env.home())
            .run()
            .success();
        assert_eq!(run.stdout().trim(), "_kubecred", "{}", run.stderr());
    }
    if shell_present("fish") {
        let fish = completion(&env, "fish");
        Command::new("fish")
            .arg("--no-execute")
            .arg(&fish)
            .run()
            .success();
    }
    // PowerShell is not installed on Linux CI: the script is generated, and names the command.
    let ps = kubecred_plain(&env, &["completion", "powershell"])
        .run()
        .success();
    assert!(ps.stdout().contains("Register-ArgumentCompleter"));
}

#[test]
fn man_page_help_examples_and_version() {
    let env = TestEnv::new();
    let man = kubecred_plain(&env, &["man"]).run().success().stdout();
    assert!(
        man.contains(".TH kubecred 1"),
        "{}",
        &man[..200.min(man.len())]
    );
    for section in ["KUBECRED GET-TOKEN", "KUBECRED STATUS", "KUBECRED LOGOUT"] {
        assert!(man.contains(section), "{section}");
    }
    assert!(man.contains("\\-\\-issuer\\-url"), "flags are documented");
    for command in [
        "get-token",
        "login",
        "logout",
        "status",
        "completion",
        "man",
    ] {
        kubecred_plain(&env, &[command, "--help"])
            .run()
            .success()
            .stdout_contains("Example");
    }
    let version = kubecred_plain(&env, &["--version"])
        .run()
        .success()
        .stdout();
    assert!(
        version.starts_with("kubecred 0.") && version.contains("(commit "),
        "{version}"
    );
    assert!(
        !version.contains("commit unknown"),
        "a git checkout knows its commit: {version}"
    );
    // `version` says what --version says: the commit in full, the target, the build date (the
    // commit's time) and the compiler; -V the first line alone.
    let command = kubecred_plain(&env, &["version"]).run().success().stdout();
    assert_eq!(command, version);
    for fact in [
        "\ncommit: ",
        "\ntarget: ",
        "\nbuild date: ",
        "\nrustc: rustc ",
    ] {
        assert!(version.contains(fact), "{fact:?} in {version}");
    }
    let short = kubecred_plain(&env, &["-V"]).run().success().stdout();
    assert_eq!(short, format!("{}\n", version.lines().next().unwrap()));
}

#[test]
fn runs_as_a_kubectl_plugin_through_a_symlink_on_path() {
    let env = TestEnv::new();
    let bin = env.dir.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    #[cfg(unix)]
    std::os::unix::fs::symlink(kubecred_bin(), bin.join("kubectl-kubecred")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let kubectl = |args: &[&str]| {
        let mut cmd = Command::new(kubectl_bin());
        cmd.env_clear()
            .env("PATH", &path)
            .env("HOME", env.home())
            .arg("kubecred")
            .args(args);
        cmd.run()
    };
    let version = kubectl(&["--version"]).success().stdout();
    assert!(version.contains("(commit "), "{version}");
    let cache_dir = format!("--cache-dir={}", env.cache_dir().display());
    kubectl(&["status", &cache_dir])
        .success()
        .stdout_contains("no cached logins");
    kubectl(&["--help"])
        .success()
        .stdout_contains("kubectl kubecred");
    // Another command through the symlink.
    kubectl(&["completion", "bash"])
        .success()
        .stdout_contains("complete -F");
    // A usage error names kubectl's help command, the one that works here.
    let line = usage_error(kubectl(&["get-token", "--grant-type=foo"]));
    assert!(
        line.ends_with("(see kubectl kubecred get-token --help)"),
        "{line}"
    );
    assert_eq!(
        usage_error(kubectl(&["completion"])),
        "kubectl kubecred completion needs <SHELL>: bash, zsh, fish or powershell (see kubectl kubecred completion --help)"
    );
    kubectl(&["get-token", "--help"])
        .success()
        .stdout_contains("Usage: kubectl kubecred get-token");
}

#[test]
fn the_binary_copied_alone_into_an_empty_directory_runs_every_command() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    let alone = env.dir.path().join("bin");
    std::fs::create_dir(&alone).unwrap();
    let copy = alone.join(format!("kubecred{}", std::env::consts::EXE_SUFFIX));
    std::fs::copy(kubecred_bin(), &copy).unwrap();
    let run = |args: &[String]| {
        let mut cmd = env.client(&copy);
        cmd.args(args)
            .arg(format!("--cache-dir={}", env.cache_dir().display()));
        cmd.run()
    };
    let args = env.cc_args(&bed);
    // A miss (a grant), then a hit from the cache: one token request.
    let first = run(&args).success().token();
    assert_eq!(run(&args).success().token(), first);
    assert_eq!(bed.token_requests("client_credentials"), 1);
    run(&["status".into()])
        .success()
        .stdout_contains(&bed.issuer);
    let mut logout = args.clone();
    logout[0] = "logout".into();
    run(&logout).success();
    run(&["status".into()])
        .success()
        .stdout_contains("no cached logins");
    // Help and usage errors come from the same binary.
    run(&["--help".into()])
        .success()
        .stdout_contains("get-token");
    run(&["get-tokn".into()]).failure(2);
}

/// kubecred with stdout a pipe whose reader is already gone.
///
/// The read end is closed before the child starts: closing it after `spawn`
/// races a fast child, which may fill the pipe's buffer and exit 0 first.
fn with_stdout_closed(cmd: &mut Command) -> (Option<i32>, String) {
    use std::process::Stdio;
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    let output = cmd
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .output()
        .unwrap();
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[test]
fn a_reader_that_goes_away_ends_a_report_quietly_and_fails_a_credential() {
    let bed = Testbed::start();
    let env = TestEnv::new();
    // `kubecred man | head`: the page is cut short on purpose; nothing to report.
    for args in [&["man"][..], &["completion", "bash"], &["--help"]] {
        let (code, stderr) = with_stdout_closed(&mut kubecred_plain(&env, args));
        assert_eq!((code, stderr.as_str()), (Some(0), ""), "{args:?}");
    }
    // A credential nobody read is a failure kubectl must hear of, in one line.
    let args = env.cc_args(&bed);
    env.kubecred_owned(&args).run().success();
    let (code, stderr) = with_stdout_closed(&mut env.kubecred_owned(&args));
    assert_eq!(code, Some(1), "{stderr}");
    assert!(
        stderr.starts_with("kubecred: error: writing the credential to stdout failed: ")
            && stderr.lines().count() == 1,
        "{stderr}"
    );
}

/// The one error line of a usage error: exit 2, nothing on stdout, no second line.
fn usage_error(run: Run) -> String {
    let run = run.failure(2);
    assert!(run.stdout().is_empty(), "{}", run.stdout());
    let stderr = run.stderr();
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    stderr
        .strip_prefix("kubecred: error: ")
        .unwrap_or_else(|| panic!("{stderr}"))
        .trim_end()
        .to_string()
}

#[test]
fn usage_errors_name_what_to_type_and_the_help_of_the_command_run() {
    let env = TestEnv::new();
    // A missing argument: its name and its values.
    assert_eq!(
        usage_error(kubecred_plain(&env, &["completion"]).run()),
        "kubecred completion needs <SHELL>: bash, zsh, fish or powershell (see kubecred completion --help)"
    );
    // A bad value: the allowed ones, and the subcommand's own help.
    assert_eq!(
        usage_error(kubecred_plain(&env, &["status", "-o", "yaml"]).run()),
        "invalid value 'yaml' for --output; possible values: table or json (see kubecred status --help)"
    );
    let grant = usage_error(kubecred_plain(&env, &["get-token", "--grant-type=foo"]).run());
    assert!(
        grant.starts_with("invalid value 'foo' for --grant-type; possible values: auto, authcode, authcode-keyboard, device-code,"),
        "{grant}"
    );
    assert!(
        grant.ends_with("(see kubecred get-token --help)"),
        "{grant}"
    );
    // A bad value from the environment names the variable and what it takes.
    assert_eq!(
        usage_error(
            kubecred_plain(
                &env,
                &[
                    "get-token",
                    "--issuer-url=https://idp.example",
                    "--client-id=k"
                ]
            )
            .env("KUBECRED_FORCE_REFRESH", "maybe")
            .run()
        ),
        "invalid value 'maybe' in KUBECRED_FORCE_REFRESH (for --force-refresh); it takes 1, true, yes or on to turn it on, and 0, false, no or off to turn it off (see kubecred get-token --help)"
    );
    // The help command each line names works as written.
    for help in ["completion", "status", "get-token"] {
        kubecred_plain(&env, &[help, "--help"])
            .run()
            .success()
            .stdout_contains("Usage: kubecred ");
    }
}

/// `setup --server` (or `--kubeconfig`, `--context-name`, …) belongs to --write-kubeconfig, a
/// switch: the line names it as it is typed, and offers no value the parser would then refuse.
#[test]
fn setup_without_write_kubeconfig_names_the_switch_as_it_is_typed() {
    let env = TestEnv::new();
    let setup = |extra: &str| {
        usage_error(
            kubecred_plain(
                &env,
                &[
                    "setup",
                    "--issuer-url=https://idp.example",
                    "--client-id=kubernetes",
                    extra,
                ],
            )
            .run(),
        )
    };
    assert_eq!(
        setup("--server=https://api.example:6443"),
        "kubecred setup needs --write-kubeconfig (see kubecred setup --help)"
    );
    assert_eq!(
        setup("--write-kubeconfig=true"),
        "--write-kubeconfig takes no value, but was given 'true': write --write-kubeconfig alone to turn it on (see kubecred setup --help)"
    );
}

/// `kubecred man` as `man` shows it: no literal backticks or roff escapes, every command in a
/// section of its own, and no reference to a page that is not shipped (the archive ships
/// kubecred.1 alone; scripts/archive-test.sh checks the archive's page the same way).
#[test]
fn the_man_page_renders_without_markup_and_refers_to_no_page_it_lacks() {
    let env = TestEnv::new();
    let page = env.dir.path().join("kubecred.1");
    let roff = kubecred_plain(&env, &["man"]).run().success().stdout();
    std::fs::write(&page, &roff).unwrap();
    let rendered = Command::new("man")
        .arg("-l")
        .arg(&page)
        .env("MANWIDTH", "100")
        .env("MANPAGER", "cat")
        .env("LANG", "C.UTF-8")
        .run()
        .success()
        .stdout();
    for markup in ["`", "\\f", "\\-"] {
        assert!(
            !rendered.contains(markup),
            "{markup:?} shows in\n{rendered}"
        );
    }
    for heading in [
        "COMMANDS",
        "EXAMPLES",
        "KUBECRED GET-TOKEN",
        "KUBECRED SETUP",
    ] {
        assert!(
            rendered.lines().any(|line| line == heading),
            "no {heading} heading in\n{rendered}"
        );
    }
    assert!(rendered.contains("kubectl runs kubecred get-token from a kubeconfig exec stanza"));
    let mut references: Vec<&str> = rendered
        .split(|c: char| c.is_whitespace())
        .filter(|word| word.ends_with("(1)") || word.contains("(1)"))
        .collect();
    references.sort();
    references.dedup();
    assert_eq!(references, ["kubecred(1)"], "{rendered}");
}
