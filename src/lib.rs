//! schedkit: the Kubernetes Scheduling Framework as an embeddable library.

pub mod model;
/// GPU topology graphs, `nvidia-smi topo -m` parsing and topology-aware GPU set selection.
pub mod topology;
