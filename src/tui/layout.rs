//! Where each pane goes, as a pure function of the screen size so drawing and mouse hit-tests
//! agree. At 80x24 everything fits; below that the cycle panel folds away first.

use ratatui::layout::Rect;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Areas {
    pub sidebar: Rect,
    pub transcript: Rect,
    pub panel: Option<Rect>,
    pub composer: Rect,
    pub status: Rect,
}

/// Smallest screen that shows the cycle panel.
pub const MIN_PANEL: (u16, u16) = (80, 24);
/// From this width the panel sits right of the transcript instead of below it.
pub const WIDE: u16 = 110;

pub fn compute(area: Rect, show_panel: bool, composer_rows: u16) -> Areas {
    let status_h = 1.min(area.height);
    let composer_h = (composer_rows + 2)
        .min(area.height.saturating_sub(status_h + 3))
        .max(1.min(area.height));
    let main_h = area.height.saturating_sub(status_h + composer_h);
    let main = Rect::new(area.x, area.y, area.width, main_h);
    let composer = Rect::new(area.x, area.y + main_h, area.width, composer_h);
    let status = Rect::new(area.x, area.y + main_h + composer_h, area.width, status_h);

    let sidebar_w = if area.width < 40 {
        0
    } else {
        (area.width / 4).clamp(18, 32)
    };
    let sidebar = Rect::new(main.x, main.y, sidebar_w, main.height);
    let centre = Rect::new(main.x + sidebar_w, main.y, main.width - sidebar_w, main.height);
    let fits = area.width >= MIN_PANEL.0 && area.height >= MIN_PANEL.1;
    let (transcript, panel) = if !show_panel || !fits {
        (centre, None)
    } else if area.width >= WIDE {
        let w = 36.min(centre.width / 2);
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
    Areas {
        sidebar,
        transcript,
        panel,
        composer,
        status,
    }
}

/// The first sidebar row shown so that `cursor` is visible in `height` rows.
pub fn sidebar_offset(cursor: usize, height: usize) -> usize {
    (cursor + 1).saturating_sub(height.max(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn panes_tile_the_screen_and_the_panel_folds_when_small() {
        for (w, h) in [(80, 24), (120, 40), (200, 60)] {
            let a = compute(Rect::new(0, 0, w, h), true, 1);
            assert!(a.panel.is_some(), "{w}x{h}");
            assert_eq!(a.status.y + 1, h);
            assert_eq!(
                a.sidebar.width + a.transcript.width + if w >= WIDE { a.panel.unwrap().width } else { 0 },
                w
            );
        }
        assert!(compute(Rect::new(0, 0, 79, 24), true, 1).panel.is_none());
        assert!(compute(Rect::new(0, 0, 80, 23), true, 1).panel.is_none());
        let tiny = compute(Rect::new(0, 0, 20, 5), true, 3);
        assert!(tiny.composer.bottom() <= 5 && tiny.status.bottom() <= 5);
    }

    #[test]
    fn sidebar_offset_keeps_the_cursor_visible() {
        assert_eq!(sidebar_offset(0, 10), 0);
        assert_eq!(sidebar_offset(9, 10), 0);
        assert_eq!(sidebar_offset(10, 10), 1);
    }
}
