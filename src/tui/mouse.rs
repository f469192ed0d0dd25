//! Mouse: a click selects a sidebar row or focuses a pane; the wheel scrolls the pane under it.

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};
use ratatui::layout::{Position, Rect};

use super::app::{App, Focus};
use super::command::Command;
use super::layout::{self, sidebar_offset};

fn contains(r: Rect, col: u16, row: u16) -> bool {
    r.contains(Position::new(col, row))
}

pub fn handle(app: &mut App, ev: MouseEvent) -> Vec<Command> {
    if !app.dialogs.is_empty() {
        return Vec::new();
    }
    let areas = layout::compute(
        app.screen,
        super::render::shows_panel(app),
        app.composer.rows(app.screen.width, 6),
    );
    let (col, row) = (ev.column, ev.row);
    match ev.kind {
        MouseEventKind::ScrollUp | MouseEventKind::ScrollDown => {
            let up = ev.kind == MouseEventKind::ScrollUp;
            if contains(areas.sidebar, col, row) {
                return app.move_cursor(if up { -1 } else { 1 });
            }
            if contains(areas.transcript, col, row)
                && let Some(v) = app.selected_session_id().and_then(|id| app.views.get_mut(&id))
            {
                if up {
                    v.scroll_up(3);
                } else {
                    v.scroll_down(3);
                }
            }
        }
        MouseEventKind::Down(MouseButton::Left) => {
            if contains(areas.sidebar, col, row) {
                app.focus = Focus::Sidebar;
                let inner_h = areas.sidebar.height.saturating_sub(2) as usize;
                if row > areas.sidebar.y && row < areas.sidebar.bottom().saturating_sub(1) {
                    let offset = sidebar_offset(app.cursor, inner_h);
                    let index = offset + (row - areas.sidebar.y - 1) as usize;
                    if index < app.rows().len() && index != app.cursor {
                        app.cursor = index;
                        let commands = app.on_selection_changed();
                        app.refresh_placeholder();
                        return commands;
                    }
                }
            } else if contains(areas.transcript, col, row) {
                app.focus = Focus::Transcript;
            } else if contains(areas.composer, col, row) {
                app.focus = Focus::Composer;
            }
        }
        _ => {}
    }
    Vec::new()
}
