//! Nesting at the depth limit: every recursive shape of expression compiles and
//! evaluates on a 2 MiB thread stack in a debug build, and one level more is refused
//! with `SelectorError::TooDeep`, never a stack overflow.
//!
//! The limit is cel-go's default parser recursion limit (`maxRecursionDepth` 250 in
//! `parser/options.go`), which the Kubernetes CEL environment keeps.

use schedkit::selector::{Device, Limits, MAX_EXPRESSION_LENGTH, MAX_NESTING_DEPTH, Selector, SelectorError};

/// A named shape of expression, as a function of its nesting count.
type Shape = (&'static str, fn(usize) -> String);

/// Each shape that nests.
fn shapes() -> Vec<Shape> {
    vec![
        ("parentheses", |n| format!("{}true{}", "(".repeat(n), ")".repeat(n))),
        ("negation", |n| format!("{}true{}", "!(".repeat(n), ")".repeat(n))),
        ("unary minus", |n| format!("{}1{} != 0", "-(".repeat(n), ")".repeat(n))),
        ("+ chain", |n| vec!["1"; n].join(" + ") + " > 0"),
        ("- chain", |n| vec!["1"; n].join(" - ") + " < 0"),
        ("string + chain", |n| vec!["'a'"; n].join(" + ") + " != ''"),
        ("nested lists", |n| format!("{}1{}.size() == 1", "[".repeat(n), "]".repeat(n))),
        ("nested maps", |n| format!("{}1{}.size() == 1", "{1: ".repeat(n), "}".repeat(n))),
        ("nested calls", |n| format!("{}1{} == 1", "int(".repeat(n), ")".repeat(n))),
        ("nested dyn", |n| format!("{}true{}", "dyn(".repeat(n), ")".repeat(n))),
        ("method chain", |n| format!("'A'{} == 'a'", ".lowerAscii()".repeat(n))),
        ("ternaries (then)", |n| format!("{}true{}", "true ? (".repeat(n), ") : false".repeat(n))),
        ("ternaries (else)", |n| format!("{}true", "false ? false : ".repeat(n))),
        ("member chain", |n| format!("device.attributes['x']{} == 1", ".a".repeat(n))),
        ("index chain", |n| format!("device.attributes['x']{} == 1", "['a']".repeat(n))),
        ("nested index", |n| format!("{}0{} == 0", "[0][".repeat(n), "]".repeat(n))),
        ("nested macros", |n| format!("{}true{}", "[1].all(x, ".repeat(n), ")".repeat(n))),
        ("nested exists", |n| format!("{}true{}", "[1].exists(x, ".repeat(n), ")".repeat(n))),
        ("nested map macros", |n| format!("{}1{}.size() == 1", "[1].map(x, ".repeat(n), ")".repeat(n))),
        ("nested bind", |n| format!("{}true{}", "cel.bind(x, 1, ".repeat(n), ")".repeat(n))),
        ("optional chain", |n| format!("device.attributes['x']{}.hasValue()", ".?a".repeat(n))),
        ("type error over a deep tree", |n| format!("{}1{} + 'a' == 1", "[".repeat(n), "]".repeat(n))),
        ("in chain", |n| format!("{}true{}", "[true] == [(".repeat(n), ")]".repeat(n))),
    ]
}

/// Shapes that stay shallow however long they get: runs of `!` or `-` collapse, and
/// chains of `&&` or `||` are balanced (as cel-go's parser does).
fn shallow_shapes() -> Vec<Shape> {
    vec![
        ("! run", |n| format!("{}true", "!".repeat(n))),
        ("- run", |n| format!("{}1 != 0", "-".repeat(n))),
        ("&& chain", |n| vec!["device.driver == 'x'"; n].join(" && ")),
        ("|| chain", |n| vec!["device.driver == 'x'"; n].join(" || ")),
    ]
}

fn too_deep(src: &str) -> bool {
    matches!(Selector::compile(src), Err(SelectorError::TooDeep { limit: MAX_NESTING_DEPTH }))
}

/// The largest count whose expression the depth limit accepts.
fn deepest(f: fn(usize) -> String) -> usize {
    let refused = |n: usize| {
        matches!(Selector::compile(&f(n)), Err(SelectorError::TooDeep { .. } | SelectorError::TooLong { .. }))
    };
    let (mut lo, mut hi) = (1, 4 * MAX_NESTING_DEPTH);
    assert!(!refused(lo) && refused(hi));
    while hi - lo > 1 {
        let mid = usize::midpoint(lo, hi);
        if refused(mid) { hi = mid } else { lo = mid }
    }
    lo
}

#[test]
fn limit_is_upstreams() {
    assert_eq!(MAX_NESTING_DEPTH, 250);
    assert_eq!(Limits::default().max_depth, 250);
}

#[test]
fn every_shape_fits_a_small_stack_at_the_limit() {
    let run = || {
        let device = Device::new("d", "x");
        for (name, f) in shapes() {
            let n = deepest(f);
            let src = f(n);
            match Selector::compile(&src) {
                Ok(sel) => {
                    let _ = sel.matches(&device);
                }
                // The message prints the deep tree (shortened).
                Err(e @ SelectorError::Type { .. }) if name.starts_with("type error") => {
                    assert!(e.to_string().contains("no matching overload"), "{e}");
                }
                Err(e) => panic!("{name} at {n}: {e}"),
            }
            assert!(too_deep(&f(n + 1)), "{name}");
        }
    };
    std::thread::Builder::new().stack_size(2 << 20).spawn(run).unwrap().join().unwrap();
}

#[test]
fn shallow_shapes_compile_up_to_the_length_limit() {
    let run = || {
        let device = Device::new("d", "x");
        for (name, f) in shallow_shapes() {
            let n = (1..=MAX_EXPRESSION_LENGTH).take_while(|&n| f(n).len() <= MAX_EXPRESSION_LENGTH).last().unwrap();
            let sel = Selector::compile(&f(n)).unwrap_or_else(|e| panic!("{name} at {n}: {e}"));
            let _ = sel.matches(&device);
        }
    };
    std::thread::Builder::new().stack_size(2 << 20).spawn(run).unwrap().join().unwrap();
}

#[test]
fn the_limit_can_be_lowered() {
    let limits = Limits { max_depth: 10, ..Limits::default() };
    let src = |n: usize| format!("{}true{}", "(".repeat(n), ")".repeat(n));
    assert!(Selector::compile_with(&src(9), limits).is_ok());
    assert_eq!(Selector::compile_with(&src(10), limits).unwrap_err(), SelectorError::TooDeep { limit: 10 });
}
