//! The terminal's lifecycle in one place: enter (raw mode, alternate screen, bracketed paste,
//! mouse capture), restore (the exact inverse), a guard that restores on every exit path, and a
//! panic hook that restores before the previous hook prints.

use std::io::{self, Stdout, Write};

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste, EnableFocusChange,
    EnableMouseCapture,
};
use crossterm::execute;
use crossterm::terminal::{EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode};
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;

pub type Tui = Terminal<CrosstermBackend<Stdout>>;

/// Restores the terminal when dropped (normal exit, `?` error, unwinding).
pub struct TerminalGuard {
    pub terminal: Tui,
}

impl TerminalGuard {
    pub fn enter() -> io::Result<TerminalGuard> {
        install_panic_hook();
        enable_raw_mode()?;
        let mut stdout = io::stdout();
        if let Err(e) = execute!(
            stdout,
            EnterAlternateScreen,
            EnableBracketedPaste,
            EnableMouseCapture,
            EnableFocusChange
        ) {
            restore();
            return Err(e);
        }
        match Terminal::new(CrosstermBackend::new(stdout)) {
            Ok(mut terminal) => {
                let _ = repaint(&mut terminal);
                Ok(TerminalGuard { terminal })
            }
            Err(e) => {
                restore();
                Err(e)
            }
        }
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
        let _ = self.terminal.show_cursor();
    }
}

/// Undoes [`TerminalGuard::enter`]; safe to call more than once.
pub fn restore() {
    let _ = execute!(
        io::stdout(),
        DisableFocusChange,
        DisableMouseCapture,
        DisableBracketedPaste,
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    let _ = disable_raw_mode();
}

/// Takes the terminal back after [`restore`] (an external editor ran): raw mode, the alternate
/// screen, paste and focus reports, the mouse as it was, and a full repaint.
pub fn resume(terminal: &mut Tui, mouse_capture: bool) -> io::Result<()> {
    enable_raw_mode()?;
    execute!(
        terminal.backend_mut(),
        EnterAlternateScreen,
        EnableBracketedPaste,
        EnableFocusChange
    )?;
    set_mouse_capture(terminal.backend_mut(), mouse_capture)?;
    repaint(terminal)
}

/// Clears the screen and forgets the last frame, so that the next draw paints every cell,
/// without asking the terminal where its cursor is. ratatui's `clear` asks (`ESC [6n`) and
/// waits for the answer: a round trip over SSH, 2 s where no answer comes (a multiplexer or
/// emulator that does not answer, or one lost right after an editor), and opening the TUI
/// waited for it before its first frame. `resize` to the same size clears without asking.
pub fn repaint(terminal: &mut Tui) -> io::Result<()> {
    let size = terminal.size()?;
    terminal.resize(ratatui::layout::Rect::new(0, 0, size.width, size.height))
}

/// Restores the terminal when the UI thread (the one calling this) panics, then lets the
/// previous hook report. A panic on any other thread (a worker task the runtime survives)
/// leaves the screen alone and only goes to the previous hook.
fn install_panic_hook() {
    install_panic_hook_with(std::thread::current().id(), restore);
}

/// [`install_panic_hook`] with the UI thread and the restoring function given (tests).
pub fn install_panic_hook_with(ui_thread: std::thread::ThreadId, restore: impl Fn() + Send + Sync + 'static) {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if std::thread::current().id() == ui_thread {
            restore();
        }
        previous(info);
    }));
}

/// The OSC 52 sequence that asks the terminal to put `text` on the system clipboard. The text is
/// base64-encoded, so nothing in it can act as an escape sequence. (tmux passes it on only with
/// `set -g set-clipboard on`.)
pub fn osc52(text: &str) -> String {
    format!("\x1b]52;c;{}\x07", base64(text.as_bytes()))
}

/// Writes [`osc52`] for `text` to the terminal.
pub fn copy_to_clipboard(out: &mut impl Write, text: &str) -> io::Result<()> {
    out.write_all(osc52(text).as_bytes())?;
    out.flush()
}

/// Mouse capture on (huddle gets clicks and the wheel) or off (the terminal's own selection).
pub fn set_mouse_capture(out: &mut impl Write, on: bool) -> io::Result<()> {
    if on {
        execute!(out, EnableMouseCapture)
    } else {
        execute!(out, DisableMouseCapture)
    }
}

/// Standard base64 (RFC 4648, with padding).
pub fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [chunk[0], *chunk.get(1).unwrap_or(&0), *chunk.get(2).unwrap_or(&0)];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(super::base64(plain.as_bytes()), encoded, "{plain}");
        }
    }

    #[test]
    fn osc52_carries_the_text_encoded() {
        let seq = super::osc52("a\x1b[31mb\né");
        assert_eq!(
            seq,
            format!("\x1b]52;c;{}\x07", super::base64("a\x1b[31mb\né".as_bytes()))
        );
        // Only the frame's own ESC and BEL: the text's escape is inside the base64.
        assert_eq!(seq.matches('\x1b').count(), 1);
        let mut out = Vec::new();
        super::copy_to_clipboard(&mut out, "hi").expect("write to a Vec");
        assert_eq!(out, b"\x1b]52;c;aGk=\x07");
    }

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn only_a_panic_on_the_ui_thread_restores_the_terminal() {
        let restored = Arc::new(AtomicUsize::new(0));
        let count = Arc::clone(&restored);
        super::install_panic_hook_with(std::thread::current().id(), move || {
            count.fetch_add(1, Ordering::SeqCst);
        });
        let worker = std::thread::spawn(|| panic!("a worker thread panics"));
        assert!(worker.join().is_err());
        assert_eq!(
            restored.load(Ordering::SeqCst),
            0,
            "a worker's panic leaves the screen alone"
        );
        let ui = std::panic::catch_unwind(|| panic!("the UI thread panics"));
        assert!(ui.is_err());
        assert_eq!(restored.load(Ordering::SeqCst), 1);
        // Hand the process back its default hook.
        drop(std::panic::take_hook());
    }
}
