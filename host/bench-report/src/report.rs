// SPDX-License-Identifier: GPL-2.0

//! The tables: per-call cost, the targets, mass attach, memory, concurrency.

use crate::profile::Summary;
use crate::svg::{Chart, HLine, Series};
use crate::Rec;
use std::fmt::Write as _;

mod tables;
mod targets;

/// Per-call cost rows: the hook's name in the logs, and what it is. First the rows both
/// architectures measure: no hook, and the kernel's ftrace_ops and fgraph.
pub(crate) const BASE_ROWS: &[(&str, &str)] = &[
    ("none", "no hook"),
    ("ftrace_ops", "kernel: bare ftrace_ops (the reference)"),
    (
        "function_graph_on0",
        "kernel: fgraph entry path (function_graph tracer, tracing_on=0; it declines the return)",
    ),
    (
        "function_graph_on1",
        "kernel: function_graph tracer, writing its ring buffer",
    ),
    (
        "kgraph1",
        "kernel: fgraph, 1 user (function_graph in a tracefs instance, tracing_on=0; entry only)",
    ),
    ("kgraph4", "kernel: fgraph, 4 users (4 instances)"),
    ("kgraph16", "kernel: fgraph, 16 users (16 instances)"),
];

/// The kernel's fprobes, kretprobe and BPF programs on x86_64.
const KERNEL_ROWS: &[(&str, &str)] = &[
    ("kfprobe", "kernel: fprobe, entry only"),
    (
        "kfprobe_exit",
        "kernel: fprobe entry+exit (6.12: ftrace + rethook)",
    ),
    (
        "kretprobe",
        "kernel: kretprobe (kprobe on ftrace + rethook)",
    ),
    (
        "bpf_fentry",
        "kernel: BPF fentry program (the BPF trampoline), counting its calls",
    ),
    (
        "bpf_fexit",
        "kernel: BPF fexit program (the BPF trampoline, entry and return), counting its calls",
    ),
];

/// ufgraph's hooks, on both architectures.
pub(crate) const UFGRAPH_ROWS: &[(&str, &str)] = &[
    ("ufprobe", "ufgraph: fprobe, entry only"),
    ("ufprobe_exit", "ufgraph: fprobe entry+exit"),
    ("ukretprobe", "ufgraph: kretprobe shim"),
    ("ufgraph1", "ufgraph: fgraph, 1 ops on the function"),
    ("ufgraph4", "ufgraph: fgraph, 4 ops on the function"),
    ("ufgraph16", "ufgraph: fgraph, 16 ops on the function"),
];

const ATTACH_KINDS: &[(&str, &str)] = &[
    (
        "ufprobe_first",
        "ufgraph register_fprobe_ips, the first after loading ufgraph (reads ftrace's list of functions, once)",
    ),
    ("ufprobe", "ufgraph register_fprobe_ips"),
    ("kfprobe", "kernel register_fprobe_ips"),
    ("kprobe", "kernel register_kprobe, one per function"),
    (
        "ftrace_ops",
        "a bare ftrace_ops with the same filter (ftrace's own cost, under both fprobes)",
    ),
    (
        "ufprobe_exit",
        "ufgraph register_fprobe_ips, with exit handler",
    ),
    (
        "kfprobe_exit",
        "kernel register_fprobe_ips, with exit handler",
    ),
];

