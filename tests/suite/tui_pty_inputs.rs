//! End to end in a pseudo-terminal: Ctrl-O hands the composer's text to `$EDITOR` (a script
//! here) and takes the edited text back; a failing editor keeps the text; the draft survives a
//! restart.

use std::os::unix::fs::PermissionsExt;

use super::tui_pty::{ENTER, ESC, Huddle};

const CTRL_O: &str = "\x0f";
const CTRL_C: &str = "\x03";

#[test]
fn ctrl_o_runs_the_editor_and_the_draft_survives_a_restart() {
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.yaml"), "default_model: sim/demo\n").unwrap();
    let editor = home.path().join("fake-editor.sh");
    // Appends to the file it is given, as a user typing at its end would.
    std::fs::write(
        &editor,
        "#!/bin/sh\nprintf ' and more from the editor' >> \"$1\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let editor = editor.to_string_lossy().into_owned();

    let mut app = Huddle::start_with(home.path(), repo.path(), &[("VISUAL", &editor)]);
    app.wait_for("Welcome to huddle");
    app.key("N");
    app.wait_for("New session");
    app.type_text("notes");
    app.key(ENTER);
    app.key("i");
    app.type_text("a long draft");
    app.key(CTRL_O);
    app.wait_for("a long draft and more from the editor");
    // Leave it unsent and quit: the draft is written before huddle goes.
    app.key(ESC);
    app.key("q");
    app.wait_exit();
    let drafts = std::fs::read_to_string(home.path().join("drafts.json")).unwrap();
    assert!(
        drafts.contains("a long draft and more from the editor"),
        "{drafts}"
    );

    // A failing editor: a clear message, the text kept; the draft is back after the restart.
    let mut again = Huddle::start_with(home.path(), repo.path(), &[("VISUAL", "false")]);
    again.wait_for("a long draft and more from the editor");
    again.key("i");
    again.key(CTRL_O);
    again.wait_for("exited with status 1");
    again.wait_for("a long draft and more from the editor");
    // Ctrl-C clears (the text can be yanked back), a second one quits.
    again.key(CTRL_C);
    again.wait_for("Ctrl-Y brings it back");
    again.key(CTRL_C);
    again.wait_exit();
}
