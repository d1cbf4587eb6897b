//! Profiles from code and from config: bad input is a typed error.

mod support;

use std::sync::Arc;

use schedkit::framework::*;
use support::*;

fn registry(log: &Log) -> Registry {
    let mut r = Registry::new();
    for name in ["A", "B"] {
        let log = log.clone();
        let n: &'static str = if name == "A" { "A" } else { "B" };
        r.register(name, move |_args, _h| Ok(Arc::new(Recorder::new(n, &log)) as Arc<dyn Plugin>)).unwrap();
    }
    r.register("NeedsArgs", |args, _h| {
        let v = args.and_then(|a| a.get("threshold")).and_then(serde_json::Value::as_i64).ok_or("missing threshold")?;
        if v < 0 {
            return Err(format!("threshold must be >= 0, got {v}"));
        }
        Ok(Arc::new(FilterFn::new("NeedsArgs", |_, _, _| Status::SUCCESS)) as Arc<dyn Plugin>)
    })
    .unwrap();
    r
}

fn cfg(json: &str) -> ProfileConfig {
    serde_json::from_str(json).unwrap()
}

#[test]
fn multi_point_enables_every_point_and_disabled_removes() {
    let log = new_log();
    let r = registry(&log);
    let p = r
        .build_profile(
            &cfg(r#"{"plugins": {
                "multiPoint": {"enabled": [{"name": "A"}, {"name": "B", "weight": 3}]},
                "filter": {"disabled": [{"name": "A"}]},
                "score": {"disabled": [{"name": "*"}], "enabled": [{"name": "A", "weight": 5}]}
            }}"#),
            &Handle::default(),
        )
        .unwrap();
    assert_eq!(p.name(), "default-scheduler");
    assert_eq!(p.filter_plugins(), ["B"]);
    assert_eq!(p.pre_filter_plugins(), ["A", "B"]);
    assert_eq!(p.score_plugins(), [("A", 5)]);
    assert_eq!(p.reserve_plugins(), ["A", "B"]);
}

#[test]
fn config_errors_say_what_and_where() {
    let log = new_log();
    let r = registry(&log);
    let h = Handle::default();
    let cases = [
        (
            r#"{"schedulerName": "s", "plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}"#,
            "profile \"s\": unknown plugin \"Nope\" (known: A, B, NeedsArgs)",
        ),
        (
            r#"{"plugins": {"multiPoint": {"enabled": [{"name": "A", "weight": 0}]}}}"#,
            "profile \"default-scheduler\": plugin \"A\" has score weight 0; weights must be in 1..=1000000",
        ),
        (
            r#"{"plugins": {"multiPoint": {"enabled": [{"name": "A", "weight": -2}]}}}"#,
            "profile \"default-scheduler\": plugin \"A\" has score weight -2; weights must be in 1..=1000000",
        ),
        (
            r#"{"plugins": {"multiPoint": {"enabled": [{"name": "A"}, {"name": "A"}]}}}"#,
            "profile \"default-scheduler\": plugin \"A\" is registered twice",
        ),
        (
            r#"{"plugins": {"score": {"enabled": [{"name": "NeedsArgs"}]}}, "pluginConfig": [{"name": "NeedsArgs", "args": {"threshold": 1}}]}"#,
            "profile \"default-scheduler\": plugin \"NeedsArgs\" does not implement extension point score",
        ),
        (
            r#"{"plugins": {"filter": {"enabled": [{"name": "NeedsArgs"}]}}, "pluginConfig": [{"name": "NeedsArgs", "args": {"threshold": -1}}]}"#,
            "profile \"default-scheduler\": plugin \"NeedsArgs\" has invalid args: threshold must be >= 0, got -1",
        ),
        (
            r#"{"plugins": {"filter": {"enabled": [{"name": "NeedsArgs"}]}}}"#,
            "profile \"default-scheduler\": plugin \"NeedsArgs\" has invalid args: missing threshold",
        ),
        (
            r#"{"percentageOfNodesToScore": 101, "plugins": {"filter": {"enabled": [{"name": "A"}]}}}"#,
            "profile \"default-scheduler\": percentageOfNodesToScore must be in 0..=100, got 101",
        ),
    ];
    for (json, want) in cases {
        let err = r.build_profile(&cfg(json), &h).unwrap_err();
        assert_eq!(err.to_string(), want, "{json}");
    }
    let mut r2 = registry(&log);
    assert_eq!(
        r2.register("A", |_, _| Err("unused".into())).unwrap_err().to_string(),
        "registry: a factory named \"A\" is already registered"
    );
}

#[test]
fn builder_rejects_duplicates_and_bad_weights() {
    let log = new_log();
    let e =
        Profile::builder("p").plugin(Recorder::new("A", &log)).plugin(Recorder::new("A", &log)).build().unwrap_err();
    assert!(matches!(e, ConfigError::DuplicatePlugin { .. }));
    let e = Profile::builder("p").weighted(Recorder::new("A", &log), 0).build().unwrap_err();
    assert!(matches!(e, ConfigError::InvalidWeight { weight: 0, .. }));
    // A weight on a plugin without Score is irrelevant and accepted.
    assert!(Profile::builder("p").weighted(FilterFn::new("F", |_, _, _| Status::SUCCESS), 0).build().is_ok());
    let p =
        Profile::builder("p").plugin(Recorder::new("A", &log)).disable("A", ExtensionPoint::Filter).build().unwrap();
    assert!(p.filter_plugins().is_empty());
    assert_eq!(p.pre_filter_plugins(), ["A"]);
}
