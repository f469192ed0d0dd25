//! Key bindings as data: defaults per context (SPEC section 10), overridable from `config.yaml`
//! `keys:` (action name to key or keys). The status line and the help screen are generated from
//! the same table, so they never drift from what the keys do.

use std::collections::BTreeMap;
use std::fmt;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};

use super::action::{Action, Context};
use crate::config::KeyList;

/// One key with its modifiers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyBinding {
    pub code: KeyCode,
    pub modifiers: KeyModifiers,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeymapError {
    #[error("config.yaml keys: unknown action `{name}`{suggestion}")]
    UnknownAction { name: String, suggestion: String },
    #[error(
        "config.yaml keys.{action}: cannot read key `{key}` (examples: `ctrl-p`, `alt-enter`, `shift-tab`, `pagedown`, `x`)"
    )]
    BadKey { action: String, key: String },
    #[error(
        "config.yaml keys.{action}: `{key}` is a plain character, which the composer types as text; it works outside the composer, and in the composer `{action}` keeps its default key (give a ctrl- or alt- key to change that)"
    )]
    PlainKeyInComposer { action: String, key: String },
}

impl KeyBinding {
    pub const fn plain(code: KeyCode) -> KeyBinding {
        KeyBinding {
            code,
            modifiers: KeyModifiers::NONE,
        }
    }

    pub const fn ctrl(c: char) -> KeyBinding {
        KeyBinding {
            code: KeyCode::Char(c),
            modifiers: KeyModifiers::CONTROL,
        }
    }

    pub const fn alt(code: KeyCode) -> KeyBinding {
        KeyBinding {
            code,
            modifiers: KeyModifiers::ALT,
        }
    }

    pub const fn ch(c: char) -> KeyBinding {
        KeyBinding::plain(KeyCode::Char(c))
    }

    /// A character without Ctrl or Alt: text in the composer, so never a global key.
    pub fn is_plain_char(&self) -> bool {
        matches!(self.code, KeyCode::Char(_))
            && !self
                .modifiers
                .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT)
    }

    /// Parses `ctrl-p`, `alt-enter`, `shift-tab`, `backtab`, `pagedown`, `?`, `N`, `f1`.
    pub fn parse(text: &str) -> Option<KeyBinding> {
        let text = text.trim();
        if text.chars().count() == 1 {
            return text.chars().next().map(KeyBinding::ch);
        }
        let mut modifiers = KeyModifiers::NONE;
        let mut rest = text;
        loop {
            let lower = rest.to_ascii_lowercase();
            let (m, len) = if lower.starts_with("ctrl-") {
                (KeyModifiers::CONTROL, 5)
            } else if lower.starts_with("alt-") {
                (KeyModifiers::ALT, 4)
            } else if lower.starts_with("shift-") {
                (KeyModifiers::SHIFT, 6)
            } else {
                break;
            };
            modifiers |= m;
            rest = &rest[len..];
        }
        let code = match rest.to_ascii_lowercase().as_str() {
            "enter" | "return" => KeyCode::Enter,
            "esc" | "escape" => KeyCode::Esc,
            "tab" if modifiers.contains(KeyModifiers::SHIFT) => {
                modifiers.remove(KeyModifiers::SHIFT);
                KeyCode::BackTab
            }
            "tab" => KeyCode::Tab,
            "backtab" => KeyCode::BackTab,
            "up" => KeyCode::Up,
            "down" => KeyCode::Down,
            "left" => KeyCode::Left,
            "right" => KeyCode::Right,
            "home" => KeyCode::Home,
            "end" => KeyCode::End,
            "pageup" | "pgup" => KeyCode::PageUp,
            "pagedown" | "pgdn" | "pgdown" => KeyCode::PageDown,
            "backspace" => KeyCode::Backspace,
            "delete" | "del" => KeyCode::Delete,
            "space" => KeyCode::Char(' '),
            f if f.len() >= 2 && f.starts_with('f') => KeyCode::F(f[1..].parse().ok()?),
            _ if rest.chars().count() == 1 => {
                let c = rest.chars().next()?;
                KeyCode::Char(if modifiers.contains(KeyModifiers::CONTROL) {
                    c.to_ascii_lowercase()
                } else {
                    c
                })
            }
            _ => return None,
        };
        Some(KeyBinding { code, modifiers })
    }

    /// True when `ev` is this key. Shift is ignored for characters (it is in the character).
    pub fn matches(&self, ev: &KeyEvent) -> bool {
        let strip = |m: KeyModifiers| m - KeyModifiers::SHIFT;
        match (self.code, ev.code) {
            (KeyCode::Char(a), KeyCode::Char(b)) => {
                let same_char = if self.modifiers.contains(KeyModifiers::CONTROL) {
                    a.eq_ignore_ascii_case(&b)
                } else {
                    a == b
                };
                same_char && strip(self.modifiers) == strip(ev.modifiers)
            }
            (KeyCode::BackTab, KeyCode::BackTab) => strip(self.modifiers) == strip(ev.modifiers),
            (a, b) => a == b && self.modifiers == ev.modifiers,
        }
    }
}

