//! A searchable list in a popup (presets, models, modes): typing filters, ↑/↓ move, Enter
//! picks, Esc cancels. Section headers are not selectable. With `allow_custom`, the typed text
//! itself can be picked (a model slug that is not listed).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph, Wrap};

use super::{DialogResult, Outcome, PickPurpose, centered, popup_block};
use crate::text::sanitize;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListItem {
    /// Section this item is listed under (a header row is drawn where it changes).
    pub section: String,
    pub label: String,
    /// A short mark after the label (`[repo]`, `current`).
    pub tag: String,
    /// Shown below the list for the highlighted item.
    pub detail: String,
    /// What picking it returns.
    pub value: String,
    /// Shown greyed with its reason in `detail`; cannot be picked (a preset that failed to load).
    pub disabled: bool,
    /// Picking it types `value` into the search field instead (a `provider/` prefix).
    pub completes: bool,
}

pub struct ListPicker {
    pub title: String,
    pub purpose: PickPurpose,
    pub items: Vec<ListItem>,
    pub filter: String,
    pub allow_custom: bool,
    /// Index into `visible()`.
    pub cursor: usize,
    /// Shown when the list is empty (e.g. still loading).
    pub empty_text: String,
}

/// A row as drawn: a header or an item (index into `items`) or the custom entry.
#[derive(Debug, Clone, PartialEq)]
enum Row {
    Header(String),
    Item(usize),
    Custom,
}

impl ListPicker {
    pub fn new(title: impl Into<String>, purpose: PickPurpose, items: Vec<ListItem>) -> ListPicker {
        ListPicker {
            title: title.into(),
            purpose,
            items,
            filter: String::new(),
            allow_custom: false,
            cursor: 0,
            empty_text: "nothing to choose from".into(),
        }
    }

    /// The cursor on the item whose value is `value` (the current setting), if listed.
    pub fn starting_at(mut self, value: &str) -> ListPicker {
        if let Some(i) = self
            .choices()
            .iter()
            .position(|r| matches!(r, Row::Item(i) if self.items[*i].value == value))
        {
            self.cursor = i;
        }
        self
    }

    /// The indices of matching items, in order.
    pub fn visible(&self) -> Vec<usize> {
        let needle = self.filter.to_lowercase();
        self.items
            .iter()
            .enumerate()
            .filter(|(_, it)| {
                needle.is_empty()
                    || it.label.to_lowercase().contains(&needle)
                    || it.detail.to_lowercase().contains(&needle)
                    || it.section.to_lowercase().contains(&needle)
            })
            .map(|(i, _)| i)
            .collect()
    }

    fn custom_offered(&self) -> bool {
        let f = self.filter.trim();
        self.allow_custom && !f.is_empty() && !self.items.iter().any(|it| it.value == f)
    }

    /// Selectable entries: visible items, then the custom entry.
    fn choices(&self) -> Vec<Row> {
        let mut rows: Vec<Row> = self.visible().into_iter().map(Row::Item).collect();
        if self.custom_offered() {
            rows.push(Row::Custom);
        }
        rows
    }

    fn rows(&self) -> Vec<Row> {
        let mut rows = Vec::new();
        let mut section: Option<&str> = None;
        for row in self.choices() {
            if let Row::Item(i) = row {
                let s = self.items[i].section.as_str();
                if section != Some(s) && !s.is_empty() {
                    rows.push(Row::Header(s.to_string()));
                }
                section = Some(s);
            }
            rows.push(row);
        }
        rows
    }

    pub fn set_items(&mut self, items: Vec<ListItem>) {
        self.items = items;
        self.clamp();
    }

    fn clamp(&mut self) {
        let n = self.choices().len();
        self.cursor = if n == 0 { 0 } else { self.cursor.min(n - 1) };
    }

    pub fn paste(&mut self, text: &str) {
        self.filter.extend(text.chars().filter(|c| !c.is_control()));
        self.cursor = 0;
        self.clamp();
    }

    pub fn handle_key(&mut self, key: &KeyEvent) -> Outcome {
        let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
        let n = self.choices().len();
        match key.code {
            KeyCode::Esc => return Outcome::Close,
            KeyCode::Up => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Char('p') if ctrl => self.cursor = self.cursor.saturating_sub(1),
            KeyCode::Down | KeyCode::Tab => self.cursor = (self.cursor + 1).min(n.saturating_sub(1)),
            KeyCode::Char('n') if ctrl => self.cursor = (self.cursor + 1).min(n.saturating_sub(1)),
            KeyCode::Enter => {
                return match self.choices().get(self.cursor) {
                    Some(Row::Item(i)) if self.items[*i].disabled => Outcome::Stay,
                    Some(Row::Item(i)) if self.items[*i].completes => {
                        self.filter = self.items[*i].value.clone();
                        self.cursor = 0;
                        self.clamp();
                        Outcome::Stay
                    }
                    Some(Row::Item(i)) => Outcome::Done(DialogResult::Picked(
                        self.purpose.clone(),
                        self.items[*i].value.clone(),
                    )),
                    Some(Row::Custom) => Outcome::Done(DialogResult::Picked(
                        self.purpose.clone(),
                        self.filter.trim().to_string(),
                    )),
                    _ => Outcome::Stay,
                };
            }
            KeyCode::Backspace => {
                self.filter.pop();
                self.cursor = 0;
            }
            KeyCode::Char(c) if !ctrl => {
                self.filter.push(c);
                self.cursor = 0;
            }
            _ => {}
        }
        self.clamp();
        Outcome::Stay
    }