/// A second probe on the functions a first one hooks (`@@bench second first=F kind=K`): the
/// first probe's kind, the second's, a short name, the table's label.
const SECOND_KINDS: &[(&str, &str, &str, &str)] = &[
    ("ufprobe", "ufprobe", "entry only on entry only", "ufgraph register_fprobe_ips, a second probe (entry only) on an entry-only probe's functions"),
    ("kfprobe", "kfprobe", "entry only on entry only", "kernel register_fprobe_ips, a second probe (entry only) on an entry-only probe's functions"),
    ("ufprobe_exit", "ufprobe_exit", "exit on exit", "ufgraph register_fprobe_ips, a second probe with exit handler on the functions of one with exit handler"),
    ("kfprobe_exit", "kfprobe_exit", "exit on exit", "kernel register_fprobe_ips, a second probe with exit handler on the functions of one with exit handler"),
    ("ufprobe", "ufprobe_exit", "exit on entry only", "ufgraph register_fprobe_ips, a probe with exit handler on an entry-only probe's functions"),
    ("kfprobe", "kfprobe_exit", "exit on entry only", "kernel register_fprobe_ips, a probe with exit handler on an entry-only probe's functions"),
];

pub struct Report<'a> {
    pub(crate) ic: &'a [Rec],
    pub(crate) wl: &'a [Rec],
    kp: &'a [Rec],
    /// Where ufgraph.ko was built from (a commit, or the work tree).
    pub source: String,
    /// What scripts/bench.sh built for these logs (sources and kernel), to match the profile's.
    pub build_id: String,
    /// The last profile run's summary (`profile.tsv`), if there is one.
    pub profile: Option<Summary>,
    /// The last arm64 run's icount log (`make bench-arm64`), and what it built ufgraph from,
    /// for the Targets' arm64 line.
    pub arm64: &'a [Rec],
    pub arm64_source: String,
}

/// Machine sizes the memory formulas need (from the VM's `sizes` line).
#[derive(Clone, Copy)]
pub struct Sizes {
    pub possible: u64,
    pub nr_cpu_ids: u64,
    pub page: u64,
    pub rethook: u64,
    pub fprobe_node: u64,
    pub kretprobe_instance: u64,
    pub objpool_slot: u64,
}

impl Sizes {
    fn from(r: &Rec) -> Option<Self> {
        let g = |k: &str| r.num(k).map(|v| v as u64);
        Some(Sizes {
            possible: g("possible_cpus")?,
            nr_cpu_ids: g("nr_cpu_ids")?,
            page: g("page")?,
            rethook: g("rethook")?,
            fprobe_node: g("fprobe_node")?,
            kretprobe_instance: g("kretprobe_instance")?,
            objpool_slot: g("objpool_slot")?,
        })
    }
    /// The same machine with `cpus` possible CPUs.
    pub fn with_cpus(self, cpus: u64) -> Self {
        Sizes {
            possible: cpus,
            nr_cpu_ids: cpus,
            ..self
        }
    }
}

/// SLUB's kmalloc size classes (6.12, 4 KiB pages): what kmalloc(n) really takes.
pub fn kmalloc_round(n: u64, page: u64) -> u64 {
    for s in [
        8, 16, 32, 64, 96, 128, 192, 256, 512, 1024, 2048, 4096, 8192,
    ] {
        if n <= s {
            return s;
        }
    }
    n.div_ceil(page).next_power_of_two() * page
}

/// lib/objpool.c (6.12) objpool_init(nr_objs, obj_size): the per-CPU slot array (kzalloc of
/// nr_cpu_ids pointers), and for each possible CPU one vmalloc'd block (whole pages) holding
/// the slot header, `capacity` = roundup_pow_of_two(nr_objs) entry pointers and that CPU's
/// share of the objects (obj_size rounded up to a long).
pub fn objpool_bytes(nr_objs: u64, obj_size: u64, s: &Sizes) -> u64 {
    let obj = obj_size.div_ceil(8) * 8;
    let cap = nr_objs.next_power_of_two();
    let mut total = kmalloc_round(s.nr_cpu_ids * 8, s.page);
    for i in 0..s.possible {
        let nodes = nr_objs / s.possible + u64::from(i < nr_objs % s.possible);
        let size = s.objpool_slot + cap * 8 + obj * nodes;
        total += size.div_ceil(s.page) * s.page;
    }
    total
}

