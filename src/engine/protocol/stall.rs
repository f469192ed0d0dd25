//! Stall detection, score trend and the pending adjustments suggested to the user (SPEC
//! sections 4 "adjust" and 5).

use std::hash::Hasher;

use crate::model::Trend;

use super::types::WorkerResult;

/// How many earlier syntheses an exact repeat is looked for in.
pub const STALL_HISTORY: usize = 5;
/// Jaccard similarity with the previous synthesis above which it is a stall.
pub const STALL_SIMILARITY: f64 = 0.9;
/// A score move larger than this is a trend.
pub const TREND_DELTA: f64 = 0.1;
/// A score fall larger than this is an adjustment.
pub const SCORE_DROP_ADJUSTMENT: f64 = 0.15;
/// Tolerance for comparing score differences with the thresholds above.
const SCORE_EPSILON: f64 = 1e-9;
/// A worker answer shorter than this (in characters) after the first iteration is an adjustment.
pub const SHORT_ANSWER_CHARS: usize = 100;

/// Why a synthesis counts as a stall.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StallReason {
    Empty,
    /// Equal to one of the last [`STALL_HISTORY`] syntheses.
    Repeat,
    /// Token-set Jaccard similarity with the previous synthesis above [`STALL_SIMILARITY`].
    Similar,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StallCheck {
    pub reason: Option<StallReason>,
    /// Jaccard similarity with the previous synthesis (0 when there is none), for the event.
    pub similarity: f64,
}

impl StallCheck {
    pub fn stalled(&self) -> bool {
        self.reason.is_some()
    }
}

/// Checks `synthesis` against the earlier ones (oldest first; the last is the previous one).
/// Only the last [`STALL_HISTORY`] count for the exact repeat.
pub fn check_stall<S: AsRef<str>>(synthesis: &str, recent: &[S]) -> StallCheck {
    let previous = recent.last().map(AsRef::as_ref);
    let similarity = previous.map_or(0.0, |p| jaccard_similarity(synthesis, p));
    let window = &recent[recent.len().saturating_sub(STALL_HISTORY)..];
    let reason = if synthesis.trim().is_empty() {
        Some(StallReason::Empty)
    } else if window.iter().any(|s| s.as_ref() == synthesis) {
        Some(StallReason::Repeat)
    } else if similarity > STALL_SIMILARITY {
        Some(StallReason::Similar)
    } else {
        None
    };
    StallCheck { reason, similarity }
}

/// Appends `synthesis` to the history, keeping the last [`STALL_HISTORY`].
pub fn remember_synthesis(recent: &mut Vec<String>, synthesis: &str) {
    recent.push(synthesis.to_string());
    if recent.len() > STALL_HISTORY {
        let excess = recent.len() - STALL_HISTORY;
        recent.drain(..excess);
    }
}

/// Jaccard similarity of the sets of whitespace-separated tokens: |A ∩ B| / |A ∪ B|. Two empty
/// texts are identical (1.0). Tokens are hashed to 64 bits into open-addressing sets, so no
/// token is copied; a collision between distinct tokens is negligible at these sizes.
pub fn jaccard_similarity(a: &str, b: &str) -> f64 {
    let a = HashSet64::from_hashes(&token_hashes(a));
    let b_hashes = token_hashes(b);
    let mut b = HashSet64::with_room_for(b_hashes.len());
    let mut common = 0usize;
    for &hash in &b_hashes {
        if b.insert(hash) && a.contains(hash) {
            common += 1;
        }
    }
    if a.len == 0 && b.len == 0 {
        return 1.0;
    }
    let union = a.len + b.len - common;
    common as f64 / union as f64
}

/// The token hashes of `text`, in order, with repeats.
fn token_hashes(text: &str) -> Vec<u64> {
    let mut hashes = Vec::with_capacity(text.len() / 6 + 1);
    for_each_token(text, |token| hashes.push(hash_token(token)));
    hashes
}

/// A set of (already well mixed) 64-bit hashes with linear probing, at most half full. Slot
/// value 0 means empty; a hash of 0 is stored as 1.
struct HashSet64 {
    slots: Vec<u64>,
    len: usize,
}

impl HashSet64 {
    fn with_room_for(n: usize) -> Self {
        HashSet64 {
            slots: vec![0; (n * 2).next_power_of_two().max(16)],
            len: 0,
        }
    }

    fn from_hashes(hashes: &[u64]) -> Self {
        let mut set = HashSet64::with_room_for(hashes.len());
        for &hash in hashes {
            set.insert(hash);
        }
        set
    }

    /// Index of `hash`'s slot, or of the empty slot where it would go.
    fn probe(&self, hash: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut i = (hash as usize) & mask;
        while self.slots[i] != 0 && self.slots[i] != hash {
            i = (i + 1) & mask;
        }
        i
    }

    /// True when `hash` was not in the set yet.
    fn insert(&mut self, hash: u64) -> bool {
        let hash = hash.max(1);
        let i = self.probe(hash);
        if self.slots[i] == hash {
            return false;
        }
        self.slots[i] = hash;
        self.len += 1;
        true
    }

    fn contains(&self, hash: u64) -> bool {
        let hash = hash.max(1);
        self.slots[self.probe(hash)] == hash
    }
}

/// Calls `f` with each token of `text` separated by `char::is_whitespace`, like
/// `str::split_whitespace` but scanning bytes: only the lead bytes of the few non-ASCII
/// whitespace characters (U+0085, U+00A0, U+1680, U+2000–U+200A, U+2028, U+2029, U+202F,
/// U+205F, U+3000) need a closer look.
fn for_each_token(text: &str, mut f: impl FnMut(&[u8])) {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut i = 0;
    loop {
        while i < n {
            let space = whitespace_len(bytes, i);
            if space == 0 {
                break;
            }
            i += space;
        }
        if i >= n {
            return;
        }
        let start = i;
        while i < n && whitespace_len(bytes, i) == 0 {
            i += 1;
        }
        f(&bytes[start..i]);
    }
}

