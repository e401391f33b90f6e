// SPDX-License-Identifier: GPL-2.0

//! The targets section: each of the design's targets, measured or not, and the second
//! target's verdict.

use super::*;

/// One target's line: what it asks, whether it is met (`None`: not measured), and the figures.
fn target_line(s: &mut String, met: Option<bool>, what: &str, detail: String) {
    let m = match met {
        Some(true) => "met",
        Some(false) => "**not met**",
        None => "not measured",
    };
    let _ = writeln!(s, "- {}: {} ({})", what, m, detail);
}

impl<'a> Report<'a> {
    pub(super) fn targets(&self, s: &mut String) {
        let _ = writeln!(s, "### Targets\n");
        self.hook_cost_targets(s);
        self.graph_ops_targets(s);
        self.attach_targets(s);
        // A second probe where one already is: judged on ftrace's patching as counted (call
        // sites patched, code updates), at the largest N measured, for every pair of kinds.
        let (met, detail) = self.second_target();
        target_line(
            s,
            met,
            "a second probe on functions already hooked costs no ftrace patching",
            detail,
        );
        self.locked_target(s);
        self.bpf_target(s);
        let (met, detail) = crate::arm64::rows_target(self.arm64, &self.arm64_source);
        target_line(
            s,
            met,
            "arm64 rows: ufgraph against the kernel's kretprobe and function_graph",
            detail,
        );
        self.memory_target(s);
        s.push('\n');
    }

    /// Instructions per call of a hook over an unhooked call (the icount pass).
    fn over(&self, name: &str) -> Option<f64> {
        Self::cost(self.ic, name)
            .zip(Self::cost(self.ic, "none"))
            .map(|(a, b)| a - b)
    }

    /// Wall-clock ns per call of a hook over an unhooked call (the wall pass).
    fn over_wall(&self, name: &str) -> Option<f64> {
        Self::cost(self.wl, name)
            .zip(Self::cost(self.wl, "none"))
            .map(|(a, b)| a - b)
    }

    /// Issue #15's targets for single hooks, in instructions over an unhooked call (the icount
    /// pass).
    fn hook_cost_targets(&self, s: &mut String) {
        for (name, kname, max, what) in [
            (
                "ufprobe_exit",
                "kfprobe_exit",
                300.0,
                "fprobe entry+exit at most 300 instructions over no hook",
            ),
            (
                "ukretprobe",
                "kretprobe",
                300.0,
                "kretprobe shim at most 300 instructions over no hook",
            ),
            (
                "ufprobe",
                "kfprobe",
                90.0,
                "fprobe entry only at most 90 instructions over no hook",
            ),
        ] {
            let (u, k) = (self.over(name), self.over(kname));
            target_line(
                s,
                u.map(|u| u <= max),
                what,
                format!(
                    "ufgraph {}, the kernel's {} (kernel/ufgraph {} in instructions, {} wall){}",
                    f1(u),
                    f1(k),
                    ratio(k.zip(u).map(|(k, u)| k / u)),
                    ratio(
                        self.over_wall(kname)
                            .zip(self.over_wall(name))
                            .map(|(k, u)| k / u)
                    ),
                    // What a BPF program costs for the same hook, where the kernel has BPF.
                    match (name, self.over("bpf_fexit"), self.over("bpf_fentry")) {
                        ("ufprobe_exit", Some(b), _) =>
                            format!("; a BPF fexit program {}", f1(Some(b))),
                        ("ufprobe", _, Some(b)) =>
                            format!("; a BPF fentry program {}", f1(Some(b))),
                        _ => String::new(),
                    }
                ),
            );
        }
    }

    /// The graph ops targets: each further ops on a function, and 16 of them.
    fn graph_ops_targets(&self, s: &mut String) {
        let c = |n: &str| Self::cost(self.ic, n);
        let (g1, g4, g16) = (c("ufgraph1"), c("ufgraph4"), c("ufgraph16"));
        // Judged from 1 to 4 ops. From 4 to 16 is shown beside it: the first further ops also
        // moves the call from the single-ops paths to the multi-ops loops, a cost paid once.
        let each = g1.zip(g4).map(|(a, b)| (b - a) / 3.0);
        let each16 = g4.zip(g16).map(|(a, b)| (b - a) / 12.0);
        target_line(
            s,
            each.map(|e| e <= 60.0),
            "each further graph ops on a function at most 60 instructions",
            format!(
                "1 / 4 / 16 ops: {} / {} / {}; each further ops {} from 1 to 4, {} from 4 to 16 \
                 (the first further ops also moves the call from the single-ops paths to the \
                 multi-ops loops)",
                f1(g1),
                f1(g4),
                f1(g16),
                f1(each),
                f1(each16)
            ),
        );
        target_line(
            s,
            self.over("ufgraph16").map(|v| v <= 1500.0),
            "16 graph ops on one function at most 1500 instructions over no hook",
            format!(
                "ufgraph {}, the kernel's fgraph with 16 users {} (its entry side only)",
                f1(self.over("ufgraph16")),
                f1(self.over("kgraph16"))
            ),
        );
    }

