//! Integration tests: one binary, modules under `suite/`.

mod suite;
