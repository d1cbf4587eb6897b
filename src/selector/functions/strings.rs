//! cel-go's `ext.Strings` (version 2, `format` included), the Kubernetes regex
//! library (`find`, `findAll`) and the Kubernetes format library (`format.named`,
//! `validate`).

use std::rc::Rc;

use regex::Regex;

use super::{Func, R, compile_regex, invalid, overload};
use crate::selector::error::EvalErrorKind;
use crate::selector::format;
use crate::selector::named_format::NamedFormat;
use crate::selector::text::push_c_escape;
use crate::selector::value::Value;

/// Applies a string, regex or named-format function (see [`super::call`]).
pub(super) fn call<'a>(f: Func, name: &'static str, args: &[Value<'a>], regex: Option<&Regex>) -> R<'a> {
    use Value as V;
    let a0 = args.first();
    let a1 = args.get(1);
    let a2 = args.get(2);
    let no = || overload(name, args);
    Ok(match (f, a0, a1, a2) {
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
        (Func::Format, Some(V::Str(pattern)), Some(V::List(l)), None) => V::string(format::format(pattern, l)?),
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
        _ => return Err(no()),
    })
}

fn idx(i: i64, what: &'static str) -> Result<usize, EvalErrorKind> {
    usize::try_from(i).map_err(|_| invalid(what, format!("index out of range: {i}")))
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
