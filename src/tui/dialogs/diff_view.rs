//! The diff view: a worktree's changes against its base commit (or each worktree of a team, one
//! tab each): the files (status letter, path, lines added and removed) and the coloured patch
//! (`+` green, `-` red, `@@` cyan), every line sanitised. The patch is split into lines once
//! when it arrives; a frame draws only the lines on screen, so a 4 MB diff scrolls as fast as a
//! small one. `j/k`, `PgUp/PgDn`, `g/G` scroll; `←/→` jump between files, `Tab` between
//! worktrees; the merge key asks to bring the worktree shown back; Esc closes.

use std::cell::Cell;
use std::ops::Range;

use crossterm::event::{KeyCode, KeyEvent};
use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use super::{DialogResult, Outcome, popup_block};
use crate::model::Worktree;
use crate::text::sanitize;
use crate::tui::keymap::KeyBinding;
use crate::worktrees::WorktreeDiff;

/// Bytes of one patch line looked at when drawing (the rest is off screen anyway).
const LINE_BYTES_DRAWN: usize = 2048;

/// One changed file as listed.
#[derive(Debug, Clone, PartialEq)]
pub struct FileRow {
    pub letter: char,
    pub path: String,
    pub added: usize,
    pub removed: usize,
    /// Where its part of the patch starts (`None`: not in the patch).
    pub line: Option<usize>,
}

/// A worktree's diff, ready to draw.
#[derive(Debug, Clone)]
pub struct DiffText {
    patch: String,
    lines: Vec<Range<usize>>,
    pub files: Vec<FileRow>,
    pub truncated: bool,
    pub skipped: Vec<String>,
}

impl DiffText {
    pub fn new(diff: WorktreeDiff) -> DiffText {
        let patch = diff.patch;
        let mut lines = Vec::new();
        let mut start = 0;
        for (i, b) in patch.bytes().enumerate() {
            if b == b'\n' {
                lines.push(start..i);
                start = i + 1;
            }
        }
        if start < patch.len() {
            lines.push(start..patch.len());
        }
        let mut files: Vec<FileRow> = diff
            .files
            .iter()
            .map(|f| FileRow {
                letter: f.kind.letter(),
                path: f.path.clone(),
                added: 0,
                removed: 0,
                line: None,
            })
            .collect();
        for section in sections(&patch, &lines) {
            if let Some(f) = files
                .iter_mut()
                .find(|f| f.path == section.path && f.line.is_none())
            {
                f.added = section.added;
                f.removed = section.removed;
                f.line = Some(section.start);
            }
        }
        DiffText {
            patch,
            lines,
            files,
            truncated: diff.truncated,
            skipped: diff.skipped,
        }
    }

    pub fn line_count(&self) -> usize {
        self.lines.len()
    }

    /// Line `i` of the patch (raw, not sanitised).
    pub fn line(&self, i: usize) -> &str {
        self.lines
            .get(i)
            .and_then(|r| self.patch.get(r.clone()))
            .unwrap_or("")
    }

    pub fn totals(&self) -> (usize, usize) {
        self.files
            .iter()
            .fold((0, 0), |(a, r), f| (a + f.added, r + f.removed))
    }
}

/// One file's part of a patch.
struct Section {
    path: String,
    start: usize,
    added: usize,
    removed: usize,
}

/// The files' parts of a patch: where each starts, its path (from `+++ b/…`, else `--- a/…`,
/// else the `diff --git` line) and its `+`/`-` lines.
fn sections(patch: &str, lines: &[Range<usize>]) -> Vec<Section> {
    let mut out: Vec<Section> = Vec::new();
    let mut in_hunks = false;
    for (i, r) in lines.iter().enumerate() {
        let line = patch.get(r.clone()).unwrap_or("");
        if let Some(rest) = line.strip_prefix("diff --git ") {
            in_hunks = false;
            let path = rest
                .rsplit_once(" b/")
                .map(|(_, p)| p.to_string())
                .unwrap_or_default();
            out.push(Section {
                path,
                start: i,
                added: 0,
                removed: 0,
            });
            continue;
        }
        let Some(s) = out.last_mut() else { continue };
        if in_hunks {
            if line.starts_with('+') {
                s.added += 1;
            } else if line.starts_with('-') {
                s.removed += 1;
            }
        } else if line.starts_with("@@") {
            in_hunks = true;
        } else if let Some(p) = line.strip_prefix("+++ ") {
            if let Some(p) = unquote(p).strip_prefix("b/") {
                s.path = p.to_string();
            }
        } else if let Some(p) = line.strip_prefix("--- ")
            && let Some(p) = unquote(p).strip_prefix("a/")
            && s.path.is_empty()
        {
            s.path = p.to_string();
        }
    }
    out
}

