//! Tests of time zone loading: TZif and POSIX rule parsing, name checks, the
//! zoneinfo search order and zip files.

use std::path::Path;

use proptest::prelude::*;

use super::tzif::{PosixTz, Rule, RuleDay, parse_posix_tz, rule_time};
use super::*;
use crate::selector::civil;

/// Builds a version-2 TZif file with one local time type per offset, the given
/// transitions (instant, type index) and footer.
pub(crate) fn tzif(types: &[(i32, bool)], transitions: &[(i64, u8)], footer: &str) -> Vec<u8> {
    let mut out = Vec::new();
    // An empty version-2 32-bit block: one type, no transitions.
    out.extend_from_slice(b"TZif2");
    out.extend_from_slice(&[0; 15]);
    for c in [0u32, 0, 0, 0, 1, 1] {
        out.extend_from_slice(&c.to_be_bytes());
    }
    out.extend_from_slice(&[0, 0, 0, 0, 0, 0, 0]);
    out.extend_from_slice(b"TZif2");
    out.extend_from_slice(&[0; 15]);
    for c in [0u32, 0, 0, transitions.len() as u32, types.len() as u32, 1] {
        out.extend_from_slice(&c.to_be_bytes());
    }
    for (t, _) in transitions {
        out.extend_from_slice(&t.to_be_bytes());
    }
    out.extend(transitions.iter().map(|(_, i)| *i));
    for (off, dst) in types {
        out.extend_from_slice(&off.to_be_bytes());
        out.extend_from_slice(&[u8::from(*dst), 0]);
    }
    out.push(0);
    out.push(b'\n');
    out.extend_from_slice(footer.as_bytes());
    out.push(b'\n');
    out
}

#[test]
fn posix_rules() {
    let ny = parse_posix_tz("EST5EDT,M3.2.0,M11.1.0").unwrap();
    assert_eq!(ny.std, -5 * 3600);
    // 2024-03-10 06:59:59Z is 01:59:59 EST; a second later it is 03:00 EDT.
    assert_eq!(ny.offset_at(1_710_053_999), -5 * 3600);
    assert_eq!(ny.offset_at(1_710_054_000), -4 * 3600);
    // 2024-11-03 05:59:59Z is 01:59:59 EDT; then 01:00 EST.
    assert_eq!(ny.offset_at(1_730_613_599), -4 * 3600);
    assert_eq!(ny.offset_at(1_730_613_600), -5 * 3600);
    // Defaults: DST one hour ahead, the US rules.
    assert_eq!(parse_posix_tz("EST5EDT"), Some(ny));
    assert_eq!(parse_posix_tz("<+0530>-5:30"), Some(PosixTz { std: 19_800, dst: None }));
    // Southern hemisphere, half-hour DST (Lord Howe).
    let lh = parse_posix_tz("<+1030>-10:30<+11>-11,M10.1.0,M4.1.0").unwrap();
    assert_eq!(lh.offset_at(1_704_067_200), 11 * 3600); // 2024-01-01
    assert_eq!(lh.offset_at(1_719_792_000), 37_800); // 2024-07-01
    // Julian and zero-based days, times past 24h and negative (version 3).
    let j = parse_posix_tz("AAA0BBB,J60/0,300/-1").unwrap();
    let (_, start, end) = j.dst.unwrap();
    assert_eq!(rule_time(2024, start, 0), 60 * 86_400); // March 1st of a leap year
    assert_eq!(rule_time(2023, start, 0), 59 * 86_400);
    assert_eq!(rule_time(2024, end, 0), 300 * 86_400 - 3600);
    assert!(parse_posix_tz("EST5EDT,M3.2.0/167,M11.1.0/-167").is_some());
    for bad in
        ["", "AB5", "EST", "EST5EDT,M13.1.0,M11.1.0", "EST5EDT,M3.6.0,M11.1.0", "EST5EDT,M3.2.0", "<EST5", "EST169"]
    {
        assert_eq!(parse_posix_tz(bad), None, "{bad}");
    }
    // Last Sunday of October 2024 is the 27th; of February 2024 the 25th.
    let eu = Rule { day: RuleDay::MonthWeekDay { month: 10, week: 5, weekday: 0 }, time: 0 };
    assert_eq!(
        rule_time(2024, eu, 0) / 86_400,
        i64::from(civil::days_in_month(2024, 1)) + 29 + 31 + 30 + 31 + 30 + 31 + 31 + 30 + 26
    );
}

