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
//!   `sortBy` (a macro, compiled in `compile.rs`), `lists.range`, `reverse`,
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

use std::cmp::Ordering;
use std::rc::Rc;

use regex::Regex;

use super::bigqty::{self, AnyQuantity, Held};
use super::error::EvalErrorKind;
use super::named_format::{self, NamedFormat};
use super::net;
use super::semver::Semver;
use super::text::{format_double, push_c_escape};
use super::time;
use super::types::Ty;
use super::url;
use super::value::{Value, Ver, any_quantity, compare, equals};
use crate::model::Quantity;

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

/// One overload: receiver style, parameter types (receiver first), result type.
pub(crate) struct Sig {
    pub(crate) member: bool,
    pub(crate) params: Vec<Ty>,
    pub(crate) result: Ty,
}

fn m(params: Vec<Ty>, result: Ty) -> Sig {
    Sig { member: true, params, result }
}

fn g(params: Vec<Ty>, result: Ty) -> Sig {
    Sig { member: false, params, result }
}

/// The function named `name` (qualified names like `sets.contains` included) and its
/// overloads, or `None` if the environment has no such function.
pub(crate) fn signatures(name: &str) -> Option<(Func, Vec<Sig>)> {
    use Ty::{Bool, Bytes, Double, Dyn, Int, Quantity as Q, Semver as V, String as S, Uint};
    let list = Ty::list;
    let map_dd = || Ty::map(Dyn, Dyn);
    let opt = |t: Ty| Ty::Optional(Box::new(t));
    Some(match name {
        "size" => (
            Func::Size,
            vec![
                g(vec![S], Int),
                g(vec![Bytes], Int),
                g(vec![list(Dyn)], Int),
                g(vec![map_dd()], Int),
                m(vec![S], Int),
                m(vec![Bytes], Int),
                m(vec![list(Dyn)], Int),
                m(vec![map_dd()], Int),
            ],
        ),
        "contains" => (Func::Contains, vec![m(vec![S, S], Bool)]),
        "startsWith" => (Func::StartsWith, vec![m(vec![S, S], Bool)]),
        "endsWith" => (Func::EndsWith, vec![m(vec![S, S], Bool)]),
        "matches" => (Func::Matches, vec![m(vec![S, S], Bool), g(vec![S, S], Bool)]),
        "int" => (
            Func::ToInt,
            vec![
                g(vec![Int], Int),
                g(vec![Uint], Int),
                g(vec![Double], Int),
                g(vec![S], Int),
                g(vec![Ty::Timestamp], Int),
            ],
        ),
        "uint" => {
            (Func::ToUint, vec![g(vec![Uint], Uint), g(vec![Int], Uint), g(vec![Double], Uint), g(vec![S], Uint)])
        }
        "double" => (
            Func::ToDouble,
            vec![g(vec![Double], Double), g(vec![Int], Double), g(vec![Uint], Double), g(vec![S], Double)],
        ),
        "string" => (
            Func::ToString,
            vec![
                g(vec![S], S),
                g(vec![Int], S),
                g(vec![Uint], S),
                g(vec![Double], S),
                g(vec![Bool], S),
                g(vec![Bytes], S),
                g(vec![Ty::Ip], S),
                g(vec![Ty::Cidr], S),
                g(vec![Ty::Timestamp], S),
                g(vec![Ty::Duration], S),
            ],
        ),
        "bool" => (Func::ToBool, vec![g(vec![Bool], Bool), g(vec![S], Bool)]),
        "bytes" => (Func::ToBytes, vec![g(vec![Bytes], Bytes), g(vec![S], Bytes)]),
        "dyn" => (Func::Dyn, vec![g(vec![Dyn], Dyn)]),
        "type" => (Func::TypeOf, vec![g(vec![Dyn], Ty::Type)]),
        "charAt" => (Func::CharAt, vec![m(vec![S, Int], S)]),
        "indexOf" => (Func::IndexOf, vec![m(vec![S, S], Int), m(vec![S, S, Int], Int), m(vec![list(Dyn), Dyn], Int)]),
        "lastIndexOf" => {
            (Func::LastIndexOf, vec![m(vec![S, S], Int), m(vec![S, S, Int], Int), m(vec![list(Dyn), Dyn], Int)])
        }
        "lowerAscii" => (Func::LowerAscii, vec![m(vec![S], S)]),
        "upperAscii" => (Func::UpperAscii, vec![m(vec![S], S)]),
        "replace" => (Func::Replace, vec![m(vec![S, S, S], S), m(vec![S, S, S, Int], S)]),
        "split" => (Func::Split, vec![m(vec![S, S], list(S)), m(vec![S, S, Int], list(S))]),
        "substring" => (Func::Substring, vec![m(vec![S, Int], S), m(vec![S, Int, Int], S)]),
        "trim" => (Func::Trim, vec![m(vec![S], S)]),
        "join" => (Func::Join, vec![m(vec![list(S)], S), m(vec![list(S), S], S)]),
        "strings.quote" => (Func::Quote, vec![g(vec![S], S)]),
        "isSorted" => (Func::IsSorted, vec![m(vec![list(Dyn)], Bool)]),
        "sum" => (Func::Sum, vec![m(vec![list(Int)], Int), m(vec![list(Uint)], Uint), m(vec![list(Double)], Double)]),
        "min" => (Func::Min, vec![m(vec![list(Dyn)], Dyn)]),
        "max" => (Func::Max, vec![m(vec![list(Dyn)], Dyn)]),
        "find" => (Func::Find, vec![m(vec![S, S], S)]),
        "findAll" => (Func::FindAll, vec![m(vec![S, S], list(S)), m(vec![S, S, Int], list(S))]),
        "quantity" => (Func::Quantity, vec![g(vec![S], Q)]),
        "isQuantity" => (Func::IsQuantity, vec![g(vec![S], Bool)]),
        // DRA's `includes` (`k8s.io/dynamic-resource-allocation/cel/compile.go`, since
        // 1.36): declared for the list-type attributes gate, but the scheduler compiles
        // with the stored-expressions environment, which ignores feature gates, so a
        // scheduler always accepts it.
        "includes" => (Func::Includes, vec![m(vec![Dyn, Dyn], Bool)]),
        // Declared as a global overload upstream; the member form is accepted too.
        "sign" => (Func::Sign, vec![g(vec![Q], Int), m(vec![Q], Int)]),
        "isGreaterThan" => (Func::IsGreaterThan, vec![m(vec![Q, Q], Bool), m(vec![V, V], Bool)]),
        "isLessThan" => (Func::IsLessThan, vec![m(vec![Q, Q], Bool), m(vec![V, V], Bool)]),
        "compareTo" => (Func::CompareTo, vec![m(vec![Q, Q], Int), m(vec![V, V], Int)]),
        "asApproximateFloat" => (Func::AsApproximateFloat, vec![m(vec![Q], Double)]),
        "asInteger" => (Func::AsInteger, vec![m(vec![Q], Int)]),
        "isInteger" => (Func::IsInteger, vec![m(vec![Q], Bool)]),
        "add" => (Func::Add, vec![m(vec![Q, Q], Q), m(vec![Q, Int], Q)]),
        "sub" => (Func::Sub, vec![m(vec![Q, Q], Q), m(vec![Q, Int], Q)]),
        "mul" => (Func::Mul, vec![m(vec![Q, Int], Q)]),
        "semver" => (Func::Semver, vec![g(vec![S], V), g(vec![S, Bool], V)]),
        "isSemver" => (Func::IsSemver, vec![g(vec![S], Bool), g(vec![S, Bool], Bool)]),
        "major" => (Func::Major, vec![m(vec![V], Int)]),
        "minor" => (Func::Minor, vec![m(vec![V], Int)]),
        "patch" => (Func::Patch, vec![m(vec![V], Int)]),
        "sets.contains" => (Func::SetsContains, vec![g(vec![list(Dyn), list(Dyn)], Bool)]),
        "sets.equivalent" => (Func::SetsEquivalent, vec![g(vec![list(Dyn), list(Dyn)], Bool)]),
        "sets.intersects" => (Func::SetsIntersects, vec![g(vec![list(Dyn), list(Dyn)], Bool)]),
        // cel-go optional types (`cel.OptionalTypes`, Kubernetes 1.28+).
        "hasValue" => (Func::HasValue, vec![m(vec![opt(Dyn)], Bool)]),
        "value" => (Func::OptValue, vec![m(vec![opt(Dyn)], Dyn)]),
        "orValue" => (Func::OrValue, vec![m(vec![opt(Dyn), Dyn], Dyn)]),
        "or" => (Func::Or, vec![m(vec![opt(Dyn), opt(Dyn)], opt(Dyn))]),
        "optional.of" => (Func::OptionalOf, vec![g(vec![Dyn], opt(Dyn))]),
        "optional.none" => (Func::OptionalNone, vec![g(vec![], opt(Dyn))]),
        "optional.ofNonZeroValue" => (Func::OptionalOfNonZero, vec![g(vec![Dyn], opt(Dyn))]),
        // cel-go `ext.Lists` version 3 (Kubernetes 1.34+): the element type `T` of the
        // result follows the receiver (see `refine_result`).
        "slice" => (Func::Slice, vec![m(vec![list(Dyn), Int, Int], list(Dyn))]),
        "flatten" => (Func::Flatten, vec![m(vec![list(list(Dyn))], list(Dyn)), m(vec![list(Dyn), Int], list(Dyn))]),
        "sort" => (Func::Sort, COMPARABLE.iter().map(|t| m(vec![list(t.clone())], list(t.clone()))).collect()),
        "lists.range" => (Func::ListsRange, vec![g(vec![Int], list(Int))]),
        "reverse" => (Func::Reverse, vec![m(vec![list(Dyn)], list(Dyn))]),
        "distinct" => (Func::Distinct, vec![m(vec![list(Dyn)], list(Dyn))]),
        // cel-go `ext.Strings` version 2 (Kubernetes 1.29+): `"%d of %s".format([1, "a"])`.
        "format" => (Func::Format, vec![m(vec![S, list(Dyn)], S)]),
        // Kubernetes `library/ip.go` and `library/cidr.go` (1.30+).
        "ip" => (Func::Ip, vec![g(vec![S], Ty::Ip), m(vec![Ty::Cidr], Ty::Ip)]),
        "isIP" => (Func::IsIp, vec![g(vec![S], Bool)]),
        "ip.isCanonical" => (Func::IpIsCanonical, vec![g(vec![S], Bool)]),
        "family" => (Func::Family, vec![m(vec![Ty::Ip], Int)]),
        "isUnspecified" => (Func::IsUnspecified, vec![m(vec![Ty::Ip], Bool)]),
        "isLoopback" => (Func::IsLoopback, vec![m(vec![Ty::Ip], Bool)]),
        "isLinkLocalMulticast" => (Func::IsLinkLocalMulticast, vec![m(vec![Ty::Ip], Bool)]),
        "isLinkLocalUnicast" => (Func::IsLinkLocalUnicast, vec![m(vec![Ty::Ip], Bool)]),
        "isGlobalUnicast" => (Func::IsGlobalUnicast, vec![m(vec![Ty::Ip], Bool)]),
        "cidr" => (Func::Cidr, vec![g(vec![S], Ty::Cidr)]),
        "isCIDR" => (Func::IsCidr, vec![g(vec![S], Bool)]),
        "containsIP" => (Func::ContainsIp, vec![m(vec![Ty::Cidr, S], Bool), m(vec![Ty::Cidr, Ty::Ip], Bool)]),
        "containsCIDR" => (Func::ContainsCidr, vec![m(vec![Ty::Cidr, S], Bool), m(vec![Ty::Cidr, Ty::Cidr], Bool)]),
        "masked" => (Func::Masked, vec![m(vec![Ty::Cidr], Ty::Cidr)]),
        "prefixLength" => (Func::PrefixLength, vec![m(vec![Ty::Cidr], Int)]),
        // Kubernetes `library/urls.go`.
        "url" => (Func::Url, vec![g(vec![S], Ty::Url)]),
        "isURL" => (Func::IsUrl, vec![g(vec![S], Bool)]),
        "getScheme" => (Func::GetScheme, vec![m(vec![Ty::Url], S)]),
        "getHost" => (Func::GetHost, vec![m(vec![Ty::Url], S)]),
        "getHostname" => (Func::GetHostname, vec![m(vec![Ty::Url], S)]),
        "getPort" => (Func::GetPort, vec![m(vec![Ty::Url], S)]),
        "getEscapedPath" => (Func::GetEscapedPath, vec![m(vec![Ty::Url], S)]),
        "getQuery" => (Func::GetQuery, vec![m(vec![Ty::Url], Ty::map(S, list(S)))]),
        // The CEL standard library's timestamps and durations.
        "timestamp" => (
            Func::ToTimestamp,
            vec![g(vec![S], Ty::Timestamp), g(vec![Int], Ty::Timestamp), g(vec![Ty::Timestamp], Ty::Timestamp)],
        ),
        "duration" => (Func::ToDuration, vec![g(vec![S], Ty::Duration), g(vec![Ty::Duration], Ty::Duration)]),
        "getFullYear" | "getMonth" | "getDayOfYear" | "getDayOfMonth" | "getDate" | "getDayOfWeek" => {
            let field = match name {
                "getFullYear" => time::Field::FullYear,
                "getMonth" => time::Field::Month,
                "getDayOfYear" => time::Field::DayOfYear,
                "getDayOfMonth" => time::Field::DayOfMonth,
                "getDate" => time::Field::Date,
                _ => time::Field::DayOfWeek,
            };
            (Func::TimeField(field), vec![m(vec![Ty::Timestamp], Int), m(vec![Ty::Timestamp, S], Int)])
        }
        "getHours" | "getMinutes" | "getSeconds" | "getMilliseconds" => {
            let field = match name {
                "getHours" => time::Field::Hours,
                "getMinutes" => time::Field::Minutes,
                "getSeconds" => time::Field::Seconds,
                _ => time::Field::Milliseconds,
            };
            (
                Func::TimeField(field),
                vec![m(vec![Ty::Timestamp], Int), m(vec![Ty::Timestamp, S], Int), m(vec![Ty::Duration], Int)],
            )
        }
        // Kubernetes `library/format.go` (1.31+).
        "format.named" => (Func::FormatNamed, vec![g(vec![S], opt(Ty::Format))]),
        "validate" => (Func::Validate, vec![m(vec![Ty::Format, S], opt(list(S)))]),
        _ => match NamedFormat::by_function(name) {
            Some(f) => (Func::FormatConst(f), vec![g(vec![], Ty::Format)]),
            None => return None,
        },
    })
}

