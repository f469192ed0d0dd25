//! Provider secrets are redacted with the shared [`crate::text::secrets`] (also used for MCP
//! servers' header and environment values).

pub use crate::text::secrets::{MIN_SECRET_CHARS, REDACTED, Secrets};