#[test]
fn parses_built_files_and_rejects_bad_ones() {
    // Types 0 = LMT, 1 = standard, 2 = DST; transitions then a footer.
    let data = tzif(
        &[(-17_762, false), (-18_000, false), (-14_400, true)],
        &[(-2_717_650_800, 1), (1_000_000_000, 2)],
        "EST5EDT,M3.2.0,M11.1.0",
    );
    let z = Zone::parse(&data).unwrap();
    assert_eq!(z.offset_at(-3_000_000_000), -17_762);
    assert_eq!(z.offset_at(0), -18_000);
    assert_eq!(z.offset_at(1_000_000_000), -14_400);
    // Past the last transition the footer rules: 2024-01-01 is standard time.
    assert_eq!(z.offset_at(1_704_067_200), -18_000);
    // Before the first transition, when type 0 is unused and the first is DST.
    let z = Zone::parse(&tzif(&[(3600, true), (0, false), (7200, true)], &[(100, 2)], "")).unwrap();
    assert_eq!(z.offset_at(0), 3600); // type 0 unused: type 0
    let z = Zone::parse(&tzif(&[(0, false), (3600, true)], &[(100, 1), (200, 0)], "")).unwrap();
    assert_eq!(z.offset_at(0), 0); // first transition to DST: the standard type before it
    // No transitions: the footer covers all time.
    let z = Zone::parse(&tzif(&[(0, false)], &[], "EST5EDT")).unwrap();
    assert_eq!(z.offset_at(1_720_000_000), -14_400);
    // A malformed footer is ignored: the last type stays.
    let z = Zone::parse(&tzif(&[(0, false), (3600, false)], &[(10, 1)], "bogus!")).unwrap();
    assert_eq!(z.offset_at(1_720_000_000), 3600);
    assert_eq!(Zone::fixed(60).offset_at(0), 60);

    // Go reads the second header's counts without checking its magic or version.
    let mut second = tzif(&[(3600, false)], &[], "");
    assert_eq!(&second[51..55], b"TZif");
    second[51..56].copy_from_slice(b"xxxx9");
    assert_eq!(Zone::parse(&second).map(|z| z.offset_at(0)), Ok(3600));
    assert_eq!(Zone::parse(b""), Err(TzError::BadData));
    assert_eq!(Zone::parse(b"TZif4"), Err(TzError::BadData));
    let mut bad_index = tzif(&[(0, false)], &[(10, 0)], "");
    let at = bad_index.len() - 2 - 6 - 1 - 1; // the transition's type index
    bad_index[at] = 1;
    assert_eq!(Zone::parse(&bad_index), Err(TzError::BadData));
    let no_types = tzif(&[], &[], "");
    assert_eq!(Zone::parse(&no_types), Err(TzError::BadData));
    for cut in 0..data.len() - "\nEST5EDT,M3.2.0,M11.1.0\n".len() {
        assert!(Zone::parse(&data[..cut]).is_err(), "cut at {cut}");
    }
}

/// Seconds since the epoch of a UTC RFC 3339 instant.
fn at(s: &str) -> i64 {
    let n = |r: std::ops::Range<usize>| s[r].parse::<i64>().unwrap();
    let days = civil::days_from_civil(n(0..4), n(5..7) as u32, n(8..10) as u32);
    days * 86_400 + n(11..13) * 3600 + n(14..16) * 60 + n(17..19)
}

