//! Readline keys for every text field (the composer, the dialogs' fields): what a shell user's
//! fingers expect. The textarea already reads Ctrl-A/E/K/W, Alt-B/D and Ctrl-Y as readline
//! does; this moves its undo off Ctrl-U, which in readline deletes to the start of the line,
//! and makes Alt-F stop after the word.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_textarea::{CursorMove, TextArea};

/// Edits `area` with `key`: Ctrl-U deletes to the start of the line, Ctrl-Z undoes (Ctrl-R
/// redoes, as before); everything else is the textarea's own binding. True when the text changed.
pub fn edit(area: &mut TextArea<'_>, key: KeyEvent) -> bool {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    match key.code {
        KeyCode::Char('u' | 'U') if ctrl && !alt => area.delete_line_by_head(),
        KeyCode::Char('z' | 'Z') if ctrl && !alt => area.undo(),
        // Readline's Alt-F ends after the word (the textarea's would stop at the next one's start).
        KeyCode::Char('f') | KeyCode::Right if alt && !ctrl => {
            area.move_cursor(CursorMove::WordEnd);
            let tui_textarea::DataCursor(row, col) = area.cursor();
            if area.lines().get(row).is_some_and(|l| col < l.chars().count()) {
                area.move_cursor(CursorMove::Forward);
            }
            false
        }
        _ => area.input(key),
    }
}

/// The keys [`edit`] gives a text field, for the help screen.
pub const HELP: &[(&str, &str)] = &[
    ("Ctrl-A / Ctrl-E", "start / end of the line"),
    ("Alt-B / Alt-F", "a word back / forward"),
    ("Ctrl-U / Ctrl-K", "delete to the start / end of the line"),
    ("Ctrl-W / Alt-D", "delete the word before / after the cursor"),
    ("Ctrl-Y", "paste what was deleted last"),
    ("Ctrl-Z / Ctrl-R", "undo / redo"),
];

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, modifiers: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, modifiers)
    }

    fn area(text: &str) -> TextArea<'static> {
        let mut a = TextArea::new(vec![text.to_string()]);
        a.move_cursor(tui_textarea::CursorMove::End);
        a
    }

    #[test]
    fn readline_keys_move_and_delete() {
        let ctrl = KeyModifiers::CONTROL;
        let alt = KeyModifiers::ALT;
        let mut a = area("one two three");
        edit(&mut a, key(KeyCode::Char('w'), ctrl));
        assert_eq!(a.lines()[0], "one two ");
        edit(&mut a, key(KeyCode::Char('a'), ctrl));
        assert_eq!((a.cursor().0, a.cursor().1), (0, 0));
        edit(&mut a, key(KeyCode::Char('f'), alt));
        edit(&mut a, key(KeyCode::Char('k'), ctrl));
        assert_eq!(a.lines()[0], "one");
        edit(&mut a, key(KeyCode::Char('e'), ctrl));
        assert_eq!((a.cursor().0, a.cursor().1), (0, 3));
        edit(&mut a, key(KeyCode::Char('b'), alt));
        assert_eq!((a.cursor().0, a.cursor().1), (0, 0));
        let mut b = area("keep this");
        edit(&mut b, key(KeyCode::Char('b'), alt));
        edit(&mut b, key(KeyCode::Char('u'), ctrl));
        assert_eq!(b.lines()[0], "this", "Ctrl-U deletes to the start of the line");
        edit(&mut b, key(KeyCode::Char('z'), ctrl));
        assert_eq!(b.lines()[0], "keep this", "Ctrl-Z undoes");
        edit(&mut b, key(KeyCode::Char('r'), ctrl));
        assert_eq!(b.lines()[0], "this", "Ctrl-R redoes");
    }
}
