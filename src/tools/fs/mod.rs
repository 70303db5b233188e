//! The file tools' execute halves, confined twice: the path is resolved again and must be the
//! one the gate judged, and every open goes through [`beneath::Beneath`] under the root that
//! holds it.

pub mod beneath;
mod ops;
mod walk;

pub use ops::{execute_file_tool, fingerprint_of, read_for_preview, read_head, read_media};