#[test]
fn real_files_from_the_iana_database() {
    let ny = Zone::parse(include_bytes!("../../../tests/fixtures/tzif/America_New_York")).unwrap();
    let h = 3600;
    assert_eq!(ny.offset_at(at("1850-01-01T00:00:00Z")), -17_762); // LMT
    assert_eq!(ny.offset_at(at("2024-03-10T06:59:59Z")), -5 * h);
    assert_eq!(ny.offset_at(at("2024-03-10T07:00:00Z")), -4 * h);
    assert_eq!(ny.offset_at(at("2024-11-03T05:59:59Z")), -4 * h);
    assert_eq!(ny.offset_at(at("2024-11-03T06:00:00Z")), -5 * h);
    // Past the last transition (2037 in a fat file): the footer rule.
    assert!(ny.footer.is_some());
    assert!(*ny.transitions.last().unwrap() < at("2100-01-01T00:00:00Z"));
    assert_eq!(ny.offset_at(at("2100-03-14T06:59:59Z")), -5 * h);
    assert_eq!(ny.offset_at(at("2100-03-14T07:00:00Z")), -4 * h);
    assert_eq!(ny.offset_at(at("2100-11-07T05:59:59Z")), -4 * h);
    assert_eq!(ny.offset_at(at("2100-11-07T06:00:00Z")), -5 * h);
    assert_eq!(ny.offset_at(at("9999-12-31T23:59:59Z")), -5 * h);

    let lh = Zone::parse(include_bytes!("../../../tests/fixtures/tzif/Australia_Lord_Howe")).unwrap();
    // DST (+11) ends 2024-04-07 02:00 local; starts 2024-10-06 02:00 (+10:30).
    assert_eq!(lh.offset_at(at("2024-04-06T14:59:59Z")), 11 * h);
    assert_eq!(lh.offset_at(at("2024-04-06T15:00:00Z")), 37_800);
    assert_eq!(lh.offset_at(at("2024-10-05T15:29:59Z")), 37_800);
    assert_eq!(lh.offset_at(at("2024-10-05T15:30:00Z")), 11 * h);
    assert_eq!(lh.offset_at(at("2200-01-01T00:00:00Z")), 11 * h);
    assert_eq!(lh.offset_at(at("2200-07-01T00:00:00Z")), 37_800);
}

#[test]
fn names_are_checked_before_any_read() {
    for name in ["../etc/passwd", "America/../../etc/passwd", "/etc/localtime", "\\x", "a..b"] {
        assert_eq!(load(name, None), Err(TzError::InvalidName), "{name}");
    }
    for name in ["", "America/New York", "Europe/Paris\0"] {
        assert_eq!(load(name, None), Err(TzError::Unknown(name.to_owned())), "{name:?}");
    }
    assert_eq!(load("No/Such_Zone", None), Err(TzError::Unknown("No/Such_Zone".to_owned())));
    assert_eq!(TzError::Unknown("X/Y".into()).to_string(), "unknown time zone X/Y");
}

#[test]
fn zoneinfo_dir_comes_first_and_files_are_bounded() {
    // `$ZONEINFO` is searched before the platform sources (the fixtures as one).
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tzif");
    let lh = load("Australia_Lord_Howe", Some(&fixtures)).unwrap();
    assert_eq!(lh.offset_at(at("2024-07-01T00:00:00Z")), 37_800);
    // A file that is not TZif is Go's errBadData, and the search goes on to the
    // platform sources (where this name is absent), keeping the first error.
    assert_eq!(load("README.md", Some(&fixtures)), Err(TzError::BadData));
    let dir = std::env::temp_dir().join(format!("schedkit-tz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("Big"), vec![0u8; MAX_FILE_SIZE as usize + 1]).unwrap();
    let big = load("Big", Some(&dir));
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(big, Err(TzError::TooLarge(_))), "{big:?}");
}

/// A zip file of `(name, data, method)` entries, data stored as given (CRCs are
/// left zero: Go does not check them).
fn zip(entries: &[(&str, &[u8], u16)]) -> Vec<u8> {
    let (mut out, mut central) = (Vec::new(), Vec::new());
    for &(name, data, method) in entries {
        let offset = out.len() as u32;
        let (size, name_len) = (data.len() as u32, name.len() as u16);
        out.extend_from_slice(&0x0403_4b50u32.to_le_bytes());
        out.extend_from_slice(&[20, 0, 0, 0]);
        out.extend_from_slice(&method.to_le_bytes());
        out.extend_from_slice(&[0; 8]);
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&name_len.to_le_bytes());
        out.extend_from_slice(&0u16.to_le_bytes());
        out.extend_from_slice(name.as_bytes());
        out.extend_from_slice(data);
        central.extend_from_slice(&0x0201_4b50u32.to_le_bytes());
        central.extend_from_slice(&[20, 3, 20, 0, 0, 0]);
        central.extend_from_slice(&method.to_le_bytes());
        central.extend_from_slice(&[0; 8]);
        central.extend_from_slice(&size.to_le_bytes());
        central.extend_from_slice(&size.to_le_bytes());
        central.extend_from_slice(&name_len.to_le_bytes());
        central.extend_from_slice(&[0; 12]);
        central.extend_from_slice(&offset.to_le_bytes());
        central.extend_from_slice(name.as_bytes());
    }
    let (dir_off, dir_size, n) = (out.len() as u32, central.len() as u32, entries.len() as u16);
    out.extend_from_slice(&central);
    out.extend_from_slice(&0x0605_4b50u32.to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&dir_size.to_le_bytes());
    out.extend_from_slice(&dir_off.to_le_bytes());
    out.extend_from_slice(&[0; 2]);
    out
}

