//! The functions of the DRA selector environment, with their type signatures (for the
//! checker), their cost (for the estimator) and their implementations.
//!
//! The environment is Kubernetes' CEL base environment as extended for DRA in
//! `k8s.io/dynamic-resource-allocation/cel/compile.go`. Implemented here:
//!
//! - the CEL standard library: `size`, `contains`, `startsWith`, `endsWith`, `matches`,
//!   the conversions `int`, `uint`, `double`, `string`, `bool`, `bytes`, `dyn`, and
//!   `type` (with the type identifiers `int`, `string`, ... as values); `timestamp`,
//!   `duration` and their getters (`getFullYear`, `getMonth`, `getDayOfYear`,
//!   `getDayOfMonth`, `getDate`, `getDayOfWeek`, `getHours`, `getMinutes`,
//!   `getSeconds`, `getMilliseconds`; in `time.rs`);
//! - cel-go `ext.Strings` (version 2): `charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`,
//!   `upperAscii`, `replace`, `split`, `substring`, `trim`, `join`, `strings.quote`,
//!   `format` (in `format.rs`); string `reverse` arrived in version 3, which Kubernetes
//!   does not enable;
//! - cel-go `ext.Lists` (version 3, Kubernetes 1.34+): `slice`, `flatten`, `sort`,
//!   `sortBy` (a macro, compiled in `compile/calls.rs`), `lists.range`, `reverse`,
//!   `distinct`;
//! - `k8s.io/apiserver/pkg/cel/library/lists.go`: `isSorted`, `sum`, `min`, `max`,
//!   `indexOf`, `lastIndexOf` on lists;
//! - `library/regex.go`: `find`, `findAll`;
//! - `library/quantity.go`: `quantity`, `isQuantity`, `sign`, `isGreaterThan`,
//!   `isLessThan`, `compareTo`, `asApproximateFloat`, `asInteger`, `isInteger`, `add`,
//!   `sub`, and `mul` (which only an unreleased quantity.go has, next to `div` and
//!   `divInt`, which are not implemented);
//! - `library/urls.go` (in `url.rs`): `url`, `isURL`, `getScheme`, `getHost`,
//!   `getHostname`, `getPort`, `getEscapedPath`, `getQuery`;
//! - `library/ip.go` and `library/cidr.go` (in `net.rs`): `ip`, `isIP`,
//!   `ip.isCanonical`, `family`, `isUnspecified`, `isLoopback`, `isLinkLocalMulticast`,
//!   `isLinkLocalUnicast`, `isGlobalUnicast`, `cidr`, `isCIDR`, `containsIP`,
//!   `containsCIDR`, `masked`, `prefixLength`, `string(ip)`, `string(cidr)`, and the
//!   type names `net.IP`, `net.CIDR`;
//! - `library/format.go` (in `named_format.rs`): `format.named`, `format.dns1123Label`,
//!   `format.dns1123Subdomain`, `format.dns1035Label`, `format.qualifiedName`,
//!   `format.dns1123LabelPrefix`, `format.dns1123SubdomainPrefix`,
//!   `format.dns1035LabelPrefix`, `format.labelValue`, `format.uri`, `format.uuid`,
//!   `format.byte`, `format.date`, `format.datetime`, `validate`, and `==` between
//!   formats;
//! - `library/semverlib.go`: `semver`, `isSemver` (each with the optional normalise
//!   flag), `isGreaterThan`, `isLessThan`, `compareTo`, `major`, `minor`, `patch`;
//! - cel-go `ext.Sets`: `sets.contains`, `sets.equivalent`, `sets.intersects`;
//! - cel-go optional types: `optional.of`, `optional.none`, `optional.ofNonZeroValue`,
//!   `hasValue`, `value`, `orValue`, `or`.
//!
//! Here: the [`Func`] names and the dispatch. `signatures.rs` types the calls, `cost.rs`
//! prices them, and one file per library implements them: `stdlib.rs` (standard
//! library and optional types), `strings.rs` (`ext.Strings`, regex, named formats),
//! `lists.rs` (lists and sets), `quantity.rs` (quantity and semver), `network.rs`
//! (IP, CIDR, URL).

