//! Team presets (SPEC section 7): built-in YAML compiled into the binary, user YAML from
//! `<config>/presets/`, and the repo's own Squad team folder. The [`catalog`] merges the three
//! tiers; [`instantiate`] turns a preset into a team group and back.

pub mod builtin;
pub mod catalog;
pub mod cli;
pub mod instantiate;
pub mod models;
pub mod squad;
pub mod user;
pub mod yaml;

use std::path::PathBuf;

pub use catalog::{Catalog, CatalogError};
pub use instantiate::{create_team_group, preset_from_group};
pub use yaml::{parse_preset, preset_to_yaml};

/// A preset file that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum PresetError {
    /// Bad YAML, an unknown key or a value that breaks a rule; names the file, line and key.
    #[error("{path}{location}: {message}")]
    Invalid {
        path: String,
        /// ` line L, column C` (or ` line L`) when known.
        location: String,
        message: String,
    },
    #[error("cannot read {path}: {source}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Lower case; every run of characters that are not letters or digits becomes one `-`; no `-` at
/// either end. Used for worker names from rosters and for folder and session names.
pub fn slug(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut dash = false;
    for c in text.chars() {
        if c.is_alphanumeric() {
            if dash && !out.is_empty() {
                out.push('-');
            }
            dash = false;
            out.extend(c.to_lowercase());
        } else {
            dash = true;
        }
    }
    out
}

/// Cuts `text` to at most `max` characters on a character boundary; true when it was cut.
pub(crate) fn cap_chars(text: &str, max: usize) -> (&str, bool) {
    match text.char_indices().nth(max) {
        Some((byte, _)) => (&text[..byte], true),
        None => (text, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_folds_runs_and_keeps_letters_of_any_script() {
        assert_eq!(slug("Johnny Five"), "johnny-five");
        assert_eq!(slug("  Dr. Sarah "), "dr-sarah");
        assert_eq!(slug("B'Elanna"), "b-elanna");
        assert_eq!(slug("lisa-lösningslotsen"), "lisa-lösningslotsen");
        assert_eq!(slug("EECOM"), "eecom");
        assert_eq!(slug("--"), "");
    }

    #[test]
    fn cap_cuts_on_a_char_boundary() {
        assert_eq!(cap_chars("héllo", 2), ("hé", true));
        assert_eq!(cap_chars("héllo", 5), ("héllo", false));
        assert_eq!(cap_chars("", 0), ("", false));
    }
}