impl fmt::Display for KeyBinding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.modifiers.contains(KeyModifiers::CONTROL) {
            f.write_str("Ctrl-")?;
        }
        if self.modifiers.contains(KeyModifiers::ALT) {
            f.write_str("Alt-")?;
        }
        if self.modifiers.contains(KeyModifiers::SHIFT) {
            f.write_str("Shift-")?;
        }
        match self.code {
            KeyCode::Char(' ') => f.write_str("Space"),
            KeyCode::Char(c) if self.modifiers.contains(KeyModifiers::CONTROL) => {
                write!(f, "{}", c.to_ascii_uppercase())
            }
            KeyCode::Char(c) => write!(f, "{c}"),
            KeyCode::Enter => f.write_str("Enter"),
            KeyCode::Esc => f.write_str("Esc"),
            KeyCode::Tab => f.write_str("Tab"),
            KeyCode::BackTab => f.write_str("Shift-Tab"),
            KeyCode::Up => f.write_str("↑"),
            KeyCode::Down => f.write_str("↓"),
            KeyCode::Left => f.write_str("←"),
            KeyCode::Right => f.write_str("→"),
            KeyCode::PageUp => f.write_str("PgUp"),
            KeyCode::PageDown => f.write_str("PgDn"),
            KeyCode::Home => f.write_str("Home"),
            KeyCode::End => f.write_str("End"),
            KeyCode::Backspace => f.write_str("Backspace"),
            KeyCode::Delete => f.write_str("Del"),
            KeyCode::F(n) => write!(f, "F{n}"),
            other => write!(f, "{other:?}"),
        }
    }
}

/// The bindings of every context. Order inside a context is the help order.
#[derive(Debug, Clone)]
pub struct Keymap {
    tables: BTreeMap<Context, Vec<(Action, Vec<KeyBinding>)>>,
}

