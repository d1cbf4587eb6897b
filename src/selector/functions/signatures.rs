//! The type signatures of the environment's functions, for the checker: each name's
//! overloads and the result typing the table alone cannot express.

use super::Func;
use crate::selector::named_format::NamedFormat;
use crate::selector::time;
use crate::selector::types::Ty;

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
