//! Minimal stand-in for `serde`: only the derive macros, which expand to nothing.

pub use serde_derive::{Deserialize, Serialize};