    pub fn render(&self, frame: &mut Frame<'_>, area: Rect) {
        let rect = centered(area, 78, 22);
        frame.render_widget(Clear, rect);
        let block = popup_block(&self.title);
        let inner = block.inner(rect);
        frame.render_widget(block, rect);
        let [search, list, detail] =
            Layout::vertical([Constraint::Length(1), Constraint::Min(3), Constraint::Length(5)]).areas(inner);
        let dim = Style::default().add_modifier(Modifier::DIM);
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled("search: ", dim),
                Span::raw(sanitize::display(&self.filter).into_owned()),
                Span::styled("▏", dim),
            ])),
            search,
        );
        let rows = self.rows();
        let choices = self.choices();
        let selected_row = choices.get(self.cursor).cloned();
        let selected_index = selected_row
            .as_ref()
            .and_then(|sel| rows.iter().position(|r| r == sel))
            .unwrap_or(0);
        let height = list.height as usize;
        let offset = (selected_index + 1).saturating_sub(height);
        let mut lines = Vec::new();
        for row in rows.iter().skip(offset).take(height) {
            let selected = Some(row) == selected_row.as_ref();
            let line = match row {
                Row::Header(s) => Line::styled(
                    sanitize::display(s).into_owned(),
                    Style::default().add_modifier(Modifier::BOLD),
                ),
                Row::Item(i) => {
                    let it = &self.items[*i];
                    let mut spans = vec![Span::raw(format!(
                        "{} {}",
                        if selected { "›" } else { " " },
                        sanitize::display(&it.label)
                    ))];
                    if !it.tag.is_empty() {
                        spans.push(Span::styled(
                            format!("  {}", sanitize::display(&it.tag)),
                            Style::default().fg(Color::Cyan),
                        ));
                    }
                    let line = Line::from(spans);
                    if it.disabled {
                        line.style(Style::default().add_modifier(Modifier::DIM))
                    } else {
                        line
                    }
                }
                Row::Custom => Line::raw(format!(
                    "{} use `{}`",
                    if selected { "›" } else { " " },
                    sanitize::display(self.filter.trim())
                )),
            };
            lines.push(if selected {
                line.style(Style::default().add_modifier(Modifier::REVERSED))
            } else {
                line
            });
        }
        if lines.is_empty() {
            lines.push(Line::styled(self.empty_text.clone(), dim));
        }
        frame.render_widget(Paragraph::new(lines), list);
        let detail_text = match &selected_row {
            Some(Row::Item(i)) => sanitize::display(&self.items[*i].detail).into_owned(),
            Some(Row::Custom) => "a model slug: <provider>/<model>".to_string(),
            _ => String::new(),
        };
        frame.render_widget(
            Paragraph::new(detail_text).wrap(Wrap { trim: true }).block(
                ratatui::widgets::Block::new()
                    .borders(ratatui::widgets::Borders::TOP)
                    .border_style(dim),
            ),
            detail,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(section: &str, label: &str) -> ListItem {
        ListItem {
            section: section.into(),
            label: label.into(),
            value: label.into(),
            ..ListItem::default()
        }
    }

    fn key(c: KeyCode) -> KeyEvent {
        KeyEvent::new(c, KeyModifiers::NONE)
    }

    #[test]
    fn filter_headers_and_custom_entry() {
        let mut p = ListPicker::new(
            "t",
            PickPurpose::Preset,
            vec![item("A", "alpha"), item("B", "beta"), item("B", "gamma")],
        );
        assert_eq!(p.rows().iter().filter(|r| matches!(r, Row::Header(_))).count(), 2);
        for c in "gam".chars() {
            p.handle_key(&key(KeyCode::Char(c)));
        }
        assert_eq!(p.visible(), vec![2]);
        assert_eq!(
            p.handle_key(&key(KeyCode::Enter)),
            Outcome::Done(DialogResult::Picked(PickPurpose::Preset, "gamma".into()))
        );
        p.allow_custom = true;
        p.filter = "sim/x".into();
        p.cursor = 0;
        assert_eq!(
            p.handle_key(&key(KeyCode::Enter)),
            Outcome::Done(DialogResult::Picked(PickPurpose::Preset, "sim/x".into()))
        );
    }
}
