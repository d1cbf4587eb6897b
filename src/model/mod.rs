//! Plain data: quantities, resources, pods, nodes and the selectors they carry.

pub mod quantity;

pub use quantity::{Quantity, QuantityError, QuantityFormat};
