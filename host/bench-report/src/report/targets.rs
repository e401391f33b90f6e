// SPDX-License-Identifier: GPL-2.0

//! The targets section: each of the design's targets, measured or not, and the second
//! target's verdict.

use super::*;

impl<'a> Report<'a> {
    pub(super) fn targets(&self, s: &mut String) {
        let _ = writeln!(s, "### Targets\n");
        let c = |n: &str| Self::cost(self.ic, n);
        let cw = |n: &str| Self::cost(self.wl, n);
        let mut line = |met: Option<bool>, what: &str, detail: String| {
            let m = match met {
                Some(true) => "met",
                Some(false) => "**not met**",
                None => "not measured",
            };
            let _ = writeln!(s, "- {}: {} ({})", what, m, detail);
        };
        // Issue #15's targets, in instructions over an unhooked call (the icount pass).
        let n = c("none");
        let over = |name: &str| c(name).zip(n).map(|(a, b)| a - b);
        let over_w = |name: &str| cw(name).zip(cw("none")).map(|(a, b)| a - b);
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
            let (u, k) = (over(name), over(kname));
            line(
                u.map(|u| u <= max),
                what,
                format!(
                    "ufgraph {}, the kernel's {} (kernel/ufgraph {} in instructions, {} wall){}",
                    f1(u),
                    f1(k),
                    ratio(k.zip(u).map(|(k, u)| k / u)),
                    ratio(over_w(kname).zip(over_w(name)).map(|(k, u)| k / u)),
                    // What a BPF program costs for the same hook, where the kernel has BPF.
                    match (name, over("bpf_fexit"), over("bpf_fentry")) {
                        ("ufprobe_exit", Some(b), _) =>
                            format!("; a BPF fexit program {}", f1(Some(b))),
                        ("ufprobe", _, Some(b)) =>
                            format!("; a BPF fentry program {}", f1(Some(b))),
                        _ => String::new(),
                    }
                ),
            );
        }
        let (g1, g4, g16) = (c("ufgraph1"), c("ufgraph4"), c("ufgraph16"));
        let each = g1.zip(g4).map(|(a, b)| (b - a) / 3.0);
        line(
            each.map(|e| e <= 60.0),
            "each further graph ops on a function at most 60 instructions",
            format!(
                "1 / 4 / 16 ops: {} / {} / {}; each further ops {}",
                f1(g1),
                f1(g4),
                f1(g16),
                f1(each)
            ),
        );
        line(
            over("ufgraph16").map(|v| v <= 1500.0),
            "16 graph ops on one function at most 1500 instructions over no hook",
            format!(
                "ufgraph {}, the kernel's fgraph with 16 users {} (its entry side only)",
                f1(over("ufgraph16")),
                f1(over("kgraph16"))
            ),
        );
        // 4. attaching everything.
        let all = self.nfuncs();
        let at = |kind: &str| {
            self.attach(kind)
                .into_iter()
                .find(|r| r.num("n") == all && r.get("skipped").is_none())
                .and_then(|r| {
                    if r.get("attached") == Some("0") {
                        None
                    } else {
                        r.num("attach_ns")
                    }
                })
        };
        for (u, k, what) in [
            ("ufprobe", "kfprobe", "attaching all traceable functions in at most 0.8x the kernel's register_fprobe time (entry only)"),
            ("ufprobe_exit", "kfprobe_exit", "the same with an exit handler"),
        ] {
            let (a, b) = (at(u), at(k));
            // ftrace's own part, which no fprobe can go below: a bare ftrace_ops on the same
            // functions (filter hash and patching), when the run measured it.
            let floor = match (at("ftrace_ops"), b) {
                (Some(f), Some(b)) if u == "ufprobe" => format!(
                    "; a bare ftrace_ops on them: {} ms ({} of the kernel's fprobe), the floor under both",
                    ms(Some(f)),
                    ratio(Some(f / b))
                ),
                _ => String::new(),
            };
            line(
                a.zip(b).map(|(a, b)| a <= 0.8 * b),
                what,
                format!(
                    "{} functions: ufgraph {} ms, kernel {} ms, ufgraph/kernel {} (wall clock){}",
                    all.map(|v| v as u64).unwrap_or(0),
                    ms(a),
                    ms(b),
                    ratio(a.zip(b).map(|(a, b)| a / b)),
                    floor
                ),
            );
        }
        // A second probe where one already is: judged on ftrace's patching as counted (call
        // sites patched, code updates), at the largest N measured, for every pair of kinds.
        let (met, detail) = self.second_target();
        line(
            met,
            "a second probe on functions already hooked costs no ftrace patching",
            detail,
        );
        // Locked instructions: from the profile pass, a boot of its own, so only when it ran on
        // the same build as these logs.
        let what = "no locked read-modify-write instruction per hooked call (ufgraph's hooks)";
        match &self.profile {
            None => line(None, what, "no profile: run `make bench-profile` (scripts/bench.sh --profile), which counts them and refreshes these Targets".into()),
            Some(p) if p.build_id != self.build_id || self.build_id == "unknown" => line(
                None,
                what,
                format!("the last profile ({}) is not of the build these logs measured: run `make bench-profile`", p.source),
            ),
            Some(p) => {
                let (met, detail) = p.locked_target();
                line(met, what, format!("{}; from the profile, \"Where the instructions go\"", detail));
            }
        }
        // The rows exist when both ran and their programs counted every timed call.
        let (bf, bx) = (over("bpf_fentry"), over("bpf_fexit"));
        let counted = |n: &str| {
            Self::find(self.ic, "cost", n).is_some_and(|r| {
                r.num("bpf")
                    .zip(r.num("calls"))
                    .is_some_and(|(b, c)| b >= c)
            })
        };
        line(
            bf.zip(bx).map(|_| counted("bpf_fentry") && counted("bpf_fexit")),
            "BPF fentry/fexit rows: what a user would pick instead, on the same function",
            format!(
                "instructions over no hook: a BPF fentry program {}, a BPF fexit program {} (the BPF trampoline calls the function itself, so its return needs no shadow stack); ufgraph's fprobe entry only {}, entry+exit {}",
                f1(bf),
                f1(bx),
                f1(over("ufprobe")),
                f1(over("ufprobe_exit"))
            ),
        );
        let (met, detail) = crate::arm64::rows_target(self.arm64, &self.arm64_source);
        line(
            met,
            "arm64 rows: ufgraph against the kernel's kretprobe and function_graph",
            detail,
        );
        // 5. memory flat.
        let mems: Vec<&Rec> = self
            .ic
            .iter()
            .filter(|r| r.sec == "mem" && r.get("name") == Some("ufgraph"))
            .collect();
        // Bytes per task with a shadow stack, at each P (the task count itself moves with the
        // shell's own forks).
        let per_task: Vec<f64> = mems
            .iter()
            .filter_map(|r| Some(r.num("stats_bytes")? / r.num("stats_tasks")?))
            .collect();
        let flat = if per_task.len() >= 2 {
            Some(per_task.iter().all(|&b| b == per_task[0]))
        } else {
            None
        };
        let per_probe = mems
            .iter()
            .filter_map(|r| Some((r.num("p")?, r.num("delta_kb")?)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        let kper = self
            .ic
            .iter()
            .filter(|r| r.sec == "mem" && r.get("name") == Some("kernel"))
            .filter_map(|r| Some((r.num("p")?, r.num("delta_kb")?)))
            .max_by(|a, b| a.0.total_cmp(&b.0));
        line(
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
        s.push('\n');
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
