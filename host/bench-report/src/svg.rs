// SPDX-License-Identifier: GPL-2.0

//! A small line chart in SVG, written by hand: series of points, horizontal reference lines,
//! linear or log10 axes.

use std::fmt::Write as _;

pub struct Series {
    pub name: String,
    pub color: &'static str,
    pub dashed: bool,
    pub points: Vec<(f64, f64)>,
}

pub struct HLine {
    pub name: String,
    pub color: &'static str,
    pub y: f64,
}

pub struct Chart {
    pub title: String,
    pub xlabel: String,
    pub ylabel: String,
    pub logx: bool,
    pub logy: bool,
    pub series: Vec<Series>,
    pub hlines: Vec<HLine>,
}

const W: f64 = 820.0;
const H: f64 = 440.0;
const L: f64 = 80.0; // plot area margins
const R: f64 = 310.0;
const T: f64 = 40.0;
const B: f64 = 60.0;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Round numbers for axis labels: 1, 2, 5 x 10^k.
fn nice_step(span: f64, want: f64) -> f64 {
    let raw = span / want;
    let mag = 10f64.powf(raw.log10().floor());
    for m in [1.0, 2.0, 5.0, 10.0] {
        if m * mag >= raw {
            return m * mag;
        }
    }
    10.0 * mag
}

fn fmt_num(v: f64) -> String {
    if v >= 1e6 {
        format!("{}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{}k", v / 1e3)
    } else if v >= 1.0 || v == 0.0 {
        format!("{}", (v * 100.0).round() / 100.0)
    } else {
        format!("{}", v)
    }
}

struct Axis {
    log: bool,
    lo: f64,
    hi: f64,
}

impl Axis {
    fn new(log: bool, vals: &[f64]) -> Self {
        let vals: Vec<f64> = vals
            .iter()
            .copied()
            .filter(|v| v.is_finite() && (!log || *v > 0.0))
            .collect();
        let (mut lo, mut hi) = vals
            .iter()
            .fold((f64::MAX, f64::MIN), |(a, b), &v| (a.min(v), b.max(v)));
        if vals.is_empty() {
            lo = 1.0;
            hi = 10.0;
        }
        if log {
            lo = 10f64.powf(lo.log10().floor());
            hi = 10f64.powf(hi.log10().ceil());
            if hi <= lo {
                hi = lo * 10.0;
            }
        } else {
            lo = lo.min(0.0);
            let step = nice_step((hi - lo).max(1e-9), 6.0);
            hi = (hi / step).ceil() * step;
            if hi <= lo {
                hi = lo + 1.0;
            }
        }
        Axis { log, lo, hi }
    }
    /// 0..1 along the axis.
    fn frac(&self, v: f64) -> f64 {
        if self.log {
            (v.log10() - self.lo.log10()) / (self.hi.log10() - self.lo.log10())
        } else {
            (v - self.lo) / (self.hi - self.lo)
        }
    }
    fn ticks(&self) -> Vec<f64> {
        let mut t = Vec::new();
        if self.log {
            let mut v = self.lo;
            while v <= self.hi * 1.0001 {
                t.push(v);
                v *= 10.0;
            }
        } else {
            let step = nice_step(self.hi - self.lo, 6.0);
            let mut v = (self.lo / step).ceil() * step;
            while v <= self.hi + step * 1e-6 {
                t.push(v);
                v += step;
            }
        }
        t
    }
}

/// The plot area and its axes: where a point of the data goes in the picture.
struct Plot {
    ax: Axis,
    ay: Axis,
    /// The plot area's width and height.
    pw: f64,
    ph: f64,
}

impl Plot {
    fn px(&self, x: f64) -> f64 {
        L + self.ax.frac(x) * self.pw
    }
    fn py(&self, y: f64) -> f64 {
        T + self.ph - self.ay.frac(y) * self.ph
    }
}

/// A legend entry: the name, the colour, whether it is a reference line, whether dashed.
type LegendEntry<'c> = (String, &'c str, bool, bool);

