//! Release builds lay out the binary's code in the order of `layout/hot-symbols.txt`: the
//! functions a host, a `huddle run` and `huddle presets list` run, first and together.
//!
//! Why: the kernel maps a program's code into its resident set 64 KiB around every page it
//! touches (fault-around), so code that runs spread over the whole 11 MB `.text` makes most of
//! it resident; gathered at the front it is a few MiB (issue 28 item 6; docs/benchmarks.md,
//! "Memory", says how the list is made again). A name the build no longer has is skipped, so a
//! stale list costs memory, never a failed build.
//!
//! Only where the linker is LLD (Rust 1.90 and later link x86_64 Linux binaries with its own
//! `rust-lld`): GNU ld has no such option. `HUDDLE_SYMBOL_ORDER=off` builds without it.

use std::env;
use std::path::Path;
use std::process::Command;

const LIST: &str = "layout/hot-symbols.txt";

fn main() {
    println!("cargo:rerun-if-changed={LIST}");
    println!("cargo:rerun-if-env-changed=HUDDLE_SYMBOL_ORDER");
    println!("cargo:rerun-if-env-changed=CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER");
    // A debug build's names differ, and its memory is not measured.
    if env::var("PROFILE").as_deref() != Ok("release") {
        return;
    }
    if let Some(why) = not_ordered() {
        println!("cargo:warning=huddle: code not laid out by {LIST}: {why}");
        return;
    }
    let Ok(dir) = env::var("CARGO_MANIFEST_DIR") else {
        return;
    };
    let list = Path::new(&dir).join(LIST);
    println!(
        "cargo:rustc-link-arg-bins=-Wl,--symbol-ordering-file={}",
        list.display()
    );
    println!("cargo:rustc-link-arg-bins=-Wl,--no-warn-symbol-ordering");
}

/// Why this release build cannot be laid out by the list (`None`: it can).
fn not_ordered() -> Option<String> {
    if env::var("HUDDLE_SYMBOL_ORDER").as_deref() == Ok("off") {
        return Some("HUDDLE_SYMBOL_ORDER=off".into());
    }
    if env::var("TARGET").as_deref() != Ok("x86_64-unknown-linux-gnu") {
        return Some("the target is not x86_64-unknown-linux-gnu".into());
    }
    if env::var_os("CARGO_TARGET_X86_64_UNKNOWN_LINUX_GNU_LINKER").is_some() {
        return Some("another linker is configured".into());
    }
    let flags = env::var("CARGO_ENCODED_RUSTFLAGS").unwrap_or_default();
    if flags
        .split('\x1f')
        .any(|f| f.contains("linker") || f.contains("fuse-ld"))
    {
        return Some("RUSTFLAGS choose the linker".into());
    }
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let minor = Command::new(rustc)
        .arg("--version")
        .output()
        .ok()
        .and_then(|out| String::from_utf8(out.stdout).ok())
        .and_then(|v| {
            v.split_whitespace()
                .nth(1)?
                .split('.')
                .nth(1)?
                .parse::<u32>()
                .ok()
        });
    match minor {
        Some(minor) if minor >= 90 => None,
        _ => Some("rustc before 1.90 links with the system's linker".into()),
    }
}
