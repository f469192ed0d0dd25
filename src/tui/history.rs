//! Prompts sent, for recalling with Up/Down in the composer. One list (not per session):
//! sending the same prompt to another session or team is the common case. The runtime saves
//! it to `history.jsonl` in the data dir when [`PromptHistory::revision`] changes, and it is
//! restored at start.

/// The sent prompts, oldest first, and where browsing is.
#[derive(Debug, Default, Clone)]
pub struct PromptHistory {
    entries: Vec<String>,
    /// The entry shown in the composer while browsing (None: not browsing).
    position: Option<usize>,
    /// Bumped when an entry is added (the saver compares it).
    revision: u64,
}

/// At most this many prompts are kept.
const LIMIT: usize = crate::store::HISTORY_LIMIT;

impl PromptHistory {
    /// Records a sent prompt (a repeat of the newest one is not recorded twice) and stops
    /// browsing.
    pub fn record(&mut self, prompt: &str) {
        self.position = None;
        if prompt.trim().is_empty() || self.entries.last().is_some_and(|p| p == prompt) {
            return;
        }
        self.entries.push(prompt.to_string());
        if self.entries.len() > LIMIT {
            self.entries.remove(0);
        }
        self.revision += 1;
    }

    /// Puts the prompts of earlier runs (oldest first) before those sent in this one.
    pub fn restore(&mut self, earlier: Vec<String>) {
        let mut entries = earlier;
        entries.append(&mut self.entries);
        let excess = entries.len().saturating_sub(LIMIT);
        entries.drain(..excess);
        self.entries = entries;
        self.position = None;
    }

    /// The prompts, oldest first.
    pub fn entries(&self) -> &[String] {
        &self.entries
    }

    /// Changes when a prompt is recorded.
    pub fn revision(&self) -> u64 {
        self.revision
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// True when `text` is what browsing put in the composer (so Up/Down keep browsing) or
    /// the composer is empty (so Up starts from the newest). Edited text stops browsing.
    pub fn may_browse(&mut self, text: &str) -> bool {
        if self
            .position
            .is_some_and(|i| self.entries.get(i).is_none_or(|e| e != text))
        {
            self.position = None;
        }
        self.position.is_some() || text.is_empty()
    }

    /// The prompt before the one shown (the newest when not browsing), if any.
    pub fn older(&mut self) -> Option<&str> {
        let next = match self.position {
            None => self.entries.len().checked_sub(1)?,
            Some(0) => return None,
            Some(i) => i - 1,
        };
        self.position = Some(next);
        self.entries.get(next).map(String::as_str)
    }

    /// The prompt after the one shown; `Some("")` past the newest (back to an empty composer),
    /// `None` when not browsing.
    pub fn newer(&mut self) -> Option<&str> {
        let i = self.position?;
        if i + 1 >= self.entries.len() {
            self.position = None;
            return Some("");
        }
        self.position = Some(i + 1);
        self.entries.get(i + 1).map(String::as_str)
    }

    /// Stops browsing (the composer was edited, sent or cleared).
    pub fn reset(&mut self) {
        self.position = None;
    }

    pub fn browsing(&self) -> bool {
        self.position.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn browses_back_and_forth_and_returns_to_empty() {
        let mut h = PromptHistory::default();
        assert_eq!(h.older(), None);
        h.record("one");
        h.record("two");
        h.record("two");
        h.record("  ");
        assert_eq!(h.len(), 2);
        assert!(h.may_browse(""));
        assert!(!h.may_browse("draft"));
        assert_eq!(h.older(), Some("two"));
        assert!(h.may_browse("two"));
        assert_eq!(h.older(), Some("one"));
        assert_eq!(h.older(), None, "stays on the oldest");
        assert_eq!(h.newer(), Some("two"));
        assert_eq!(h.newer(), Some(""));
        assert!(!h.browsing());
        assert_eq!(h.newer(), None);
        // Editing the recalled text stops browsing; emptying the composer starts again.
        assert_eq!(h.older(), Some("two"));
        assert!(!h.may_browse("two, edited"));
        assert!(!h.browsing());
        assert!(h.may_browse(""));
        assert_eq!(h.older(), Some("two"));
    }

    #[test]
    fn keeps_a_bounded_list() {
        let mut h = PromptHistory::default();
        for i in 0..(LIMIT + 10) {
            h.record(&format!("p{i}"));
        }
        assert_eq!(h.len(), LIMIT);
        assert_eq!(h.older(), Some(format!("p{}", LIMIT + 9).as_str()));
    }
}