use regex::Regex;

use super::error::EvalErrorKind;
use super::named_format::NamedFormat;
use super::time;
use super::value::Value;

mod cost;
mod lists;
mod network;
mod quantity;
mod signatures;
mod stdlib;
mod strings;

pub(crate) use cost::{
    Shape, call_cost, ceil_mul, list_ext_cost, net_runtime_cost, replace_runtime_cost, result_size,
    string_traversal_cost,
};
pub(crate) use signatures::{COMPARABLE, Sig, refine_result, signatures};

/// Largest compiled regex program, in bytes (the `regex` crate's size limit; the same
/// order as RE2's default `max_mem`).
pub(crate) const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// A builtin function. Overloads of one name share a variant and dispatch on the
/// runtime types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Func {
    Size,
    Contains,
    StartsWith,
    EndsWith,
    Matches,
    ToInt,
    ToUint,
    ToDouble,
    ToString,
    ToBool,
    ToBytes,
    Dyn,
    TypeOf,
    CharAt,
    IndexOf,
    LastIndexOf,
    LowerAscii,
    UpperAscii,
    Replace,
    Split,
    Substring,
    Trim,
    Join,
    Quote,
    IsSorted,
    Sum,
    Min,
    Max,
    Find,
    FindAll,
    Quantity,
    IsQuantity,
    Sign,
    IsGreaterThan,
    IsLessThan,
    CompareTo,
    AsApproximateFloat,
    AsInteger,
    IsInteger,
    Add,
    Sub,
    Mul,
    Semver,
    IsSemver,
    Major,
    Minor,
    Patch,
    SetsContains,
    SetsEquivalent,
    SetsIntersects,
    HasValue,
    OptValue,
    OrValue,
    Or,
    OptionalOf,
    OptionalNone,
    OptionalOfNonZero,
    Slice,
    Flatten,
    Sort,
    /// `@sortByAssociatedKeys`, the call the `sortBy` macro expands to.
    SortByKeys,
    ListsRange,
    Reverse,
    Distinct,
    Format,
    Ip,
    IsIp,
    IpIsCanonical,
    Family,
    IsUnspecified,
    IsLoopback,
    IsLinkLocalMulticast,
    IsLinkLocalUnicast,
    IsGlobalUnicast,
    Cidr,
    IsCidr,
    ContainsIp,
    ContainsCidr,
    Masked,
    PrefixLength,
    Url,
    IsUrl,
    GetScheme,
    GetHost,
    GetHostname,
    GetPort,
    GetEscapedPath,
    GetQuery,
    ToTimestamp,
    ToDuration,
    /// A calendar getter of a timestamp or a total of a duration.
    TimeField(time::Field),
    /// `format.named(name)` (Kubernetes format library).
    FormatNamed,
    /// `format.dns1123Label()` and the other constant formats.
    FormatConst(NamedFormat),
    /// `<Format>.validate(string)`.
    Validate,
    /// `<attribute>.includes(value)` (DRA, `k8s.io/dynamic-resource-allocation/cel`).
    Includes,
}

