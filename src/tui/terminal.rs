//! The terminal's lifecycle in one place: enter (raw mode, alternate screen, bracketed paste,
//! mouse capture), restore (the exact inverse), a guard that restores on every exit path, and a
//! panic hook that restores before the previous hook prints.

use std::io::{self, Stdout};

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
                let _ = terminal.clear();
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

#[cfg(test)]
mod tests {
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
