//! The `kubecred` binary, the one kubectl runs: a plain `main` around [`kubecred::main`], which
//! parses the command line, runs the command and turns its outcome into the exit code. Every
//! command, the cache hit included, runs in this one binary (DECISIONS.md, "What keeps the
//! cache hit fast", says why one binary is enough).

/// The first allocations from a fixed arena, the rest from the system allocator: a cache hit
/// allocates and frees in a millisecond what the system allocator would spend a third of the hit
/// on (see `process/startup_arena.rs`). `--cfg kubecred_system_allocator` builds without it, for the
/// benchmark that weighs it (bench/linking.sh).
#[cfg(not(kubecred_system_allocator))]
#[global_allocator]
static ALLOCATOR: kubecred::startup_arena::StartupArena =
    kubecred::startup_arena::StartupArena::new();

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(kubecred::main())
}
