//! Unit tests beside the code: upstream DRA CEL cases and CEL spec tables live in
//! `tests/selector_*.rs`; these cover internals.

use super::*;

#[test]
fn compiles_and_matches_simple() {
    let d = Device::new("d", "dra.example.com").with_attribute("name", AttributeValue::Bool(true));
    let s = Selector::compile(r#"device.attributes["dra.example.com"].name"#).unwrap();
    assert!(s.matches(&d).unwrap());
}