/// The element types `sort` (and the keys of `sortBy`) accept: cel-go `ext.Lists`
/// `comparableTypes`.
pub(crate) const COMPARABLE: [Ty; 8] =
    [Ty::Int, Ty::Uint, Ty::Double, Ty::Bool, Ty::Duration, Ty::Timestamp, Ty::String, Ty::Bytes];

/// Special result typing beyond the table: `min`/`max` return the element type.
pub(crate) fn refine_result(f: Func, args: &[Ty], result: Ty) -> Ty {
    match (f, args.first()) {
        (Func::Slice | Func::Sort | Func::Reverse | Func::Distinct, Some(t @ Ty::List(_)))
        | (Func::Or, Some(t @ Ty::Optional(_))) => t.clone(),
        (Func::Flatten, Some(Ty::List(inner))) if args.len() == 1 => match &**inner {
            t @ Ty::List(_) => t.clone(),
            _ => Ty::list(Ty::Dyn),
        },
        (Func::Min | Func::Max, Some(Ty::List(e))) => (**e).clone(),
        (Func::Dyn, _) => Ty::Dyn,
        (Func::OptValue, Some(Ty::Optional(t))) => (**t).clone(),
        (Func::OrValue, Some(Ty::Optional(t))) => args.get(1).and_then(|d| t.join(d)).unwrap_or(Ty::Dyn),
        (Func::OptionalOf | Func::OptionalOfNonZero, Some(t)) => Ty::Optional(Box::new(t.clone())),
        _ => result,
    }
}

