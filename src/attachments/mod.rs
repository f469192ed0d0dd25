//! Files and the repo's diff attached to a prompt (`@path`, `@diff` in the composer). The
//! content goes to the model (every member of a team, as shared context for that run); the
//! transcript records each attachment by path, size and sha256. Pure checks and text here; the
//! file and git work is in [`read`] and runs off the UI thread.

pub mod read;

use std::fmt::Write as _;

pub use read::{list_files, read_diff, read_file};

/// The biggest file (or diff) attached.
pub const MAX_BYTES: u64 = 256 * 1024;
/// The name that attaches `git diff` (staged and unstaged changes against HEAD).
pub const DIFF: &str = "diff";

/// One attached text.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Attachment {
    /// The path relative to the repository, or `git diff`.
    pub label: String,
    pub content: String,
    /// Lower-case hex sha256 of the content.
    pub sha256: String,
}

impl Attachment {
    pub fn new(label: impl Into<String>, content: String) -> Attachment {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(content.as_bytes());
        let sha256 = digest.iter().fold(String::with_capacity(64), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        });
        Attachment {
            label: label.into(),
            content,
            sha256,
        }
    }

    pub fn size(&self) -> usize {
        self.content.len()
    }

    /// The line the transcript keeps: path, size, hash.
    pub fn reference(&self) -> String {
        format!(
            "[attached: {} · {} bytes · sha256 {}]",
            self.label,
            self.size(),
            &self.sha256[..self.sha256.len().min(16)]
        )
    }
}

/// Why something cannot be attached.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AttachError {
    #[error("@{0}: not found in the repository")]
    NotFound(String),
    #[error("@{0}: outside the repository, refused")]
    Outside(String),
    #[error("@{0}: a symbolic link, refused")]
    Symlink(String),
    #[error("@{0}: not a regular file, refused")]
    NotRegular(String),
    #[error("@{label}: {size} bytes, more than the {limit} bytes an attachment may have")]
    TooBig { label: String, size: u64, limit: u64 },
    #[error("@{0}: a binary file, refused")]
    Binary(String),
    #[error("@{label}: cannot read it: {reason}")]
    Unreadable { label: String, reason: String },
    #[error("@diff: {0}")]
    Git(String),
    #[error("@diff: no changes against HEAD")]
    EmptyDiff,
}

/// What the model gets: the prompt, then each attachment's content in a fenced block.
pub fn with_context(prompt: &str, attachments: &[Attachment]) -> String {
    if attachments.is_empty() {
        return prompt.to_string();
    }
    let size: usize = attachments
        .iter()
        .map(|a| a.content.len() + a.label.len() + 64)
        .sum();
    let mut out = String::with_capacity(prompt.len() + size + 64);
    out.push_str(prompt);
    out.push_str("\n\n## Attached files (shared context for this request)\n");
    for a in attachments {
        // A fence longer than any run of backticks in the content, so it cannot close early.
        let fence = "`".repeat(longest_backtick_run(&a.content).max(2) + 1);
        let _ = write!(out, "\n### {}\n{fence}\n{}", a.label, a.content);
        if !a.content.ends_with('\n') {
            out.push('\n');
        }
        let _ = writeln!(out, "{fence}");
    }
    out
}

/// `prompt` as it is sent ([`with_context`]) and as its transcript keeps it
/// ([`with_references`]): without attachments both are the prompt itself, not copied twice.
pub fn sent_and_kept(prompt: String, attachments: &[Attachment]) -> (std::sync::Arc<str>, String) {
    if attachments.is_empty() {
        return (prompt.as_str().into(), prompt);
    }
    (
        with_context(&prompt, attachments).into(),
        with_references(&prompt, attachments),
    )
}

/// What the transcript keeps for the user's message: the prompt, then one reference per
/// attachment (path, size, hash; never the content).
pub fn with_references(prompt: &str, attachments: &[Attachment]) -> String {
    if attachments.is_empty() {
        return prompt.to_string();
    }
    let mut out = prompt.to_string();
    out.push('\n');
    for a in attachments {
        out.push('\n');
        out.push_str(&a.reference());
    }
    out
}

fn longest_backtick_run(text: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for c in text.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

/// The `@words` of a text that name attachments: `@diff` and `@` followed by a path (a word
/// with `/` or `.`, or one of `files`, which is sorted). Other `@words` (a member's name, an
/// e-mail) are text.
pub fn mentions<'a>(text: &'a str, files: &[String]) -> Vec<&'a str> {
    let mut out: Vec<&str> = Vec::new();
    for word in text.split_whitespace() {
        let Some(name) = word.strip_prefix('@') else {
            continue;
        };
        // Trailing punctuation of a sentence is not part of the path.
        let name = name.trim_end_matches([',', ';', ':', '!', '?', ')']);
        let name = name.strip_suffix('.').unwrap_or(name);
        let is_attachment = name == DIFF
            || files.binary_search_by(|f| f.as_str().cmp(name)).is_ok()
            || (!name.is_empty() && (name.contains('/') || name.contains('.')));
        if is_attachment && !out.contains(&name) {
            out.push(name);
        }
    }
    out
}

/// Completions for `prefix` (what follows `@`): `diff` and the files starting with it, then
/// the files containing it; at most `limit`.
pub fn complete(prefix: &str, files: &[String], limit: usize) -> Vec<String> {
    let lower = prefix.to_lowercase();
    let mut out: Vec<String> = Vec::new();
    if DIFF.starts_with(&lower) {
        out.push(DIFF.to_string());
    }
    let starts = files.iter().filter(|f| f.to_lowercase().starts_with(&lower));
    let contains = files
        .iter()
        .filter(|f| !f.to_lowercase().starts_with(&lower) && f.to_lowercase().contains(&lower));
    for f in starts.chain(contains) {
        if out.len() >= limit {
            break;
        }
        out.push(f.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_gets_the_content_and_the_transcript_the_reference() {
        let a = Attachment::new("src/a.rs", "fn main() {}\n```\n".into());
        assert_eq!(a.sha256.len(), 64);
        assert_eq!(
            Attachment::new("x", "abc".into()).sha256,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let sent = with_context("look at @src/a.rs", std::slice::from_ref(&a));
        assert!(sent.starts_with("look at @src/a.rs\n\n## Attached files"));
        assert!(
            sent.contains("### src/a.rs\n````\nfn main() {}\n```\n````\n"),
            "{sent}"
        );
        let kept = with_references("look at @src/a.rs", &[a]);
        assert!(
            kept.contains("[attached: src/a.rs · 17 bytes · sha256 "),
            "{kept}"
        );
        assert!(!kept.contains("fn main"));
        assert_eq!(with_context("plain", &[]), "plain");
    }

    #[test]
    fn mentions_are_paths_and_diff_not_names() {
        let files = vec!["Makefile".to_string(), "src/lib.rs".to_string()];
        assert_eq!(
            mentions(
                "see @src/lib.rs, @Makefile and @diff; ask @alice about @notes.md.",
                &files
            ),
            vec!["src/lib.rs", "Makefile", "diff", "notes.md"]
        );
        assert!(mentions("mail me@example.org", &files).is_empty());
    }

    #[test]
    fn completion_prefers_prefixes_and_offers_diff() {
        let files: Vec<String> = ["src/main.rs", "src/lib.rs", "docs/src.md", "README.md"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            complete("src", &files, 10),
            vec!["src/main.rs", "src/lib.rs", "docs/src.md"]
        );
        assert_eq!(complete("d", &files, 10)[0], "diff");
        assert_eq!(complete("", &files, 2).len(), 2);
    }
}
