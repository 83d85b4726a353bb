//! The floor for "a Rust program that reads a file and writes it to stdout": what a cache hit
//! would cost if it did nothing but that. Built by bench/run.sh with plain rustc and the same
//! optimisation settings as kubecred's release profile.

use std::io::Write;

fn main() {
    let path = std::env::args_os().nth(1).expect("usage: readfile PATH");
    let bytes = std::fs::read(path).expect("reading the file");
    std::io::stdout()
        .write_all(&bytes)
        .expect("writing to stdout");
}