    /// The time to attach a probe of `kind` to all traceable functions, if it was measured and
    /// attached any.
    fn attach_all_ns(&self, kind: &str) -> Option<f64> {
        self.all_ns(kind, "attach_ns")
    }

    /// The time to detach that probe again.
    fn detach_all_ns(&self, kind: &str) -> Option<f64> {
        self.all_ns(kind, "detach_ns")
    }

    fn all_ns(&self, kind: &str, key: &str) -> Option<f64> {
        let all = self.nfuncs();
        self.attach(kind)
            .into_iter()
            .find(|r| r.num("n") == all && r.get("skipped").is_none())
            .and_then(|r| {
                if r.get("attached") == Some("0") {
                    None
                } else {
                    r.num(key)
                }
            })
    }

    /// 4. attaching everything.
    fn attach_targets(&self, s: &mut String) {
        let all = self.nfuncs();
        for (u, k, what) in [
            ("ufprobe", "kfprobe", "attaching to and detaching from all traceable functions in at most 0.8x the kernel's register_fprobe and unregister_fprobe times (entry only)"),
            ("ufprobe_exit", "kfprobe_exit", "the same with an exit handler"),
        ] {
            let (a, b) = (self.attach_all_ns(u), self.attach_all_ns(k));
            let (da, db) = (self.detach_all_ns(u), self.detach_all_ns(k));
            // ftrace's own part, which no fprobe can go below: a bare ftrace_ops on the same
            // functions (filter hash and patching), when the run measured it.
            let floor = match (self.attach_all_ns("ftrace_ops"), b) {
                (Some(f), Some(b)) if u == "ufprobe" => format!(
                    "; a bare ftrace_ops on them: {} ms ({} of the kernel's fprobe), the floor under both",
                    ms(Some(f)),
                    ratio(Some(f / b))
                ),
                _ => String::new(),
            };
            let met = a.zip(b).map(|(a, b)| a <= 0.8 * b);
            let met = match (met, da.zip(db).map(|(a, b)| a <= 0.8 * b)) {
                (Some(x), Some(y)) => Some(x && y),
                _ => None,
            };
            target_line(
                s,
                met,
                what,
                format!(
                    "{} functions: attach ufgraph {} ms, kernel {} ms, ufgraph/kernel {}; detach ufgraph {} ms, kernel {} ms, ufgraph/kernel {} (guest time under -icount){}",
                    all.map(|v| v as u64).unwrap_or(0),
                    ms(a),
                    ms(b),
                    ratio(a.zip(b).map(|(a, b)| a / b)),
                    ms(da),
                    ms(db),
                    ratio(da.zip(db).map(|(a, b)| a / b)),
                    floor
                ),
            );
        }
    }

    /// Locked instructions: from the profile pass, a boot of its own, so only when it ran on
    /// the same build as these logs.
    fn locked_target(&self, s: &mut String) {
        let what = "no locked read-modify-write instruction per hooked call (ufgraph's hooks)";
        match &self.profile {
            None => target_line(s, None, what, "no profile: run `make bench-profile` (scripts/bench.sh --profile), which counts them and refreshes these Targets".into()),
            Some(p) if p.build_id != self.build_id || self.build_id == "unknown" => target_line(
                s,
                None,
                what,
                format!("the last profile ({}) is not of the build these logs measured: run `make bench-profile`", p.source),
            ),
            Some(p) => {
                let (met, detail) = p.locked_target();
                target_line(s, met, what, format!("{}; from the profile, \"Where the instructions go\"", detail));
            }
        }
    }

    /// The BPF rows exist when both ran and their programs counted every timed call.
    fn bpf_target(&self, s: &mut String) {
        let (bf, bx) = (self.over("bpf_fentry"), self.over("bpf_fexit"));
        let counted = |n: &str| {
            Self::find(self.ic, "cost", n).is_some_and(|r| {
                r.num("bpf")
                    .zip(r.num("calls"))
                    .is_some_and(|(b, c)| b >= c)
            })
        };
        target_line(
            s,
            bf.zip(bx).map(|_| counted("bpf_fentry") && counted("bpf_fexit")),
            "BPF fentry/fexit rows: what a user would pick instead, on the same function",
            format!(
                "instructions over no hook: a BPF fentry program {}, a BPF fexit program {} (the BPF trampoline calls the function itself, so its return needs no shadow stack); ufgraph's fprobe entry only {}, entry+exit {}",
                f1(bf),
                f1(bx),
                f1(self.over("ufprobe")),
                f1(self.over("ufprobe_exit"))
            ),
        );
    }