pub(crate) fn ceil_mul(size: u64, factor: f64) -> u64 {
    let v = (size as f64 * factor).ceil();
    if v >= u64::MAX as f64 { u64::MAX } else { v as u64 }
}

/// What the cost of a list function depends on besides sizes.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Shape {
    /// The receiver is a list (`indexOf` on a list rather than a string).
    pub(crate) list_receiver: bool,
    /// The receiver's elements are strings or bytes of at most this size.
    pub(crate) str_elem: Option<u64>,
}

/// Cost of one call given the sizes of its arguments (receiver first), excluding the
/// cost of evaluating the arguments. The formulas are upstream's: cel-go
/// `checker/cost.go` (`startsWith`, `endsWith`, `contains`, `matches`, `strings.quote`,
/// conversions between strings and bytes; 1 for everything else) and Kubernetes
/// `k8s.io/apiserver/pkg/cel/library/cost.go` (`lowerAscii`, `upperAscii`, `substring`,
/// `trim`, `replace`, `split`, `join`, `find`, `findAll`, the list functions, the
/// quantity functions). Strings cost 0.1 per character, regexes 0.25 per pattern
/// character times the traversal. `sets.*` (not priced by either) is charged the
/// product of the list sizes.
pub(crate) fn call_cost(f: Func, sizes: &[u64], shape: Shape) -> u64 {
    let s = |i: usize| sizes.get(i).copied().unwrap_or(0);
    let t = |n: u64| ceil_mul(n, 0.1);
    let per_element = 1u64.saturating_add(shape.str_elem.map_or(0, t));
    match f {
        Func::Matches | Func::Find | Func::FindAll => t(s(0).saturating_add(1)).saturating_mul(ceil_mul(s(1), 0.25)),
        Func::Split | Func::Replace => ceil_mul(s(0), 0.2),
        Func::Join => {
            let n = s(0);
            let chars =
                n.saturating_mul(shape.str_elem.unwrap_or(0)).saturating_add(s(1).saturating_mul(n.saturating_sub(1)));
            t(chars)
        }
        Func::Contains => t(s(0)).saturating_mul(t(s(1))),
        Func::StartsWith | Func::EndsWith => t(s(1)),
        Func::IndexOf | Func::LastIndexOf | Func::IsSorted | Func::Sum | Func::Min | Func::Max
            if shape.list_receiver =>
        {
            s(0).saturating_mul(per_element)
        }
        // k8s `library/cost.go`: a receiver without an element type (`dyn`) is priced as
        // a string, 0.1 per unit of its size.
        Func::LowerAscii
        | Func::UpperAscii
        | Func::Trim
        | Func::Substring
        | Func::Quote
        | Func::Format
        | Func::Url
        | Func::ToBytes
        | Func::ToString
        | Func::IndexOf
        | Func::LastIndexOf
        | Func::IsSorted
        | Func::Sum
        | Func::Min
        | Func::Max => t(s(0)),
        Func::SetsContains | Func::SetsEquivalent | Func::SetsIntersects => s(0).saturating_mul(s(1)).max(1),
        // DRA's `draCostEstimator`: one comparison per value an attribute may hold.
        Func::Includes => MAX_ATTRIBUTE_VALUES as u64,
        // k8s `library/cost.go`: comparing two addresses of at most 16 bytes (0.1 per
        // byte, both sides), containsCIDR also masks (another 16 bytes, plus 1), and a
        // string argument is parsed first (0.1 per character; 0 for a typed argument,
        // whose size is 0 here).
        Func::ContainsIp => 4u64.saturating_add(t(s(1))),
        Func::ContainsCidr => 7u64.saturating_add(t(s(1))),
        // k8s `library/cost.go` `EstimateCallCost`: the string's traversal times a regex
        // of `MaxNameFormatRegexSize` (128) at 0.25 per character.
        Func::Validate => ceil_mul(t(s(1)), named_format::MAX_NAME_FORMAT_REGEX_SIZE as f64 * 0.25),
        _ => 1,
    }
}

/// Maximum size (characters or elements) of the result, for nested estimates, where
/// upstream's estimator states one; `None` where it does not.
///
/// cel-go's `checker/cost.go` (`costCall`, `computeSize`) keeps a call's result size
/// only when the function's estimate provides one (its own `functionCost` cases and
/// the estimators of `k8s.io/apiserver/pkg/cel/library/cost.go`); otherwise the size
/// is that of the result type, 1 for a scalar (`computeTypeSize`), and unknown
/// (`UnknownSizeEstimate`, `0..=math.MaxUint64`) for anything else. The compiler turns
/// `None` into that type-based size. Sizes that depend on more than the argument
/// sizes (`join`, `replace`, `split` with a limit, `string`/`bytes` conversions, `dyn`)
/// are worked out in `compile.rs`.
pub(crate) fn result_size(f: Func, sizes: &[u64]) -> Option<u64> {
    let s = |i: usize| sizes.get(i).copied().unwrap_or(0);
    match f {
        // k8s `library/cost.go`: `lowerAscii`, `upperAscii`, `substring`, `trim` keep
        // the receiver's size; `find` and `findAll` return at most one match (or
        // element) per character; `split` at most one element per character.
        Func::LowerAscii
        | Func::UpperAscii
        | Func::Trim
        | Func::Substring
        | Func::Find
        | Func::FindAll
        | Func::Split => Some(s(0)),
        // cel-go `ExtQuoteString`: every character escaped, plus the two quotes.
        Func::Quote => Some(s(0).saturating_mul(2).saturating_add(2)),
        _ => None,
    }
}

