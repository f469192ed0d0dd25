//! What a key (or a mouse click) asks the app to do. The keymap maps keys to these; the app
//! turns them into state changes and [`super::command::Command`]s. Names are the `config.yaml`
//! `keys:` vocabulary (snake_case).

macro_rules! actions {
    ($($variant:ident => $name:literal, $help:literal;)+) => {
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum Action {
            $($variant),+
        }

        impl Action {
            pub const ALL: &'static [Action] = &[$(Action::$variant),+];

            /// The name used in `config.yaml` `keys:`.
            pub fn name(self) -> &'static str {
                match self {
                    $(Action::$variant => $name),+
                }
            }

            /// One line for the help screen.
            pub fn help(self) -> &'static str {
                match self {
                    $(Action::$variant => $help),+
                }
            }

            pub fn from_name(name: &str) -> Option<Action> {
                let wanted = name.trim().to_ascii_lowercase().replace('-', "_");
                Action::ALL.iter().copied().find(|a| a.name() == wanted)
            }
        }
    };
}

actions! {
    Help => "help", "show this help";
    Quit => "quit", "quit (asks while a cycle runs)";
    FocusNext => "focus_next", "move focus to the next pane";
    FocusPrev => "focus_prev", "move focus to the previous pane";
    MoveUp => "move_up", "move up";
    MoveDown => "move_down", "move down";
    Select => "select", "select / open (tool call: expand / collapse)";
    FocusComposer => "focus_composer", "write in the composer";
    Send => "send", "send the message";
    Newline => "newline", "insert a newline";
    LeaveComposer => "leave_composer", "leave the composer";
    NewGroupFromPreset => "new_group_from_preset", "new team from a preset";
    NewSession => "new_session", "new plain session";
    AddMember => "add_member", "add a member to the team (name, model, prompt)";
    Rename => "rename", "rename the selection";
    SetModel => "set_model", "choose the model (on a team: every member's)";
    SetTools => "set_tools", "tool servers it sees (on a team: every member's)";
    EditSystemPrompt => "edit_system_prompt", "edit the session's system prompt";
    SetMode => "set_mode", "choose the team's mode";
    SetMaxIterations => "set_max_iterations", "set the team's max iterations";
    ToggleEvaluator => "toggle_evaluator", "evaluator on/off (reflect teams)";
    Delete => "delete", "delete the selection";
    SaveGroupAsPreset => "save_group_as_preset", "save the team as a preset (.squad)";
    TogglePauseCycle => "toggle_pause_cycle", "pause / resume the cycle";
    StopCycle => "stop_cycle", "stop the run (or the session's chat) now";
    PageUp => "page_up", "scroll the transcript up";
    PageDown => "page_down", "scroll the transcript down";
    ScrollTop => "scroll_top", "top of the transcript or team timeline";
    ScrollBottom => "scroll_bottom", "bottom (newest) of the transcript or timeline";
    ToggleCollapse => "toggle_collapse", "fold / unfold the selected group";
    CollapseGroup => "collapse_group", "fold the group (on a session: its group)";
    ExpandGroup => "expand_group", "unfold the group";
    CopyAnswer => "copy_answer", "copy the last answer (team: its result)";
    ToggleMouse => "toggle_mouse", "mouse on/off (off: the terminal selects text)";
    Search => "search", "search the session's transcript";
    SearchNext => "search_next", "next match";
    SearchPrev => "search_prev", "previous match";
    LeaveSearch => "leave_search", "leave the search";
    HistoryPrev => "history_prev", "earlier prompt (empty composer, or first line)";
    HistoryNext => "history_next", "later prompt (on the last line)";
    OpenEditor => "open_editor", "edit the text in $VISUAL / $EDITOR (also the system prompt)";
    ReflectSession => "reflect_session", "reflect: the session improves its answer";
    OlderRun => "older_run", "previous run (team) / conversation (session)";
    NewerRun => "newer_run", "next run (team) / conversation (session)";
    PrevToolCall => "prev_tool_call", "select the tool call above (first: the newest); on a team: the sub-agent card above";
    NextToolCall => "next_tool_call", "select the tool call below; on a team: the sub-agent card below";
    ViewDiff => "view_diff", "diff of the session's worktree (on a team: each worktree)";
    MergeWorktree => "merge_worktree", "bring a worktree's commits back (merge / cherry-pick; asks)";
    PruneHeadless => "prune_headless", "remove the teams and sessions `huddle run` made (asks)";
    RelayDraft => "relay_draft", "relay: review the draft waiting for you, or hand a take-over back; pipeline: show / hide the whole phase history";
    NewConversation => "new_conversation", "new conversation (session or team; the old one is kept)";
    ToggleMemory => "toggle_memory", "team memory between runs: run / conversation";
    Regenerate => "regenerate", "ask the last prompt again (the old answer is kept, superseded)";
    EditResend => "edit_resend", "edit the last prompt; Enter sends it in place of the last exchange";
    ForkSession => "fork_session", "fork: a copy of the session and its conversation";
    ToggleCard => "toggle_card", "team: expand / collapse the selected sub-agent card (none selected: the newest)";
    TraceView => "trace_view", "team: the trace tree of the run shown (executions, status, time, tokens)";
}

/// Where a key is read: the keymap has one table per context.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Context {
    /// Wins over everything, even the composer.
    Global,
    /// The sidebar and the transcript.
    Navigation,
    /// The composer has focus.
    Composer,
    /// A transcript search is active (matches highlighted): read before navigation.
    Search,
}

impl Context {
    pub fn title(self) -> &'static str {
        match self {
            Context::Global => "Everywhere",
            Context::Navigation => "Sidebar and transcript",
            Context::Composer => "Composer",
            Context::Search => "After a search (Enter)",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for a in Action::ALL {
            assert_eq!(Action::from_name(a.name()), Some(*a));
        }
        assert_eq!(
            Action::from_name("Toggle-Pause-Cycle"),
            Some(Action::TogglePauseCycle)
        );
        assert_eq!(Action::from_name("nope"), None);
    }
}
