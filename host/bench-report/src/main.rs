// SPDX-License-Identifier: GPL-2.0

//! bench-report: the benchmark VM's output (scripts/bench.sh) as tables and plots.
//!
//! ```text
//! bench-report --icount LOG --wall LOG [--attach LOG] [--source TEXT] [--build-id ID]
//!              [--profile-summary DIR/profile.tsv] [--arm64 LOG [--arm64-source TEXT]]
//!              [--text OUT] [--doc FILE.md] [--svg-dir DIR]
//! bench-report --arch arm64 --icount LOG [--wall LOG] [--source TEXT] [--text OUT] [--doc FILE.md]
//! bench-report --profile DIR --system-map FILE [--text OUT] [--doc FILE.md]
//! ```
//!
//! The logs hold `@@bench SECTION key=value...` lines from selftests/bench.sh. The tables go to
//! stdout (and `--text`); with `--doc`, they replace what lies between the `bench:begin` and
//! `bench:end` markers of that Markdown file; with `--svg-dir`, `bench-cost.svg` and
//! `bench-attach.svg` are written there. std only: the SVG is written by hand.
//!
//! With `--profile` it reports the profile pass instead (see `profile.rs`), between the
//! `profile:begin` and `profile:end` markers, and writes its summary to `DIR/profile.tsv`.
//! The Targets of the first form take the locked-instruction figures from that summary when
//! `--profile-summary` is given and its build-id is the logs' `--build-id` (the profile is a
//! separate boot, maybe of other sources); otherwise they say that the profile is missing.
//! `--arm64 LOG` (the last arm64 icount log; `--arm64-source`, what that run built ufgraph
//! from) gives the Targets' arm64 line.
//!
//! With `--arch arm64` it reports an arm64 run instead (see `arm64.rs`): the per-call table,
//! between the `bench-arm64:begin` and `bench-arm64:end` markers.

use std::collections::BTreeMap;
use std::process::exit;

mod arm64;
mod profile;
mod report;
mod svg;

/// One `@@bench` line: its section and its key=value words.
#[derive(Debug, Clone, Default)]
pub struct Rec {
    pub sec: String,
    pub kv: BTreeMap<String, String>,
}

impl Rec {
    pub fn get(&self, k: &str) -> Option<&str> {
        self.kv.get(k).map(|s| s.as_str())
    }
    pub fn num(&self, k: &str) -> Option<f64> {
        self.get(k)?.parse().ok()
    }
}

/// The `@@bench` lines of a log, in order, and the kernel's reports of trouble (section
/// `splat`, the line under `line`). Anything else in the kernel's log is skipped.
pub fn parse(text: &str) -> Vec<Rec> {
    let mut v = Vec::new();
    for line in text.lines() {
        let line = line.trim_end_matches('\r');
        if ["BUG:", "Oops", "Kernel panic", "WARNING:", "RIP:"]
            .iter()
            .any(|m| line.contains(m))
            && !line.starts_with("@@bench")
        {
            let mut r = Rec {
                sec: "splat".into(),
                ..Default::default()
            };
            r.kv.insert("line".into(), line.trim().to_string());
            v.push(r);
            continue;
        }
        let Some(rest) = line.strip_prefix("@@bench ") else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let Some(sec) = words.next() else { continue };
        let mut r = Rec {
            sec: sec.to_string(),
            ..Default::default()
        };
        for w in words {
            if let Some((k, val)) = w.split_once('=') {
                r.kv.insert(k.to_string(), val.to_string());
            }
        }
        v.push(r);
    }
    v
}

fn usage() -> ! {
    eprintln!("usage: bench-report --icount LOG --wall LOG [--attach LOG] [--source TEXT] [--build-id ID] [--profile-summary FILE] [--arm64 LOG [--arm64-source TEXT]] [--text OUT] [--doc FILE.md] [--svg-dir DIR]");
    eprintln!("       bench-report --arch arm64 --icount LOG [--wall LOG] [--source TEXT] [--text OUT] [--doc FILE.md]");
    eprintln!("       bench-report --profile DIR --system-map FILE [--text OUT] [--doc FILE.md]");
    exit(2)
}

/// Replaces the text between the marker lines `<!-- NAME:begin -->` and `<!-- NAME:end -->`.
pub fn splice_at(doc: &str, name: &str, body: &str) -> Option<String> {
    let begin = format!("<!-- {}:begin -->", name);
    let end = format!("<!-- {}:end -->", name);
    let b = doc.find(&begin)? + begin.len();
    let e = doc[b..].find(&end)? + b;
    let mut s = String::with_capacity(doc.len() + body.len());
    s.push_str(&doc[..b]);
    s.push('\n');
    s.push_str(body);
    if !body.ends_with('\n') {
        s.push('\n');
    }
    s.push_str(&doc[e..]);
    Some(s)
}