impl Func {
    /// The function's CEL name.
    pub(crate) fn name(self) -> &'static str {
        match self {
            Func::Size => "size",
            Func::Contains => "contains",
            Func::StartsWith => "startsWith",
            Func::EndsWith => "endsWith",
            Func::Matches => "matches",
            Func::ToInt => "int",
            Func::ToUint => "uint",
            Func::ToDouble => "double",
            Func::ToString => "string",
            Func::ToBool => "bool",
            Func::ToBytes => "bytes",
            Func::Dyn => "dyn",
            Func::TypeOf => "type",
            Func::CharAt => "charAt",
            Func::IndexOf => "indexOf",
            Func::LastIndexOf => "lastIndexOf",
            Func::LowerAscii => "lowerAscii",
            Func::UpperAscii => "upperAscii",
            Func::Replace => "replace",
            Func::Split => "split",
            Func::Substring => "substring",
            Func::Trim => "trim",
            Func::Join => "join",
            Func::Quote => "strings.quote",
            Func::IsSorted => "isSorted",
            Func::Sum => "sum",
            Func::Min => "min",
            Func::Max => "max",
            Func::Find => "find",
            Func::FindAll => "findAll",
            Func::Quantity => "quantity",
            Func::IsQuantity => "isQuantity",
            Func::Sign => "sign",
            Func::IsGreaterThan => "isGreaterThan",
            Func::IsLessThan => "isLessThan",
            Func::CompareTo => "compareTo",
            Func::AsApproximateFloat => "asApproximateFloat",
            Func::AsInteger => "asInteger",
            Func::IsInteger => "isInteger",
            Func::Add => "add",
            Func::Sub => "sub",
            Func::Mul => "mul",
            Func::Semver => "semver",
            Func::IsSemver => "isSemver",
            Func::Major => "major",
            Func::Minor => "minor",
            Func::Patch => "patch",
            Func::SetsContains => "sets.contains",
            Func::SetsEquivalent => "sets.equivalent",
            Func::SetsIntersects => "sets.intersects",
            Func::HasValue => "hasValue",
            Func::OptValue => "value",
            Func::OrValue => "orValue",
            Func::Or => "or",
            Func::OptionalOf => "optional.of",
            Func::OptionalNone => "optional.none",
            Func::OptionalOfNonZero => "optional.ofNonZeroValue",
            Func::Slice => "slice",
            Func::Flatten => "flatten",
            Func::Sort => "sort",
            Func::SortByKeys => "sortBy",
            Func::ListsRange => "lists.range",
            Func::Reverse => "reverse",
            Func::Distinct => "distinct",
            Func::Format => "format",
            Func::Includes => "includes",
            Func::Ip => "ip",
            Func::IsIp => "isIP",
            Func::IpIsCanonical => "ip.isCanonical",
            Func::Family => "family",
            Func::IsUnspecified => "isUnspecified",
            Func::IsLoopback => "isLoopback",
            Func::IsLinkLocalMulticast => "isLinkLocalMulticast",
            Func::IsLinkLocalUnicast => "isLinkLocalUnicast",
            Func::IsGlobalUnicast => "isGlobalUnicast",
            Func::Cidr => "cidr",
            Func::IsCidr => "isCIDR",
            Func::ContainsIp => "containsIP",
            Func::ContainsCidr => "containsCIDR",
            Func::Masked => "masked",
            Func::PrefixLength => "prefixLength",
            Func::Url => "url",
            Func::IsUrl => "isURL",
            Func::GetScheme => "getScheme",
            Func::GetHost => "getHost",
            Func::GetHostname => "getHostname",
            Func::GetPort => "getPort",
            Func::GetEscapedPath => "getEscapedPath",
            Func::GetQuery => "getQuery",
            Func::ToTimestamp => "timestamp",
            Func::ToDuration => "duration",
            Func::FormatNamed => "format.named",
            Func::FormatConst(f) => f.function_name(),
            Func::Validate => "validate",
            Func::TimeField(f) => match f {
                time::Field::FullYear => "getFullYear",
                time::Field::Month => "getMonth",
                time::Field::DayOfYear => "getDayOfYear",
                time::Field::DayOfMonth => "getDayOfMonth",
                time::Field::Date => "getDate",
                time::Field::DayOfWeek => "getDayOfWeek",
                time::Field::Hours => "getHours",
                time::Field::Minutes => "getMinutes",
                time::Field::Seconds => "getSeconds",
                time::Field::Milliseconds => "getMilliseconds",
            },
        }
    }
}