type R<'a> = Result<Value<'a>, EvalErrorKind>;

/// `isQuantity(s)`: whether apimachinery's `resource.ParseQuantity` accepts `s`.
///
/// Upstream parses any syntactically valid quantity, falling back to arbitrary
/// precision (`k8s.io/apimachinery/pkg/api/resource/quantity.go`) where schedkit's
/// [`Quantity`] reports `OutOfRange` (`quantity()` then builds a `bigqty`); such text
/// is therefore a quantity here too, even one too large for `quantity()` to build. An
/// exponent (`1e<n>`) must still fit Go's `strconv.ParseInt(_, 10, 64)` (`suffix.go`
/// `interpret`), or upstream refuses the suffix.
fn is_quantity(s: &str) -> bool {
    match Quantity::parse(s) {
        Ok(_) => true,
        Err(crate::model::QuantityError::OutOfRange { .. }) => {
            let number = s.trim_start_matches(['+', '-']).trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
            match number.strip_prefix(['e', 'E']) {
                Some(exp) if !exp.is_empty() => exp.parse::<i64>().is_ok(),
                _ => true,
            }
        }
        Err(_) => false,
    }
}

/// Kubernetes' run-time cost of a call that parses `s` (`quantity`, `isQuantity`,
/// `semver`, `isSemver`: `CallCost` in `k8s.io/apiserver/pkg/cel/library/cost.go`):
/// 0.1 per character, rounded up.
pub(crate) fn string_traversal_cost(s: &str) -> u64 {
    ceil_mul(s.chars().count() as u64, 0.1)
}

/// Most values of a list-type device attribute (`ResourceSliceMaxAttributeValuesPerDevice`,
/// `k8s.io/api/resource/v1`).
const MAX_ATTRIBUTE_VALUES: usize = 48;

/// DRA's `includes`: whether a list holds the value (looking at no more than
/// [`MAX_ATTRIBUTE_VALUES`] elements before failing), or whether a single value equals
/// it.
fn includes(target: &Value<'_>, value: &Value<'_>) -> Result<bool, EvalErrorKind> {
    let Value::List(items) = target else { return Ok(equals(target, value)) };
    for (i, item) in items.iter().enumerate() {
        if i >= MAX_ATTRIBUTE_VALUES {
            return Err(invalid(
                "includes",
                format!("'includes' function cannot be applied to lists longer than {MAX_ATTRIBUTE_VALUES} values"),
            ));
        }
        if equals(item, value) {
            return Ok(true);
        }
    }
    Ok(false)
}

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

fn idx(i: i64, what: &'static str) -> Result<usize, EvalErrorKind> {
    usize::try_from(i).map_err(|_| invalid(what, format!("index out of range: {i}")))
}

