//! Semantic versions as the Kubernetes `semver` CEL library sees them
//! (`k8s.io/apiserver/pkg/cel/library/semverlib.go`, backed by `github.com/blang/semver/v4`):
//! strict semver.org 2.0.0 parsing, an optional normalising parse, and precedence
//! comparison that ignores build metadata.

use std::cmp::Ordering;
use std::fmt;

/// A parsed semantic version. Equality and order follow semver precedence, so build
/// metadata is ignored (`1.0.0+a == 1.0.0+b`), as blang's `Compare` does.
#[derive(Debug, Clone)]
pub struct Semver {
    /// Major version.
    pub major: u64,
    /// Minor version.
    pub minor: u64,
    /// Patch version.
    pub patch: u64,
    /// Pre-release identifiers (`1.0.0-alpha.1` has `alpha` and `1`).
    pub pre: Vec<PreRelease>,
    /// Build metadata identifiers; ignored by comparisons.
    pub build: Vec<String>,
}

/// One pre-release identifier.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PreRelease {
    /// A numeric identifier (no leading zeros).
    Numeric(u64),
    /// An alphanumeric identifier.
    Alpha(String),
}

/// Why a version string was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid semantic version {text:?}: {reason}")]
pub struct SemverError {
    /// The text.
    pub text: String,
    /// What is wrong.
    pub reason: &'static str,
}

impl Semver {
    /// Strict parse, like blang `semver.Parse`: `MAJOR.MINOR.PATCH[-PRE][+BUILD]`, no
    /// leading zeros in numbers, no `v` prefix.
    pub fn parse(text: &str) -> Result<Semver, SemverError> {
        let bad = |reason| SemverError { text: text.to_owned(), reason };
        if text.is_empty() {
            return Err(bad("empty version string"));
        }
        let (rest, build) = match text.split_once('+') {
            Some((r, b)) => (r, Some(b)),
            None => (text, None),
        };
        let (core, pre) = match rest.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (rest, None),
        };
        let mut parts = core.split('.');
        let mut num = |name| -> Result<u64, SemverError> {
            let p = parts.next().ok_or_else(|| bad("expected MAJOR.MINOR.PATCH"))?;
            numeric(p).ok_or_else(|| bad(name))
        };
        let major = num("invalid major version")?;
        let minor = num("invalid minor version")?;
        let patch = num("invalid patch version")?;
        if parts.next().is_some() {
            return Err(bad("expected MAJOR.MINOR.PATCH"));
        }
        let mut v = Semver { major, minor, patch, pre: Vec::new(), build: Vec::new() };
        if let Some(pre) = pre {
            for id in pre.split('.') {
                if id.is_empty() || !id.bytes().all(is_ident_byte) {
                    return Err(bad("invalid pre-release identifier"));
                }
                if id.bytes().all(|b| b.is_ascii_digit()) {
                    v.pre.push(PreRelease::Numeric(
                        numeric(id).ok_or_else(|| bad("numeric pre-release identifier has a leading zero"))?,
                    ));
                } else {
                    v.pre.push(PreRelease::Alpha(id.to_owned()));
                }
            }
        }
        if let Some(build) = build {
            for id in build.split('.') {
                if id.is_empty() || !id.bytes().all(is_ident_byte) {
                    return Err(bad("invalid build metadata identifier"));
                }
                v.build.push(id.to_owned());
            }
        }
        Ok(v)
    }

    /// The normalising parse of `semver(text, true)`: drops one leading `v`, strips
    /// leading zeros from the dot-separated parts, and fills a missing minor or patch
    /// with `0` (a shortened version may not carry pre-release or build parts).
    pub fn parse_normalized(text: &str) -> Result<Semver, SemverError> {
        let s = text.strip_prefix('v').unwrap_or(text);
        let mut parts: Vec<String> = s.splitn(3, '.').map(str::to_owned).collect();
        for p in &mut parts {
            if p.len() > 1 {
                let trimmed = p.trim_start_matches('0');
                *p = if trimmed.is_empty() || !trimmed.as_bytes()[0].is_ascii_digit() {
                    format!("0{trimmed}")
                } else {
                    trimmed.to_owned()
                };
            }
        }
        if parts.len() < 3 {
            if parts.last().is_some_and(|p| p.contains(['+', '-'])) {
                return Err(SemverError {
                    text: text.to_owned(),
                    reason: "short version cannot contain pre-release or build metadata",
                });
            }
            while parts.len() < 3 {
                parts.push("0".to_owned());
            }
        }
        Semver::parse(&parts.join(".")).map_err(|e| SemverError { text: text.to_owned(), reason: e.reason })
    }
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'-'
}