impl Default for Keymap {
    fn default() -> Self {
        use Action::*;
        use KeyBinding as K;
        let global = vec![
            (Quit, vec![K::ctrl('c')]),
            (TogglePauseCycle, vec![K::ctrl('p')]),
            (StopCycle, vec![K::ctrl('x')]),
        ];
        let navigation = vec![
            (Help, vec![K::ch('?')]),
            (Quit, vec![K::ch('q')]),
            (FocusNext, vec![K::plain(KeyCode::Tab)]),
            (FocusPrev, vec![K::plain(KeyCode::BackTab)]),
            (MoveDown, vec![K::ch('j'), K::plain(KeyCode::Down)]),
            (MoveUp, vec![K::ch('k'), K::plain(KeyCode::Up)]),
            (Select, vec![K::plain(KeyCode::Enter)]),
            (FocusComposer, vec![K::ch('i')]),
            (NewGroupFromPreset, vec![K::ch('n')]),
            (NewSession, vec![K::ch('N')]),
            (AddMember, vec![K::ch('A')]),
            (Rename, vec![K::ch('r')]),
            (SetModel, vec![K::ch('m')]),
            (SetTools, vec![K::ch('a')]),
            (EditSystemPrompt, vec![K::ch('e')]),
            (SetMode, vec![K::ch('M')]),
            (SetMaxIterations, vec![K::ch('I')]),
            (ToggleEvaluator, vec![K::ch('E')]),
            (Delete, vec![K::ch('d')]),
            (SaveGroupAsPreset, vec![K::ch('S')]),
            (TogglePauseCycle, vec![K::ch('p')]),
            (StopCycle, vec![K::ch('x')]),
            (PageUp, vec![K::plain(KeyCode::PageUp)]),
            (PageDown, vec![K::plain(KeyCode::PageDown)]),
            (ScrollTop, vec![K::ch('g'), K::plain(KeyCode::Home)]),
            (ScrollBottom, vec![K::ch('G'), K::plain(KeyCode::End)]),
            (ToggleCollapse, vec![K::ch(' ')]),
            (CollapseGroup, vec![K::ch('h'), K::plain(KeyCode::Left)]),
            (ExpandGroup, vec![K::ch('l'), K::plain(KeyCode::Right)]),
            (CopyAnswer, vec![K::ch('y')]),
            (ToggleMouse, vec![K::ch('c')]),
            (Search, vec![K::ch('/')]),
            (ReflectSession, vec![K::ch('R')]),
            (OlderRun, vec![K::ch('[')]),
            (NewerRun, vec![K::ch(']')]),
            (PrevToolCall, vec![K::ch('t')]),
            (NextToolCall, vec![K::ch('T')]),
            (ViewDiff, vec![K::ch('D')]),
            (MergeWorktree, vec![K::ch('B')]),
            (PruneHeadless, vec![K::ch('P')]),
            (RelayDraft, vec![K::ch('v')]),
            (NewConversation, vec![K::ch('C')]),
            (ToggleMemory, vec![K::ch('K')]),
            (Regenerate, vec![K::ch('u')]),
            (EditResend, vec![K::ch('U')]),
            (ForkSession, vec![K::ch('F')]),
            (ToggleCard, vec![K::ch('o')]),
            (TraceView, vec![K::ch('O')]),
        ];
        let search = vec![
            (SearchNext, vec![K::ch('n')]),
            (SearchPrev, vec![K::ch('N')]),
            (LeaveSearch, vec![K::plain(KeyCode::Esc)]),
        ];
        let composer = vec![
            (Send, vec![K::plain(KeyCode::Enter)]),
            // Ctrl-J: terminals that keep Alt-Enter for themselves still get a newline key.
            (Newline, vec![K::alt(KeyCode::Enter), K::ctrl('j')]),
            (LeaveComposer, vec![K::plain(KeyCode::Esc)]),
            (FocusNext, vec![K::plain(KeyCode::Tab)]),
            (FocusPrev, vec![K::plain(KeyCode::BackTab)]),
            (PageUp, vec![K::plain(KeyCode::PageUp)]),
            (PageDown, vec![K::plain(KeyCode::PageDown)]),
            (HistoryPrev, vec![K::plain(KeyCode::Up)]),
            (HistoryNext, vec![K::plain(KeyCode::Down)]),
            (OpenEditor, vec![K::ctrl('o')]),
        ];
        let mut tables = BTreeMap::new();
        tables.insert(Context::Global, global);
        tables.insert(Context::Navigation, navigation);
        tables.insert(Context::Composer, composer);
        tables.insert(Context::Search, search);
        Keymap { tables }
    }
}

impl Keymap {
    /// The defaults with `overrides` applied: an action named there gets exactly the keys given,
    /// in every context where it has a binding (or in navigation when it has none). A plain
    /// character (no Ctrl or Alt) is only ever bound in navigation, since in the global and
    /// composer tables it would swallow that letter while typing; where that leaves an action
    /// no key in those tables, it keeps its default key there.
    pub fn with_overrides(overrides: &BTreeMap<String, KeyList>) -> (Keymap, Vec<KeymapError>) {
        let mut map = Keymap::default();
        let mut errors = Vec::new();
        for (name, keys) in overrides {
            let Some(action) = Action::from_name(name) else {
                errors.push(KeymapError::UnknownAction {
                    name: name.clone(),
                    suggestion: suggest(name),
                });
                continue;
            };
            let mut bindings = Vec::new();
            for key in keys.keys() {
                match KeyBinding::parse(key) {
                    Some(b) => bindings.push(b),
                    None => errors.push(KeymapError::BadKey {
                        action: name.clone(),
                        key: key.to_string(),
                    }),
                }
            }
            if bindings.is_empty() {
                continue;
            }
            let modified: Vec<KeyBinding> = bindings.iter().copied().filter(|b| !b.is_plain_char()).collect();
            let mut placed = false;
            for (context, table) in map.tables.iter_mut() {
                for (a, keys) in table.iter_mut().filter(|(a, _)| *a == action) {
                    match context {
                        // Not text there: any key will do.
                        Context::Navigation | Context::Search => {
                            *keys = bindings.clone();
                            placed = true;
                        }
                        Context::Global | Context::Composer if !modified.is_empty() => {
                            *keys = modified.clone()
                        }
                        Context::Global => {}
                        Context::Composer => errors.push(KeymapError::PlainKeyInComposer {
                            action: a.name().to_string(),
                            key: bindings
                                .iter()
                                .map(ToString::to_string)
                                .collect::<Vec<_>>()
                                .join(", "),
                        }),
                    }
                }
            }
            if !placed {
                map.tables
                    .entry(Context::Navigation)
                    .or_default()
                    .push((action, bindings));
            }
        }
        (map, errors)
    }