fn unquote(p: &str) -> &str {
    p.trim_end()
        .strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap_or(p.trim_end())
}

/// What a tab shows.
#[derive(Debug, Clone)]
pub enum DiffContent {
    Loading,
    Failed(String),
    Ready(Box<DiffText>),
}

/// One worktree of the view.
#[derive(Debug, Clone)]
pub struct DiffTab {
    pub worktree: Worktree,
    /// Who works there (for the tab's title).
    pub sessions: Vec<String>,
    pub content: DiffContent,
}

pub struct DiffView {
    /// Matches the runtime's answer to this view.
    pub request: u64,
    pub title: String,
    pub tabs: Vec<DiffTab>,
    pub current: usize,
    /// The first patch line on screen.
    pub scroll: usize,
    /// The keys of the merge action (from the keymap): ask to bring the shown worktree back.
    merge_keys: Vec<KeyBinding>,
    /// Patch lines on screen in the last frame (paging).
    page: Cell<usize>,
}

impl DiffView {
    pub fn new(
        request: u64,
        title: impl Into<String>,
        tabs: Vec<DiffTab>,
        merge_keys: Vec<KeyBinding>,
    ) -> DiffView {
        DiffView {
            request,
            title: title.into(),
            tabs,
            current: 0,
            scroll: 0,
            merge_keys,
            page: Cell::new(10),
        }
    }

    /// The diffs arrived, one per tab in order.
    pub fn loaded(&mut self, diffs: Vec<Result<WorktreeDiff, String>>) {
        for (tab, d) in self.tabs.iter_mut().zip(diffs) {
            tab.content = match d {
                Ok(d) => DiffContent::Ready(Box::new(DiffText::new(d))),
                Err(e) => DiffContent::Failed(e),
            };
        }
    }

    fn text(&self) -> Option<&DiffText> {
        match &self.tabs.get(self.current)?.content {
            DiffContent::Ready(t) => Some(t),
            _ => None,
        }
    }

    fn max_scroll(&self) -> usize {
        self.text()
            .map_or(0, |t| t.line_count().saturating_sub(self.page.get().max(1)))
    }

    /// The file whose part of the patch is at the top of the screen.
    pub fn current_file(&self) -> Option<usize> {
        let t = self.text()?;
        t.files
            .iter()
            .enumerate()
            .filter(|(_, f)| f.line.is_some_and(|l| l <= self.scroll))
            .max_by_key(|(_, f)| f.line)
            .map(|(i, _)| i)
    }

    fn jump_file(&mut self, forward: bool) {
        let Some(t) = self.text() else { return };
        let mut starts: Vec<usize> = t.files.iter().filter_map(|f| f.line).collect();
        starts.sort_unstable();
        let target = if forward {
            starts.into_iter().find(|l| *l > self.scroll)
        } else {
            starts.into_iter().rev().find(|l| *l < self.scroll)
        };
        if let Some(l) = target {
            self.scroll = l;
        }
    }

    fn switch_tab(&mut self, delta: isize) {
        let n = self.tabs.len() as isize;
        if n > 1 {
            self.current = (self.current as isize + delta).rem_euclid(n) as usize;
            self.scroll = 0;
        }
    }

