//! One frame of the whole screen from `&App`: the layout, computed once and kept in the app
//! for the mouse and paging, then each pane in its rectangle. Colours are dropped when
//! `NO_COLOR` is set (modifiers such as reverse and bold stay, so the selection remains
//! visible).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Color, Modifier, Style};
use ratatui::widgets::Block;

use super::app::{App, Focus};
use super::layout::{FrameLayout, LayoutInput};
use super::widgets::{cycle_panel, sidebar, status, transcript};

/// The cycle panel is shown for a selected team.
fn shows_panel(app: &App) -> bool {
    app.selected_group_id().is_some_and(|g| app.is_team(&g))
}

/// The layout of `area` for the app as it is now.
pub fn layout(app: &App, area: Rect) -> FrameLayout {
    FrameLayout::compute(
        area,
        LayoutInput {
            show_panel: shows_panel(app),
            composer: &app.composer,
            sidebar_cursor: app.cursor,
        },
    )
}

pub fn draw(frame: &mut Frame<'_>, app: &App, no_color: bool) {
    let area = frame.area();
    let layout = layout(app, area);
    // Kept for what happens before the next frame: clicks land on what was drawn.
    app.layout.set(layout);
    sidebar::render(frame, layout.sidebar, app, layout.sidebar_offset);
    transcript::render(frame, layout.transcript, app);
    if let (Some(panel), Some(group)) = (layout.panel, app.selected_group_id()) {
        cycle_panel::render(frame, panel, app, &group);
    }
    draw_composer(frame, layout.composer, app);
    status::render(frame, layout.status, app);
    if let Some(dialog) = app.dialogs.last() {
        dialog.render(frame, area, &app.keymap);
    }
    if no_color {
        strip_colours(frame);
    }
}

fn draw_composer(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let focused = app.focus == Focus::Composer;
    let block: Block<'static> = super::widgets::pane(" Message ".into(), focused);
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if focused {
        frame.render_widget(&app.composer.area, inner);
    } else if app.composer.is_empty() {
        frame.render_widget(
            ratatui::widgets::Paragraph::new(app.composer.area.placeholder_text().to_string())
                .style(Style::default().add_modifier(Modifier::DIM)),
            inner,
        );
    } else {
        frame.render_widget(ratatui::widgets::Paragraph::new(app.composer.text()), inner);
    }
}

fn strip_colours(frame: &mut Frame<'_>) {
    let buffer = frame.buffer_mut();
    for cell in buffer.content.iter_mut() {
        cell.fg = Color::Reset;
        cell.bg = Color::Reset;
    }
}