impl Chart {
    pub fn render(&self) -> String {
        let xs: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.0))
            .collect();
        let mut ys: Vec<f64> = self
            .series
            .iter()
            .flat_map(|s| s.points.iter().map(|p| p.1))
            .collect();
        ys.extend(self.hlines.iter().map(|h| h.y));
        let plot = Plot {
            ax: Axis::new(self.logx, &xs),
            ay: Axis::new(self.logy, &ys),
            pw: W - L - R,
            ph: H - T - B,
        };
        let mut s = String::new();
        let _ = writeln!(
            s,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
        );
        let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
        let _ = writeln!(
            s,
            r#"<text x="{}" y="22" font-size="15" font-weight="bold">{}</text>"#,
            L,
            esc(&self.title)
        );
        self.grid(&mut s, &plot);
        self.frame(&mut s, &plot);
        // Reference lines, then series.
        let mut legend: Vec<LegendEntry> = Vec::new();
        self.hlines(&mut s, &plot, &mut legend);
        self.series(&mut s, &plot, &mut legend);
        legend_lines(&mut s, &plot, &legend);
        s.push_str("</svg>\n");
        s
    }

    /// Grid and ticks.
    fn grid(&self, s: &mut String, p: &Plot) {
        let (pw, ph) = (p.pw, p.ph);
        for t in p.ax.ticks() {
            let x = p.px(t);
            let _ = writeln!(
                s,
                r##"<line x1="{x:.1}" y1="{T}" x2="{x:.1}" y2="{:.1}" stroke="#e0e0e0"/>"##,
                T + ph
            );
            let _ = writeln!(
                s,
                r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                T + ph + 16.0,
                fmt_num(t)
            );
        }
        for t in p.ay.ticks() {
            let y = p.py(t);
            let _ = writeln!(
                s,
                r##"<line x1="{L}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e0e0e0"/>"##,
                L + pw
            );
            let _ = writeln!(
                s,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
                L - 6.0,
                y + 4.0,
                fmt_num(t)
            );
        }
    }

    /// The plot area's border and the axes' labels.
    fn frame(&self, s: &mut String, p: &Plot) {
        let (pw, ph) = (p.pw, p.ph);
        let _ = writeln!(
            s,
            r##"<rect x="{L}" y="{T}" width="{pw}" height="{ph}" fill="none" stroke="#444"/>"##
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            L + pw / 2.0,
            H - 18.0,
            esc(&self.xlabel)
        );
        let _ = writeln!(
            s,
            r#"<text transform="translate(18,{:.1}) rotate(-90)" text-anchor="middle">{}</text>"#,
            T + ph / 2.0,
            esc(&self.ylabel)
        );
    }

    /// The horizontal reference lines, each with its legend entry.
    fn hlines<'c>(&'c self, s: &mut String, p: &Plot, legend: &mut Vec<LegendEntry<'c>>) {
        for h in &self.hlines {
            let y = p.py(h.y);
            let _ = writeln!(
                s,
                r#"<line x1="{L}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="1.5" stroke-dasharray="2,3"/>"#,
                L + p.pw,
                h.color
            );
            legend.push((h.name.clone(), h.color, true, false));
        }
    }

    /// The series: a line through the points and a dot on each (on a log axis, only the
    /// positive ones), each with its legend entry.
    fn series<'c>(&'c self, s: &mut String, p: &Plot, legend: &mut Vec<LegendEntry<'c>>) {
        for se in &self.series {
            let pts: Vec<String> = se
                .points
                .iter()
                .filter(|pt| !self.logy || pt.1 > 0.0)
                .map(|&(x, y)| format!("{:.1},{:.1}", p.px(x), p.py(y)))
                .collect();
            let dash = if se.dashed {
                r#" stroke-dasharray="6,4""#
            } else {
                ""
            };
            let _ = writeln!(
                s,
                r#"<polyline points="{}" fill="none" stroke="{}" stroke-width="2"{}/>"#,
                pts.join(" "),
                se.color,
                dash
            );
            for &(x, y) in &se.points {
                if self.logy && y <= 0.0 {
                    continue;
                }
                let _ = writeln!(
                    s,
                    r#"<circle cx="{:.1}" cy="{:.1}" r="3.5" fill="{}"/>"#,
                    p.px(x),
                    p.py(y),
                    se.color
                );
            }
            legend.push((se.name.clone(), se.color, false, se.dashed));
        }
    }
}

/// The legend, right of the plot area: a short line in each entry's style and its name.
fn legend_lines(s: &mut String, p: &Plot, legend: &[LegendEntry]) {
    for (i, (name, color, hline, dashed)) in legend.iter().enumerate() {
        let y = T + 10.0 + i as f64 * 20.0;
        let x = L + p.pw + 14.0;
        let dash = if *hline {
            r#" stroke-dasharray="2,3""#
        } else if *dashed {
            r#" stroke-dasharray="6,4""#
        } else {
            ""
        };
        let _ = writeln!(
            s,
            r#"<line x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{color}" stroke-width="2"{dash}/>"#,
            x + 24.0
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{:.1}">{}</text>"#,
            x + 30.0,
            y + 4.0,
            esc(name)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_points_inside_the_plot() {
        let c = Chart {
            title: "t".into(),
            xlabel: "x".into(),
            ylabel: "y".into(),
            logx: true,
            logy: true,
            series: vec![Series {
                name: "a".into(),
                color: "red",
                dashed: false,
                points: vec![(100.0, 5.0), (10000.0, 500.0)],
            }],
            hlines: vec![HLine {
                name: "h".into(),
                color: "blue",
                y: 50.0,
            }],
        };
        let s = c.render();
        assert!(s.starts_with("<svg"));
        assert!(s.contains("<polyline"));
        assert_eq!(s.matches("<circle").count(), 2);
        assert!(s.trim_end().ends_with("</svg>"));
    }

    #[test]
    fn nice_steps() {
        assert_eq!(nice_step(10.0, 5.0), 2.0);
        assert_eq!(nice_step(1000.0, 6.0), 200.0);
    }
}
