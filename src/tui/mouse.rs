//! Mouse hit-testing: what a mouse event points at on the last frame drawn. Pure: the app
//! decides what a target does (a click selects a sidebar row or focuses a pane; the wheel
//! scrolls the pane under it).

use crossterm::event::{MouseButton, MouseEvent, MouseEventKind};

use super::layout::{FrameLayout, Pane};
use super::sidebar;

/// Lines the wheel scrolls a transcript per notch.
pub const WHEEL_LINES: isize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MouseTarget {
    /// A left click on a sidebar row: its index (it may be past the last row).
    SidebarRow(usize),
    /// A left click elsewhere in a pane (a sidebar's border, say).
    Click(Pane),
    ScrollUp(Pane),
    ScrollDown(Pane),
}

pub fn hit_test(layout: &FrameLayout, ev: &MouseEvent) -> Option<MouseTarget> {
    let pane = layout.pane_at(ev.column, ev.row)?;
    match ev.kind {
        MouseEventKind::ScrollUp => Some(MouseTarget::ScrollUp(pane)),
        MouseEventKind::ScrollDown => Some(MouseTarget::ScrollDown(pane)),
        MouseEventKind::Down(MouseButton::Left) if pane == Pane::Sidebar => Some(
            sidebar::row_at(layout.sidebar, layout.sidebar_offset, ev.row)
                .map_or(MouseTarget::Click(pane), MouseTarget::SidebarRow),
        ),
        MouseEventKind::Down(MouseButton::Left) => Some(MouseTarget::Click(pane)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use crossterm::event::KeyModifiers;
    use ratatui::layout::Rect;

    use super::*;
    use crate::tui::composer::Composer;
    use crate::tui::layout::LayoutInput;

    fn event(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
        MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        }
    }

    #[test]
    fn clicks_and_wheel_hit_the_panes_of_the_layout() {
        let layout = FrameLayout::compute(
            Rect::new(0, 0, 100, 30),
            LayoutInput {
                show_panel: false,
                composer: &Composer::default(),
                sidebar_cursor: 40,
            },
        );
        let click = |c, r| hit_test(&layout, &event(MouseEventKind::Down(MouseButton::Left), c, r));
        // The sidebar scrolled to keep row 40 visible: its first inner line shows a later row.
        assert_eq!(click(3, 1), Some(MouseTarget::SidebarRow(layout.sidebar_offset)));
        assert!(layout.sidebar_offset > 0);
        assert_eq!(click(3, 0), Some(MouseTarget::Click(Pane::Sidebar)), "its border");
        assert_eq!(
            click(60, layout.composer.y),
            Some(MouseTarget::Click(Pane::Composer))
        );
        assert_eq!(
            hit_test(&layout, &event(MouseEventKind::ScrollUp, 60, 5)),
            Some(MouseTarget::ScrollUp(Pane::Transcript))
        );
        assert_eq!(hit_test(&layout, &event(MouseEventKind::Moved, 60, 5)), None);
        assert_eq!(click(200, 5), None, "off the screen");
    }
}