/// Applies `f` to `args` (receiver first for member calls). `name` is the source name,
/// for messages. `regex` is the precompiled pattern for `matches`/`find`/`findAll` when
/// the pattern was a constant.
#[expect(clippy::too_many_lines, reason = "one arm per function keeps dispatch in one place")]
pub(crate) fn call<'a>(f: Func, name: &'static str, args: &[Value<'a>], regex: Option<&Regex>) -> R<'a> {
    use Value as V;
    let a0 = args.first();
    let a1 = args.get(1);
    let a2 = args.get(2);
    let no = || overload(name, args);
    Ok(match (f, a0, a1, a2) {
        (Func::Size, Some(v), None, None) => V::Int(v.size().ok_or_else(no)? as i64),
        (Func::Contains, Some(V::Str(s)), Some(V::Str(t)), None) => V::Bool(s.contains(&**t)),
        (Func::StartsWith, Some(V::Str(s)), Some(V::Str(t)), None) => V::Bool(s.starts_with(&**t)),
        (Func::EndsWith, Some(V::Str(s)), Some(V::Str(t)), None) => V::Bool(s.ends_with(&**t)),
        (Func::Matches, Some(V::Str(s)), Some(V::Str(p)), None) => match regex {
            Some(re) => V::Bool(re.is_match(s)),
            None => V::Bool(compile_regex(p).map_err(|e| invalid("matches", e))?.is_match(s)),
        },
        (Func::Find, Some(V::Str(s)), Some(V::Str(p)), None) => {
            let owned;
            let re = if let Some(re) = regex {
                re
            } else {
                owned = compile_regex(p).map_err(|e| invalid("find", e))?;
                &owned
            };
            V::string(re.find(s).map_or(String::new(), |m| m.as_str().to_owned()))
        }
        (Func::FindAll, Some(V::Str(s)), Some(V::Str(p)), n) => {
            let limit = match n {
                None => -1,
                Some(V::Int(n)) => *n,
                Some(_) => return Err(no()),
            };
            let owned;
            let re = if let Some(re) = regex {
                re
            } else {
                owned = compile_regex(p).map_err(|e| invalid("findAll", e))?;
                &owned
            };
            let take = if limit < 0 { usize::MAX } else { limit as usize };
            let found: Vec<Value<'a>> = re.find_iter(s).take(take).map(|m| V::string(m.as_str().to_owned())).collect();
            V::List(Rc::new(found))
        }
        (Func::ToInt, Some(v), None, None) => V::Int(to_int(v).ok_or_else(|| match v {
            V::Int(_) | V::Uint(_) | V::Double(_) | V::Str(_) => invalid("int", "value out of range or not a number"),
            _ => no(),
        })?),
        (Func::ToUint, Some(v), None, None) => V::Uint(to_uint(v).ok_or_else(|| match v {
            V::Int(_) | V::Uint(_) | V::Double(_) | V::Str(_) => invalid("uint", "value out of range or not a number"),
            _ => no(),
        })?),
        (Func::ToDouble, Some(v), None, None) => V::Double(match v {
            V::Double(d) => *d,
            V::Int(i) => *i as f64,
            V::Uint(u) => *u as f64,
            V::Str(s) => parse_double(s).ok_or_else(|| invalid("double", format!("cannot parse {:?}", &**s)))?,
            _ => return Err(no()),
        }),
        (Func::ToString, Some(v), None, None) => match v {
            V::Str(_) => v.clone(),
            V::Int(i) => V::string(i.to_string()),
            V::Uint(u) => V::string(u.to_string()),
            V::Double(d) => V::string(format_double(*d)),
            V::Bool(b) => V::str(if *b { "true" } else { "false" }),
            V::Ip(ip) => V::string(net::ip_string(*ip)),
            V::Timestamp(t) => V::string(time::format_timestamp(*t)),
            V::Duration(d) => V::string(time::format_duration(*d)),
            V::Cidr(ip, bits) => V::string(net::cidr_string((*ip, *bits))),
            V::Bytes(b) => {
                V::string(String::from_utf8(b.to_vec()).map_err(|_| invalid("string", "bytes are not valid UTF-8"))?)
            }
            _ => return Err(no()),
        },
        (Func::ToBool, Some(v), None, None) => match v {
            V::Bool(_) => v.clone(),
            V::Str(s) => V::Bool(match &**s {
                "1" | "t" | "T" | "TRUE" | "true" | "True" => true,
                "0" | "f" | "F" | "FALSE" | "false" | "False" => false,
                other => return Err(invalid("bool", format!("cannot parse {other:?}"))),
            }),
            _ => return Err(no()),
        },
        (Func::ToBytes, Some(v), None, None) => match v {
            V::Bytes(_) => v.clone(),
            V::Str(s) => V::Bytes(Rc::from(s.as_bytes())),
            _ => return Err(no()),
        },
        (Func::Dyn, Some(v), None, None) => v.clone(),
        (Func::TypeOf, Some(v), None, None) => V::Type(v.type_name()),
        (Func::CharAt, Some(V::Str(s)), Some(V::Int(i)), None) => {
            let i = idx(*i, "charAt")?;
            let n = s.chars().count();
            if i > n {
                return Err(invalid("charAt", format!("index out of range: {i}")));
            }
            V::string(s.chars().nth(i).map(String::from).unwrap_or_default())
        }
        (Func::IndexOf | Func::LastIndexOf, Some(V::Str(s)), Some(V::Str(t)), off) => {
            let last = f == Func::LastIndexOf;
            let chars: Vec<char> = s.chars().collect();
            let pat: Vec<char> = t.chars().collect();
            let fname = if last { "lastIndexOf" } else { "indexOf" };
            let off = match off {
                None => None,
                Some(V::Int(o)) => {
                    let o = idx(*o, fname)?;
                    if o > chars.len() {
                        return Err(invalid(fname, format!("index out of range: {o}")));
                    }
                    Some(o)
                }
                Some(_) => return Err(no()),
            };
            V::Int(string_index(&chars, &pat, off, last))
        }
        (Func::IndexOf | Func::LastIndexOf, Some(V::List(l)), Some(x), None) => {
            let pos = if f == Func::IndexOf {
                l.iter().position(|e| equals(e, x))
            } else {
                l.iter().rposition(|e| equals(e, x))
            };
            V::Int(pos.map_or(-1, |p| p as i64))
        }
        (Func::LowerAscii, Some(V::Str(s)), None, None) => V::string(s.to_ascii_lowercase()),
        (Func::UpperAscii, Some(V::Str(s)), None, None) => V::string(s.to_ascii_uppercase()),
        (Func::Replace, Some(V::Str(s)), Some(V::Str(from)), Some(V::Str(to))) => {
            let n = match args.get(3) {
                None => -1,
                Some(V::Int(n)) => *n,
                Some(_) => return Err(no()),
            };
            V::string(if n < 0 { s.replace(&**from, to) } else { s.replacen(&**from, to, n as usize) })
        }
        (Func::Split, Some(V::Str(s)), Some(V::Str(sep)), n) => {
            let n = match n {
                None => -1,
                Some(V::Int(n)) => *n,
                Some(_) => return Err(no()),
            };
            V::List(Rc::new(split(s, sep, n)))
        }
        (Func::Substring, Some(V::Str(s)), Some(V::Int(start)), end) => {
            let chars: Vec<char> = s.chars().collect();
            let start = idx(*start, "substring")?;
            let end = match end {
                None => chars.len(),
                Some(V::Int(e)) => idx(*e, "substring")?,
                Some(_) => return Err(no()),
            };
            if start > end || end > chars.len() {
                return Err(invalid("substring", format!("invalid range {start}..{end}")));
            }
            V::string(chars[start..end].iter().collect())
        }
        (Func::Trim, Some(V::Str(s)), None, None) => V::string(s.trim().to_owned()),
        (Func::Quote, Some(V::Str(s)), None, None) => V::string(quote(s)),
        (Func::Join, Some(V::List(l)), sep, None) => {
            let sep: &str = match sep {
                None => "",
                Some(V::Str(s)) => s,
                Some(_) => return Err(no()),
            };
            let mut out = String::new();
            for (i, e) in l.iter().enumerate() {
                let V::Str(e) = e else { return Err(no()) };
                if i > 0 {
                    out.push_str(sep);
                }
                out.push_str(e);
            }
            V::string(out)
        }
        (Func::IsSorted, Some(V::List(l)), None, None) => {
            let mut sorted = true;
            for w in l.windows(2) {
                match compare(&w[0], &w[1]) {
                    Some(Some(Ordering::Greater)) => sorted = false,
                    Some(_) => {}
                    None => return Err(no()),
                }
            }
            V::Bool(sorted)
        }
        (Func::Sum, Some(V::List(l)), None, None) => sum(l).ok_or_else(no)??,
        (Func::Min | Func::Max, Some(V::List(l)), None, None) => {
            let want = if f == Func::Min { Ordering::Less } else { Ordering::Greater };
            let Some(first) = l.first() else {
                return Err(invalid(name, "list is empty"));
            };
            let mut best = first.clone();
            for e in &l[1..] {
                match compare(e, &best) {
                    Some(Some(o)) if o == want => best = e.clone(),
                    Some(_) => {}
                    None => return Err(no()),
                }
            }
            best
        }
        (Func::Quantity, Some(V::Str(s)), None, None) => {
            match bigqty::parse_quantity(s).map_err(|e| invalid("quantity", e))? {
                Ok((q, held)) => V::Quantity(q, held),
                Err(big) => V::BigQuantity(Rc::new(big)),
            }
        }
        (Func::IsQuantity, Some(V::Str(s)), None, None) => V::Bool(is_quantity(s)),
        (Func::Includes, Some(target), Some(value), None) => V::Bool(includes(target, value)?),
        (Func::Sign, Some(V::Quantity(q, _)), None, None) => V::Int(i64::from(q.sign())),
        (Func::Sign, Some(V::BigQuantity(q)), None, None) => V::Int(q.sign()),
        (Func::IsGreaterThan | Func::IsLessThan | Func::CompareTo, Some(a), Some(b), None) => {
            let o = match (a, b) {
                (V::Quantity(x, _), V::Quantity(y, _)) => x.cmp(y),
                (V::Semver(x), V::Semver(y)) => (**x).cmp(&**y),
                _ => match (any_quantity(a), any_quantity(b)) {
                    (Some(x), Some(y)) => x.cmp(y),
                    _ => return Err(no()),
                },
            };
            match f {
                Func::IsGreaterThan => V::Bool(o == Ordering::Greater),
                Func::IsLessThan => V::Bool(o == Ordering::Less),
                _ => V::Int(o as i64),
            }
        }
        (Func::AsApproximateFloat, Some(V::Quantity(q, held)), None, None) => V::Double(held.to_f64(q)),
        (Func::AsApproximateFloat, Some(V::BigQuantity(q)), None, None) => V::Double(q.to_f64()),
        (Func::AsInteger, Some(V::Quantity(q, held)), None, None) => {
            V::Int(held.as_i64(q).ok_or_else(|| invalid("asInteger", "cannot convert value to integer"))?)
        }
        (Func::AsInteger, Some(V::BigQuantity(q)), None, None) => {
            V::Int(q.as_i64().ok_or_else(|| invalid("asInteger", "cannot convert value to integer"))?)
        }
        (Func::IsInteger, Some(V::Quantity(q, held)), None, None) => V::Bool(held.as_i64(q).is_some()),
        (Func::IsInteger, Some(V::BigQuantity(q)), None, None) => V::Bool(q.as_i64().is_some()),
        (Func::Add | Func::Sub, Some(V::Quantity(q, held)), Some(V::Quantity(..) | V::Int(_)), None) => {
            // `add(int)` adds `resource.NewQuantity(int)`: an `int64Amount` of scale 0.
            let other = match a1 {
                Some(V::Quantity(o, o_held)) => (*o, *o_held),
                Some(V::Int(i)) => (Quantity::from_int(*i), Held::Int(0)),
                _ => return Err(no()),
            };
            let subtract = f == Func::Sub;
            let r = if subtract { q.checked_sub(&other.0) } else { q.checked_add(&other.0) };
            match r {
                Some(r) => V::Quantity(r, Held::sum((q, *held), (&other.0, other.1), subtract)),
                // Upstream continues in arbitrary precision where int64 overflows.
                None => V::BigQuantity(Rc::new(
                    AnyQuantity::Small(q, *held).add(AnyQuantity::Small(&other.0, other.1), subtract),
                )),
            }
        }
        (Func::Add | Func::Sub, Some(a), Some(b), None) => {
            let small;
            let y = match b {
                V::Int(i) => {
                    small = Quantity::from_int(*i);
                    Some(AnyQuantity::Small(&small, Held::Int(0)))
                }
                other => any_quantity(other),
            };
            match (any_quantity(a), y) {
                (Some(x), Some(y)) => V::BigQuantity(Rc::new(x.add(y, f == Func::Sub))),
                _ => return Err(no()),
            }
        }
        (Func::Mul, Some(V::Quantity(q, held)), Some(V::Int(k)), None) => match q.checked_mul_int(*k) {
            Some(r) => V::Quantity(r, Held::product(q, *held, *k)),
            // Upstream continues in arbitrary precision where int64 overflows.
            None => V::BigQuantity(Rc::new(AnyQuantity::Small(q, *held).mul(*k))),
        },
        (Func::Mul, Some(V::BigQuantity(q)), Some(V::Int(k)), None) => V::BigQuantity(Rc::new(q.mul_int(*k))),
        (Func::Semver | Func::IsSemver, Some(V::Str(s)), norm, None) => {
            let normalize = match norm {
                None => false,
                Some(V::Bool(b)) => *b,
                Some(_) => return Err(no()),
            };
            let parsed = if normalize { Semver::parse_normalized(s) } else { Semver::parse(s) };
            if f == Func::IsSemver {
                V::Bool(parsed.is_ok())
            } else {
                V::Semver(Ver::Shared(Rc::new(parsed.map_err(|e| invalid("semver", e.to_string()))?)))
            }
        }
        (Func::Major, Some(V::Semver(v)), None, None) => V::Int(v.major as i64),
        (Func::Minor, Some(V::Semver(v)), None, None) => V::Int(v.minor as i64),
        (Func::Patch, Some(V::Semver(v)), None, None) => V::Int(v.patch as i64),
        (Func::SetsContains, Some(V::List(a)), Some(V::List(b)), None) => {
            V::Bool(b.iter().all(|x| a.iter().any(|y| equals(x, y))))
        }
        (Func::SetsEquivalent, Some(V::List(a)), Some(V::List(b)), None) => V::Bool(
            b.iter().all(|x| a.iter().any(|y| equals(x, y))) && a.iter().all(|x| b.iter().any(|y| equals(x, y))),
        ),
        (Func::SetsIntersects, Some(V::List(a)), Some(V::List(b)), None) => {
            V::Bool(b.iter().any(|x| a.iter().any(|y| equals(x, y))))
        }
        (Func::HasValue, Some(V::Optional(o)), None, None) => V::Bool(o.is_some()),
        (Func::OptValue, Some(V::Optional(o)), None, None) => match o {
            Some(v) => (**v).clone(),
            None => return Err(invalid("value", "optional.none() dereference")),
        },
        (Func::OrValue, Some(V::Optional(o)), Some(d), None) => match o {
            Some(v) => (**v).clone(),
            None => d.clone(),
        },
        (Func::Or, Some(V::Optional(o)), Some(other @ V::Optional(_)), None) => {
            if o.is_some() {
                V::Optional(o.clone())
            } else {
                other.clone()
            }
        }
        (Func::OptionalOf, Some(v), None, None) => V::Optional(Some(Rc::new(v.clone()))),
        (Func::OptionalNone, None, None, None) => V::Optional(None),
        (Func::OptionalOfNonZero, Some(v), None, None) => {
            let zero = match v {
                V::Null => true,
                V::Bool(b) => !b,
                V::Int(i) => *i == 0,
                V::Uint(u) => *u == 0,
                V::Double(d) => *d == 0.0,
                V::Str(s) => s.is_empty(),
                V::Bytes(b) => b.is_empty(),
                V::List(l) => l.is_empty(),
                V::Map(m) => m.is_empty(),
                _ => false,
            };
            V::Optional(if zero { None } else { Some(Rc::new(v.clone())) })
        }
        (Func::Slice, Some(V::List(l)), Some(V::Int(start)), Some(V::Int(end))) => {
            let (start, end) = (*start, *end);
            if start < 0 || end < 0 {
                return Err(invalid("slice", format!("cannot slice({start}, {end}), negative indexes not supported")));
            }
            if start > end {
                return Err(invalid(
                    "slice",
                    format!("cannot slice({start}, {end}), start index must be less than or equal to end index"),
                ));
            }
            if end as u64 > l.len() as u64 {
                return Err(invalid("slice", format!("cannot slice({start}, {end}), list is length {}", l.len())));
            }
            V::List(Rc::new(l[start as usize..end as usize].to_vec()))
        }
        (Func::Flatten, Some(V::List(l)), depth, None) => {
            let depth = match depth {
                None => 1,
                Some(V::Int(d)) if *d >= 0 => *d,
                Some(V::Int(_)) => return Err(invalid("flatten", "level must be non-negative")),
                Some(_) => return Err(no()),
            };
            let mut out = Vec::with_capacity(l.len());
            flatten_into(l, depth, &mut out);
            V::List(Rc::new(out))
        }
        (Func::Sort, Some(V::List(l)), None, None) => {
            let order = sort_order(l)?;
            V::List(Rc::new(order.into_iter().map(|i| l[i].clone()).collect()))
        }
        (Func::SortByKeys, Some(V::List(l)), Some(V::List(keys)), None) => {
            if l.len() != keys.len() {
                return Err(invalid(
                    "sortBy",
                    format!(
                        "expected a list of the same size as the associated keys list, but got {} and {} elements respectively",
                        l.len(),
                        keys.len()
                    ),
                ));
            }
            let order = sort_order(keys)?;
            V::List(Rc::new(order.into_iter().map(|i| l[i].clone()).collect()))
        }
        (Func::ListsRange, Some(V::Int(n)), None, None) => {
            if *n < 0 {
                return Err(invalid("lists.range", format!("size must be non-negative, got {n}")));
            }
            if *n > MAX_RANGE {
                return Err(invalid("lists.range", format!("size {n} exceeds maximum allowed ({MAX_RANGE})")));
            }
            V::List(Rc::new((0..*n).map(V::Int).collect()))
        }
        (Func::Reverse, Some(V::List(l)), None, None) => V::List(Rc::new(l.iter().rev().cloned().collect())),
        (Func::Distinct, Some(V::List(l)), None, None) => {
            let mut out: Vec<Value<'a>> = Vec::with_capacity(l.len());
            for x in l.iter() {
                if !out.iter().any(|y| equals(x, y)) {
                    out.push(x.clone());
                }
            }
            V::List(Rc::new(out))
        }
        (Func::Format, Some(V::Str(pattern)), Some(V::List(l)), None) => V::string(super::format::format(pattern, l)?),
        (Func::Ip, Some(V::Str(s)), None, None) => V::Ip(net::parse_ip(s).map_err(|m| invalid("ip", m))?),
        (Func::Ip, Some(V::Cidr(ip, _)), None, None) => V::Ip(*ip),
        (Func::IsIp, Some(V::Str(s)), None, None) => V::Bool(net::parse_ip(s).is_ok()),
        (Func::IpIsCanonical, Some(V::Str(s)), None, None) => {
            let ip = net::parse_ip(s).map_err(|m| invalid("ip.isCanonical", m))?;
            V::Bool(net::ip_string(ip) == **s)
        }
        (Func::Family, Some(V::Ip(ip)), None, None) => V::Int(if ip.is_ipv4() { 4 } else { 6 }),
        (Func::IsUnspecified, Some(V::Ip(ip)), None, None) => V::Bool(net::is_unspecified(*ip)),
        (Func::IsLoopback, Some(V::Ip(ip)), None, None) => V::Bool(net::is_loopback(*ip)),
        (Func::IsLinkLocalMulticast, Some(V::Ip(ip)), None, None) => V::Bool(net::is_link_local_multicast(*ip)),
        (Func::IsLinkLocalUnicast, Some(V::Ip(ip)), None, None) => V::Bool(net::is_link_local_unicast(*ip)),
        (Func::IsGlobalUnicast, Some(V::Ip(ip)), None, None) => V::Bool(net::is_global_unicast(*ip)),
        (Func::Cidr, Some(V::Str(s)), None, None) => {
            let (ip, bits) = net::parse_cidr(s).map_err(|m| invalid("cidr", m))?;
            V::Cidr(ip, bits)
        }
        (Func::IsCidr, Some(V::Str(s)), None, None) => V::Bool(net::parse_cidr(s).is_ok()),
        (Func::ContainsIp, Some(V::Cidr(ip, bits)), Some(other), None) => {
            let other = match other {
                V::Ip(o) => *o,
                V::Str(s) => net::parse_ip(s).map_err(|m| invalid("containsIP", m))?,
                _ => return Err(no()),
            };
            V::Bool(net::contains_ip((*ip, *bits), other))
        }
        (Func::ContainsCidr, Some(V::Cidr(ip, bits)), Some(other), None) => {
            let other = match other {
                V::Cidr(o, b) => (*o, *b),
                V::Str(s) => net::parse_cidr(s).map_err(|m| invalid("containsCIDR", m))?,
                _ => return Err(no()),
            };
            V::Bool(net::contains_cidr((*ip, *bits), other))
        }
        (Func::Masked, Some(V::Cidr(ip, bits)), None, None) => V::Cidr(net::mask(*ip, *bits), *bits),
        (Func::PrefixLength, Some(V::Cidr(_, bits)), None, None) => V::Int(i64::from(*bits)),
        (Func::ToTimestamp, Some(v), None, None) => V::Timestamp(match v {
            V::Timestamp(t) => *t,
            V::Str(s) => time::parse_timestamp(s).map_err(|m| invalid("timestamp", m))?,
            V::Int(secs) => {
                time::check_timestamp(i128::from(*secs) * 1_000_000_000).map_err(|m| invalid("timestamp", m))?
            }
            _ => return Err(no()),
        }),
        (Func::ToDuration, Some(v), None, None) => V::Duration(match v {
            V::Duration(d) => *d,
            V::Str(s) => time::parse_duration(s).map_err(|m| invalid("duration", m))?,
            _ => return Err(no()),
        }),
        (Func::TimeField(field), Some(V::Timestamp(t)), tz, None) => {
            let offset = match tz {
                None => 0,
                Some(V::Str(z)) => time::zone_offset(z, *t).map_err(|m| invalid(name, m))?,
                Some(_) => return Err(no()),
            };
            V::Int(time::timestamp_field(*t, offset, field))
        }
        (Func::TimeField(field), Some(V::Duration(d)), None, None) => {
            V::Int(time::duration_field(*d, field).ok_or_else(no)?)
        }
        (Func::Url, Some(V::Str(s)), None, None) => V::Url(Rc::new(url::parse_url(s).map_err(|m| invalid("url", m))?)),
        (Func::IsUrl, Some(V::Str(s)), None, None) => V::Bool(url::is_url(s)),
        (Func::FormatNamed, Some(V::Str(s)), None, None) => {
            V::Optional(NamedFormat::named(s).map(|f| Rc::new(V::Format(f))))
        }
        (Func::FormatConst(f), None, None, None) => V::Format(f),
        (Func::Validate, Some(V::Format(f)), Some(V::Str(s)), None) => {
            let errs = f.validate(s);
            V::Optional(
                (!errs.is_empty()).then(|| Rc::new(V::List(Rc::new(errs.into_iter().map(V::string).collect())))),
            )
        }
        (Func::GetScheme, Some(V::Url(u)), None, None) => V::string(u.scheme().to_owned()),
        (Func::GetHost, Some(V::Url(u)), None, None) => V::string(u.host().to_owned()),
        (Func::GetHostname, Some(V::Url(u)), None, None) => V::string(u.hostname().to_owned()),
        (Func::GetPort, Some(V::Url(u)), None, None) => V::string(u.port().to_owned()),
        (Func::GetEscapedPath, Some(V::Url(u)), None, None) => V::string(u.escaped_path()),
        (Func::GetQuery, Some(V::Url(u)), None, None) => V::Map(Rc::new(
            u.query()
                .into_iter()
                .map(|(k, vs)| (V::string(k), V::List(Rc::new(vs.into_iter().map(V::string).collect()))))
                .collect(),
        )),
        _ => return Err(no()),
    })
}

/// Runtime cost of the IP and CIDR functions (k8s `library/cost.go` `CallCost`):
/// parsing traverses the string (0.1 per character, 0.2 for `ip.isCanonical`, which
/// also prints it), `containsIP`/`containsCIDR` compare values whose size counts as 1,
/// accessors cost 1.
pub(crate) fn net_runtime_cost(f: Func, args: &[Value<'_>]) -> u64 {
    let len = |i: usize| match args.get(i) {
        Some(Value::Str(s)) => s.chars().count() as u64,
        _ => 0,
    };
    let t = |n: u64| ceil_mul(n, 0.1);
    match f {
        Func::Ip if matches!(args.first(), Some(Value::Str(_))) => t(len(0)),
        Func::IsIp | Func::Cidr | Func::IsCidr => t(len(0)),
        Func::IpIsCanonical => ceil_mul(len(0), 0.2),
        Func::ContainsIp => 1 + t(len(1)),
        Func::ContainsCidr => 3 + t(len(1)),
        _ => 1,
    }
}

/// Largest `lists.range` (cel-go `maxRangeSize`).
const MAX_RANGE: i64 = 10_000_000;

/// Appends the elements of `l` to `out`, descending `depth` levels into nested lists.
fn flatten_into<'a>(l: &[Value<'a>], depth: i64, out: &mut Vec<Value<'a>>) {
    for x in l {
        match x {
            Value::List(inner) if depth > 0 => flatten_into(inner, depth - 1, out),
            other => out.push(other.clone()),
        }
    }
}

