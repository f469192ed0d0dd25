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

/// `@` with Tab completion in the real binary, against a scripted model server: the file's
/// content reaches the model, the transcript shows its reference.
#[tokio::test(flavor = "multi_thread", worker_threads = 1)]
async fn a_file_attached_with_at_reaches_the_model() {
    let server = super::fake_llm_server::FakeLlm::start().await;
    server.script("m1", vec![super::fake_llm_server::Reply::text("seen the file")]);
    let home = tempfile::tempdir().unwrap();
    let repo = tempfile::tempdir().unwrap();
    std::fs::write(
        home.path().join("config.yaml"),
        format!(
            "default_model: openai/m1\nproviders:\n  - {{ name: openai, kind: openai, base_url: \"{}\" }}\n",
            server.openai_base()
        ),
    )
    .unwrap();
    std::fs::create_dir_all(repo.path().join("src")).unwrap();
    std::fs::write(
        repo.path().join("src/lib.rs"),
        "pub fn PTY_ATTACHED_MARKER() {}\n",
    )
    .unwrap();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .arg("-C")
            .arg(repo.path())
            .args(args)
            .output()
            .expect("git")
    };
    git(&["init", "-q"]);
    git(&["add", "-A"]);

    let mut app = Huddle::start(home.path(), repo.path());
    app.wait_for("Welcome to huddle");
    app.key("N");
    app.wait_for("New session");
    app.type_text("reader");
    app.key(ENTER);
    app.key("i");
    app.type_text("review @src/li");
    app.key("\t");
    app.wait_for("review @src/lib.rs");
    app.type_text(" please");
    app.wait_for("⊕ src/lib.rs");
    app.key(ENTER);
    app.wait_for("seen the file");
    app.wait_for("[attached: src/lib.rs · 32 bytes · sha256");
    let requests = server.requests_for("m1");
    assert!(
        requests[0].body.contains("PTY_ATTACHED_MARKER"),
        "the model got: {}",
        requests[0].body
    );
    app.key(ESC);
    app.key("q");
    app.wait_exit();
}