type R<'a> = Result<Value<'a>, EvalErrorKind>;

fn overload(function: &'static str, args: &[Value<'_>]) -> EvalErrorKind {
    EvalErrorKind::NoSuchOverload { function, args: args.iter().map(Value::type_name).collect::<Vec<_>>().join(", ") }
}

fn invalid(function: &'static str, message: impl Into<String>) -> EvalErrorKind {
    EvalErrorKind::InvalidArgument { function, message: message.into() }
}

/// Compiles a regex with the size limit.
pub(crate) fn compile_regex(pattern: &str) -> Result<Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .dfa_size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| e.to_string())
}

/// Applies `f` to `args` (receiver first for member calls). `name` is the source name,
/// for messages. `regex` is the precompiled pattern for `matches`/`find`/`findAll` when
/// the pattern was a constant. Each library's file holds its functions.
pub(crate) fn call<'a>(f: Func, name: &'static str, args: &[Value<'a>], regex: Option<&Regex>) -> R<'a> {
    match f {
        Func::Size
        | Func::Contains
        | Func::StartsWith
        | Func::EndsWith
        | Func::Matches
        | Func::ToInt
        | Func::ToUint
        | Func::ToDouble
        | Func::ToString
        | Func::ToBool
        | Func::ToBytes
        | Func::Dyn
        | Func::TypeOf
        | Func::ToTimestamp
        | Func::ToDuration
        | Func::TimeField(_)
        | Func::HasValue
        | Func::OptValue
        | Func::OrValue
        | Func::Or
        | Func::OptionalOf
        | Func::OptionalNone
        | Func::OptionalOfNonZero => stdlib::call(f, name, args, regex),
        // `indexOf` and `lastIndexOf` are both string and list functions.
        Func::IndexOf | Func::LastIndexOf if matches!(args.first(), Some(Value::List(_))) => lists::call(f, name, args),
        Func::IndexOf
        | Func::LastIndexOf
        | Func::Find
        | Func::FindAll
        | Func::CharAt
        | Func::LowerAscii
        | Func::UpperAscii
        | Func::Replace
        | Func::Split
        | Func::Substring
        | Func::Trim
        | Func::Quote
        | Func::Join
        | Func::Format
        | Func::FormatNamed
        | Func::FormatConst(_)
        | Func::Validate => strings::call(f, name, args, regex),
        Func::IsSorted
        | Func::Sum
        | Func::Min
        | Func::Max
        | Func::Includes
        | Func::SetsContains
        | Func::SetsEquivalent
        | Func::SetsIntersects
        | Func::Slice
        | Func::Flatten
        | Func::Sort
        | Func::SortByKeys
        | Func::ListsRange
        | Func::Reverse
        | Func::Distinct => lists::call(f, name, args),
        Func::Quantity
        | Func::IsQuantity
        | Func::Sign
        | Func::IsGreaterThan
        | Func::IsLessThan
        | Func::CompareTo
        | Func::AsApproximateFloat
        | Func::AsInteger
        | Func::IsInteger
        | Func::Add
        | Func::Sub
        | Func::Mul
        | Func::Semver
        | Func::IsSemver
        | Func::Major
        | Func::Minor
        | Func::Patch => quantity::call(f, name, args),
        Func::Ip
        | Func::IsIp
        | Func::IpIsCanonical
        | Func::Family
        | Func::IsUnspecified
        | Func::IsLoopback
        | Func::IsLinkLocalMulticast
        | Func::IsLinkLocalUnicast
        | Func::IsGlobalUnicast
        | Func::Cidr
        | Func::IsCidr
        | Func::ContainsIp
        | Func::ContainsCidr
        | Func::Masked
        | Func::PrefixLength
        | Func::Url
        | Func::IsUrl
        | Func::GetScheme
        | Func::GetHost
        | Func::GetHostname
        | Func::GetPort
        | Func::GetEscapedPath
        | Func::GetQuery => network::call(f, name, args),
    }
}
