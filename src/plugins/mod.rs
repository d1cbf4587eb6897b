//! Built-in plugins, one module each, named as upstream (see [`names`]).

pub mod coscheduling;
pub mod names;
pub mod priority_sort;
pub mod scheduling_gates;