fn numeric(p: &str) -> Option<u64> {
    if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) || (p.len() > 1 && p.starts_with('0')) {
        return None;
    }
    p.parse().ok()
}

impl Ord for Semver {
    /// semver.org precedence: numbers, then "no pre-release" above any pre-release, then
    /// pre-release identifiers left to right (numeric below alphanumeric); build ignored.
    fn cmp(&self, other: &Self) -> Ordering {
        (self.major, self.minor, self.patch).cmp(&(other.major, other.minor, other.patch)).then_with(|| {
            match (self.pre.is_empty(), other.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => {
                    for (a, b) in self.pre.iter().zip(&other.pre) {
                        let o = match (a, b) {
                            (PreRelease::Numeric(x), PreRelease::Numeric(y)) => x.cmp(y),
                            (PreRelease::Numeric(_), PreRelease::Alpha(_)) => Ordering::Less,
                            (PreRelease::Alpha(_), PreRelease::Numeric(_)) => Ordering::Greater,
                            (PreRelease::Alpha(x), PreRelease::Alpha(y)) => x.cmp(y),
                        };
                        if o != Ordering::Equal {
                            return o;
                        }
                    }
                    self.pre.len().cmp(&other.pre.len())
                }
            }
        })
    }
}

impl PartialEq for Semver {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Semver {}

impl PartialOrd for Semver {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Semver {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}.{}", self.major, self.minor, self.patch)?;
        for (i, p) in self.pre.iter().enumerate() {
            f.write_str(if i == 0 { "-" } else { "." })?;
            match p {
                PreRelease::Numeric(n) => write!(f, "{n}")?,
                PreRelease::Alpha(s) => f.write_str(s)?,
            }
        }
        for (i, b) in self.build.iter().enumerate() {
            f.write_str(if i == 0 { "+" } else { "." })?;
            f.write_str(b)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strict_and_normalized_parsing_follow_semverlib_docs() {
        // Examples from the doc comment of k8s.io/apiserver/pkg/cel/library/semverlib.go.
        assert!(Semver::parse("1.0.0").is_ok());
        assert!(Semver::parse("0.1.0-alpha.1").is_ok());
        for bad in ["200K", "Three", "Mi", "v1.0", "1.0", "01.1.1", "1.0.0-01", "1.0.0-", "1.0.0+"] {
            assert!(Semver::parse(bad).is_err(), "{bad}");
        }
        assert_eq!(Semver::parse_normalized("v1.0.0").unwrap().to_string(), "1.0.0");
        assert_eq!(Semver::parse_normalized("1.0").unwrap().to_string(), "1.0.0");
        assert_eq!(Semver::parse_normalized("01.01.01").unwrap().to_string(), "1.1.1");
        assert!(Semver::parse_normalized("1.0-rc1").is_err());
    }

    #[test]
    fn precedence_matches_semver_org_example_chain() {
        // semver.org section 11's example ordering.
        let chain = [
            "1.0.0-alpha",
            "1.0.0-alpha.1",
            "1.0.0-alpha.beta",
            "1.0.0-beta",
            "1.0.0-beta.2",
            "1.0.0-beta.11",
            "1.0.0-rc.1",
            "1.0.0",
            "2.0.0",
            "2.1.0",
            "2.1.1",
        ];
        for w in chain.windows(2) {
            assert!(Semver::parse(w[0]).unwrap() < Semver::parse(w[1]).unwrap(), "{} < {}", w[0], w[1]);
        }
        assert_eq!(Semver::parse("1.0.0+a").unwrap().cmp(&Semver::parse("1.0.0+b").unwrap()), Ordering::Equal);
    }
}
