//! The file and git side of attachments: a file of the repository (canonicalised and checked to
//! be inside it; no symlinks, nothing but regular files, size-capped, text only), `git diff`
//! against HEAD, and the repository's files for completion (`git ls-files`, honouring
//! `.gitignore`; a bounded walk outside git). Blocking: called off the UI thread.

use std::path::{Component, Path};

use super::{AttachError, Attachment, DIFF, MAX_BYTES};

/// At most this many files are listed for completion.
pub const MAX_LISTED: usize = 20_000;
/// How deep the walk outside git goes.
const MAX_DEPTH: usize = 8;

/// Reads `name` (relative to `repo`) as an attachment.
pub fn read_file(repo: &Path, name: &str) -> Result<Attachment, AttachError> {
    if name == DIFF {
        return read_diff(repo);
    }
    let label = name.to_string();
    let relative = Path::new(name);
    if relative.is_absolute() || relative.components().any(|c| c == Component::ParentDir) {
        return Err(AttachError::Outside(label));
    }
    let path = repo.join(relative);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(AttachError::NotFound(label)),
        Err(e) => {
            return Err(AttachError::Unreadable {
                label,
                reason: e.to_string(),
            });
        }
    };
    if meta.file_type().is_symlink() {
        return Err(AttachError::Symlink(label));
    }
    if !meta.is_file() {
        return Err(AttachError::NotRegular(label));
    }
    // A folder on the way may be a link out of the repository: compare the real paths.
    let unreadable = |e: std::io::Error| AttachError::Unreadable {
        label: label.clone(),
        reason: e.to_string(),
    };
    let real_repo = repo.canonicalize().map_err(unreadable)?;
    let real = path.canonicalize().map_err(unreadable)?;
    if !real.starts_with(&real_repo) {
        return Err(AttachError::Outside(label));
    }
    if meta.len() > MAX_BYTES {
        return Err(AttachError::TooBig {
            label,
            size: meta.len(),
            limit: MAX_BYTES,
        });
    }
    let bytes = crate::store::read_regular(&real).map_err(unreadable)?;
    // It may have grown since it was looked at.
    if bytes.len() as u64 > MAX_BYTES {
        return Err(AttachError::TooBig {
            label,
            size: bytes.len() as u64,
            limit: MAX_BYTES,
        });
    }
    let text = text_of(bytes).ok_or_else(|| AttachError::Binary(label.clone()))?;
    Ok(Attachment::new(label, text))
}

/// Text, or None for binary content (a NUL byte, or not UTF-8). Control sequences are removed.
fn text_of(bytes: Vec<u8>) -> Option<String> {
    if bytes.contains(&0) {
        return None;
    }
    let text = String::from_utf8(bytes).ok()?;
    Some(crate::text::sanitize::editable(&text))
}

/// `git diff HEAD` (staged and unstaged changes); in a repository without a commit yet, the
/// staged and unstaged diffs.
pub fn read_diff(repo: &Path) -> Result<Attachment, AttachError> {
    let has_head = git(repo, &["rev-parse", "--verify", "--quiet", "HEAD"]).is_ok();
    let diff = if has_head {
        git(repo, &["diff", "HEAD"])?
    } else {
        let mut both = git(repo, &["diff", "--cached"])?;
        both.push_str(&git(repo, &["diff"])?);
        both
    };
    if diff.trim().is_empty() {
        return Err(AttachError::EmptyDiff);
    }
    if diff.len() as u64 > MAX_BYTES {
        return Err(AttachError::TooBig {
            label: DIFF.into(),
            size: diff.len() as u64,
            limit: MAX_BYTES,
        });
    }
    Ok(Attachment::new(
        "git diff",
        crate::text::sanitize::editable(&diff),
    ))
}

