//! Readline keys for every text field (the composer, the dialogs' fields): what a shell user's
//! fingers expect. The textarea already reads Ctrl-A/E/K/W, Alt-B/D and Ctrl-Y as readline
//! does; this moves its undo off Ctrl-U, which in readline deletes to the start of the line,
//! and makes Alt-F stop after the word.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use tui_textarea::{CursorMove, TextArea};

/// Which of a field's next undo and redo take two of the textarea's steps: a text replaced
/// whole (from `$EDITOR`) is a cut and an insert to the textarea, one edit to the user.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Steps {
    undo_two: bool,
    redo_two: bool,
}

/// Replaces `area`'s text with `text` as one edit: one Ctrl-Z brings the old text back.
pub fn replace(area: &mut TextArea<'_>, steps: &mut Steps, text: &str) {
    area.select_all();
    let cut = area.cut();
    let inserted = area.insert_str(text);
    *steps = Steps {
        undo_two: cut && inserted,
        redo_two: false,
    };
}

/// Undoes (or redoes) one edit: two of the textarea's steps where [`replace`] made them.
fn step(area: &mut TextArea<'_>, steps: &mut Steps, undo: bool) -> bool {
    let two = if undo { steps.undo_two } else { steps.redo_two };
    let mut once = || if undo { area.undo() } else { area.redo() };
    let changed = once();
    if two && changed {
        once();
    }
    // Done as a pair, the pair is now the other way; anything else and it is behind us.
    *steps = Steps {
        undo_two: !undo && two && changed,
        redo_two: undo && two && changed,
    };
    changed
}

/// Edits `area` with `key`: Ctrl-U deletes to the start of the line, Ctrl-Z undoes, Ctrl-R
/// redoes (a text replaced whole in one step each, see [`replace`]); everything else is the
/// textarea's own binding. True when the text changed.
pub fn edit(area: &mut TextArea<'_>, steps: &mut Steps, key: KeyEvent) -> bool {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    let alt = key.modifiers.contains(KeyModifiers::ALT);
    let changed = match key.code {
        KeyCode::Char('z' | 'Z') if ctrl && !alt => return step(area, steps, true),
        KeyCode::Char('r' | 'R') if ctrl && !alt => return step(area, steps, false),
        KeyCode::Char('u' | 'U') if ctrl && !alt => area.delete_line_by_head(),
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
    };
    if changed {
        *steps = Steps::default();
    }
    changed
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
        let mut steps = Steps::default();
        let mut a = area("one two three");
        edit(&mut a, &mut steps, key(KeyCode::Char('w'), ctrl));
        assert_eq!(a.lines()[0], "one two ");
        edit(&mut a, &mut steps, key(KeyCode::Char('a'), ctrl));
        assert_eq!((a.cursor().0, a.cursor().1), (0, 0));
        edit(&mut a, &mut steps, key(KeyCode::Char('f'), alt));
        edit(&mut a, &mut steps, key(KeyCode::Char('k'), ctrl));
        assert_eq!(a.lines()[0], "one");
        edit(&mut a, &mut steps, key(KeyCode::Char('e'), ctrl));
        assert_eq!((a.cursor().0, a.cursor().1), (0, 3));
        edit(&mut a, &mut steps, key(KeyCode::Char('b'), alt));
        assert_eq!((a.cursor().0, a.cursor().1), (0, 0));
        let mut b = area("keep this");
        edit(&mut b, &mut steps, key(KeyCode::Char('b'), alt));
        edit(&mut b, &mut steps, key(KeyCode::Char('u'), ctrl));
        assert_eq!(b.lines()[0], "this", "Ctrl-U deletes to the start of the line");
        edit(&mut b, &mut steps, key(KeyCode::Char('z'), ctrl));
        assert_eq!(b.lines()[0], "keep this", "Ctrl-Z undoes");
        edit(&mut b, &mut steps, key(KeyCode::Char('r'), ctrl));
        assert_eq!(b.lines()[0], "this", "Ctrl-R redoes");
    }

    #[test]
    fn a_text_replaced_whole_is_undone_and_redone_in_one_step() {
        let ctrl = KeyModifiers::CONTROL;
        let mut steps = Steps::default();
        let mut a = area("draft");
        edit(&mut a, &mut steps, key(KeyCode::Char('!'), KeyModifiers::NONE));
        replace(&mut a, &mut steps, "from the editor\nsecond line");
        assert_eq!(a.lines(), ["from the editor", "second line"]);
        edit(&mut a, &mut steps, key(KeyCode::Char('z'), ctrl));
        assert_eq!(
            a.lines(),
            ["draft!"],
            "one Ctrl-Z brings the text before the editor back"
        );
        edit(&mut a, &mut steps, key(KeyCode::Char('r'), ctrl));
        assert_eq!(
            a.lines(),
            ["from the editor", "second line"],
            "one Ctrl-R redoes it"
        );
        edit(&mut a, &mut steps, key(KeyCode::Char('z'), ctrl));
        assert_eq!(a.lines(), ["draft!"]);
        edit(&mut a, &mut steps, key(KeyCode::Char('z'), ctrl));
        assert_eq!(a.lines(), ["draft"], "the edit before it is its own step");
    }

    #[test]
    fn after_typing_on_a_replaced_text_each_undo_is_one_step() {
        let ctrl = KeyModifiers::CONTROL;
        let mut steps = Steps::default();
        let mut a = area("old");
        replace(&mut a, &mut steps, "new");
        edit(&mut a, &mut steps, key(KeyCode::Char('s'), KeyModifiers::NONE));
        edit(&mut a, &mut steps, key(KeyCode::Char('z'), ctrl));
        assert_eq!(a.lines(), ["new"]);
    }
}
