//! schedkit: the Kubernetes Scheduling Framework as an embeddable library.

pub mod model;