    /// The action bound to `ev` in `context`, if any.
    pub fn lookup(&self, context: Context, ev: &KeyEvent) -> Option<Action> {
        self.tables
            .get(&context)?
            .iter()
            .find(|(_, keys)| keys.iter().any(|k| k.matches(ev)))
            .map(|(a, _)| *a)
    }

    /// The bindings of a context, in help order.
    pub fn bindings(&self, context: Context) -> &[(Action, Vec<KeyBinding>)] {
        self.tables.get(&context).map_or(&[], Vec::as_slice)
    }

    /// The keys of an action in a context (none when it has no binding there).
    pub fn keys_of(&self, context: Context, action: Action) -> Vec<KeyBinding> {
        self.bindings(context)
            .iter()
            .find(|(a, _)| *a == action)
            .map(|(_, keys)| keys.clone())
            .unwrap_or_default()
    }

    /// The keys of an action in a context, joined for display (`j/↓`).
    pub fn keys_text(&self, context: Context, action: Action) -> Option<String> {
        let keys = self.bindings(context).iter().find(|(a, _)| *a == action)?;
        Some(display(
            &keys
                .1
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("/"),
        ))
    }

    /// The first key of an action in a context, for a hint (`j`).
    pub fn first_key(&self, context: Context, action: Action) -> Option<String> {
        let (_, keys) = self.bindings(context).iter().find(|(a, _)| *a == action)?;
        keys.first().map(|k| display(&k.to_string()))
    }

    /// The key to name when prose tells the user to press `action` ("press N for a new one"):
    /// its first key where it works most widely (everywhere, then in the panes, the composer,
    /// a search). Keys can be rebound, so no hint spells a key itself.
    pub fn key_label(&self, action: Action) -> String {
        [
            Context::Global,
            Context::Navigation,
            Context::Composer,
            Context::Search,
        ]
        .into_iter()
        .find_map(|c| self.first_key(c, action))
        // Unreachable with the defaults (every action has a key); the name still tells which.
        .unwrap_or_else(|| format!("the {} key", action.name()))
    }
}

/// A key as drawn: keys come from `config.yaml`, so a stray control character is not drawn.
fn display(keys: &str) -> String {
    crate::text::sanitize::display(keys).into_owned()
}

fn suggest(name: &str) -> String {
    // An action whose name starts with what was written is the likeliest meaning
    // (`toggle_pause` -> `toggle_pause_cycle`); else the closest by spelling.
    let by_prefix = Action::ALL
        .iter()
        .map(|a| a.name())
        .filter(|n| !name.is_empty() && n.starts_with(name))
        .min_by_key(|n| n.len());
    if let Some(n) = by_prefix {
        return format!(" (did you mean `{n}`?)");
    }
    let best = Action::ALL
        .iter()
        .map(|a| (strsim::jaro_winkler(name, a.name()), a.name()))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    match best {
        Some((score, n)) if score > 0.8 => format!(" (did you mean `{n}`?)"),
        _ => String::new(),
    }
}

#[cfg(test)]
mod suggest_tests {
    use super::suggest;