/// The permutation that sorts `keys` (stable), for `sort` and `sortBy`. As cel-go's
/// `sortListByAssociatedKeys`: the keys must be of one comparable type (int, uint,
/// double, bool, string or bytes here).
fn sort_order(keys: &[Value<'_>]) -> Result<Vec<usize>, EvalErrorKind> {
    let Some(first) = keys.first() else {
        return Ok(Vec::new());
    };
    if !matches!(
        first,
        Value::Int(_)
            | Value::Uint(_)
            | Value::Double(_)
            | Value::Bool(_)
            | Value::Str(_)
            | Value::Bytes(_)
            | Value::Timestamp(_)
            | Value::Duration(_)
    ) {
        return Err(invalid("sort", "list elements must be comparable"));
    }
    if keys.iter().any(|k| std::mem::discriminant(k) != std::mem::discriminant(first)) {
        return Err(invalid("sort", "list elements must have the same type"));
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    order.sort_by(|&i, &j| compare(&keys[i], &keys[j]).flatten().unwrap_or(Ordering::Equal));
    Ok(order)
}

/// Runtime cost of the `ext.Lists` functions, from their inputs (cel-go `ext/lists.go`
/// cost trackers: the result or input size times a factor, plus 1 for the call and 10
/// for the new list). Charged before the call, so an oversized `lists.range` or
/// `sort` stops at the budget instead of allocating.
pub(crate) fn list_ext_cost(f: Func, args: &[Value<'_>]) -> u64 {
    let len = |i: usize| match args.get(i) {
        Some(Value::List(l)) => l.len() as u64,
        _ => 0,
    };
    let int = |i: usize| match args.get(i) {
        Some(Value::Int(n)) => Some(*n),
        _ => None,
    };
    let self_compare = |i: usize| {
        let n = len(i);
        let strings =
            matches!(args.get(i), Some(Value::List(l)) if matches!(l.first(), Some(Value::Str(_) | Value::Bytes(_))));
        let factor = if strings { 2.1 } else { 2.0 };
        let v = n.saturating_mul(n) as f64 * factor;
        if v >= u64::MAX as f64 { u64::MAX } else { v as u64 }
    };
    let body = match f {
        Func::ListsRange => int(0).map_or(0, |n| u64::try_from(n).unwrap_or(0)),
        Func::Reverse => len(0),
        Func::Slice => match (int(1), int(2)) {
            (Some(a), Some(b)) if 0 <= a && a <= b && (b as u64) <= len(0) => (b - a) as u64,
            _ => 0,
        },
        Func::Flatten => {
            let depth = if args.len() > 1 { int(1).map_or(0, |d| u64::try_from(d).unwrap_or(0)) } else { 1 };
            depth.saturating_mul(len(0))
        }
        Func::Distinct | Func::Sort => self_compare(0),
        Func::SortByKeys => self_compare(1),
        _ => return 1,
    };
    body.saturating_add(11)
}

fn sum<'a>(l: &[Value<'a>]) -> Option<R<'a>> {
    match l.first() {
        None => Some(Ok(Value::Int(0))),
        Some(Value::Int(_)) => {
            let mut acc: i64 = 0;
            for e in l {
                let Value::Int(x) = e else { return None };
                match acc.checked_add(*x) {
                    Some(v) => acc = v,
                    None => return Some(Err(EvalErrorKind::Overflow("sum"))),
                }
            }
            Some(Ok(Value::Int(acc)))
        }
        Some(Value::Uint(_)) => {
            let mut acc: u64 = 0;
            for e in l {
                let Value::Uint(x) = e else { return None };
                match acc.checked_add(*x) {
                    Some(v) => acc = v,
                    None => return Some(Err(EvalErrorKind::Overflow("sum"))),
                }
            }
            Some(Ok(Value::Uint(acc)))
        }
        Some(Value::Double(_)) => {
            let mut acc = 0.0;
            for e in l {
                let Value::Double(x) = e else { return None };
                acc += x;
            }
            Some(Ok(Value::Double(acc)))
        }
        _ => None,
    }
}