    pub fn handle_key(&mut self, key: &KeyEvent) -> Outcome {
        if self.merge_keys.iter().any(|k| k.matches(key)) {
            return match self.tabs.get(self.current) {
                Some(tab) => Outcome::Reply(DialogResult::MergeWorktree(tab.worktree.clone())),
                None => Outcome::Stay,
            };
        }
        let page = self.page.get().saturating_sub(1).max(1);
        match key.code {
            KeyCode::Esc | KeyCode::Char('q') => return Outcome::Close,
            KeyCode::Char('j') | KeyCode::Down => self.scroll += 1,
            KeyCode::Char('k') | KeyCode::Up => self.scroll = self.scroll.saturating_sub(1),
            KeyCode::PageDown | KeyCode::Char(' ') => self.scroll += page,
            KeyCode::PageUp => self.scroll = self.scroll.saturating_sub(page),
            KeyCode::Char('g') | KeyCode::Home => self.scroll = 0,
            KeyCode::Char('G') | KeyCode::End => self.scroll = usize::MAX,
            KeyCode::Right | KeyCode::Char('l') => self.jump_file(true),
            KeyCode::Left | KeyCode::Char('h') => self.jump_file(false),
            KeyCode::Tab => self.switch_tab(1),
            KeyCode::BackTab => self.switch_tab(-1),
            _ => {}
        }
        self.scroll = self.scroll.min(self.max_scroll());
        Outcome::Stay
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let rect = area;
        frame.render_widget(Clear, rect);
        let block = popup_block(&format!("Diff · {}", self.title));
        let inner = block.inner(rect);
        frame.render_widget(block, rect);
        if inner.height < 4 || inner.width < 10 {
            return;
        }
        let dim = Style::default().add_modifier(Modifier::DIM);
        let width = inner.width as usize;
        let mut top: Vec<Line<'static>> = Vec::new();
        // The worktrees, the one shown highlighted.
        let mut tabs: Vec<Span<'static>> = Vec::new();
        for (i, tab) in self.tabs.iter().enumerate() {
            let who = if tab.sessions.is_empty() {
                String::new()
            } else {
                format!(" ({})", tab.sessions.join(", "))
            };
            let label = format!(" {}{} ", tab.worktree.label(), who);
            let style = if i == self.current {
                Style::default().add_modifier(Modifier::REVERSED | Modifier::BOLD)
            } else {
                dim
            };
            tabs.push(Span::styled(sanitize::display(&label).into_owned(), style));
        }
        top.push(Line::from(tabs));
        let Some(tab) = self.tabs.get(self.current) else {
            frame.render_widget(Paragraph::new(top), inner);
            return;
        };
        let text = match &tab.content {
            DiffContent::Loading => {
                top.push(Line::styled("loading the diff…", dim));
                frame.render_widget(Paragraph::new(top), inner);
                return;
            }
            DiffContent::Failed(e) => {
                top.push(Line::styled(
                    format!("cannot show this diff: {}", sanitize::display(e)),
                    Style::default().fg(Color::Red),
                ));
                frame.render_widget(Paragraph::new(top), inner);
                return;
            }
            DiffContent::Ready(t) => t,
        };
        let (added, removed) = text.totals();
        let mut summary = vec![
            Span::raw(format!(
                "{} file{} ",
                text.files.len(),
                if text.files.len() == 1 { "" } else { "s" }
            )),
            Span::styled(format!("+{added} "), Style::default().fg(Color::Green)),
            Span::styled(format!("-{removed}"), Style::default().fg(Color::Red)),
            Span::styled(
                format!(
                    "  {} from {}",
                    sanitize::display(&tab.worktree.branch),
                    tab.worktree
                        .base_commit
                        .get(..10)
                        .unwrap_or(&tab.worktree.base_commit)
                ),
                dim,
            ),
        ];
        if text.truncated {
            summary.push(Span::styled(
                "  (cut: the patch is too large)",
                Style::default().fg(Color::Yellow),
            ));
        }
        if !text.skipped.is_empty() {
            summary.push(Span::styled(
                format!("  ({} not regular files left out)", text.skipped.len()),
                Style::default().fg(Color::Yellow),
            ));
        }
        top.push(Line::from(summary));
        // The files: at most a quarter of the height, scrolled to the current one.
        let current = self.current_file();
        let list_height = text.files.len().min((inner.height as usize / 4).max(2)).max(1);
        let first = current.map_or(0, |c| (c + 1).saturating_sub(list_height));
        if text.files.is_empty() {
            top.push(Line::styled("no changes since the base commit", dim));
        }
        for (i, f) in text.files.iter().enumerate().skip(first).take(list_height) {
            let line = Line::from(vec![
                Span::styled(
                    format!(" {} ", f.letter),
                    Style::default().fg(letter_colour(f.letter)),
                ),
                Span::raw(sanitize::display(&f.path).into_owned()),
                Span::styled(format!("  +{}", f.added), Style::default().fg(Color::Green)),
                Span::styled(format!(" -{}", f.removed), Style::default().fg(Color::Red)),
            ]);
            top.push(if Some(i) == current {
                line.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                line
            });
        }
        top.push(Line::styled("─".repeat(width), dim));
        let top_height = (top.len() as u16).min(inner.height.saturating_sub(2));
        let patch_height = inner.height.saturating_sub(top_height + 1) as usize;
        self.page.set(patch_height.max(1));
        frame.render_widget(
            Paragraph::new(top),
            Rect {
                height: top_height,
                ..inner
            },
        );
        // Only the lines on screen are looked at.
        let scroll = self.scroll.min(text.line_count().saturating_sub(1));
        let lines: Vec<Line<'static>> = (scroll..text.line_count())
            .take(patch_height)
            .map(|i| patch_line(text.line(i), width))
            .collect();
        frame.render_widget(
            Paragraph::new(lines),
            Rect {
                y: inner.y + top_height,
                height: patch_height as u16,
                ..inner
            },
        );
        let position = if text.line_count() == 0 {
            String::new()
        } else {
            format!(
                "line {}/{} · ",
                (scroll + 1).min(text.line_count()),
                text.line_count()
            )
        };
        let merge = self
            .merge_keys
            .first()
            .map(|k| format!(" · {} bring back", sanitize::display(&k.to_string())))
            .unwrap_or_default();
        let tabs_hint = if self.tabs.len() > 1 {
            " · Tab worktree"
        } else {
            ""
        };
        frame.render_widget(
            Paragraph::new(Line::styled(
                format!("{position}j/k PgUp/PgDn g/G scroll · ←/→ file{tabs_hint}{merge} · Esc close"),
                dim,
            )),
            Rect {
                y: inner.bottom().saturating_sub(1),
                height: 1,
                ..inner
            },
        );
    }
}

