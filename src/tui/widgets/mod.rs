//! What the panes share (a bordered pane, the spinner), and the status line, which keeps no
//! state of its own: it draws from props the renderer fills.

pub mod status;
pub mod text_edit;

/// Braille spinner frames, advanced by `App::tick`.
pub const SPINNER: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

pub fn spinner(tick: usize) -> &'static str {
    SPINNER[tick % SPINNER.len()]
}

/// A bordered pane whose border is emphasised when it has focus.
pub fn pane(title: String, focused: bool) -> ratatui::widgets::Block<'static> {
    use ratatui::style::{Color, Modifier, Style};
    let block = ratatui::widgets::Block::bordered().title(title);
    if focused {
        block
            .border_style(Style::default().fg(Color::Cyan))
            .title_style(Style::default().add_modifier(Modifier::BOLD))
    } else {
        block.border_style(Style::default().add_modifier(Modifier::DIM))
    }
}

/// The area inside a pane's border (what [`pane`] leaves for the content).
pub fn inner(area: ratatui::layout::Rect) -> ratatui::layout::Rect {
    ratatui::widgets::Block::bordered().inner(area)
}
