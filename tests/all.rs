//! One integration-test binary (each links the whole dependency tree), with a module per area.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod suite;