fn git(repo: &Path, args: &[&str]) -> Result<String, AttachError> {
    // huddle's hardened git: the repository may be a member's work (see worktrees::git).
    let mut all: Vec<&str> = vec!["--no-pager"];
    all.extend_from_slice(args);
    if args.first() == Some(&"diff") {
        all.extend(["--no-color", "--no-ext-diff"]);
    }
    let output = crate::worktrees::git::Git::new(repo)
        .hardened(&all)
        .map_err(|e| AttachError::Git(e.to_string()))?
        .output()
        .map_err(|e| AttachError::Git(format!("cannot run git: {e}")))?;
    if !output.status.success() {
        let why = String::from_utf8_lossy(&output.stderr);
        return Err(AttachError::Git(crate::text::first_line(&why, 200)));
    }
    String::from_utf8(output.stdout).map_err(|_| AttachError::Git("the diff is not UTF-8".into()))
}

/// The repository's files, relative, sorted: `git ls-files` (tracked and untracked, not
/// ignored) in a git repository, else a bounded walk skipping hidden folders.
pub fn list_files(repo: &Path) -> Vec<String> {
    let listed = crate::worktrees::git::Git::new(repo)
        .hardened(&["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
        .map(|mut c| c.output());
    if let Ok(Ok(out)) = listed
        && out.status.success()
    {
        let mut files: Vec<String> = out
            .stdout
            .split(|b| *b == 0)
            .filter(|p| !p.is_empty())
            .filter_map(|p| std::str::from_utf8(p).ok())
            .take(MAX_LISTED)
            .map(str::to_string)
            .collect();
        files.sort();
        files.dedup();
        return files;
    }
    let mut files = Vec::new();
    walk(repo, repo, 0, &mut files);
    files.sort();
    files
}

fn walk(root: &Path, dir: &Path, depth: usize, out: &mut Vec<String>) {
    if depth > MAX_DEPTH || out.len() >= MAX_LISTED {
        return;
    }
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.filter_map(Result::ok) {
        if out.len() >= MAX_LISTED {
            return;
        }
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') || name == "target" || name == "node_modules" {
            continue;
        }
        let Ok(kind) = entry.file_type() else { continue };
        let path = entry.path();
        if kind.is_dir() {
            walk(root, &path, depth + 1, out);
        } else if kind.is_file()
            && let Ok(rel) = path.strip_prefix(root)
        {
            out.push(rel.to_string_lossy().into_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_and_every_refusal_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        std::fs::create_dir_all(repo.join("src")).unwrap();
        std::fs::write(repo.join("src/a.rs"), "fn a() {}\n").unwrap();
        std::fs::write(repo.join("big.txt"), "x".repeat(MAX_BYTES as usize + 1)).unwrap();
        std::fs::write(repo.join("bin.dat"), b"\x00\x01\x02").unwrap();
        std::fs::write(dir.path().join("secret.txt"), "outside").unwrap();
        std::os::unix::fs::symlink(dir.path().join("secret.txt"), repo.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(dir.path(), repo.join("up")).unwrap();

        let a = read_file(&repo, "src/a.rs").unwrap();
        assert_eq!(
            (a.label.as_str(), a.content.as_str()),
            ("src/a.rs", "fn a() {}\n")
        );
        let err = |name: &str| read_file(&repo, name).unwrap_err();
        assert!(matches!(err("nope.rs"), AttachError::NotFound(_)));
        assert!(matches!(err("../secret.txt"), AttachError::Outside(_)));
        assert!(matches!(err("/etc/passwd"), AttachError::Outside(_)));
        assert!(matches!(err("link.txt"), AttachError::Symlink(_)));
        assert!(
            matches!(err("up/secret.txt"), AttachError::Outside(_)),
            "{:?}",
            err("up/secret.txt")
        );
        assert!(matches!(err("src"), AttachError::NotRegular(_)));
        assert!(matches!(err("big.txt"), AttachError::TooBig { .. }));
        assert!(matches!(err("bin.dat"), AttachError::Binary(_)));
        assert!(err("big.txt").to_string().contains("more than the 262144 bytes"));
    }

    #[test]
    fn outside_git_the_walk_lists_files_without_hidden_folders() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join(".git-not/x")).unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::write(dir.path().join("src/a.rs"), "").unwrap();
        std::fs::write(dir.path().join(".git-not/x/b"), "").unwrap();
        std::fs::write(dir.path().join("README.md"), "").unwrap();
        assert_eq!(list_files(dir.path()), vec!["README.md", "src/a.rs"]);
    }
}