fn string_index(chars: &[char], pat: &[char], off: Option<usize>, last: bool) -> i64 {
    let n = chars.len();
    let k = pat.len();
    if k > n {
        return -1;
    }
    let hit = |i: usize| chars[i..i + k] == *pat;
    let found = if last {
        let hi = off.unwrap_or(n).min(n - k);
        (0..=hi).rev().find(|&i| hit(i))
    } else {
        let lo = off.unwrap_or(0);
        (lo..=n - k).find(|&i| hit(i))
    };
    found.map_or(-1, |i| i as i64)
}

fn split<'a>(s: &str, sep: &str, n: i64) -> Vec<Value<'a>> {
    if n == 0 {
        return Vec::new();
    }
    let parts: Vec<String> = if sep.is_empty() {
        // Go's strings.Split with an empty separator splits into characters.
        let chars: Vec<char> = s.chars().collect();
        if n > 0 && (n as usize) < chars.len() {
            let k = n as usize - 1;
            let mut v: Vec<String> = chars[..k].iter().map(char::to_string).collect();
            v.push(chars[k..].iter().collect());
            v
        } else {
            chars.iter().map(char::to_string).collect()
        }
    } else if n < 0 {
        s.split(sep).map(str::to_owned).collect()
    } else {
        s.splitn(n as usize, sep).map(str::to_owned).collect()
    };
    parts.into_iter().map(Value::string).collect()
}

fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        if !push_c_escape(&mut out, c) {
            out.push(c);
        }
    }
    out.push('"');
    out
}

fn to_int(v: &Value<'_>) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Uint(u) => i64::try_from(*u).ok(),
        Value::Double(d) => {
            // cel-go rejects values that do not fit strictly inside the int64 range.
            (d.is_finite() && *d > -9_223_372_036_854_775_808.0 && *d < 9_223_372_036_854_775_807.0)
                .then(|| d.trunc() as i64)
        }
        Value::Str(s) => s.parse().ok(),
        // Unix seconds, rounded towards negative infinity as Go's `Time.Unix`.
        Value::Timestamp(t) => i64::try_from(t.div_euclid(1_000_000_000)).ok(),
        _ => None,
    }
}

fn to_uint(v: &Value<'_>) -> Option<u64> {
    match v {
        Value::Uint(u) => Some(*u),
        Value::Int(i) => u64::try_from(*i).ok(),
        Value::Double(d) => (d.is_finite() && *d > -1.0 && *d < 18_446_744_073_709_551_615.0).then(|| d.trunc() as u64),
        Value::Str(s) => s.parse().ok(),
        _ => None,
    }
}

fn parse_double(s: &str) -> Option<f64> {
    match s {
        "NaN" => Some(f64::NAN),
        "Infinity" | "+Infinity" | "inf" | "+inf" => Some(f64::INFINITY),
        "-Infinity" | "-inf" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}
