// SPDX-License-Identifier: GPL-2.0

//! The profile pass (`scripts/bench.sh --profile`): one call of the benchmark target per hook,
//! single-stepped by gdb through QEMU's gdbstub, every executed instruction's address in
//! `profile-HOOK.pcs`. Here the addresses become functions (System.map for vmlinux, the
//! modules' `/proc/kallsyms` lines the VM printed as `@@sym ...`), and the report says, per
//! hook, how many instructions the call took and which functions they were spent in.
//!
//! Exact for that one call: interrupts are off, so nothing else is counted; it is a warm call
//! (the task already has its shadow stack), the same as the per-call cost tables measure.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Write as _;
use std::process::{Command, Stdio};

/// Text symbols, sorted by address, and the ranges they cover: an address outside every range
/// (the kernel's text, each module's) is code ftrace or kprobes generated at run time.
#[derive(Default)]
pub struct Symbols {
    syms: Vec<(u64, String)>,
    ranges: Vec<(u64, u64)>,
}

/// What an address outside the kernel's and the modules' text is.
pub const GENERATED: &str = "(trampoline generated at run time: ftrace ops or kprobe)";

impl Symbols {
    /// Adds the text symbols of System.map-style lines (`ADDR TYPE NAME [MODULE]`).
    pub fn add_map(&mut self, text: &str) {
        for line in text.lines() {
            let mut w = line.trim_end_matches('\r').split_whitespace();
            let (Some(a), Some(t), Some(name)) = (w.next(), w.next(), w.next()) else { continue };
            if !matches!(t, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(a) = u64::from_str_radix(a, 16) else { continue };
            self.syms.push((a, name.to_string()));
        }
    }

    /// Adds the modules' extents from `/proc/modules` lines (`NAME SIZE REFS DEPS STATE ADDR`).
    pub fn add_modules(&mut self, text: &str) {
        for line in text.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            let (Some(size), Some(addr)) = (w.get(1), w.get(5)) else { continue };
            let (Ok(size), Ok(addr)) = (size.parse::<u64>(), u64::from_str_radix(addr.trim_start_matches("0x"), 16)) else {
                continue;
            };
            self.ranges.push((addr, addr + size));
        }
    }

    /// Sorts, and takes the kernel's text range from `_stext`/`_etext`; call after adding.
    pub fn finish(&mut self) {
        self.syms.sort();
        let find = |n: &str| self.syms.iter().find(|(_, s)| s == n).map(|(a, _)| *a);
        if let (Some(s), Some(e)) = (find("_stext"), find("_etext")) {
            self.ranges.push((s, e));
        }
        if let (Some(s), Some(e)) = (find("_sinittext"), find("_einittext")) {
            self.ranges.push((s, e));
        }
    }

    /// The function `pc` is in: the closest symbol at or below it, or [`GENERATED`] when `pc`
    /// lies outside every known range (if any ranges are known).
    pub fn lookup(&self, pc: u64) -> Option<&str> {
        if !self.ranges.is_empty() && !self.ranges.iter().any(|&(s, e)| s <= pc && pc < e) {
            return Some(GENERATED);
        }
        let i = self.syms.partition_point(|(a, _)| *a <= pc);
        (i > 0).then(|| self.syms[i - 1].1.as_str())
    }
}

/// One hook's call: instructions per function, in the order the functions were first entered.
pub struct Profile {
    pub hook: String,
    pub total: usize,
    pub funcs: Vec<(String, usize)>,
}

/// Counts the instructions of one single-stepped call (`@pc ADDR` lines) per function.
pub fn profile(hook: &str, pcs: &str, syms: &Symbols) -> Profile {
    let mut order: Vec<String> = Vec::new();
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let mut total = 0;
    for line in pcs.lines() {
        let Some(a) = line.trim().strip_prefix("@pc ") else { continue };
        let Ok(pc) = u64::from_str_radix(a.trim_start_matches("0x"), 16) else { continue };
        total += 1;
        let name = syms.lookup(pc).unwrap_or("?").to_string();
        let c = counts.entry(name.clone()).or_insert(0);
        if *c == 0 {
            order.push(name);
        }
        *c += 1;
    }
    let funcs = order.into_iter().map(|n| {
        let c = counts[&n];
        (n, c)
    });
    Profile { hook: hook.to_string(), total, funcs: funcs.collect() }
}

