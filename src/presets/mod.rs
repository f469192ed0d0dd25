//! Team presets (SPEC section 7): built-in YAML compiled into the binary, user YAML from
//! `<config>/presets/`, and the repo's own Squad team folder. The [`catalog`] merges the three
//! tiers; [`instantiate`] turns a preset into a team group and back.

pub mod builtin;
pub mod catalog;
pub mod cli;
pub mod instantiate;
pub mod models;
pub mod squad;
pub mod tools;
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
    fn cap_cuts_on_a_char_boundary() {
        assert_eq!(cap_chars("héllo", 2), ("hé", true));
        assert_eq!(cap_chars("héllo", 5), ("héllo", false));
        assert_eq!(cap_chars("", 0), ("", false));
    }
}
