//! Where each pane goes: one pure function of what the screen shows and its size. The draw
//! computes it once per frame and the app keeps it, so mouse hit-tests, paging and search
//! scroll use the very rectangles that were drawn. At 80x24 everything fits; below that the
//! cycle panel folds away first.

use ratatui::layout::{Position, Rect};

use super::composer::Composer;
use super::sidebar;
use super::widgets::inner;

/// Smallest screen that shows the cycle panel.
pub const MIN_PANEL: (u16, u16) = (80, 24);
/// From this width the panel sits right of the transcript instead of below it.
pub const WIDE: u16 = 110;
/// The composer grows with its text up to this many rows, then scrolls.
pub const COMPOSER_MAX_ROWS: u16 = 6;

/// A pane of the main screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pane {
    Sidebar,
    Transcript,
    Panel,
    Composer,
    Status,
}

/// Which pane gets keys that are not global.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Focus {
    Sidebar,
    Transcript,
    Composer,
}

/// The geometry of one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameLayout {
    pub screen: Rect,
    pub sidebar: Rect,
    pub transcript: Rect,
    pub panel: Option<Rect>,
    pub composer: Rect,
    pub status: Rect,
    /// The first sidebar row on screen (the one at the top of its inner area).
    pub sidebar_offset: usize,
}

/// What of the app's state decides the layout.
#[derive(Clone, Copy)]
pub struct LayoutInput<'a> {
    /// A team is selected: its cycle panel is shown where it fits.
    pub show_panel: bool,
    pub composer: &'a Composer,
    /// The selected sidebar row, kept on screen.
    pub sidebar_cursor: usize,
}

impl FrameLayout {
    pub fn compute(area: Rect, input: LayoutInput<'_>) -> FrameLayout {
        // The composer's text wraps inside its border, across the whole width.
        let composer_rows = input.composer.rows(inner(area).width, COMPOSER_MAX_ROWS);
        let status_h = 1.min(area.height);
        let composer_h = (composer_rows + 2)
            .min(area.height.saturating_sub(status_h + 3))
            .max(1.min(area.height));
        let main_h = area.height.saturating_sub(status_h + composer_h);
        let main = Rect::new(area.x, area.y, area.width, main_h);
        let composer = Rect::new(area.x, area.y + main_h, area.width, composer_h);
        let status = Rect::new(area.x, area.y + main_h + composer_h, area.width, status_h);

        // The sidebar and the panel grow with the width (a wide terminal cuts nothing), the
        // transcript keeps the rest.
        let sidebar_w = if area.width < 40 {
            0
        } else {
            (area.width / 4).clamp(18, 48)
        };
        let sidebar = Rect::new(main.x, main.y, sidebar_w, main.height);
        let centre = Rect::new(main.x + sidebar_w, main.y, main.width - sidebar_w, main.height);
        let fits = area.width >= MIN_PANEL.0 && area.height >= MIN_PANEL.1;
        let (transcript, panel) = if !input.show_panel || !fits {
            (centre, None)
        } else if area.width >= WIDE {
            // The timeline first: the panel (short rows: a member, a time, tokens) takes what
            // is left over 90 columns, at least 28, at most 64.
            let w = centre
                .width
                .saturating_sub(90)
                .clamp(28, 64)
                .min(centre.width / 2);
            (
                Rect::new(centre.x, centre.y, centre.width - w, centre.height),
                Some(Rect::new(centre.x + centre.width - w, centre.y, w, centre.height)),
            )
        } else {
            let h = 8.min(centre.height / 2);
            (
                Rect::new(centre.x, centre.y, centre.width, centre.height - h),
                Some(Rect::new(centre.x, centre.y + centre.height - h, centre.width, h)),
            )
        };
        FrameLayout {
            screen: area,
            sidebar,
            transcript,
            panel,
            composer,
            status,
            sidebar_offset: sidebar::first_row(input.sidebar_cursor, inner(sidebar).height as usize),
        }
    }

