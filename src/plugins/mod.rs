//! Built-in plugins, one module each, named as upstream (see [`names`]).

pub mod gpu_share;
pub mod names;
