//! The status line's flash: a one-line message until the next key, or, tied to the state it
//! reports ("pausing…", "stopping", "queued…"), until that state is over. The app keeps it;
//! a feature controller says something through [`Flash`], a handle lent to it for one call.

use crate::engine::events::RunKey;
use crate::model::{GroupId, SessionId};

use super::runs::Pending;

/// What a flash reports, to clear it when that is over.
#[derive(Debug, Clone, PartialEq)]
pub enum FlashTie {
    /// A pause, resume or stop of this run the engine has not confirmed yet.
    Pending(RunKey),
    /// Messages queued for this team's next plan.
    Queued(GroupId),
    /// These sessions are being stopped.
    Busy(Vec<SessionId>),
}

/// The app's flash (its text and whether it is an error) and its tie, lent for one call.
pub struct Flash<'a> {
    shown: &'a mut Option<(String, bool)>,
    tie: &'a mut Option<FlashTie>,
}

impl<'a> Flash<'a> {
    pub fn new(shown: &'a mut Option<(String, bool)>, tie: &'a mut Option<FlashTie>) -> Flash<'a> {
        Flash { shown, tie }
    }

    /// A message until the next key (`error`: in the error colour).
    pub fn say(&mut self, text: impl Into<String>, error: bool) {
        *self.tie = None;
        *self.shown = Some((text.into(), error));
    }

    /// No message (what it said is over).
    pub fn clear(&mut self) {
        *self.tie = None;
        *self.shown = None;
    }

    /// A message that stays until the state it reports changes.
    pub fn until(&mut self, text: &str, tie: FlashTie) {
        self.say(text, false);
        *self.tie = Some(tie);
    }
}

/// True when the state `tie` reports is over: `pending` is a run's unconfirmed request (None:
/// confirmed, or the run is gone), `queued` whether the team still has messages waiting for a
/// plan, `busy` whether a session still works.
pub fn flash_over(
    tie: &FlashTie,
    pending: impl Fn(&RunKey) -> Option<Pending>,
    queued: impl Fn(&str) -> bool,
    busy: impl Fn(&str) -> bool,
) -> bool {
    match tie {
        FlashTie::Pending(key) => pending(key).is_none(),
        FlashTie::Queued(group_id) => !queued(group_id),
        FlashTie::Busy(sessions) => !sessions.iter().any(|s| busy(s)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flash_ends_with_the_state_it_reports() {
        let key = RunKey::team("g");
        let pending = |p: Option<Pending>| move |_: &RunKey| p;
        let tie = FlashTie::Pending(key);
        assert!(!flash_over(
            &tie,
            pending(Some(Pending::Pausing)),
            |_| true,
            |_| true
        ));
        assert!(
            flash_over(&tie, pending(None), |_| true, |_| true),
            "confirmed or ended"
        );
        let queued = FlashTie::Queued("g".into());
        assert!(!flash_over(&queued, pending(None), |_| true, |_| false));
        assert!(
            flash_over(&queued, pending(None), |_| false, |_| false),
            "the plan took them"
        );
        let busy = FlashTie::Busy(vec!["a".into(), "b".into()]);
        assert!(!flash_over(&busy, pending(None), |_| false, |s| s == "b"));
        assert!(flash_over(&busy, pending(None), |_| false, |_| false));
    }

    #[test]
    fn a_handle_says_and_ties() {
        let (mut shown, mut tie) = (None, None);
        let mut flash = Flash::new(&mut shown, &mut tie);
        flash.until("stopping", FlashTie::Queued("g".into()));
        flash.say("plain", true);
        assert_eq!(shown, Some(("plain".to_string(), true)));
        assert_eq!(tie, None, "a plain message unties");
    }
}
