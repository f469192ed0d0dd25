//! The documentation: README.md for a newcomer, the reference in docs/. Its links between pages
//! resolve (file and heading), the README stays short and keeps the test command `.ci/run`
//! calls, and the built-in presets table lists every built-in preset.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use huddle::config::Config;
use huddle::presets::builtin::load_builtins;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// README.md and every page of docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .expect("docs/")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

/// The text outside fenced code blocks, line by line.
fn prose(text: &str) -> Vec<&str> {
    let mut fenced = false;
    let mut lines = Vec::new();
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            lines.push(line);
        }
    }
    lines
}

/// The anchor GitHub gives a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut out = BTreeSet::new();
    for line in prose(text) {
        let hashes = line.chars().take_while(|c| *c == '#').count();
        if !(1..=6).contains(&hashes) || !line[hashes..].starts_with(' ') {
            continue;
        }
        let base = slug(&line[hashes..]);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor.clone());
        out.insert(anchor);
    }
    out
}

/// The targets of `[text](target)` links outside code blocks.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text) {
        let mut rest = line;
        while let Some(i) = rest.find("](") {
            rest = &rest[i + 2..];
            if let Some(end) = rest.find(')') {
                out.push(rest[..end].to_string());
                rest = &rest[end..];
            }
        }
    }
    out
}

#[test]
fn every_relative_link_between_the_pages_resolves() {
    let mut broken = Vec::new();
    let mut checked = 0;
    for page in pages() {
        let text = read(&page);
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            checked += 1;
            let (path, fragment) = target.split_once('#').unwrap_or((&target, ""));
            let file = if path.is_empty() {
                page.clone()
            } else {
                page.parent().expect("a page's folder").join(path)
            };
            if !file.exists() {
                broken.push(format!("{}: {target}: no such file", page.display()));
                continue;
            }
            if !fragment.is_empty()
                && file.extension().is_some_and(|x| x == "md")
                && !anchors(&read(&file)).contains(fragment)
            {
                broken.push(format!("{}: {target}: no such heading", page.display()));
            }
        }
    }
    assert!(checked > 50, "only {checked} links found: is the parser blind?");
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_is_short_and_keeps_the_test_command_ci_runs() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 400,
        "README.md has {lines} lines: the reference belongs in docs/"
    );
    let ci = read(&root().join(".ci/run"));
    assert!(
        ci.lines().any(|l| l.trim() == "cargo test"),
        ".ci/run runs `cargo test`"
    );
    assert!(
        readme.lines().any(|l| l.trim_start().starts_with("cargo test ")),
        "the README's set-up names `cargo test`"
    );
}

#[test]
fn the_builtin_presets_table_lists_every_builtin_preset() {
    let (presets, errors) = load_builtins(&Config::from_env(|_| None));
    assert!(errors.is_empty(), "{errors:?}");
    let page = read(&root().join("docs/presets-and-squad.md"));
    for p in &presets {
        let row = format!("| {} | {}", p.name, p.mode);
        assert!(
            page.lines().any(|l| l.starts_with(&row)),
            "docs/presets-and-squad.md: no row `{row}…` in the built-in presets table"
        );
    }
}
