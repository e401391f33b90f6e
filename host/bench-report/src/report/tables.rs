// SPDX-License-Identifier: GPL-2.0

//! The attach, memory and concurrency tables.

use super::*;

/// How a mass attach row shows its N: "all (count)" for every traceable function.
fn n_shown(n: f64, all: Option<f64>) -> String {
    if Some(n) == all || n == 0.0 {
        format!("all ({})", all.unwrap_or(n) as u64)
    } else {
        format!("{}", n as u64)
    }
}

/// A mass attach row of `r` (an `attach` or a `second` line): attached, the times, per
/// function, and the notes.
fn attach_row(s: &mut String, nshow: &str, label: &str, r: &Rec, notes: &[String]) {
    let att = r.num("attached").unwrap_or(0.0);
    let per = |k: &str| {
        r.num(k)
            .filter(|_| att > 0.0)
            .map(|v| format!("{:.1}", v / 1e3 / att))
            .unwrap_or("-".into())
    };
    let _ = writeln!(
        s,
        "| {} | {} | {} | {} | {} | {} | {} | {} |",
        nshow,
        label,
        att as u64,
        ms(r.num("attach_ns")),
        ms(r.num("detach_ns")),
        per("attach_ns"),
        per("detach_ns"),
        notes.join("; ")
    );
}

impl<'a> Report<'a> {
    pub(super) fn attach_tables(&self, s: &mut String) {
        let _ = writeln!(s, "### Mass attach\n");
        let all = self.nfuncs();
        let _ = writeln!(
            s,
            "One probe attached to, then detached from, the first N of vmlinux's {} traceable functions\n\
             (`available_filter_functions_addrs`, modules left out), guest time under `-icount` (TCG). Kprobes are\n\
             registered one by one and detached with one `unregister_kprobes()`; their registration stops\n\
             after the time cap (\"capped\"). The \"second probe\" rows time attaching and detaching a probe\n\
             on the functions a first probe of the same API already hooks; their notes count ftrace's\n\
             patching in an untimed repeat (kprobes on ftrace_update_record, called once per call site\n\
             patched, and ftrace_modify_all_code, once per update of the call sites), for the second probe\n\
             and for the first.\n",
            all.map(|v| v as u64).unwrap_or(0)
        );
        let _ = writeln!(s, "| N | hook | attached | attach ms | detach ms | attach us/function | detach us/function | notes |");
        let _ = writeln!(s, "| ---: | --- | ---: | ---: | ---: | ---: | ---: | --- |");
        let first = self.first_probe_rows(s, all);
        let second = self.second_probe_rows(s, all);
        if !first && !second {
            let _ = writeln!(s, "| - | not measured | | | | | | |");
        }
        s.push('\n');
    }

    /// The mass attach rows of one probe; whether there were any.
    fn first_probe_rows(&self, s: &mut String, all: Option<f64>) -> bool {
        let z = self.sizes();
        let mut any = false;
        for (kind, label) in ATTACH_KINDS {
            for r in self.attach(kind) {
                any = true;
                let n = r.num("n").unwrap_or(0.0);
                let nshow = n_shown(n, all);
                if r.get("skipped").is_some() {
                    let _ = writeln!(s, "| {} | {} | - | - | - | - | - | skipped: a smaller N already hit the cap |", nshow, label);
                    continue;
                }
                let mut notes = Vec::new();
                if r.get("capped") == Some("1") {
                    notes.push(format!(
                        "capped: {} of {} registered in {:.0} s",
                        r.get("tried").unwrap_or("?"),
                        n as u64,
                        r.num("attach_ns").unwrap_or(0.0) / 1e9
                    ));
                }
                if r.num("refused").unwrap_or(0.0) > 0.0 {
                    notes.push(format!(
                        "{} refused (first error {})",
                        r.get("refused").unwrap_or("?"),
                        r.get("first_err").or(r.get("err")).unwrap_or("?")
                    ));
                }
                if kind.ends_with("_exit") && kind.starts_with('k') {
                    if let Some(z) = z {
                        notes.push(format!(
                            "rethook pool {} (computed; {} with 64 CPUs)",
                            human(kernel_fprobe_pool(n as u64, &z) as f64),
                            human(kernel_fprobe_pool(n as u64, &z.with_cpus(64)) as f64)
                        ));
                    }
                }
                attach_row(s, &nshow, label, r, &notes);
            }
        }
        any
    }