fn write_or_die(path: &str, body: &str) {
    std::fs::write(path, body).unwrap_or_else(|e| {
        eprintln!("bench-report: {}: {}", path, e);
        exit(1)
    });
}

fn read_or_die(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("bench-report: {}: {}", path, e);
        exit(1)
    })
}

/// Writes `body` between the NAME markers of `old`, the document `doc` held, back to `doc`, and
/// says so (`what`: what was written); no markers is an error.
fn splice_into(doc: &str, old: &str, name: &str, body: &str, what: &str) {
    let Some(new) = splice_at(old, name, body) else {
        eprintln!(
            "bench-report: {} has no <!-- {}:begin --> ... <!-- {}:end --> markers",
            doc, name, name
        );
        exit(1)
    };
    write_or_die(doc, &new);
    eprintln!("bench-report: {} written to {}", what, doc);
}

/// Prints a report's `body`, and writes it to `text` if given.
fn print_and_write(body: &str, text: Option<&str>) {
    print!("{}", body);
    if let Some(t) = text {
        write_or_die(t, body);
    }
}

/// The lines of `log` that begin with `tag`, without it.
fn tagged_lines(log: &str, tag: &str) -> String {
    log.lines()
        .filter_map(|l| l.strip_prefix(tag))
        .map(|l| format!("{}\n", l))
        .collect()
}

// The profile pass: DIR holds profile.log (the VM's console), profile-HOOK.pcs, source and
// build-id (what scripts/bench.sh built). Writes DIR/profile.tsv for the `make bench` report.
fn profile_main(dir: &str, map: &str, text: Option<String>, doc: Option<String>) {
    let log = std::fs::read_to_string(format!("{}/profile.log", dir)).unwrap_or_default();
    let mut syms = profile::Symbols::default();
    syms.add_map(&read_or_die(map));
    syms.add_map(&tagged_lines(&log, "@@sym "));
    syms.add_modules(&tagged_lines(&log, "@@mod "));
    syms.finish();
    let mut profiles = Vec::new();
    for r in parse(&log).iter().filter(|r| r.sec == "profile") {
        let Some(hook) = r.get("name") else { continue };
        let pcs =
            std::fs::read_to_string(format!("{}/profile-{}.pcs", dir, hook)).unwrap_or_default();
        let mut p = profile::profile(hook, &pcs, &syms);
        profile::make_readable(&mut p);
        if p.total > 0 {
            profiles.push(p);
        } else {
            eprintln!("bench-report: no instructions recorded for hook {}", hook);
        }
    }
    if profiles.is_empty() {
        eprintln!("bench-report: nothing profiled in {}", dir);
        exit(1);
    }
    let source =
        std::fs::read_to_string(format!("{}/source", dir)).unwrap_or_else(|_| "unknown".into());
    let build_id =
        std::fs::read_to_string(format!("{}/build-id", dir)).unwrap_or_else(|_| "unknown".into());
    let summary = profile::Summary::new(&profiles, build_id.trim(), source.trim());
    write_or_die(&format!("{}/profile.tsv", dir), &summary.to_tsv());
    let body = profile::markdown(&profiles, source.trim());
    print_and_write(&body, text.as_deref());
    if let Some(d) = doc {
        let old = std::fs::read_to_string(&d).unwrap_or_default();
        splice_into(&d, &old, "profile", &body, "profile");
    }
}

/// The command line: which report, from which logs, written where.
struct Args {
    icount: Option<String>,
    wall: Option<String>,
    kprobe: Option<String>,
    text: Option<String>,
    doc: Option<String>,
    svg_dir: Option<String>,
    profile_dir: Option<String>,
    system_map: Option<String>,
    profile_summary: Option<String>,
    arm64_log: Option<String>,
    arch: String,
    arm64_source: String,
    source: String,
    build_id: String,
}

