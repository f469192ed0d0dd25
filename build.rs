//! Release builds lay out the binary's code in the order of `layout/hot-symbols.txt`: the
//! functions a host, a `huddle run` and `huddle presets list` run, first and together.
//!
//! Why: the kernel maps a program's code into its resident set 64 KiB around every page it
//! touches (fault-around), so code that runs spread over the whole 11.7 MB `.text` makes most
//! of it resident; gathered at the front it is a few MiB (issue 28 item 6; docs/development.md,
//! "Release builds", says how the list is made again). A name the build no longer has is
//! skipped, so a stale list costs memory, never a failed build.
//!
//! Only where the linker takes LLD's `--symbol-ordering-file`: a trivial program is linked
//! with this build's rustc, target, linker and flags first, and only if that works are the
//! options passed (Rust 1.90 and later link x86_64 Linux with their own `rust-lld`; GNU ld, a
//! distribution's rustc, `mold -run` do not take them). Otherwise, or with
//! `HUDDLE_SYMBOL_ORDER=off`, a warning says the build is laid out as before.

use std::env;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const LIST: &str = "layout/hot-symbols.txt";

fn main() {
    println!("cargo:rerun-if-changed={LIST}");
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=HUDDLE_SYMBOL_ORDER");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    // A debug build's names differ, and its memory is not measured.
    if env::var("PROFILE").as_deref() != Ok("release") {
        return;
    }
    let list = Path::new(&env::var("CARGO_MANIFEST_DIR").unwrap_or_default()).join(LIST);
    let args = [
        format!("-Wl,--symbol-ordering-file={}", list.display()),
        "-Wl,--no-warn-symbol-ordering".to_string(),
    ];
    match not_ordered(&list, &args) {
        Some(why) => println!("cargo:warning=huddle: code not laid out by {LIST}: {why}"),
        None => {
            for arg in &args {
                println!("cargo:rustc-link-arg-bins={arg}");
            }
        }
    }
}

/// Why this release build cannot be laid out by the list (`None`: it can).
fn not_ordered(list: &Path, args: &[String]) -> Option<String> {
    if env::var("HUDDLE_SYMBOL_ORDER").as_deref() == Ok("off") {
        return Some("HUDDLE_SYMBOL_ORDER=off".into());
    }
    if !list.is_file() {
        return Some(format!("{} is missing", list.display()));
    }
    let Some(out) = env::var_os("OUT_DIR").map(PathBuf::from) else {
        return Some("cargo gave no OUT_DIR to try the linker in".into());
    };
    let source = out.join("symbol_order_probe.rs");
    if let Err(e) = std::fs::write(&source, "fn main() {}\n") {
        return Some(format!("cannot write {}: {e}", source.display()));
    }
    let mut rustc = Command::new(env::var_os("RUSTC").unwrap_or_else(|| "rustc".into()));
    rustc
        .arg("--crate-type=bin")
        .arg("--crate-name=symbol_order_probe")
        .arg("-o")
        .arg(out.join("symbol_order_probe"))
        .arg(&source);
    if let Ok(target) = env::var("TARGET") {
        rustc.arg(format!("--target={target}"));
    }
    // The linker cargo was told to use (a config's `linker =`), and the build's own flags.
    if let Some(linker) = env::var_os("RUSTC_LINKER") {
        rustc
            .arg("-C")
            .arg(format!("linker={}", linker.to_string_lossy()));
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    rustc.args(flags.split('\x1f').filter(|f| !f.is_empty()));
    for arg in args {
        rustc.arg("-C").arg(format!("link-arg={arg}"));
    }
    let status = rustc.stdout(Stdio::null()).stderr(Stdio::null()).status();
    match status {
        Ok(s) if s.success() => None,
        Ok(_) => Some("this build's linker does not take LLD's --symbol-ordering-file".into()),
        Err(e) => Some(format!("cannot run rustc to try the linker: {e}")),
    }
}
