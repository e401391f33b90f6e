// SPDX-License-Identifier: GPL-2.0

//! The profile pass (`scripts/bench.sh --profile`): one call of the benchmark target per hook,
//! single-stepped by gdb through QEMU's gdbstub, every executed instruction's address in
//! `profile-HOOK.pcs`. Here the addresses become functions (System.map for vmlinux, the
//! modules' `/proc/kallsyms` lines the VM printed as `@@sym ...`), and the report says, per
//! hook, how many instructions the call took and which functions they were spent in.
//!
//! Exact for that one call: interrupts are off, so nothing else is counted; it is a warm call
//! (the task already has its shadow stack), the same as the per-call cost tables measure.
//!
//! Each `@pc` line also carries the instruction gdb disassembled there while stepping (`x/i
//! $pc`: the bytes executed, as patched at run time, also in trampolines that no file holds),
//! and the report counts the locked read-modify-write instructions among them (issue #15:
//! `-icount` counts an atomic as one instruction, a real CPU does not). The summary of that
//! goes to `profile.tsv` too, for the Targets of the `make bench` report.

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
            let (Some(a), Some(t), Some(name)) = (w.next(), w.next(), w.next()) else {
                continue;
            };
            if !matches!(t, "t" | "T" | "w" | "W") {
                continue;
            }
            let Ok(a) = u64::from_str_radix(a, 16) else {
                continue;
            };
            self.syms.push((a, name.to_string()));
        }
    }

    /// Adds the modules' extents from `/proc/modules` lines (`NAME SIZE REFS DEPS STATE ADDR`).
    pub fn add_modules(&mut self, text: &str) {
        for line in text.lines() {
            let w: Vec<&str> = line.split_whitespace().collect();
            let (Some(size), Some(addr)) = (w.get(1), w.get(5)) else {
                continue;
            };
            let (Ok(size), Ok(addr)) = (
                size.parse::<u64>(),
                u64::from_str_radix(addr.trim_start_matches("0x"), 16),
            ) else {
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

/// Whether an x86-64 instruction, as gdb disassembles it (AT&T syntax, e.g. `lock cmpxchg
/// %rdx,(%rdi)`), is a locked read-modify-write: `lock`-prefixed, or an `xchg` with a memory
/// operand, which the CPU locks without a prefix. An `xchg` of two registers (`xchg %ax,%ax` is
/// a nop) is not; nor are the unlocked `cmpxchg` and `xadd` of per-CPU operations.
pub fn locked_rmw(insn: &str) -> bool {
    const PREFIXES: &[&str] = &[
        "lock", "rep", "repz", "repe", "repnz", "repne", "cs", "ds", "es", "fs", "gs", "ss",
        "data16", "data32", "addr32", "notrack", "bnd", "xacquire", "xrelease", "rex", "rex.W",
    ];
    let mut words = insn.split_whitespace().peekable();
    let mut lock = false;
    while let Some(w) = words.peek() {
        if !PREFIXES.contains(w) {
            break;
        }
        lock |= *w == "lock";
        words.next();
    }
    if lock {
        return true;
    }
    let Some(mnemonic) = words.next() else {
        return false;
    };
    if !matches!(mnemonic, "xchg" | "xchgb" | "xchgw" | "xchgl" | "xchgq") {
        return false;
    }
    let operands: String = words.collect();
    split_operands(&operands).iter().any(|o| is_memory(o))
}

/// AT&T operands split at the commas outside parentheses: `%eax,0x8(%rdi,%rcx,4)` is two.
fn split_operands(s: &str) -> Vec<&str> {
    let (mut v, mut depth, mut start) = (Vec::new(), 0, 0);
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                v.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    v.push(&s[start..]);
    v
}

/// An AT&T operand names memory unless it is a register (`%rax`) or an immediate (`$1`):
/// `(%rdi)`, `0x8(%rip)`, `%gs:0x28` (segment-relative) and a bare address all do.
fn is_memory(op: &str) -> bool {
    let op = op.trim();
    !op.is_empty()
        && (op.contains('(') || op.contains(':') || !(op.starts_with('%') || op.starts_with('$')))
}

/// The instruction text of a `@pc` line: what follows gdb's `=> 0xADDR[ <sym+off>]:`, or
/// `None` for a line with an address only (a profile recorded before instructions were).
fn insn_text(rest: &str) -> Option<String> {
    let rest = rest.trim();
    let after = rest.strip_prefix("=>").unwrap_or(rest).trim_start();
    if !after.starts_with("0x") {
        return None;
    }
    let colon = after.find(':')?;
    let text = after[colon + 1..]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    (!text.is_empty()).then_some(text)
}

/// One function's share of a call.
#[derive(Debug, Clone, PartialEq)]
pub struct Func {
    pub name: String,
    pub instructions: usize,
    pub locked: usize,
}

/// One hook's call: instructions per function, in the order the functions were first entered.
pub struct Profile {
    pub hook: String,
    pub total: usize,
    pub funcs: Vec<Func>,
    /// Locked read-modify-write instructions executed, or `None` when not every instruction's
    /// text was recorded (then nothing is claimed).
    pub locked: Option<usize>,
    /// The locked instructions: function, instruction text, times executed; in call order.
    pub locked_insns: Vec<(String, String, usize)>,
}

/// Counts the instructions of one single-stepped call (`@pc ADDR [=> 0xADDR: INSN]` lines)
/// per function, and the locked read-modify-write ones among them.
pub fn profile(hook: &str, pcs: &str, syms: &Symbols) -> Profile {
    let mut funcs: Vec<Func> = Vec::new();
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut locked_insns: Vec<(String, String, usize)> = Vec::new();
    let (mut total, mut with_text, mut locked) = (0, 0, 0);
    for line in pcs.lines() {
        let Some(rest) = line.trim().strip_prefix("@pc ") else {
            continue;
        };
        let (a, rest) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
        let Ok(pc) = u64::from_str_radix(a.trim_start_matches("0x"), 16) else {
            continue;
        };
        total += 1;
        let name = syms.lookup(pc).unwrap_or("?").to_string();
        let i = *index.entry(name.clone()).or_insert_with(|| {
            funcs.push(Func {
                name: name.clone(),
                instructions: 0,
                locked: 0,
            });
            funcs.len() - 1
        });
        funcs[i].instructions += 1;
        let Some(text) = insn_text(rest) else {
            continue;
        };
        with_text += 1;
        if locked_rmw(&text) {
            locked += 1;
            funcs[i].locked += 1;
            match locked_insns
                .iter_mut()
                .find(|(f, t, _)| *f == name && *t == text)
            {
                Some(e) => e.2 += 1,
                None => locked_insns.push((name, text, 1)),
            }
        }
    }
    let locked = (total > 0 && with_text == total).then_some(locked);
    Profile {
        hook: hook.to_string(),
        total,
        funcs,
        locked,
        locked_insns,
    }
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

/// Demangles and shortens the function names of a profile (see [`readable`]), in place.
pub fn make_readable(p: &mut Profile) {
    let names: Vec<String> = p
        .funcs
        .iter()
        .map(|f| f.name.clone())
        .chain(p.locked_insns.iter().map(|l| l.0.clone()))
        .collect();
    let mut names = readable(&names).into_iter();
    for f in p.funcs.iter_mut() {
        f.name = names.next().unwrap_or_default();
    }
    for l in p.locked_insns.iter_mut() {
        l.0 = names.next().unwrap_or_default();
    }
}

/// The profile's hooks that are ufgraph's (issue #15's target: no locked instruction in any of
/// them), and what each hook is.
const HOOKS: &[(&str, bool, &str)] = &[
    ("none", false, "no hook"),
    ("ftrace_ops", false, "bare ftrace_ops"),
    ("kfprobe", false, "fprobe entry only"),
    ("kfprobe_exit", false, "fprobe entry+exit"),
    ("kretprobe", false, "kretprobe"),
    ("function_graph", false, "fgraph entry path"),
    ("ufprobe", true, "fprobe entry only"),
    ("ufprobe_exit", true, "fprobe entry+exit"),
    ("ukretprobe", true, "kretprobe shim"),
    ("ufgraph1", true, "1 graph ops"),
    ("ufgraph4", true, "4 graph ops"),
];

fn hook_label(hook: &str) -> &str {
    HOOKS
        .iter()
        .find(|h| h.0 == hook)
        .map(|h| h.2)
        .unwrap_or(hook)
}

fn is_ufgraph(hook: &str) -> bool {
    HOOKS.iter().any(|h| h.0 == hook && h.1)
}

/// What the `make bench` report needs of a profile run, kept in `profile.tsv` (tab-separated,
/// one record a line) next to the `.pcs` files: which build was profiled, and per hook the
/// instructions and locked instructions of its call and where the locked ones were.
#[derive(Debug, Default, PartialEq)]
pub struct Summary {
    /// The `build-id` scripts/bench.sh computed for the profiled build (sources and kernel).
    pub build_id: String,
    pub source: String,
    /// Hook, instructions, locked read-modify-write instructions (`None`: not classified).
    pub hooks: Vec<(String, usize, Option<usize>)>,
    /// Hook, function, times executed, instruction.
    pub locked: Vec<(String, String, usize, String)>,
}

impl Summary {
    pub fn new(profiles: &[Profile], build_id: &str, source: &str) -> Self {
        Summary {
            build_id: build_id.to_string(),
            source: source.to_string(),
            hooks: profiles
                .iter()
                .map(|p| (p.hook.clone(), p.total, p.locked))
                .collect(),
            locked: profiles
                .iter()
                .flat_map(|p| {
                    p.locked_insns
                        .iter()
                        .map(|(f, t, c)| (p.hook.clone(), f.clone(), *c, t.clone()))
                })
                .collect(),
        }
    }

    pub fn to_tsv(&self) -> String {
        let clean = |s: &str| s.replace(['\t', '\n'], " ");
        let mut s = String::from(
            "# bench-report --profile: the profile's summary, read by the `make bench` report\n",
        );
        let _ = writeln!(s, "build-id\t{}", clean(&self.build_id));
        let _ = writeln!(s, "source\t{}", clean(&self.source));
        for (h, n, l) in &self.hooks {
            let _ = writeln!(
                s,
                "hook\t{}\t{}\t{}",
                clean(h),
                n,
                l.map(|l| l.to_string()).unwrap_or("-".into())
            );
        }
        for (h, f, c, t) in &self.locked {
            let _ = writeln!(s, "locked\t{}\t{}\t{}\t{}", clean(h), clean(f), c, clean(t));
        }
        s
    }

    pub fn parse(text: &str) -> Self {
        let mut s = Summary::default();
        for line in text.lines() {
            let w: Vec<&str> = line.trim_end_matches('\r').split('\t').collect();
            match w.as_slice() {
                ["build-id", id] => s.build_id = id.to_string(),
                ["source", src] => s.source = src.to_string(),
                ["hook", h, n, l] => {
                    if let Ok(n) = n.parse() {
                        s.hooks.push((h.to_string(), n, l.parse().ok()));
                    }
                }
                ["locked", h, f, c, t] => {
                    if let Ok(c) = c.parse() {
                        s.locked
                            .push((h.to_string(), f.to_string(), c, t.to_string()));
                    }
                }
                _ => {}
            }
        }
        s
    }

    /// Where a hook's locked instructions were: "`f` 2, `g` 1".
    fn locked_in(&self, hook: &str) -> String {
        let mut per: Vec<(&str, usize)> = Vec::new();
        for (_, f, c, _) in self.locked.iter().filter(|l| l.0 == hook) {
            match per.iter_mut().find(|p| p.0 == f) {
                Some(p) => p.1 += c,
                None => per.push((f, *c)),
            }
        }
        per.iter()
            .map(|(f, c)| format!("`{}` {}", f, c))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// Issue #15's target, no locked read-modify-write instruction in a call through any of
    /// ufgraph's hooks: met, not met, or `None` when the profile has no ufgraph hook or did not
    /// classify every instruction of one; and the figures behind it.
    pub fn locked_target(&self) -> (Option<bool>, String) {
        let list = |ours: bool| -> Vec<String> {
            self.hooks
                .iter()
                .filter(|h| is_ufgraph(&h.0) == ours && h.0 != "none")
                .map(|(h, _, l)| {
                    let n = l.map(|l| l.to_string()).unwrap_or("not classified".into());
                    match l {
                        Some(l) if *l > 0 => {
                            format!("{} {} (in {})", hook_label(h), n, self.locked_in(h))
                        }
                        _ => format!("{} {}", hook_label(h), n),
                    }
                })
                .collect()
        };
        let ours: Vec<&(String, usize, Option<usize>)> =
            self.hooks.iter().filter(|h| is_ufgraph(&h.0)).collect();
        // Every ufgraph hook must have been profiled: a hook whose call failed is no evidence.
        let missing: Vec<&str> = HOOKS
            .iter()
            .filter(|h| h.1 && !ours.iter().any(|o| o.0 == h.0))
            .map(|h| hook_label(h.0))
            .collect();
        let met = if !missing.is_empty() || ours.iter().any(|h| h.2.is_none()) {
            None
        } else {
            Some(ours.iter().all(|h| h.2 == Some(0)))
        };
        let mut mine = list(true);
        if !missing.is_empty() {
            mine.push(format!("not profiled: {}", missing.join(", ")));
        }
        let detail = format!(
            "one single-stepped call per hook; ufgraph: {}; the kernel's: {}",
            mine.join(", "),
            list(false).join(", ")
        );
        (met, detail)
    }
}

/// The markdown section: the summary table, issue #15's locked-instruction target, where the
/// locked instructions are, then one table per hook, functions in call order.
pub fn markdown(profiles: &[Profile], source: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "_Generated by `scripts/bench.sh --profile` (host/bench-report); do not edit between the markers._");
    let _ = writeln!(s);
    let _ = writeln!(s, "- ufgraph built from {}", source);
    let _ = writeln!(s, "- one warm call of the target per hook, interrupts off, every instruction single-stepped by gdb");
    let _ = writeln!(
        s,
        "- locked: locked read-modify-write instructions executed (x86: `lock`-prefixed, and `xchg` with a memory operand), from gdb's disassembly of each instruction as it was executed"
    );
    let (met, _) = Summary::new(profiles, "", source).locked_target();
    let _ = writeln!(
        s,
        "- issue #15's target, no locked read-modify-write instruction per call through ufgraph's hooks: {}",
        match met {
            Some(true) => "met",
            Some(false) => "**not met**",
            None => "not measured (an instruction's text is missing)",
        }
    );
    let _ = writeln!(s);
    let num = |l: Option<usize>| l.map(|l| l.to_string()).unwrap_or("-".into());
    let _ = writeln!(s, "| hook | instructions | locked |");
    let _ = writeln!(s, "| --- | ---: | ---: |");
    for p in profiles {
        let _ = writeln!(s, "| {} | {} | {} |", p.hook, p.total, num(p.locked));
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "Locked read-modify-write instructions, by hook (function: times executed, instruction):"
    );
    let _ = writeln!(s);
    for p in profiles {
        let what = match p.locked {
            None => "not classified (no instruction text recorded)".to_string(),
            Some(0) => "none".to_string(),
            Some(_) => p
                .locked_insns
                .iter()
                .map(|(f, t, c)| format!("`{}`: {} `{}`", f.replace('|', "\\|"), c, t))
                .collect::<Vec<_>>()
                .join("; "),
        };
        let _ = writeln!(s, "- {}: {}", p.hook, what);
    }
    for p in profiles {
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "#### {} ({} instructions, {} locked)",
            p.hook,
            p.total,
            num(p.locked)
        );
        let _ = writeln!(s);
        let _ = writeln!(
            s,
            "| function (in the order first entered) | instructions | locked |"
        );
        let _ = writeln!(s, "| --- | ---: | ---: |");
        for f in &p.funcs {
            let locked = if p.locked.is_some() {
                f.locked.to_string()
            } else {
                "-".into()
            };
            let _ = writeln!(
                s,
                "| `{}` | {} | {} |",
                f.name.replace('|', "\\|"),
                f.instructions,
                locked
            );
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
        let f = |n: &str, i| Func {
            name: n.to_string(),
            instructions: i,
            locked: 0,
        };
        assert_eq!(p.funcs, vec![f("a", 3), f("c", 1), f("b", 1)]);
        // Addresses only (a profile from before instructions were recorded): nothing claimed.
        assert_eq!(p.locked, None);
        assert_eq!(syms.lookup(0x10), None);
        // D (data) symbols are not functions: an address past `b` still maps to `b`.
        assert_eq!(syms.lookup(0xffffffff81000204), Some("b"));
    }

    #[test]
    fn outside_known_text_is_generated_code() {
        let mut syms = Symbols::default();
        syms.add_map(
            "ffffffff81000000 T _stext\nffffffff81000010 T f\nffffffff81001000 T _etext\n",
        );
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

    #[test]
    fn classifies_locked_read_modify_writes() {
        for locked in [
            "lock cmpxchg %rdx,(%rdi)",
            "lock incl 0x10(%rax)",
            "lock xadd %eax,%gs:0x1234",
            "lock btsq $0x0,0x8(%rbx)",
            "lock   orb    $0x1,(%rdi)",
            "xchg %eax,(%rdx)",
            "xchg (%rdx),%eax",
            "xchgq %rax,0x10(%rsp)",
            "xchg %rax,%gs:0x28",
            "xchg %eax,0xffffffff82001000",
        ] {
            assert!(locked_rmw(locked), "{locked}");
        }
        for plain in [
            "cmpxchg %rdx,(%rdi)",
            "xadd %eax,%gs:0x1234",
            "incq %gs:0x7e9d0a10(%rip)",
            "xchg %ax,%ax",
            "xchg %rax,%rbx",
            "mov (%rdi),%rax",
            "rep stos %rax,%es:(%rdi)",
            "lea 0x8(%rsp),%rax",
            "",
        ] {
            assert!(!locked_rmw(plain), "{plain}");
        }
    }

    #[test]
    fn reads_gdb_instruction_text() {
        assert_eq!(
            insn_text("=> 0xffffffff81000000:\tlock cmpxchg %rdx,(%rdi)").as_deref(),
            Some("lock cmpxchg %rdx,(%rdi)")
        );
        assert_eq!(
            insn_text("=> 0xffffffff81000000 <f+4>:\tnopl   0x0(%rax,%rax,1)").as_deref(),
            Some("nopl 0x0(%rax,%rax,1)")
        );
        assert_eq!(insn_text(""), None);
        // gdb's error instead of an instruction: no text, so the call is not classified.
        assert_eq!(
            insn_text("Cannot access memory at address 0xffffffff81000000"),
            None
        );
    }

    #[test]
    fn counts_locked_instructions_per_function() {
        let mut syms = Symbols::default();
        syms.add_map("ffffffff81000000 T a\nffffffff81000100 t b\n");
        syms.finish();
        let pcs = "@pc ffffffff81000000 => 0xffffffff81000000:\tpush   %rbp\n\
                   @pc ffffffff81000100 => 0xffffffff81000100:\tlock cmpxchg %rdx,(%rdi)\n\
                   @pc ffffffff81000104 => 0xffffffff81000104:\txchg   %eax,(%rsi)\n\
                   @pc ffffffff81000100 => 0xffffffff81000100:\tlock cmpxchg %rdx,(%rdi)\n\
                   @pc ffffffff81000004 => 0xffffffff81000004:\tret\n";
        let p = profile("kfprobe_exit", pcs, &syms);
        assert_eq!(p.total, 5);
        assert_eq!(p.locked, Some(3));
        assert_eq!(
            p.funcs[0],
            Func {
                name: "a".into(),
                instructions: 2,
                locked: 0
            }
        );
        assert_eq!(
            p.funcs[1],
            Func {
                name: "b".into(),
                instructions: 3,
                locked: 3
            }
        );
        assert_eq!(
            p.locked_insns,
            vec![
                ("b".to_string(), "lock cmpxchg %rdx,(%rdi)".to_string(), 2),
                ("b".to_string(), "xchg %eax,(%rsi)".to_string(), 1)
            ]
        );
        // One instruction without its text: the count is not claimed.
        let q = profile(
            "h",
            "@pc ffffffff81000000 => 0xffffffff81000000:\tret\n@pc ffffffff81000004\n",
            &syms,
        );
        assert_eq!(q.locked, None);
        let md = markdown(&[p], "test");
        assert!(md.contains("| kfprobe_exit | 5 | 3 |"), "{md}");
        assert!(
            md.contains(
                "- kfprobe_exit: `b`: 2 `lock cmpxchg %rdx,(%rdi)`; `b`: 1 `xchg %eax,(%rsi)`"
            ),
            "{md}"
        );
        assert!(md.contains("| `b` | 3 | 3 |"), "{md}");
    }

    #[test]
    fn summary_round_trip_and_target() {
        let mk = |hook: &str, total, locked, insns: Vec<(&str, &str, usize)>| Profile {
            hook: hook.into(),
            total,
            funcs: Vec::new(),
            locked,
            locked_insns: insns
                .into_iter()
                .map(|(f, t, c)| (f.to_string(), t.to_string(), c))
                .collect(),
        };
        let ps = [
            mk(
                "kfprobe_exit",
                426,
                Some(2),
                vec![
                    ("rethook_try_get", "lock cmpxchg %rdx,(%rdi)", 1),
                    ("rethook_recycle", "lock xadd %eax,(%rdx)", 1),
                ],
            ),
            mk("ufprobe", 94, Some(0), vec![]),
            mk("ufprobe_exit", 591, Some(0), vec![]),
            mk("ukretprobe", 727, Some(0), vec![]),
            mk("ufgraph1", 490, Some(0), vec![]),
            mk("ufgraph4", 1639, Some(0), vec![]),
        ];
        let s = Summary::new(&ps, "abc", "the work tree at 1234567");
        let back = Summary::parse(&s.to_tsv());
        assert_eq!(back, s);
        let (met, detail) = back.locked_target();
        assert_eq!(met, Some(true));
        assert!(
            detail.contains("ufgraph: fprobe entry only 0, fprobe entry+exit 0"),
            "{detail}"
        );
        assert!(
            detail.contains(
                "the kernel's: fprobe entry+exit 2 (in `rethook_try_get` 1, `rethook_recycle` 1)"
            ),
            "{detail}"
        );
        // A ufgraph hook missing from the profile: not measured.
        let s = Summary::new(&ps[..3], "x", "y");
        assert_eq!(s.locked_target().0, None);
        assert!(
            s.locked_target()
                .1
                .contains("not profiled: kretprobe shim, 1 graph ops, 4 graph ops"),
            "{}",
            s.locked_target().1
        );
        // A locked instruction on a ufgraph hook: not met, and where it is.
        let mut bad: Vec<Profile> = ps.into_iter().filter(|p| p.hook != "ukretprobe").collect();
        bad.push(mk(
            "ukretprobe",
            700,
            Some(1),
            vec![("shim_exit", "lock incl (%rax)", 1)],
        ));
        let s = Summary::new(&bad, "x", "y");
        assert_eq!(s.locked_target().0, Some(false));
        assert!(s
            .locked_target()
            .1
            .contains("kretprobe shim 1 (in `shim_exit` 1)"));
        // Unclassified, or no ufgraph hook at all: not measured.
        assert_eq!(
            Summary::new(&[mk("ufprobe", 94, None, vec![])], "x", "y")
                .locked_target()
                .0,
            None
        );
        assert_eq!(
            Summary::new(&[mk("kfprobe", 137, Some(0), vec![])], "x", "y")
                .locked_target()
                .0,
            None
        );
    }
}
