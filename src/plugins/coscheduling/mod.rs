//! Gang scheduling (placeholder while being written).
