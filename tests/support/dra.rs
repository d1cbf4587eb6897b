//! DRA objects the DRA integration tests share.
#![allow(dead_code)]

use schedkit::dra::{DeviceClass, ResourceSlice};
use serde_json::{Value, json};

/// A class whose one selector takes every device of `driver`.
pub fn driver_class(name: &str, driver: &str) -> DeviceClass {
    serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == \"{driver}\"")}}]}}))
    .unwrap()
}

/// The only slice of pool `pool-1` (generation 1), publishing `devices` on `node`.
pub fn node_slice(name: &str, driver: &str, node: &str, devices: &Value) -> ResourceSlice {
    serde_json::from_value(json!({"metadata": {"name": name},
        "spec": {"driver": driver, "nodeName": node,
            "pool": {"name": "pool-1", "generation": 1, "resourceSliceCount": 1}, "devices": devices}}))
    .unwrap()
}
