//! Built-in plugins, one module each, named as upstream (see [`names`]).

pub mod names;
