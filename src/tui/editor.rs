//! `$VISUAL` / `$EDITOR` for a text (Ctrl-O): the text goes to a private temporary file, the
//! editor runs on the terminal (the TUI suspended by the caller), and the file's content comes
//! back. A missing editor, a failed start or a non-zero exit is an error saying so; the caller
//! keeps the text it had.

use std::io::Write;
use std::path::{Path, PathBuf};

/// The biggest text read back from the editor's file.
const MAX_EDITED: u64 = 4 * 1024 * 1024;

/// The editor command: `$VISUAL`, else `$EDITOR` (a shell word list, e.g. `code --wait`).
pub fn editor_command(var: impl Fn(&str) -> Option<String>) -> Result<String, String> {
    ["VISUAL", "EDITOR"]
        .into_iter()
        .filter_map(var)
        .find(|v| !v.trim().is_empty())
        .ok_or_else(|| {
            "no editor: set $VISUAL or $EDITOR (e.g. export EDITOR=vim); the text is kept".to_string()
        })
}

/// Runs `editor` on `text` and returns the edited text. Blocks until the editor exits (the
/// caller runs it on a blocking thread while the terminal is handed over).
pub fn edit_blocking(editor: &str, text: &str) -> Result<String, String> {
    let file =
        TempFile::create(text).map_err(|e| format!("cannot write a temporary file for the editor: {e}"))?;
    // Through the shell, as git does: `$EDITOR` may carry arguments and quoting.
    let status = std::process::Command::new("sh")
        .arg("-c")
        .arg(format!("{editor} \"$1\""))
        .arg("huddle-editor")
        .arg(&file.0)
        .status()
        .map_err(|e| format!("cannot start the editor `{editor}`: {e}; the text is kept"))?;
    if !status.success() {
        let how = match status.code() {
            Some(code) => format!("with status {code}"),
            None => "on a signal".to_string(),
        };
        return Err(format!("the editor `{editor}` exited {how}; the text is kept"));
    }
    read_back(&file.0)
}

fn read_back(path: &Path) -> Result<String, String> {
    let size = std::fs::metadata(path)
        .map_err(|e| format!("cannot read the edited text: {e}; the text is kept"))?
        .len();
    if size > MAX_EDITED {
        return Err(format!(
            "the edited text is {size} bytes, more than the {MAX_EDITED} bytes taken back; the text is kept"
        ));
    }
    let bytes =
        std::fs::read(path).map_err(|e| format!("cannot read the edited text: {e}; the text is kept"))?;
    String::from_utf8(bytes).map_err(|_| "the edited text is not UTF-8; the text is kept".to_string())
}

/// A 0600 file in the temporary folder, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn create(text: &str) -> std::io::Result<TempFile> {
        use std::os::unix::fs::OpenOptionsExt;
        let dir = std::env::temp_dir();
        for _ in 0..8 {
            let path = dir.join(format!(
                "huddle-edit-{}-{:08x}.md",
                std::process::id(),
                fastrand::u32(..)
            ));
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&path)
            {
                Ok(mut f) => {
                    let file = TempFile(path);
                    f.write_all(text.as_bytes())?;
                    return Ok(file);
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e),
            }
        }
        Err(std::io::Error::other("no free temporary file name"))
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visual_wins_then_editor_and_none_is_a_clear_error() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |name: &str| pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        };
        assert_eq!(
            editor_command(env(&[("VISUAL", "vi"), ("EDITOR", "nano")])),
            Ok("vi".into())
        );
        assert_eq!(
            editor_command(env(&[("VISUAL", " "), ("EDITOR", "nano")])),
            Ok("nano".into())
        );
        let err = editor_command(env(&[])).unwrap_err();
        assert!(err.contains("$VISUAL or $EDITOR"), "{err}");
    }

    #[test]
    fn an_editor_changes_the_text_and_a_failing_one_keeps_it() {
        let edited = edit_blocking("sed -i 's/draft/final/'", "my draft\n").unwrap();
        assert_eq!(edited, "my final\n");
        let err = edit_blocking("false", "kept").unwrap_err();
        assert!(err.contains("exited with status 1"), "{err}");
        let err = edit_blocking("/no/such/editor", "kept").unwrap_err();
        assert!(err.contains("exited with status 127"), "{err}");
    }
}