    /// The pane at a screen cell, if any.
    pub fn pane_at(&self, column: u16, row: u16) -> Option<Pane> {
        let at = Position::new(column, row);
        [
            (Pane::Sidebar, Some(self.sidebar)),
            (Pane::Transcript, Some(self.transcript)),
            (Pane::Panel, self.panel),
            (Pane::Composer, Some(self.composer)),
            (Pane::Status, Some(self.status)),
        ]
        .into_iter()
        .find_map(|(pane, r)| r.filter(|r| r.contains(at)).map(|_| pane))
    }

    /// The transcript's text area (inside its border).
    pub fn transcript_inner(&self) -> Rect {
        inner(self.transcript)
    }
}

impl Default for FrameLayout {
    /// The layout of an 80x24 screen with nothing selected, until the first frame is drawn.
    fn default() -> Self {
        FrameLayout::compute(
            Rect::new(0, 0, MIN_PANEL.0, MIN_PANEL.1),
            LayoutInput {
                show_panel: false,
                composer: &Composer::default(),
                sidebar_cursor: 0,
            },
        )
    }
}

#[cfg(test)]
mod wide_tests {
    use super::*;

    #[test]
    fn the_sidebar_and_panel_grow_with_the_width() {
        let at = |w, h| {
            FrameLayout::compute(
                Rect::new(0, 0, w, h),
                LayoutInput {
                    show_panel: true,
                    composer: &Composer::default(),
                    sidebar_cursor: 0,
                },
            )
        };
        let (narrow, mid, wide) = (at(80, 24), at(120, 40), at(200, 60));
        assert_eq!(narrow.sidebar.width, 20);
        assert_eq!(mid.sidebar.width, 30);
        assert_eq!(wide.sidebar.width, 48);
        let panel = |l: FrameLayout| l.panel.map(|p| p.width);
        // At 120 columns the timeline gets the width (issue 28 item 19).
        assert_eq!(panel(mid), Some(28));
        assert!(mid.transcript.width >= 62, "{:?}", mid.transcript);
        assert_eq!(panel(wide), Some(62));
        assert!(wide.transcript.width >= 90, "{:?}", wide.transcript);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compute(area: Rect, show_panel: bool, composer: &Composer) -> FrameLayout {
        FrameLayout::compute(
            area,
            LayoutInput {
                show_panel,
                composer,
                sidebar_cursor: 0,
            },
        )
    }

    #[test]
    fn panes_tile_the_screen_and_the_panel_folds_when_small() {
        let empty = Composer::default();
        for (w, h) in [(80, 24), (120, 40), (200, 60)] {
            let a = compute(Rect::new(0, 0, w, h), true, &empty);
            let panel = a.panel.unwrap_or_else(|| panic!("{w}x{h} has a panel"));
            assert_eq!(a.status.y + 1, h);
            assert_eq!(
                a.sidebar.width + a.transcript.width + if w >= WIDE { panel.width } else { 0 },
                w
            );
        }
        assert!(compute(Rect::new(0, 0, 79, 24), true, &empty).panel.is_none());
        assert!(compute(Rect::new(0, 0, 80, 23), true, &empty).panel.is_none());
        let mut three = Composer::default();
        three.set_text("a\nb\nc");
        let tiny = compute(Rect::new(0, 0, 20, 5), true, &three);
        assert!(tiny.composer.bottom() <= 5 && tiny.status.bottom() <= 5);
    }

    #[test]
    fn the_composer_grows_with_its_wrapped_text_inside_its_border() {
        let mut c = Composer::default();
        // 78 columns inside the border of an 80-column screen.
        for (text, rows) in [("x".repeat(78), 1), ("x".repeat(79), 2), ("x".repeat(999), 6)] {
            c.set_text(&text);
            let a = compute(Rect::new(0, 0, 80, 24), false, &c);
            assert_eq!(a.composer.height, rows + 2, "{} characters", text.len());
            assert_eq!(a.pane_at(40, a.composer.y), Some(Pane::Composer));
            assert_eq!(a.pane_at(40, a.composer.y - 1), Some(Pane::Transcript));
        }
    }
}