/// Per byte: 1 for ASCII whitespace, 2 for a lead byte of a possible non-ASCII whitespace
/// character, 0 otherwise.
const BYTE_CLASS: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b' ' as usize] = 1;
    table[b'\t' as usize] = 1;
    table[b'\n' as usize] = 1;
    table[0x0B] = 1;
    table[0x0C] = 1;
    table[b'\r' as usize] = 1;
    table[0xC2] = 2;
    table[0xE1] = 2;
    table[0xE2] = 2;
    table[0xE3] = 2;
    table
};

/// The byte length of the whitespace character starting at `i`, or 0.
#[inline]
fn whitespace_len(b: &[u8], i: usize) -> usize {
    match BYTE_CLASS[b[i] as usize] {
        0 => 0,
        1 => 1,
        _ => unicode_whitespace_len(b, i),
    }
}

#[cold]
fn unicode_whitespace_len(b: &[u8], i: usize) -> usize {
    let at = |k: usize| b.get(i + k).copied().unwrap_or(0);
    match b[i] {
        0xC2 if matches!(at(1), 0x85 | 0xA0) => 2,
        0xE1 if at(1) == 0x9A && at(2) == 0x80 => 3,
        0xE2 if at(1) == 0x80 && matches!(at(2), 0x80..=0x8A | 0xA8 | 0xA9 | 0xAF) => 3,
        0xE2 if at(1) == 0x81 && at(2) == 0x9F => 3,
        0xE3 if at(1) == 0x80 && at(2) == 0x80 => 3,
        _ => 0,
    }
}

fn hash_token(token: &[u8]) -> u64 {
    let mut hasher = FxHasher64::default();
    hasher.write(token);
    hasher.finish()
}

/// A small multiplicative hash (the FxHash scheme), with a final mix so similar tokens spread.
#[derive(Default)]
struct FxHasher64 {
    hash: u64,
}

impl Hasher for FxHasher64 {
    fn write(&mut self, bytes: &[u8]) {
        const SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.hash = (self.hash.rotate_left(5) ^ u64::from_le_bytes(word)).wrapping_mul(SEED);
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            // Mix in the length so `a` and `a\0` differ.
            let tail = u64::from_le_bytes(word) ^ ((rest.len() as u64) << 56);
            self.hash = (self.hash.rotate_left(5) ^ tail).wrapping_mul(SEED);
        }
        self.hash = (self.hash.rotate_left(5) ^ bytes.len() as u64).wrapping_mul(SEED);
    }

    fn finish(&self) -> u64 {
        let mut h = self.hash;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h
    }
}

/// The trend from the previous score to the latest.
pub fn trend(previous: f64, latest: f64) -> Trend {
    // Scores are decimals like 0.7 and 0.8 whose f64 difference is not exactly 0.1: a step of
    // exactly the threshold must count as "not above it".
    if latest - previous > TREND_DELTA + SCORE_EPSILON {
        Trend::Improving
    } else if previous - latest > TREND_DELTA + SCORE_EPSILON {
        Trend::Degrading
    } else {
        Trend::Stable
    }
}

/// The trend of the last two scores (oldest first); `None` with fewer than two.
pub fn trend_of(scores: &[f64]) -> Option<Trend> {
    match scores {
        [.., previous, latest] => Some(trend(*previous, *latest)),
        _ => None,
    }
}

/// What the adjustment rules look at after an iteration.
#[derive(Debug, Clone, Copy)]
pub struct AdjustmentInput<'a> {
    pub iteration: u32,
    pub results: &'a [WorkerResult],
    pub previous_score: Option<f64>,
    pub score: Option<f64>,
    pub previous_iteration_stalled: bool,
}

/// Pending adjustments: suggestions shown to the user, never applied without them.
pub fn pending_adjustments(input: &AdjustmentInput<'_>) -> Vec<String> {
    let mut out = Vec::new();
    let any_succeeded = input.results.iter().any(|r| r.success);
    for failed in input.results.iter().filter(|r| !r.success) {
        if any_succeeded {
            out.push(format!(
                "Worker `{}` failed while the others succeeded: consider giving it a different model or a smaller task.",
                failed.name
            ));
        }
    }
    if input.iteration > 1 {
        for short in input.results.iter().filter(|r| r.success) {
            let chars = short.text.trim().chars().count();
            if chars < SHORT_ANSWER_CHARS {
                out.push(format!(
                    "Worker `{}` answered in only {chars} characters: consider a more specific task or a stronger model.",
                    short.name
                ));
            }
        }
    }
    if let (Some(previous), Some(score)) = (input.previous_score, input.score) {
        if previous - score > SCORE_DROP_ADJUSTMENT + SCORE_EPSILON {
            out.push(format!(
                "The score fell from {previous:.2} to {score:.2}: consider going back to the previous plan or changing the models that regressed."
            ));
        } else if trend(previous, score) == Trend::Degrading {
            out.push(format!(
                "The quality trend is degrading ({previous:.2} to {score:.2}): consider switching a worker to a different model."
            ));
        }
    }
    if input.previous_iteration_stalled {
        out.push(
            "The previous iteration stalled (its synthesis repeated an earlier one): consider changing the plan, the tasks or the models."
                .to_string(),
        );
    }
    out
}

#[cfg(test)]
pub(crate) fn tokens_for_test(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_token(text, |t| out.push(String::from_utf8_lossy(t).into_owned()));
    out
}

#[cfg(test)]
#[path = "stall_tests.rs"]
mod tests;