    /// The mass attach rows of a second probe on the functions of a first; whether there were
    /// any.
    fn second_probe_rows(&self, s: &mut String, all: Option<f64>) -> bool {
        let mut any = false;
        for (first, kind, _, label) in SECOND_KINDS {
            for r in self.second(first, kind) {
                any = true;
                let nshow = n_shown(r.num("n").unwrap_or(0.0), all);
                let mut notes = Vec::new();
                if r.get("counted") == Some("1") {
                    notes.push(format!(
                        "ftrace: {} call sites patched in {} updates (detach: {} in {}); the first probe's attach: {} in {}",
                        r.get("sites").unwrap_or("?"),
                        r.get("updates").unwrap_or("?"),
                        r.get("detach_sites").unwrap_or("?"),
                        r.get("detach_updates").unwrap_or("?"),
                        r.get("first_sites").unwrap_or("?"),
                        r.get("first_updates").unwrap_or("?")
                    ));
                } else {
                    notes.push(format!(
                        "ftrace patching not counted (kprobe error {})",
                        r.get("count_err").unwrap_or("?")
                    ));
                }
                if r.get("err") != Some("0/0") {
                    notes.push(format!("errors {}", r.get("err").unwrap_or("?")));
                }
                attach_row(s, &nshow, label, r, &notes);
            }
        }
        any
    }

    pub(super) fn memory_tables(&self, s: &mut String) {
        let _ = writeln!(s, "### Memory\n");
        let _ = writeln!(
            s,
            "Measured in the VM (icount pass): the change of `Slab + VmallocUsed` in /proc/meminfo (KiB\n\
             granularity, some noise from the shell itself) when a graph user starts, then when P fprobes\n\
             with exit handlers and P kretprobes are added on top of it, all on one function.\n"
        );
        self.memgraph_table(s);
        self.mem_probes_table(s);
        if let Some(z) = self.sizes() {
            self.memory_computed_table(s, z);
        }
    }