fn parse_args() -> Args {
    let mut args = std::env::args().skip(1);
    let mut a = Args {
        icount: None,
        wall: None,
        kprobe: None,
        text: None,
        doc: None,
        svg_dir: None,
        profile_dir: None,
        system_map: None,
        profile_summary: None,
        arm64_log: None,
        arch: String::from("x86_64"),
        arm64_source: String::from("unknown"),
        source: String::from("unknown"),
        build_id: String::from("unknown"),
    };
    while let Some(opt) = args.next() {
        let v = args.next().unwrap_or_else(|| usage());
        match opt.as_str() {
            "--icount" => a.icount = Some(v),
            "--wall" => a.wall = Some(v),
            "--attach" => a.kprobe = Some(v),
            "--source" => a.source = v,
            "--build-id" => a.build_id = v,
            "--profile-summary" => a.profile_summary = Some(v),
            "--text" => a.text = Some(v),
            "--doc" => a.doc = Some(v),
            "--svg-dir" => a.svg_dir = Some(v),
            "--profile" => a.profile_dir = Some(v),
            "--system-map" => a.system_map = Some(v),
            "--arch" => a.arch = v,
            "--arm64" => a.arm64_log = Some(v),
            "--arm64-source" => a.arm64_source = v,
            _ => usage(),
        }
    }
    a
}

/// The `@@bench` lines of the log at `p`, if given (none if it cannot be read).
fn read_log(p: &Option<String>) -> Vec<Rec> {
    parse(
        &p.as_ref()
            .map(|p| std::fs::read_to_string(p).unwrap_or_default())
            .unwrap_or_default(),
    )
}

fn main() {
    let a = parse_args();
    if let Some(dir) = a.profile_dir {
        let Some(map) = a.system_map else { usage() };
        profile_main(&dir, &map, a.text, a.doc);
        return;
    }
    let ic = read_log(&a.icount);
    let wl = read_log(&a.wall);
    match a.arch.as_str() {
        "x86_64" => x86_64_main(&a, &ic, &wl),
        "arm64" => arm64_main(&a, &ic, &wl),
        _ => usage(),
    }
}

// An arm64 run: its per-call table.
fn arm64_main(a: &Args, ic: &[Rec], wl: &[Rec]) {
    if ic.is_empty() && wl.is_empty() {
        eprintln!("bench-report: no @@bench lines in the arm64 logs");
        exit(1);
    }
    let body = arm64::markdown(ic, wl, &a.source);
    print_and_write(&body, a.text.as_deref());
    if let Some(d) = &a.doc {
        splice_into(d, &read_or_die(d), "bench-arm64", &body, "arm64 results");
    }
}

// The x86_64 run: every table, the Targets, the plots.
fn x86_64_main(a: &Args, ic: &[Rec], wl: &[Rec]) {
    let a64 = read_log(&a.arm64_log);
    let kp = read_log(&a.kprobe);
    if ic.is_empty() && wl.is_empty() && kp.is_empty() {
        eprintln!("bench-report: no @@bench lines in the logs");
        exit(1);
    }
    let mut rep = report::Report::new(ic, wl, &kp);
    rep.source = a.source.clone();
    rep.build_id = a.build_id.clone();
    rep.arm64 = &a64;
    rep.arm64_source = a.arm64_source.clone();
    rep.profile = a
        .profile_summary
        .as_ref()
        .and_then(|p| std::fs::read_to_string(p).ok())
        .map(|t| profile::Summary::parse(&t));
    let body = rep.markdown();
    print_and_write(&body, a.text.as_deref());
    if let Some(d) = &a.svg_dir {
        for (name, svg) in [
            ("bench-cost.svg", rep.cost_svg()),
            ("bench-attach.svg", rep.attach_svg()),
        ] {
            write_or_die(&format!("{}/{}", d, name), &svg);
        }
    }
    if let Some(d) = &a.doc {
        splice_into(d, &read_or_die(d), "bench", &body, "results");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bench_lines_only() {
        let v = parse("[ 1.0] boot\n@@bench cost name=none calls=10 median_ps=7965\r\n@@bench end pass=wall\n@@ufg done\n[ 2.0] Oops: 0010\n");
        assert_eq!(v.len(), 3);
        assert_eq!(v[2].sec, "splat");
        assert_eq!(v[0].sec, "cost");
        assert_eq!(v[0].get("name"), Some("none"));
        assert_eq!(v[0].num("median_ps"), Some(7965.0));
        assert_eq!(v[1].get("pass"), Some("wall"));
    }

    #[test]
    fn splices_between_markers() {
        let d = "# T\n<!-- bench:begin -->\nold\n<!-- bench:end -->\ntail\n";
        assert_eq!(
            splice_at(d, "bench", "new").unwrap(),
            "# T\n<!-- bench:begin -->\nnew\n<!-- bench:end -->\ntail\n"
        );
        assert!(splice_at("no markers", "bench", "x").is_none());
    }
}