/// A 6.12 fprobe with an exit handler on `nfuncs` functions, entry_data_size 0
/// (kernel/trace/fprobe.c fprobe_init_rethook): a struct rethook and a pool of
/// nfuncs * num_possible_cpus() * 2 nodes of struct fprobe_rethook_node.
pub fn kernel_fprobe_pool(nfuncs: u64, s: &Sizes) -> u64 {
    kmalloc_round(s.rethook, s.page) + objpool_bytes(nfuncs * s.possible * 2, s.fprobe_node, s)
}

/// A 6.12 kretprobe, maxactive and data_size 0 (kernel/kprobes.c register_kretprobe): a
/// struct rethook and a pool of max(10, 2 * num_possible_cpus()) kretprobe_instances.
pub fn kernel_kretprobe_pool(s: &Sizes) -> u64 {
    kmalloc_round(s.rethook, s.page)
        + objpool_bytes((2 * s.possible).max(10), s.kretprobe_instance, s)
}

/// Shadow stacks: one SHADOW_STACK_SIZE (a page) per task, for the kernel's fgraph and for
/// ufgraph alike.
pub fn stacks(tasks: u64) -> u64 {
    tasks * 4096
}

pub fn human(b: f64) -> String {
    if b >= 1024.0 * 1024.0 * 1024.0 {
        format!("{:.1} GiB", b / 1073741824.0)
    } else if b >= 10.0 * 1024.0 * 1024.0 {
        format!("{:.0} MiB", b / 1048576.0)
    } else if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / 1048576.0)
    } else if b >= 1024.0 {
        format!("{:.0} KiB", b / 1024.0)
    } else {
        format!("{:.0} B", b)
    }
}

/// A pass's line in a report's header: the kernel it ran on (`kernel`: what to call it, `vm`:
/// what to say of the VM after its vCPUs), or `missing` when the log has no start line.
pub(crate) fn pass_line(
    s: &mut String,
    pass: &str,
    recs: &[Rec],
    kernel: &str,
    vm: &str,
    missing: &str,
) {
    match recs.iter().find(|r| r.sec == "start") {
        Some(r) => {
            let _ = writeln!(
                s,
                "- {} pass: {} {}, {} vCPUs{}{}",
                pass,
                kernel,
                r.get("kernel").unwrap_or("?"),
                r.get("cpus").unwrap_or("?"),
                vm,
                if r.get("quick") == Some("1") {
                    ", quick (smoke) settings"
                } else {
                    ""
                }
            );
        }
        None => {
            let _ = writeln!(s, "- {} pass: {}", pass, missing);
        }
    }
}

/// A report header's line on the per-call cost runs: how many timed calls each hook made.
pub(crate) fn calls_line(s: &mut String, ic: &[Rec], wl: &[Rec]) {
    if let Some(r) = Report::find(ic, "cost", "none").or_else(|| Report::find(wl, "cost", "none")) {
        let _ = writeln!(s, "- per-call cost: {} timed calls per hook in chunks with interrupts off; instructions: the median chunk, wall clock: the fastest chunk", r.get("calls").unwrap_or("?"));
    }
}

pub(crate) fn f1(v: Option<f64>) -> String {
    v.map(|v| format!("{:.1}", v)).unwrap_or_else(|| "-".into())
}

pub(crate) fn ratio(v: Option<f64>) -> String {
    v.map(|v| format!("{:.2}x", v))
        .unwrap_or_else(|| "-".into())
}

fn ms(ns: Option<f64>) -> String {
    ns.map(|v| format!("{:.1}", v / 1e6))
        .unwrap_or_else(|| "-".into())
}

impl<'a> Report<'a> {
    pub fn new(ic: &'a [Rec], wl: &'a [Rec], kp: &'a [Rec]) -> Self {
        Report {
            ic,
            wl,
            kp,
            source: "unknown".into(),
            build_id: "unknown".into(),
            profile: None,
            arm64: &[],
            arm64_source: "unknown".into(),
        }
    }

