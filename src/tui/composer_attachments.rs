//! The composer's attachments: the `@path` / `@diff` words of its text, each read off the UI
//! thread and listed under the text (size, or why it cannot be attached), and the completion
//! of an `@word` from the repository's files (Tab completes and cycles, Esc dismisses).

use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use crate::attachments::{Attachment, complete, mentions};

/// At most this many attachment rows are drawn under the text (the rest are counted).
pub const MAX_ROWS: u16 = 4;
/// At most this many completions are offered.
pub const MAX_COMPLETIONS: usize = 8;

#[derive(Debug, Clone, PartialEq)]
pub enum Status {
    Reading,
    Ready(Attachment),
    Failed(String),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    pub candidates: Vec<String>,
    /// The candidate in the text now.
    pub index: usize,
}

#[derive(Debug, Default)]
pub struct ComposerAttachments {
    /// The repository's files, sorted (for completion and to tell a file from a name).
    files: Vec<String>,
    /// The attachments named in the text, in order.
    entries: Vec<(String, Status)>,
    pub completion: Option<Completion>,
    /// Send was pressed while files were still being read: send once they are.
    pub send_when_ready: bool,
}

impl ComposerAttachments {
    pub fn set_files(&mut self, mut files: Vec<String>) {
        files.sort();
        self.files = files;
    }

    pub fn files(&self) -> &[String] {
        &self.files
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// After the text changed: keeps the attachments still named, and returns the names to
    /// read. `typing` is a word being typed at the end of the text, not read until it is done.
    pub fn sync(&mut self, text: &str, typing: Option<&str>) -> Vec<String> {
        let known = |n: &str| self.entries.iter().any(|(e, _)| e == n);
        let named: Vec<&str> = mentions(text, &self.files)
            .into_iter()
            .filter(|n| known(n) || typing.is_none_or(|t| t.strip_prefix('@') != Some(*n)))
            .collect();
        let mut old = std::mem::take(&mut self.entries);
        let mut new = Vec::new();
        for name in named {
            match old.iter().position(|(n, _)| n == name) {
                Some(i) => self.entries.push(old.swap_remove(i)),
                None => {
                    self.entries.push((name.to_string(), Status::Reading));
                    new.push(name.to_string());
                }
            }
        }
        new
    }

    pub fn on_read(&mut self, name: &str, result: Result<Attachment, String>) {
        if let Some((_, status)) = self.entries.iter_mut().find(|(n, _)| n == name) {
            *status = match result {
                Ok(a) => Status::Ready(a),
                Err(e) => Status::Failed(e),
            };
        }
    }

    pub fn reading(&self) -> bool {
        self.entries.iter().any(|(_, s)| *s == Status::Reading)
    }

    /// The attachments to send, or the first reason not to.
    pub fn ready(&self) -> Result<Vec<Attachment>, String> {
        self.entries
            .iter()
            .map(|(name, status)| match status {
                Status::Ready(a) => Ok(a.clone()),
                Status::Reading => Err(format!("@{name} is still being read")),
                Status::Failed(e) => Err(format!("{e} (remove it from the text to send)")),
            })
            .collect()
    }

    pub fn clear(&mut self) {
        self.entries.clear();
        self.completion = None;
        self.send_when_ready = false;
    }

    /// Completions of `prefix` (the `@word` without `@`).
    pub fn complete(&self, prefix: &str) -> Vec<String> {
        complete(prefix, &self.files, MAX_COMPLETIONS)
    }

    /// Rows under the text.
    pub fn rows(&self) -> u16 {
        (self.entries.len() as u16).min(MAX_ROWS)
    }

    /// The rows under the text: one per attachment, its size or why it cannot be attached.
    pub fn lines(&self) -> Vec<Line<'static>> {
        let dim = Style::default().add_modifier(Modifier::DIM);
        let shown = self.entries.len().min(MAX_ROWS as usize);
        let mut lines: Vec<Line<'static>> = self.entries[..shown]
            .iter()
            .map(|(name, status)| {
                let name = crate::text::sanitize::display(name).into_owned();
                match status {
                    Status::Reading => Line::from(vec![
                        Span::raw("⊕ "),
                        Span::styled(format!("{name} (reading…)"), dim),
                    ]),
                    Status::Ready(a) => Line::from(vec![
                        Span::raw("⊕ "),
                        Span::raw(crate::text::sanitize::display(&a.label).into_owned()),
                        Span::styled(format!("  {}", human_size(a.size())), dim),
                    ]),
                    Status::Failed(e) => Line::styled(
                        format!("✗ {}", crate::text::sanitize::display(e)),
                        Style::default().fg(Color::Red),
                    ),
                }
            })
            .collect();
        let hidden = self.entries.len() - shown;
        if hidden > 0
            && let Some(last) = lines.last_mut()
        {
            last.push_span(Span::styled(format!("  (+{hidden} more)"), dim));
        }
        lines
    }
}

fn human_size(bytes: usize) -> String {
    if bytes < 1024 {
        format!("{bytes} B")
    } else {
        format!("{:.1} KiB", bytes as f64 / 1024.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_become_attachments_read_once_and_errors_block_sending() {
        let mut a = ComposerAttachments::default();
        a.set_files(vec!["src/a.rs".into(), "README.md".into()]);
        assert_eq!(a.sync("see @src/a.rs and @READ", Some("@READ")), vec!["src/a.rs"]);
        assert!(a.reading());
        assert_eq!(a.ready(), Err("@src/a.rs is still being read".into()));
        a.on_read("src/a.rs", Ok(Attachment::new("src/a.rs", "x".into())));
        assert_eq!(a.sync("see @src/a.rs and @README.md", None), vec!["README.md"]);
        a.on_read("README.md", Err("@README.md: a binary file, refused".into()));
        let err = a.ready().unwrap_err();
        assert!(err.contains("binary") && err.contains("remove it"), "{err}");
        assert_eq!(a.lines().len(), 2);
        // Removing the word removes the attachment; nothing is read again.
        assert!(a.sync("see @src/a.rs", None).is_empty());
        assert_eq!(a.ready().unwrap().len(), 1);
    }
}
