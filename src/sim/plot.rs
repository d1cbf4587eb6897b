//! The SVG plot of a run: allocated GPU against arrived demand, one line per policy (a
//! handful of SVG elements written by hand).

use std::fmt::Write as _;

use super::experiment::PolicyResult;

/// Line colours, one per policy in order (cycled).
const COLORS: [&str; 6] = ["#7f7f7f", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#d62728"];

/// An SVG plot of `results`' curves: allocated GPU (% of capacity) against arrived GPU
/// demand (0..=130% of capacity), one line per policy, the legend giving each policy's
/// allocation at 130%. Plain SVG elements, no plotting crate.
pub fn allocation_svg(results: &[PolicyResult]) -> String {
    let (width, height, left, right, top, bottom) = (720.0, 480.0, 60.0, 170.0, 20.0, 50.0);
    let (pw, ph) = (width - left - right, height - top - bottom);
    let px = |v: f64| left + v / 130.0 * pw;
    let py = |v: f64| top + ph - v / 100.0 * ph;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{width}" height="{height}" fill="white"/>"#);
    for v in (0..=130).step_by(10) {
        let xv = px(f64::from(v));
        let _ = writeln!(s, r##"<line x1="{xv}" y1="{top}" x2="{xv}" y2="{}" stroke="#eee"/>"##, top + ph);
        let _ = writeln!(s, r#"<text x="{xv}" y="{}" text-anchor="middle">{v}</text>"#, top + ph + 16.0);
    }
    for v in (0..=100).step_by(10) {
        let yv = py(f64::from(v));
        let _ = writeln!(s, r##"<line x1="{left}" y1="{yv}" x2="{}" y2="{yv}" stroke="#eee"/>"##, left + pw);
        let _ = writeln!(s, r#"<text x="{}" y="{}" text-anchor="end">{v}</text>"#, left - 6.0, yv + 4.0);
    }
    let _ = writeln!(
        s,
        r##"<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#bbb" stroke-dasharray="4 4"/>"##,
        px(0.0),
        py(0.0),
        px(100.0),
        py(100.0)
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle">arrived GPU demand (% of capacity)</text>"#,
        left + pw / 2.0,
        height - 10.0
    );
    let _ = writeln!(
        s,
        r#"<text transform="translate(16 {}) rotate(-90)" text-anchor="middle">allocated GPU (% of capacity)</text>"#,
        top + ph / 2.0
    );
    for (i, res) in results.iter().enumerate() {
        let color = COLORS[i % COLORS.len()];
        let pts: Vec<String> =
            res.curve.iter().enumerate().map(|(k, v)| format!("{:.1},{:.1}", px(k as f64), py(*v))).collect();
        let _ = writeln!(s, r#"<polyline fill="none" stroke="{color}" stroke-width="2" points="{}"/>"#, pts.join(" "));
        let ly = top + 20.0 + i as f64 * 20.0;
        let _ = writeln!(
            s,
            r#"<line x1="{}" y1="{ly}" x2="{}" y2="{ly}" stroke="{color}" stroke-width="3"/><text x="{}" y="{}">{} ({:.1}%)</text>"#,
            left + pw + 15.0,
            left + pw + 40.0,
            left + pw + 46.0,
            ly + 4.0,
            res.policy.name(),
            res.alloc_130
        );
    }
    s.push_str("</svg>\n");
    s
}