    pub(crate) fn find<'b>(recs: &'b [Rec], sec: &str, name: &str) -> Option<&'b Rec> {
        recs.iter()
            .find(|r| r.sec == sec && r.get("name") == Some(name))
    }

    /// ns per call of a hook in a pass: in the icount pass instructions, the median chunk (all
    /// chunks are equal but for the odd hash or cache effect); in the wall pass the fastest
    /// chunk, since the host's noise (other VMs, builds) only ever adds time.
    pub(crate) fn cost(recs: &[Rec], name: &str) -> Option<f64> {
        let r = Self::find(recs, "cost", name)?;
        let icount = recs
            .iter()
            .any(|r| r.sec == "start" && r.get("pass") == Some("icount"));
        r.num(if icount { "median_ps" } else { "min_ps" })
            .map(|p| p / 1000.0)
    }

    fn sizes(&self) -> Option<Sizes> {
        self.ic
            .iter()
            .chain(self.wl.iter())
            .find(|r| r.sec == "sizes")
            .and_then(Sizes::from)
    }

    fn attach(&self, kind: &str) -> Vec<&'a Rec> {
        self.wl
            .iter()
            .chain(self.kp.iter())
            .filter(|r| r.sec == "attach" && r.get("kind") == Some(kind))
            .collect()
    }

    /// The second-probe runs of a pair of kinds, by N.
    fn second(&self, first: &str, kind: &str) -> Vec<&'a Rec> {
        self.wl
            .iter()
            .chain(self.kp.iter())
            .filter(|r| {
                r.sec == "second" && r.get("first") == Some(first) && r.get("kind") == Some(kind)
            })
            .collect()
    }

    fn nfuncs(&self) -> Option<f64> {
        Self::find(self.wl, "nfuncs", "all")
            .or_else(|| Self::find(self.kp, "nfuncs", "all"))
            .and_then(|r| r.num("n"))
    }

    pub fn markdown(&self) -> String {
        let mut s = String::new();
        self.header(&mut s);
        self.cost_table(
            &mut s,
            "Per-call cost",
            &[BASE_ROWS, KERNEL_ROWS, UFGRAPH_ROWS],
        );
        self.targets(&mut s);
        self.attach_tables(&mut s);
        self.memory_tables(&mut s);
        self.concurrency_table(&mut s);
        self.problems(&mut s);
        s
    }

    fn header(&self, s: &mut String) {
        let _ = writeln!(
            s,
            "_Generated by `make bench` (host/bench-report); do not edit between the markers._\n"
        );
        let _ = writeln!(s, "- ufgraph built from {}", self.source);
        for (pass, recs) in [("icount", self.ic), ("wall", self.wl), ("attach", self.kp)] {
            pass_line(s, pass, recs, "kernel", "", "no output");
        }
        calls_line(s, self.ic, self.wl);
        if let Some(z) = self.sizes() {
            let _ = writeln!(s, "- possible CPUs {}, page {} B", z.possible, z.page);
        }
        s.push('\n');
    }

    pub(crate) fn cost_table(&self, s: &mut String, title: &str, rows: &[&[(&str, &str)]]) {
        let _ = writeln!(s, "### {}\n", title);
        let _ = writeln!(s, "One noinline function in the benchmark module, called in a loop; the hook's handlers only count.");
        let _ = writeln!(s, "Instructions are from the `-icount shift=0` pass (deterministic); wall-clock ns from the other");
        let _ = writeln!(
            s,
            "pass, under TCG emulation. Ratios are to the bare ftrace_ops of the same pass.\n"
        );
        let _ = writeln!(s, "| hook | instructions/call | over no hook | x ftrace_ops | wall ns/call | x ftrace_ops (wall) | hooked | nmissed |");
        let _ = writeln!(
            s,
            "| --- | ---: | ---: | ---: | ---: | ---: | :---: | ---: |"
        );
        let base_i = Self::cost(self.ic, "none");
        let ref_i = Self::cost(self.ic, "ftrace_ops");
        let ref_w = Self::cost(self.wl, "ftrace_ops");
        for (name, label) in rows.iter().copied().flatten() {
            let i = Self::cost(self.ic, name);
            let w = Self::cost(self.wl, name);
            if i.is_none() && w.is_none() {
                let _ = writeln!(s, "| {} | not measured | | | | | | |", label);
                continue;
            }
            let missed = [self.ic, self.wl]
                .iter()
                .filter_map(|r| Self::find(r, "cost", name).and_then(|r| r.num("nmissed")))
                .fold(0.0, f64::max);
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {} | {} |",
                label,
                f1(i),
                f1(i.zip(base_i).map(|(a, b)| a - b)),
                ratio(i.zip(ref_i).map(|(a, b)| a / b)),
                f1(w),
                ratio(w.zip(ref_w).map(|(a, b)| a / b)),
                self.hooked(name),
                missed
            );
        }
        s.push('\n');
    }

    /// Whether every handler counter of a cost row reached the number of timed calls (the
    /// counts include the warm-up chunk), in both passes: "yes", "no", or "-" when the hook has
    /// no handler of ours (none, the function_graph tracer).
    pub(crate) fn hooked(&self, name: &str) -> &'static str {
        const COUNTERS: &[&str] = &[
            "bare",
            "kfp_entry",
            "kfp_exit",
            "kretprobe",
            "ufp_entry",
            "ufp_exit",
            "ukretprobe",
            "ug_entry",
            "ug_exit",
            "bpf",
        ];
        let mut seen = false;
        for recs in [self.ic, self.wl] {
            let Some(r) = Self::find(recs, "cost", name) else {
                continue;
            };
            let calls = r.num("calls").unwrap_or(0.0);
            for c in COUNTERS {
                if let Some(n) = r.num(c) {
                    seen = true;
                    if n < calls {
                        return "no";
                    }
                }
            }
        }
        if seen {
            "yes"
        } else {
            "-"
        }
    }

    fn problems(&self, s: &mut String) {
        self.problems_in(
            s,
            &[("icount", self.ic), ("wall", self.wl), ("attach", self.kp)],
        );
    }

    /// What went wrong in the given passes' logs (a pass with an empty log did not finish).
    pub(crate) fn problems_in(&self, s: &mut String, passes: &[(&str, &[Rec])]) {
        let mut p = Vec::new();
        for &(pass, recs) in passes {
            let start = recs.iter().find(|r| r.sec == "start");
            // x86_64 times with the TSC, arm64 with the arch timer; anything else is jiffies.
            let arm64 = start.and_then(|r| r.get("arch")) == Some("arm64");
            let (want, what) = if arm64 {
                ("arch_sys_counter", "the arch timer was not used")
            } else {
                ("tsc", "the TSC's calibration failed, the host was busy")
            };
            if let Some(c) = start
                .and_then(|r| r.get("clocksource"))
                .filter(|c| !c.starts_with(want))
            {
                p.push(format!("the {} pass timed with clocksource {} ({}): its times are in jiffies, 4 ms steps", pass, c, what));
            }
            if !recs.iter().any(|r| r.sec == "end") {
                let last = recs
                    .iter()
                    .rev()
                    .find(|r| r.sec != "splat" && r.sec != "start");
                p.push(format!(
                    "the {} pass did not finish{}: its tables are incomplete",
                    pass,
                    last.map(|r| format!(
                        " (last result: {} {})",
                        r.sec,
                        r.get("name").or(r.get("kind")).unwrap_or("")
                    ))
                    .unwrap_or_default()
                ));
            }
            for r in recs.iter().filter(|r| r.sec == "error") {
                p.push(format!(
                    "{} pass: command failed: {}",
                    pass,
                    r.get("cmd").unwrap_or("?").replace('_', " ")
                ));
            }
            for r in recs.iter().filter(|r| r.sec == "splat").take(4) {
                p.push(format!(
                    "{} pass, kernel log: `{}`",
                    pass,
                    r.get("line").unwrap_or("")
                ));
            }
        }
        if !p.is_empty() {
            let _ = writeln!(s, "### Problems in this run\n");
            for l in p {
                let _ = writeln!(s, "- {}", l);
            }
            s.push('\n');
        }
    }

    /// Instructions per call as graph users are added to one function, against the kernel's paths.
    pub fn cost_svg(&self) -> String {
        let c = |n: &str| Self::cost(self.ic, n);
        let pts = |names: [&'static str; 3]| -> Vec<(f64, f64)> {
            [1.0, 4.0, 16.0]
                .iter()
                .zip(names)
                .filter_map(|(&x, n)| c(n).map(|y| (x, y)))
                .collect()
        };
        let mut series = vec![Series {
            name: "ufgraph fgraph, N ops".into(),
            color: "#9467bd",
            dashed: false,
            points: pts(["ufgraph1", "ufgraph4", "ufgraph16"]),
        }];
        let k = pts(["kgraph1", "kgraph4", "kgraph16"]);
        if !k.is_empty() {
            series.push(Series {
                name: "kernel fgraph, N users".into(),
                color: "#1f77b4",
                dashed: false,
                points: k,
            });
        }
        let mut hlines = Vec::new();
        for (n, label, color) in [
            ("function_graph_on0", "kernel fgraph path", "#1f77b4"),
            (
                "function_graph_on1",
                "kernel function_graph tracer",
                "#17becf",
            ),
            ("kfprobe_exit", "kernel fprobe entry+exit", "#d62728"),
            ("kretprobe", "kernel kretprobe", "#ff7f0e"),
            ("ufprobe_exit", "ufgraph fprobe entry+exit", "#2ca02c"),
            ("ftrace_ops", "bare ftrace_ops", "#7f7f7f"),
        ] {
            if let Some(y) = c(n) {
                hlines.push(HLine {
                    name: format!("{} ({:.0})", label, y),
                    color,
                    y,
                });
            }
        }
        Chart {
            title: "Per-call cost as graph users are added to one function".into(),
            xlabel: "graph users (ops) on the function".into(),
            ylabel: "guest instructions per call (QEMU -icount)".into(),
            logx: false,
            logy: false,
            series,
            hlines,
        }
        .render()
    }

    /// Attach time against the number of functions, log-log.
    pub fn attach_svg(&self) -> String {
        let mut series = Vec::new();
        for (kind, label, color, dashed) in [
            ("ufprobe", "ufgraph fprobe", "#2ca02c", false),
            ("kfprobe", "kernel fprobe", "#d62728", false),
            (
                "kprobe",
                "kernel kprobes (last point: capped)",
                "#ff7f0e",
                false,
            ),
            ("ufprobe_exit", "ufgraph fprobe, exit", "#2ca02c", true),
            ("kfprobe_exit", "kernel fprobe, exit", "#d62728", true),
        ] {
            let pts: Vec<(f64, f64)> = self
                .attach(kind)
                .into_iter()
                .filter(|r| r.get("skipped").is_none())
                .filter_map(|r| Some((r.num("attached")?, r.num("attach_ns")? / 1e6)))
                .filter(|p| p.0 > 0.0 && p.1 > 0.0)
                .collect();
            if !pts.is_empty() {
                series.push(Series {
                    name: label.into(),
                    color,
                    dashed,
                    points: pts,
                });
            }
        }
        Chart {
            title: "Attaching one probe to N functions".into(),
            xlabel: "functions attached (N)".into(),
            ylabel: "attach time, ms (guest time under -icount)".into(),
            logx: true,
            logy: true,
            series,
            hlines: Vec::new(),
        }
        .render()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vm2() -> Sizes {
        Sizes {
            possible: 2,
            nr_cpu_ids: 2,
            page: 4096,
            rethook: 88,
            fprobe_node: 64,
            kretprobe_instance: 48,
            objpool_slot: 16,
        }
    }

    #[test]
    fn kmalloc_classes() {
        assert_eq!(kmalloc_round(88, 4096), 96);
        assert_eq!(kmalloc_round(16, 4096), 16);
        assert_eq!(kmalloc_round(4096, 4096), 4096);
        assert_eq!(kmalloc_round(9000, 4096), 16384);
    }

    #[test]
    fn small_pools_take_a_page_per_cpu() {
        // 4 nodes of 64 B over 2 CPUs: 16 + 4*8 + 2*64 = 176 B per CPU, one page each.
        assert_eq!(objpool_bytes(4, 64, &vm2()), 16 + 2 * 4096);
        assert_eq!(kernel_fprobe_pool(1, &vm2()), 96 + 16 + 2 * 4096);
        // max(10, 4) = 10 instances: capacity 16, 5 per CPU: 16 + 128 + 240 = 384 B per CPU.
        assert_eq!(kernel_kretprobe_pool(&vm2()), 96 + 16 + 2 * 4096);
    }

    #[test]
    fn big_pools_grow_with_functions() {
        // 10000 functions x 2 CPUs x 2 = 40000 nodes, capacity 65536, 20000 per CPU.
        let per_cpu = (16u64 + 65536 * 8 + 20000 * 64).div_ceil(4096) * 4096;
        assert_eq!(kernel_fprobe_pool(10000, &vm2()), 96 + 16 + 2 * per_cpu);
    }

    #[test]
    fn report_from_lines() {
        let ic = crate::parse(
            "@@bench start pass=icount quick=0 kernel=6.12 cpus=2\n\
             @@bench sizes name=vm possible_cpus=2 nr_cpu_ids=2 page=4096 rethook=88 fprobe_node=64 kretprobe_instance=48 objpool_slot=16\n\
             @@bench cost name=none calls=100 median_ps=10000 nmissed=0\n\
             @@bench cost name=ftrace_ops calls=100 median_ps=50000 nmissed=0\n\
             @@bench cost name=ufprobe calls=100 median_ps=52000 ufp_entry=120 nmissed=0\n\
             @@bench end pass=icount\n",
        );
        let r = Report::new(&ic, &[], &[]);
        let md = r.markdown();
        assert!(md.contains("| kernel: bare ftrace_ops (the reference) | 50.0 | 40.0 | 1.00x |"));
        assert!(
            md.contains("| ufgraph: fprobe, entry only | 52.0 | 42.0 | 1.04x | - | - | yes | 0 |")
        );
        // 42 instructions over no hook: within issue #15's 90; the rows not in the input are
        // reported as not measured.
        assert!(
            md.contains(
                "fprobe entry only at most 90 instructions over no hook: met (ufgraph 42.0"
            ),
            "{md}"
        );
        assert!(
            md.contains("fprobe entry+exit at most 300 instructions over no hook: not measured"),
            "{md}"
        );
        assert!(md.contains("the wall pass did not finish"));
        assert!(r.cost_svg().contains("bare ftrace_ops (50)"));
    }

    #[test]
    fn second_probe_rows_and_target() {
        let kp = crate::parse(
            "@@bench start pass=attach quick=0 kernel=6.12 cpus=2 clocksource=refined-jiffies\n\
             @@bench nfuncs name=all n=500\n\
             @@bench attach kind=ufprobe n=500 tried=500 attached=500 refused=0 err=0/0 capped=0 attach_ns=40000000 detach_ns=30000000\n\
             @@bench second kind=ufprobe first=ufprobe n=500 attached=500 err=0/0 counted=1 count_err=0 first_sites=500 first_updates=1 attach_ns=2000000 detach_ns=1000000 sites=0 updates=0 detach_sites=0 detach_updates=0\n\
             @@bench second kind=kfprobe first=kfprobe n=500 attached=500 err=0/0 counted=1 count_err=0 first_sites=500 first_updates=1 attach_ns=30000000 detach_ns=1000000 sites=500 updates=1 detach_sites=500 detach_updates=1\n\
             @@bench end pass=attach\n",
        );
        let r = Report::new(&[], &[], &kp);
        let md = r.markdown();
        assert!(
            md.contains("| all (500) | ufgraph register_fprobe_ips, a second probe (entry only) on an entry-only probe's functions | 500 | 2.0 | 1.0 | 4.0 | 2.0 | ftrace: 0 call sites patched in 0 updates (detach: 0 in 0); the first probe's attach: 500 in 1 |"),
            "{md}"
        );
        assert!(md.contains("costs no ftrace patching: met (500 functions; ufgraph: entry only on entry only: 0 call sites patched in 0 ftrace updates, 2.0 ms (its first probe: 500 sites in 1, attach 40.0 ms); the kernel's register_fprobe_ips: entry only on entry only: 500 call sites"), "{md}");
        // A ufgraph pair that patches: not met; one whose patching was not counted: not measured.
        let bad = crate::parse("@@bench second kind=ufprobe_exit first=ufprobe n=500 attached=500 err=0/0 counted=1 first_sites=500 first_updates=1 attach_ns=1 detach_ns=1 sites=500 updates=1 detach_sites=500 detach_updates=1\n");
        assert_eq!(Report::new(&[], &[], &bad).second_target().0, Some(false));
        let unc = crate::parse("@@bench second kind=ufprobe first=ufprobe n=500 attached=500 err=0/0 counted=0 count_err=-2 attach_ns=1 detach_ns=1\n");
        assert_eq!(Report::new(&[], &[], &unc).second_target().0, None);
        assert!(Report::new(&[], &[], &unc)
            .markdown()
            .contains("ftrace patching not counted (kprobe error -2)"));
        assert_eq!(Report::new(&[], &[], &[]).second_target().0, None);
        assert!(
            md.contains("- the attach pass timed with clocksource refined-jiffies"),
            "{md}"
        );
    }

    #[test]
    fn locked_target_needs_the_same_build() {
        let ic = crate::parse(
            "@@bench start pass=icount quick=0 kernel=6.12 cpus=2\n@@bench end pass=icount\n",
        );
        let tsv = "build-id\tb1\nsource\tthe work tree at 1234567\nhook\tufprobe\t94\t0\nhook\tufprobe_exit\t591\t0\nhook\tukretprobe\t727\t0\n\
                   hook\tufgraph1\t490\t0\nhook\tufgraph4\t1639\t0\nhook\tkfprobe_exit\t426\t2\n\
                   locked\tkfprobe_exit\trethook_try_get\t1\tlock cmpxchg %rdx,(%rdi)\nlocked\tkfprobe_exit\trethook_recycle\t1\tlock xadd %eax,(%rdx)\n";
        let mut r = Report::new(&ic, &[], &[]);
        assert!(r.markdown().contains(
            "per hooked call (ufgraph's hooks): not measured (no profile: run `make bench-profile`"
        ));
        r.profile = Some(Summary::parse(tsv));
        r.build_id = "b2".into();
        assert!(r.markdown().contains("(ufgraph's hooks): not measured (the last profile (the work tree at 1234567) is not of the build"), "{}", r.markdown());
        r.build_id = "b1".into();
        let md = r.markdown();
        assert!(md.contains("(ufgraph's hooks): met (one single-stepped call per hook; ufgraph: fprobe entry only 0, fprobe entry+exit 0, kretprobe shim 0, 1 graph ops 0, 4 graph ops 0; the kernel's: fprobe entry+exit 2 (in `rethook_try_get` 1, `rethook_recycle` 1); from the profile, \"Where the instructions go\")"), "{md}");
    }
}