    #[test]
    fn a_prefix_of_an_action_name_suggests_that_action() {
        assert_eq!(suggest("toggle_pause"), " (did you mean `toggle_pause_cycle`?)");
        assert_eq!(suggest("zzzz"), "");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(code: KeyCode, m: KeyModifiers) -> KeyEvent {
        KeyEvent::new(code, m)
    }

    #[test]
    fn parses_and_displays_keys() {
        assert_eq!(KeyBinding::parse("ctrl-p"), Some(KeyBinding::ctrl('p')));
        assert_eq!(KeyBinding::parse("Ctrl-P"), Some(KeyBinding::ctrl('p')));
        assert_eq!(
            KeyBinding::parse("alt-enter"),
            Some(KeyBinding::alt(KeyCode::Enter))
        );
        assert_eq!(
            KeyBinding::parse("shift-tab"),
            Some(KeyBinding::plain(KeyCode::BackTab))
        );
        assert_eq!(
            KeyBinding::parse("pagedown"),
            Some(KeyBinding::plain(KeyCode::PageDown))
        );
        assert_eq!(KeyBinding::parse("N"), Some(KeyBinding::ch('N')));
        assert_eq!(KeyBinding::parse("f5"), Some(KeyBinding::plain(KeyCode::F(5))));
        assert_eq!(KeyBinding::parse("ctrl-"), None);
        assert_eq!(KeyBinding::parse("hyper-x"), None);
        assert_eq!(KeyBinding::ctrl('p').to_string(), "Ctrl-P");
        assert_eq!(KeyBinding::alt(KeyCode::Enter).to_string(), "Alt-Enter");
    }

    #[test]
    fn no_default_key_is_bound_twice_in_a_context() {
        let map = Keymap::default();
        for context in [
            Context::Global,
            Context::Navigation,
            Context::Composer,
            Context::Search,
        ] {
            let keys: Vec<(Action, KeyBinding)> = map
                .bindings(context)
                .iter()
                .flat_map(|(a, keys)| keys.iter().map(move |k| (*a, *k)))
                .collect();
            for (i, (a, k)) in keys.iter().enumerate() {
                for (b, other) in &keys[i + 1..] {
                    assert!(
                        k != other || a == b,
                        "{context:?}: {k} is bound to {a:?} and {b:?}"
                    );
                }
            }
        }
        // The SPEC's keys keep their actions; the new ones take free keys.
        let nav = |c: char| map.lookup(Context::Navigation, &key(KeyCode::Char(c), KeyModifiers::NONE));
        assert_eq!(nav('n'), Some(Action::NewGroupFromPreset));
        assert_eq!(nav('r'), Some(Action::Rename));
        assert_eq!(nav(' '), Some(Action::ToggleCollapse));
        assert_eq!(nav('/'), Some(Action::Search));
        assert_eq!(nav('y'), Some(Action::CopyAnswer));
    }

    #[test]
    fn shift_is_part_of_a_character() {
        let map = Keymap::default();
        let upper_n = key(KeyCode::Char('N'), KeyModifiers::SHIFT);
        assert_eq!(
            map.lookup(Context::Navigation, &upper_n),
            Some(Action::NewSession)
        );
        let n = key(KeyCode::Char('n'), KeyModifiers::NONE);
        assert_eq!(
            map.lookup(Context::Navigation, &n),
            Some(Action::NewGroupFromPreset)
        );
        let backtab = key(KeyCode::BackTab, KeyModifiers::SHIFT);
        assert_eq!(map.lookup(Context::Navigation, &backtab), Some(Action::FocusPrev));
        // Ctrl-P is global; plain `p` is not.
        let ctrl_p = key(KeyCode::Char('p'), KeyModifiers::CONTROL);
        assert_eq!(
            map.lookup(Context::Global, &ctrl_p),
            Some(Action::TogglePauseCycle)
        );
        assert_eq!(
            map.lookup(Context::Global, &key(KeyCode::Char('p'), KeyModifiers::NONE)),
            None
        );
    }

    #[test]
    fn plain_characters_are_never_global_or_composer_keys() {
        let mut o = BTreeMap::new();
        o.insert("toggle_pause_cycle".to_string(), KeyList::One("P".into()));
        o.insert(
            "stop_cycle".to_string(),
            KeyList::Many(vec!["s".into(), "ctrl-k".into()]),
        );
        o.insert("help".to_string(), KeyList::One("h".into()));
        o.insert("send".to_string(), KeyList::One("x".into()));
        let (map, errors) = Keymap::with_overrides(&o);
        let plain = |c| key(KeyCode::Char(c), KeyModifiers::NONE);
        let upper_p = key(KeyCode::Char('P'), KeyModifiers::SHIFT);
        for c in ['P', 's', 'h', 'x'] {
            assert_eq!(map.lookup(Context::Global, &plain(c)), None, "{c} must stay text");
            assert_eq!(
                map.lookup(Context::Composer, &plain(c)),
                None,
                "{c} must stay text"
            );
        }
        assert_eq!(map.lookup(Context::Global, &upper_p), None);
        assert_eq!(
            map.lookup(Context::Navigation, &upper_p),
            Some(Action::TogglePauseCycle)
        );
        // An override with only plain keys leaves the global default in place.
        let ctrl = |c| key(KeyCode::Char(c), KeyModifiers::CONTROL);
        assert_eq!(
            map.lookup(Context::Global, &ctrl('p')),
            Some(Action::TogglePauseCycle)
        );
        // With a modifier key given, that one is the global key.
        assert_eq!(map.lookup(Context::Global, &ctrl('k')), Some(Action::StopCycle));
        assert_eq!(map.lookup(Context::Global, &ctrl('x')), None);
        assert_eq!(
            map.lookup(Context::Navigation, &plain('s')),
            Some(Action::StopCycle)
        );
        assert_eq!(map.lookup(Context::Navigation, &plain('h')), Some(Action::Help));
        // `send: x` keeps Enter in the composer and says why.
        assert_eq!(
            map.lookup(Context::Composer, &key(KeyCode::Enter, KeyModifiers::NONE)),
            Some(Action::Send)
        );
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert!(errors[0].to_string().contains("keys.send"), "{}", errors[0]);
    }

    #[test]
    fn key_labels_follow_rebound_keys() {
        let map = Keymap::default();
        assert_eq!(map.key_label(Action::NewSession), "N");
        assert_eq!(map.key_label(Action::NewGroupFromPreset), "n");
        // A key that works everywhere is named before the panes' own.
        assert_eq!(map.key_label(Action::TogglePauseCycle), "Ctrl-P");
        assert_eq!(map.key_label(Action::Send), "Enter");
        assert_eq!(map.key_label(Action::FocusNext), "Tab");
        let mut o = BTreeMap::new();
        o.insert(
            "new_session".to_string(),
            KeyList::Many(vec!["f2".into(), "s".into()]),
        );
        o.insert("send".to_string(), KeyList::One("ctrl-s".into()));
        o.insert("help".to_string(), KeyList::One("\u{1b}".into()));
        let (map, _) = Keymap::with_overrides(&o);
        assert_eq!(map.key_label(Action::NewSession), "F2");
        assert_eq!(map.key_label(Action::Send), "Ctrl-S");
        assert_eq!(
            map.first_key(Context::Composer, Action::Send),
            Some("Ctrl-S".into())
        );
        assert!(
            !map.key_label(Action::Help).contains('\u{1b}'),
            "an escape is not drawn"
        );
    }

    #[test]
    fn overrides_replace_keys_and_report_errors() {
        let mut o = BTreeMap::new();
        o.insert("toggle_pause_cycle".to_string(), KeyList::One("ctrl-g".into()));
        o.insert("toggle_pause_cyle".to_string(), KeyList::One("ctrl-h".into()));
        o.insert(
            "help".to_string(),
            KeyList::Many(vec!["f1".into(), "bogus-key".into()]),
        );
        let (map, errors) = Keymap::with_overrides(&o);
        let ctrl_g = key(KeyCode::Char('g'), KeyModifiers::CONTROL);
        assert_eq!(
            map.lookup(Context::Global, &ctrl_g),
            Some(Action::TogglePauseCycle)
        );
        assert_eq!(
            map.lookup(Context::Navigation, &ctrl_g),
            Some(Action::TogglePauseCycle)
        );
        let ctrl_p = key(KeyCode::Char('p'), KeyModifiers::CONTROL);
        assert_eq!(map.lookup(Context::Global, &ctrl_p), None);
        assert_eq!(
            map.lookup(Context::Navigation, &key(KeyCode::F(1), KeyModifiers::NONE)),
            Some(Action::Help)
        );
        assert_eq!(errors.len(), 2, "{errors:?}");
        assert!(errors[0].to_string().contains("bogus-key"), "{}", errors[0]);
        assert!(
            errors[1]
                .to_string()
                .contains("did you mean `toggle_pause_cycle`"),
            "{}",
            errors[1]
        );
    }
}