#[test]
fn zoneinfo_may_be_a_zip_file() {
    // Names no platform source has, so only the zip can answer.
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/tzif");
    let lord_howe = std::fs::read(fixtures.join("Australia_Lord_Howe")).unwrap();
    let dir = std::env::temp_dir().join(format!("schedkit-tzzip-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("zoneinfo.zip");
    std::fs::write(
        &path,
        zip(&[("Etc/Other", b"TZif", 0), ("Zip_Test/Lord_Howe", &lord_howe, 0), ("Deflated", b"x", 8)]),
    )
    .unwrap();
    let lh = load("Zip_Test/Lord_Howe", Some(&path));
    let absent = load("No/Such_Zone", Some(&path));
    let deflated = load("Deflated", Some(&path));
    let not_tzif = load("Etc/Other", Some(&path));
    // A zip cut short, and one whose local header disagrees with its directory.
    let whole = zip(&[("Zip_Test/Lord_Howe", &lord_howe, 0)]);
    std::fs::write(&path, &whole[whole.len() / 2..]).unwrap();
    let truncated = load("Zip_Test/Lord_Howe", Some(&path));
    let mut bad_local = whole.clone();
    bad_local[8] = 8;
    std::fs::write(&path, &bad_local).unwrap();
    let inconsistent = load("Zip_Test/Lord_Howe", Some(&path));
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(lh.unwrap().offset_at(at("2024-07-01T00:00:00Z")), 37_800);
    assert_eq!(absent, Err(TzError::Unknown("No/Such_Zone".to_owned())));
    let shown = path.display();
    assert_eq!(deflated, Err(TzError::Io(format!("unsupported compression for Deflated in {shown}"))));
    assert_eq!(not_tzif, Err(TzError::BadData));
    assert_eq!(truncated, Err(TzError::Io(format!("corrupt zip file {shown}"))));
    assert_eq!(inconsistent, Err(TzError::Io(format!("corrupt zip file {shown}"))));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Mutated zip files never panic.
    #[test]
    fn zip_mutations_never_panic(at in 0usize..400, byte in any::<u8>(), cut in 0usize..400) {
        let mut data = zip(&[("A", b"TZif2", 0), ("B/C", &[0u8; 40], 0)]);
        let at = at % data.len();
        data[at] = byte;
        data.truncate(data.len() - cut % data.len());
        let path = std::env::temp_dir().join(format!("schedkit-tzfuzz-{}-{at}-{cut}.zip", std::process::id()));
        std::fs::write(&path, &data).unwrap();
        let _ = load("A", Some(&path));
        let _ = load("B/C", Some(&path));
        std::fs::remove_file(&path).unwrap();
    }


    /// Random bytes, and random bytes after a valid header, never panic.
    #[test]
    fn parse_never_panics(data in proptest::collection::vec(any::<u8>(), 0..512), prefix in any::<bool>()) {
        let mut input = if prefix { b"TZif2".to_vec() } else { Vec::new() };
        input.extend_from_slice(&data);
        if let Ok(z) = Zone::parse(&input) {
            for secs in [i64::MIN, -1, 0, 1_700_000_000, i64::MAX / 2] {
                let _ = z.offset_at(secs);
            }
        }
    }

    /// Mutating a valid file never panics, and lookups of a parsed result work
    /// across CEL's whole range.
    #[test]
    fn mutations_never_panic(at in 0usize..200, byte in any::<u8>(), secs in -62_135_596_800i64..253_402_300_800) {
        let mut data = tzif(&[(-17_762, false), (-18_000, false), (-14_400, true)], &[(-2_717_650_800, 1), (1_000_000_000, 2)], "EST5EDT,M3.2.0,M11.1.0");
        let at = at % data.len();
        data[at] = byte;
        if let Ok(z) = Zone::parse(&data) {
            let _ = z.offset_at(secs);
        }
    }

    #[test]
    fn posix_parse_never_panics(s in "[A-Z<>+0-9,.:/JM-]{0,40}", secs in -62_135_596_800i64..253_402_300_800) {
        if let Some(tz) = parse_posix_tz(&s) {
            let _ = tz.offset_at(secs);
        }
    }
}
