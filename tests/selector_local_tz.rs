//! `getHours("Local")` and the other getters with the `"Local"` zone: Go's
//! `time.Local` (`time/zoneinfo_unix.go`, `initLocal`), which cel-go's
//! `time.LoadLocation("Local")` returns. It is fixed for a process, so each case runs
//! this test binary again with its own `$TZ`.

use std::process::Command;

use schedkit::selector::{Device, Selector};

const CHILD: &str = "SCHEDKIT_LOCAL_TZ_WANT";

/// The hour of 2024-01-01T00:00:00Z and of 2024-07-01T00:00:00Z in the local zone.
fn local_hours() -> (i64, i64) {
    let hour = |day: &str| {
        (0..24)
            .find(|h| {
                let src = format!("timestamp('{day}T00:00:00Z').getHours('Local') == {h}");
                Selector::compile(&src).unwrap().matches(&Device::new("d", "x")).unwrap()
            })
            .expect("an hour")
    };
    (hour("2024-01-01"), hour("2024-07-01"))
}

#[test]
fn local_follows_tz() {
    if let Ok(want) = std::env::var(CHILD) {
        assert_eq!(format!("{:?}", local_hours()), want, "TZ={:?}", std::env::var_os("TZ"));
        return;
    }
    let zoneinfo = std::path::Path::new("/usr/share/zoneinfo");
    let mut cases = vec![
        // $TZ empty or UTC: UTC.
        ("", (0, 0)),
        ("UTC", (0, 0)),
        // A name that no zoneinfo source has: Go falls back to UTC, no error.
        ("Nowhere/Nothing", (0, 0)),
    ];
    if zoneinfo.join("Asia/Tokyo").is_file() && zoneinfo.join("Europe/Paris").is_file() {
        cases.extend([
            ("Asia/Tokyo", (9, 9)),
            (":Asia/Tokyo", (9, 9)),
            ("/usr/share/zoneinfo/Europe/Paris", (1, 2)),
            ("Europe/Paris", (1, 2)),
        ]);
    }
    let exe = std::env::current_exe().unwrap();
    for (tz, want) in cases {
        let out = Command::new(&exe)
            .args(["--exact", "local_follows_tz", "--test-threads=1"])
            .env("TZ", tz)
            .env(CHILD, format!("{want:?}"))
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && stdout.contains("1 passed"), "TZ={tz:?}: {stdout}");
    }
}
