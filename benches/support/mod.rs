//! What several benchmarks share (a folder, so cargo does not take it for a benchmark).

use std::path::PathBuf;

/// A temporary directory on the disk users have: under `HUDDLE_BENCH_DIR`, else
/// `target/bench-data`, never a tmpfs `/tmp`.
pub fn bench_dir() -> tempfile::TempDir {
    let base = std::env::var_os("HUDDLE_BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("target/bench-data"));
    std::fs::create_dir_all(&base).expect("bench dir");
    tempfile::tempdir_in(&base).expect("temp dir")
}