    /// Measured: what starting the first graph user takes, the kernel's and ufgraph's.
    fn memgraph_table(&self, s: &mut String) {
        let _ = writeln!(s, "| | tasks | shadow stacks | measured change |");
        let _ = writeln!(s, "| --- | ---: | ---: | ---: |");
        for (who, label) in [
            ("kernel", "kernel: function_graph tracer starts"),
            ("ufgraph", "ufgraph: first graph ops registers"),
        ] {
            if let Some(r) = Self::find(self.ic, "memgraph", who) {
                let tasks = r.num("stats_tasks").or(r.num("tasks")).unwrap_or(0.0);
                let online = self
                    .ic
                    .iter()
                    .find(|r| r.sec == "sizes")
                    .and_then(|r| r.num("online_cpus"))
                    .unwrap_or(0.0);
                let bytes = r
                    .num("stats_bytes")
                    .map(|b| format!("{} (ufgraph stats; idle tasks included)", human(b)))
                    .unwrap_or_else(|| {
                        format!(
                            "{} (computed: a page per task and per online CPU's idle task)",
                            human(stacks((tasks + online) as u64) as f64)
                        )
                    });
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} |",
                    label,
                    tasks as u64,
                    bytes,
                    human(r.num("delta_kb").unwrap_or(0.0) * 1024.0)
                );
            }
        }
        s.push('\n');
    }

    /// Measured: what P fprobes and P kretprobes on top of a graph user take.
    fn mem_probes_table(&self, s: &mut String) {
        let z = self.sizes();
        let _ = writeln!(s, "| P (fprobes + kretprobes) | ufgraph measured | kernel measured | kernel rethook + kretprobe pools (computed) | ufgraph shadow stacks (stats) |");
        let _ = writeln!(s, "| ---: | ---: | ---: | ---: | ---: |");
        for p in [1.0, 10.0, 100.0] {
            let u = self.ic.iter().find(|r| {
                r.sec == "mem" && r.get("name") == Some("ufgraph") && r.num("p") == Some(p)
            });
            let k = self.ic.iter().find(|r| {
                r.sec == "mem" && r.get("name") == Some("kernel") && r.num("p") == Some(p)
            });
            if u.is_none() && k.is_none() {
                continue;
            }
            let kb = |r: Option<&Rec>| {
                r.and_then(|r| r.num("delta_kb"))
                    .map(|v| human(v * 1024.0))
                    .unwrap_or("-".into())
            };
            let pools = z
                .map(|z| {
                    human(
                        (p as u64 * (kernel_fprobe_pool(1, &z) + kernel_kretprobe_pool(&z))) as f64,
                    )
                })
                .unwrap_or("-".into());
            let _ = writeln!(
                s,
                "| {} + {} | {} | {} | {} | {} |",
                p,
                p,
                kb(u),
                kb(k),
                pools,
                u.and_then(|r| Some(format!(
                    "{} ({} tasks)",
                    human(r.num("stats_bytes")?),
                    r.get("stats_tasks")?
                )))
                .unwrap_or("-".into())
            );
        }
        s.push('\n');
    }

    /// Computed: the kernel's and ufgraph's memory for T tasks and P probes, on this machine
    /// and with 64 CPUs.
    fn memory_computed_table(&self, s: &mut String, z: Sizes) {
        let _ = writeln!(
            s,
            "Computed for T tasks and P fprobes (exit handler, one function each) plus P kretprobes, with a\n\
             graph user active. Kernel: T x 4 KiB ret_stack (`SHADOW_STACK_SIZE`, kmalloc'd per task when\n\
             the first fgraph user starts) + P x fprobe rethook pool ({} with {} possible CPUs: a struct\n\
             rethook and an objpool of 1 x CPUs x 2 nodes of {} B, one vmalloc'd block of whole pages per\n\
             possible CPU) + P x kretprobe pool ({}: max(10, 2 x CPUs) instances of {} B). ufgraph: T x 4 KiB\n\
             shadow stacks whatever P (its probes' frames live in them); its registration data (a few\n\
             hundred bytes per probe, measured above) is left out, as is the kernel's (ftrace_ops and filter\n\
             hashes).\n",
            human(kernel_fprobe_pool(1, &z) as f64),
            z.possible,
            z.fprobe_node,
            human(kernel_kretprobe_pool(&z) as f64),
            z.kretprobe_instance
        );
        let vm_tasks = Self::find(self.ic, "memgraph", "ufgraph")
            .and_then(|r| r.num("stats_tasks"))
            .unwrap_or(40.0) as u64;
        let big = z.with_cpus(64);
        let _ = writeln!(s, "| T | P | kernel ({} CPUs) | ufgraph | kernel / ufgraph | kernel (64 CPUs) | kernel / ufgraph (64 CPUs) |", z.possible);
        let _ = writeln!(s, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        for t in [vm_tasks, 1000, 10000] {
            for p in [1u64, 10, 100, 1000] {
                let k = stacks(t) + p * (kernel_fprobe_pool(1, &z) + kernel_kretprobe_pool(&z));
                let k64 =
                    stacks(t) + p * (kernel_fprobe_pool(1, &big) + kernel_kretprobe_pool(&big));
                let u = stacks(t);
                let _ = writeln!(
                    s,
                    "| {} | {} | {} | {} | {:.2}x | {} | {:.2}x |",
                    t,
                    p,
                    human(k as f64),
                    human(u as f64),
                    k as f64 / u as f64,
                    human(k64 as f64),
                    k64 as f64 / u as f64
                );
            }
        }
        s.push('\n');
    }

    pub(super) fn concurrency_table(&self, s: &mut String) {
        let _ = writeln!(s, "### Concurrency\n");
        let _ = writeln!(
            s,
            "One kthread per online CPU, all calling the hooked function at once (wall pass).\n"
        );
        let _ = writeln!(s, "| hooks | threads | calls | fprobe entries | fprobe exits | kretprobe returns | graph entries/returns | nmissed | wall ms |");
        let _ = writeln!(
            s,
            "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
        );
        let rows: Vec<&Rec> = self.wl.iter().filter(|r| r.sec == "conc").collect();
        if rows.is_empty() {
            let _ = writeln!(s, "| not measured | | | | | | | | |");
        }
        for r in rows {
            let g = |k: &str| r.get(k).unwrap_or("0").to_string();
            let name = r.get("name").unwrap_or("?");
            let label: Vec<&str> = name
                .split('+')
                .map(|h| match h {
                    "ufprobe_exit" => "ufgraph fprobe entry+exit",
                    "ukretprobe" => "ufgraph kretprobe shim",
                    "kfprobe_exit" => "kernel fprobe entry+exit",
                    "kretprobe" => "kernel kretprobe",
                    "ufgraph1" => "ufgraph fgraph, 1 ops",
                    h => h,
                })
                .collect();
            let label = label.join(", ");
            let (fe, fx) = if name.starts_with('u') {
                (g("ufp_entry"), g("ufp_exit"))
            } else {
                (g("kfp_entry"), g("kfp_exit"))
            };
            let kr = if name.starts_with('u') {
                g("ukretprobe")
            } else {
                g("kretprobe")
            };
            let _ = writeln!(
                s,
                "| {} | {} | {} | {} | {} | {} | {}/{} | {} | {} |",
                label,
                g("threads"),
                g("calls"),
                fe,
                fx,
                kr,
                g("ug_entry"),
                g("ug_exit"),
                g("nmissed"),
                ms(r.num("wall_ns"))
            );
        }
        s.push('\n');
    }
}
