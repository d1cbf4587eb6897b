//! schedkit: the Kubernetes Scheduling Framework as an embeddable library.

pub mod model;
/// The CEL-compatible DRA device selector language: compile once, match devices in nanoseconds.
pub mod selector;
