//! The `kubecred` binary, the one kubectl runs: a plain `main` around [`kubecred::main`], which
//! parses the command line, runs the command and turns its outcome into the exit code. Every
//! command, the cache hit included, runs in this one binary (ARCHITECTURE.md, "What keeps the
//! cache hit fast", says why one binary is enough).

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(kubecred::main())
}