    /// The largest P a `mem` row of `who` measured, and its change in KiB.
    fn largest_mem_delta(&self, who: &str) -> Option<(f64, f64)> {
        self.ic
            .iter()
            .filter(|r| r.sec == "mem" && r.get("name") == Some(who))
            .filter_map(|r| Some((r.num("p")?, r.num("delta_kb")?)))
            .max_by(|a, b| a.0.total_cmp(&b.0))
    }

    /// 5. memory flat.
    fn memory_target(&self, s: &mut String) {
        // Bytes per task with a shadow stack, at each P (the task count itself moves with the
        // shell's own forks).
        let per_task: Vec<f64> = self
            .ic
            .iter()
            .filter(|r| r.sec == "mem" && r.get("name") == Some("ufgraph"))
            .filter_map(|r| Some(r.num("stats_bytes")? / r.num("stats_tasks")?))
            .collect();
        let flat = if per_task.len() >= 2 {
            Some(per_task.iter().all(|&b| b == per_task[0]))
        } else {
            None
        };
        let per_probe = self.largest_mem_delta("ufgraph");
        let kper = self.largest_mem_delta("kernel");
        target_line(
            s,
            flat,
            "return-hooking memory flat in the number of users and probes",
            format!(
                "ufgraph's shadow stacks stay {} per task with 1 to {} fprobes+kretprobes on top of a graph user; all of ufgraph's registration data measured {} per probe, the kernel's (pools included) {} per probe",
                per_task.first().map(|&b| human(b)).unwrap_or("-".into()),
                per_probe.map(|p| p.0 as u64).unwrap_or(0),
                per_probe.map(|(p, kb)| human(kb * 1024.0 / (2.0 * p))).unwrap_or("-".into()),
                kper.map(|(p, kb)| human(kb * 1024.0 / (2.0 * p))).unwrap_or("-".into())
            ),
        );
    }

    /// Issue #15's "a second probe on functions that are already hooked costs no ftrace
    /// patching": met when, at the largest N measured, no second ufgraph probe (of any pair of
    /// kinds) made ftrace patch a call site or update its code; `None` when nothing was measured
    /// or counted.
    pub(super) fn second_target(&self) -> (Option<bool>, String) {
        let mut ufg = Vec::new();
        let mut kern = Vec::new();
        let mut met = Some(true);
        let mut any = false;
        let mut nmax = 0.0;
        for (first, kind, short, _) in SECOND_KINDS {
            let rows = self.second(first, kind);
            let Some(r) = rows
                .iter()
                .filter(|r| r.get("attached") != Some("0"))
                .max_by(|a, b| {
                    a.num("n")
                        .unwrap_or(0.0)
                        .total_cmp(&b.num("n").unwrap_or(0.0))
                })
            else {
                continue;
            };
            let n = r.num("n").unwrap_or(0.0);
            nmax = f64::max(nmax, n);
            let counted = r.get("counted") == Some("1");
            let first_ms = self
                .attach(first)
                .into_iter()
                .find(|a| a.num("n") == Some(n))
                .and_then(|a| a.num("attach_ns"));
            let text = if counted {
                format!(
                    "{}: {} call sites patched in {} ftrace updates, {} ms (its first probe: {} sites in {}, attach {} ms)",
                    short,
                    r.get("sites").unwrap_or("?"),
                    r.get("updates").unwrap_or("?"),
                    ms(r.num("attach_ns")),
                    r.get("first_sites").unwrap_or("?"),
                    r.get("first_updates").unwrap_or("?"),
                    ms(first_ms)
                )
            } else {
                format!(
                    "{}: patching not counted, {} ms (first probe {} ms)",
                    short,
                    ms(r.num("attach_ns")),
                    ms(first_ms)
                )
            };
            if kind.starts_with('u') {
                any = true;
                met = match (met, counted) {
                    (Some(m), true) => {
                        Some(m && r.num("sites") == Some(0.0) && r.num("updates") == Some(0.0))
                    }
                    _ => None,
                };
                ufg.push(text);
            } else {
                kern.push(text);
            }
        }
        if !any {
            return (
                None,
                "not measured (no second-probe run in the attach log)".into(),
            );
        }
        (
            met,
            format!(
                "{} functions; ufgraph: {}; the kernel's register_fprobe_ips: {}; patching counted by kprobes on ftrace_update_record (once per call site x86's ftrace_replace_code patches) and ftrace_modify_all_code (once per update of the call sites)",
                nmax as u64,
                ufg.join("; "),
                if kern.is_empty() { "not measured".into() } else { kern.join("; ") }
            ),
        )
    }
}