/// Demangles Rust (v0) names with `c++filt` when it is there, and shortens them: no crate
/// hashes, no `ufgraph_main::`/`core::`/`kernel::` prefixes.
pub fn readable(names: &[String]) -> Vec<String> {
    let demangled = Command::new("c++filt")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .ok()
        .and_then(|mut c| {
            let mut input = names.join("\n");
            input.push('\n');
            c.stdin.take()?.write_all(input.as_bytes()).ok()?;
            let out = c.wait_with_output().ok()?;
            let s = String::from_utf8(out.stdout).ok()?;
            let v: Vec<String> = s.lines().map(str::to_string).collect();
            (v.len() == names.len()).then_some(v)
        })
        .unwrap_or_else(|| names.to_vec());
    demangled.iter().map(|s| shorten(s)).collect()
}

fn shorten(s: &str) -> String {
    // Crate hashes: `name[0123abcd]`.
    let mut out = String::with_capacity(s.len());
    let mut skip = false;
    for c in s.chars() {
        match c {
            '[' if !skip => skip = true,
            ']' if skip => skip = false,
            _ if skip => {}
            _ => out.push(c),
        }
    }
    for p in ["ufgraph_main::", "ufgraph_bench::", "core::", "kernel::"] {
        out = out.replace(p, "");
    }
    out
}

/// The markdown section: one table per hook, functions in call order.
pub fn markdown(profiles: &[Profile], source: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "_Generated by `scripts/bench.sh --profile` (host/bench-report); do not edit between the markers._");
    let _ = writeln!(s);
    let _ = writeln!(s, "- ufgraph built from {}", source);
    let _ = writeln!(s, "- one warm call of the target per hook, interrupts off, every instruction single-stepped by gdb");
    let _ = writeln!(s);
    let _ = writeln!(s, "| hook | instructions |");
    let _ = writeln!(s, "| --- | ---: |");
    for p in profiles {
        let _ = writeln!(s, "| {} | {} |", p.hook, p.total);
    }
    for p in profiles {
        let _ = writeln!(s);
        let _ = writeln!(s, "#### {} ({} instructions)", p.hook, p.total);
        let _ = writeln!(s);
        let _ = writeln!(s, "| function (in the order first entered) | instructions |");
        let _ = writeln!(s, "| --- | ---: |");
        let names: Vec<String> = p.funcs.iter().map(|(n, _)| n.clone()).collect();
        for (name, (_, c)) in readable(&names).iter().zip(p.funcs.iter()) {
            let _ = writeln!(s, "| `{}` | {} |", name.replace('|', "\\|"), c);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_per_function_in_call_order() {
        let mut syms = Symbols::default();
        syms.add_map("ffffffff81000000 T a\nffffffff81000100 t b\nffffffff81000200 D data\n");
        syms.add_map("ffffffffc0000000 t c\t[ufgraph]\r\n");
        syms.finish();
        let pcs = "@pc ffffffff81000000\n@pc ffffffff81000004\n@pc ffffffffc0000010\n@pc ffffffff81000104\n@pc ffffffff81000008\nnoise\n";
        let p = profile("h", pcs, &syms);
        assert_eq!(p.total, 5);
        assert_eq!(p.funcs, vec![("a".to_string(), 3), ("c".to_string(), 1), ("b".to_string(), 1)]);
        assert_eq!(syms.lookup(0x10), None);
        // D (data) symbols are not functions: an address past `b` still maps to `b`.
        assert_eq!(syms.lookup(0xffffffff81000204), Some("b"));
    }

    #[test]
    fn outside_known_text_is_generated_code() {
        let mut syms = Symbols::default();
        syms.add_map("ffffffff81000000 T _stext\nffffffff81000010 T f\nffffffff81001000 T _etext\n");
        syms.add_map("ffffffffc0000000 t m\t[mod]\n");
        syms.add_modules("mod 4096 0 - Live 0xffffffffc0000000 (O)\n");
        syms.finish();
        assert_eq!(syms.lookup(0xffffffff81000020), Some("f"));
        assert_eq!(syms.lookup(0xffffffffc0000ff0), Some("m"));
        assert_eq!(syms.lookup(0xffffffffc0002000), Some(GENERATED));
        assert_eq!(syms.lookup(0xffffffff81002000), Some(GENERATED));
    }

    #[test]
    fn shortens_demangled_names() {
        assert_eq!(
            shorten("<ufgraph_main[7215bb46d2764aa5]::fgraph::graph::Graph>::enter"),
            "<fgraph::graph::Graph>::enter"
        );
        assert_eq!(shorten("ftrace_ops_list_func"), "ftrace_ops_list_func");
    }
}
