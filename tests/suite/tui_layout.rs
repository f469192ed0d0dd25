//! The layout a frame is drawn with is the one the mouse hits: the composer's height (which
//! depends on how its text wraps) once disagreed between drawing and hit-testing, so a click on
//! the composer's top row went to the transcript.

use crossterm::event::{KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use huddle::tui::App;
use huddle::tui::app::Focus;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

use super::tui_support::{empty_app, render, screen_text};

fn click(column: u16, row: u16) -> MouseEvent {
    MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column,
        row,
        modifiers: KeyModifiers::NONE,
    }
}

/// The rows the composer's box was drawn on: from its titled top border to the row above the
/// status line.
fn drawn_composer_rows(t: &Terminal<TestBackend>) -> std::ops::Range<u16> {
    let text = screen_text(t);
    let lines: Vec<&str> = text.lines().collect();
    let top = lines
        .iter()
        .rposition(|l| l.starts_with("┌ Message "))
        .unwrap_or_else(|| panic!("no composer box on screen:\n{text}"));
    top as u16..lines.len() as u16 - 1
}

/// Draws `app` at `width`x24 with `text` in the (unfocused) composer, then clicks every row of
/// the composer box as drawn, and the row above it.
fn clicks_land_where_the_composer_was_drawn(app: &mut App, width: u16, text: &str) {
    app.composer.set_text(text);
    let t = render(app, width, 24);
    let rows = drawn_composer_rows(&t);
    let wrapped = text
        .lines()
        .map(|l| l.chars().count().div_ceil(width as usize - 2).max(1))
        .sum::<usize>();
    assert_eq!(
        rows.len(),
        wrapped + 2,
        "{width} columns, {text:?}: the box fits the wrapped text\n{}",
        screen_text(&t)
    );
    // The rectangle kept for hit-tests is the one drawn.
    let kept = app.layout.composer;
    assert_eq!(
        (kept.y, kept.bottom()),
        (rows.start, rows.end),
        "{width} columns, {text:?}"
    );
    let column = width / 2;
    for row in rows.clone() {
        app.focus = Focus::Sidebar;
        app.handle_mouse(click(column, row));
        assert_eq!(
            app.focus,
            Focus::Composer,
            "{width} columns, {text:?}: row {row} is the composer's (drawn on {rows:?})"
        );
    }
    app.focus = Focus::Sidebar;
    app.handle_mouse(click(column, rows.start - 1));
    assert_eq!(
        app.focus,
        Focus::Transcript,
        "{width} columns, {text:?}: row {} is above the composer",
        rows.start - 1
    );
}

#[test]
fn a_79_character_line_at_80_columns_is_hit_where_it_is_drawn() {
    let mut app = empty_app();
    clicks_land_where_the_composer_was_drawn(&mut app, 80, &"x".repeat(79));
}

#[test]
fn the_composer_is_hit_where_it_is_drawn_at_79_columns() {
    let mut app = empty_app();
    clicks_land_where_the_composer_was_drawn(&mut app, 79, &"x".repeat(78));
    clicks_land_where_the_composer_was_drawn(&mut app, 79, &"x".repeat(79));
}

#[test]
fn wrapped_multi_line_input_is_hit_where_it_is_drawn() {
    let mut app = empty_app();
    let long = "y".repeat(150);
    clicks_land_where_the_composer_was_drawn(&mut app, 80, &format!("first line\n{long}\nlast"));
    clicks_land_where_the_composer_was_drawn(&mut app, 79, &format!("{long}\n{}", "z".repeat(77)));
}

#[test]
fn a_click_in_a_scrolled_sidebar_selects_the_row_drawn_there() {
    use huddle::model::{Organization, Session, reconcile};
    use huddle::tui::sidebar::Row;

    use super::tui_support::{config, new_app};

    let mut org = Organization::default();
    reconcile::reconcile(&mut org);
    let default = org.default_group().map(|g| g.id.clone()).expect("default group");
    for i in 0..40 {
        let mut s = Session::new(format!("chat-{i:02}"), &default, "sim/demo");
        s.order = i;
        org.sessions.push(s);
    }
    // The last session is selected: the tree is scrolled to keep it on screen.
    org.ui.selected_session = org.sessions.last().map(|s| s.id.clone());
    let (mut app, _) = new_app(org, config());
    let t = render(&mut app, 80, 24);
    let offset = app.layout.sidebar_offset;
    assert!(offset > 0, "the sidebar is scrolled");
    let top_line = screen_text(&t).lines().nth(1).unwrap_or_default().to_string();
    app.handle_mouse(click(5, 1));
    assert_eq!(app.sidebar.cursor, offset);
    let Some(Row::Session(id)) = app.selected_row() else {
        panic!("a session row")
    };
    let name = app
        .org
        .read(|o| o.session(&id).map(|s| s.name.clone()))
        .unwrap_or_default();
    assert!(top_line.contains(&name), "clicked `{top_line}`, selected {name}");
}