fn letter_colour(letter: char) -> Color {
    match letter {
        'A' | '?' => Color::Green,
        'D' => Color::Red,
        'M' => Color::Yellow,
        _ => Color::Cyan,
    }
}

/// One patch line, sanitised (tabs as four spaces), cut to the width, coloured by its kind.
fn patch_line(raw: &str, width: usize) -> Line<'static> {
    let mut end = raw.len().min(LINE_BYTES_DRAWN);
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    let raw = &raw[..end];
    let text: String = sanitize::display(&raw.replace('\t', "    "))
        .chars()
        .take(width)
        .collect();
    let style = if raw.starts_with("diff --git") {
        Style::default().fg(Color::Yellow).add_modifier(Modifier::BOLD)
    } else if raw.starts_with("+++") || raw.starts_with("---") {
        Style::default().add_modifier(Modifier::BOLD)
    } else if raw.starts_with("@@") {
        Style::default().fg(Color::Cyan)
    } else if raw.starts_with('+') {
        Style::default().fg(Color::Green)
    } else if raw.starts_with('-') {
        Style::default().fg(Color::Red)
    } else {
        Style::default()
    };
    Line::styled(text, style)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::worktrees::{ChangeKind, FileChange};

    fn diff(patch: &str) -> WorktreeDiff {
        WorktreeDiff {
            worktree: Worktree {
                path: PathBuf::from("/d/w"),
                branch: "huddle/t-w-0a1b".into(),
                base_commit: "abc".into(),
                repo: PathBuf::from("/r"),
                subdir: None,
            },
            files: vec![
                FileChange {
                    path: "a.rs".into(),
                    kind: ChangeKind::Modified,
                },
                FileChange {
                    path: "new.txt".into(),
                    kind: ChangeKind::Untracked,
                },
            ],
            patch: patch.into(),
            truncated: false,
            skipped: Vec::new(),
            base: "abc".into(),
        }
    }

    /// A team's diff with two worktrees, the first shown: a modified file (a tab, an escape
    /// sequence drawn harmless) and a new one, at 80 and 120 columns.
    #[test]
    fn snapshot_the_view() {
        use crate::tui::action::{Action, Context};
        use crate::tui::test_screen::{WIDTHS, draw, keymap};
        let worktree = |role: &str, hex: &str| Worktree {
            path: PathBuf::from(format!(
                "/home/me/.local/share/huddle/worktrees/shop/coding-team-{role}-{hex}"
            )),
            branch: format!("huddle/coding-team-{role}-{hex}"),
            base_commit: "4f2c1a9e0b7d3c5a6e8f".into(),
            repo: PathBuf::from("/home/me/shop"),
            subdir: None,
        };
        let patch = "diff --git a/src/auth.rs b/src/auth.rs\n--- a/src/auth.rs\n+++ b/src/auth.rs\n@@ -40,7 +40,8 @@ fn check(token: &Token) -> Result<(), AuthError> {\n     let now = Utc::now();\n-\tif token.expires_at < Local::now() {\n+\t// Both sides in UTC: the skew made fresh tokens look expired.\n+\tif token.expires_at < now {\n         return Err(AuthError::Expired);\n     }\n     Ok(())\ndiff --git a/notes/tokens.md b/notes/tokens.md\nnew file mode 100644\n--- /dev/null\n+++ b/notes/tokens.md\n@@ -0,0 +1,2 @@\n+# Expired tokens\n+Fixed in \u{1b}[31mauth.rs\u{1b}[0m: compare in UTC.\n";
        let mut view = DiffView::new(
            7,
            "Coding Team",
            vec![
                DiffTab {
                    worktree: worktree("orchestrator", "0a1b"),
                    sessions: vec!["orchestrator".into(), "evaluator".into()],
                    content: DiffContent::Loading,
                },
                DiffTab {
                    worktree: worktree("workers", "9c8d"),
                    sessions: vec!["backend".into(), "tests".into()],
                    content: DiffContent::Loading,
                },
            ],
            keymap().keys_of(Context::Navigation, Action::MergeWorktree),
        );
        let mut shown = diff(patch);
        shown.worktree = worktree("orchestrator", "0a1b");
        shown.files = vec![
            FileChange {
                path: "src/auth.rs".into(),
                kind: ChangeKind::Modified,
            },
            FileChange {
                path: "notes/tokens.md".into(),
                kind: ChangeKind::Untracked,
            },
        ];
        view.loaded(vec![Ok(shown), Err("git diff: not a git repository".into())]);
        for width in WIDTHS {
            let screen = draw(width, 28, |f| view.render(f, f.area()));
            insta::assert_snapshot!(format!("diff_{width}"), screen);
        }
    }

    #[test]
    fn files_get_their_line_counts_and_places_in_the_patch() {
        let patch = "diff --git a/a.rs b/a.rs\n--- a/a.rs\n+++ b/a.rs\n@@ -1 +1,2 @@\n-old\n+new\n+more\ndiff --git a/new.txt b/new.txt\nnew file mode 100644\n--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+hi\n";
        let t = DiffText::new(diff(patch));
        assert_eq!(t.line_count(), 13);
        assert_eq!(
            (t.files[0].added, t.files[0].removed, t.files[0].line),
            (2, 1, Some(0))
        );
        assert_eq!(
            (t.files[1].added, t.files[1].removed, t.files[1].line),
            (1, 0, Some(7))
        );
        assert_eq!(t.totals(), (3, 1));
    }
}
