// SPDX-License-Identifier: GPL-2.0

//! The promises of the parsers of what the kernel's own files say about symbols: the lines of
//! ftrace's `available_filter_functions_addrs` and `/proc/kallsyms` (`src/sys/ksym/funclist.rs`),
//! the buffer splitter that reads them, and kallsyms' text for an address
//! (`src/sys/ksym/name.rs`), which teardown reads to recognise another hooker's trampoline.
//!
//! The module reads these files on every load; a kernel whose files hold something unexpected
//! must get a refusal, not a panic or a wrong answer. Each input is a buffer as one `read()`
//! returns it:
//!
//! - `for_each_line` consumes exactly up to the last newline, and the lines it gives are the
//!   buffer's, in order, without their newlines;
//! - each line (and the partial one left over) parses as the file's format says, checked
//!   against a statement of that format in terms of `std` (words separated by spaces and tabs,
//!   `u64::from_str_radix`): accepted exactly when it is `ADDR NAME [[MODULE]]` (and, for
//!   kallsyms, a one-letter type), with those values; what it accepts prints back to a line
//!   that parses to the same thing;
//! - a symbol text names a hooker exactly when it is offset 0 of `return_to_handler`,
//!   `arch_rethook_trampoline` or another `*_trampoline`, and the same text at any other offset
//!   names none.

use ufgraph_pure::sys::hookers::stacks::Hooker;
use ufgraph_pure::sys::ksym::funclist::{for_each_line, parse, parse_kallsyms, Func, Sym};
use ufgraph_pure::sys::ksym::name::hooker;

use crate::common::{ensure, Verdict};

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The line's words: runs of bytes other than space and tab.
fn words(line: &[u8]) -> Vec<&[u8]> {
    line.split(|&c| c == b' ' || c == b'\t')
        .filter(|w| !w.is_empty())
        .collect()
}

/// An address as the files print it: hex digits, at most 16, with `std`'s parser.
fn address(w: &[u8]) -> Option<u64> {
    if w.len() > 16 || !w.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(w).ok()?, 16).ok()
}

/// `[MODULE]`, MODULE not empty.
fn module(w: &[u8]) -> Option<&[u8]> {
    w.strip_prefix(b"[")?
        .strip_suffix(b"]")
        .filter(|m| !m.is_empty())
}

/// What `available_filter_functions_addrs` says the line is.
fn func_spec(line: &[u8]) -> Option<Func<'_>> {
    let w = words(line);
    let loc = address(w.first()?)?;
    if loc == 0 || !(2..=3).contains(&w.len()) {
        return None;
    }
    let module = match w.get(2) {
        Some(m) => Some(module(m)?),
        None => None,
    };
    Some(Func {
        loc: loc as usize,
        name: w[1],
        module,
    })
}

/// What `/proc/kallsyms` says the line is.
fn sym_spec(line: &[u8]) -> Option<Sym<'_>> {
    let w = words(line);
    let addr = address(w.first()?)?;
    if !(3..=4).contains(&w.len()) || w[1].len() != 1 || !w[1][0].is_ascii_alphabetic() {
        return None;
    }
    let module = match w.get(3) {
        Some(m) => Some(module(m)?),
        None => None,
    };
    Some(Sym {
        addr: addr as usize,
        kind: w[1][0],
        name: w[2],
        module,
    })
}

/// Which hooker kallsyms' text `s` names.
fn hooker_spec(s: &[u8]) -> Hooker {
    let at_start = |name: &[u8]| {
        s.strip_prefix(name)
            .is_some_and(|r| r.starts_with(b"+0x0/"))
    };
    if at_start(b"return_to_handler") {
        return Hooker::Fgraph;
    }
    if at_start(b"arch_rethook_trampoline") {
        return Hooker::Rethook;
    }
    // NAME_trampoline+0x0/..., NAME not empty and the symbol's (before the first '+').
    const TAIL: &[u8] = b"_trampoline+0x0/";
    let plus = s.iter().position(|&c| c == b'+').unwrap_or(s.len());
    match s.windows(TAIL.len()).position(|w| w == TAIL) {
        Some(p) if p > 0 && p + b"_trampoline".len() == plus => Hooker::Unknown,
        _ => Hooker::Plain,
    }
}

fn check_line(line: &[u8]) -> Verdict {
    let f = parse(line);
    ensure(f == func_spec(line), || {
        format!("funclist {:?}: {f:?}", show(line))
    })?;
    if let Some(f) = f {
        let mut again = format!("{:x} {}", f.loc, show(f.name)).into_bytes();
        if let Some(m) = f.module {
            again.extend_from_slice(format!(" [{}]", show(m)).as_bytes());
        }
        // (Names and modules are raw bytes; the formatting above is only for the log.)
        let mut raw = format!("{:x} ", f.loc).into_bytes();
        raw.extend_from_slice(f.name);
        if let Some(m) = f.module {
            raw.extend_from_slice(b" [");
            raw.extend_from_slice(m);
            raw.push(b']');
        }
        ensure(parse(&raw) == Some(f), || {
            format!("funclist {:?} prints as {:?}", show(line), show(&again))
        })?;
    }
    let s = parse_kallsyms(line);
    ensure(s == sym_spec(line), || {
        format!("kallsyms {:?}: {s:?}", show(line))
    })?;
    if let Some(s) = s {
        let mut raw = format!("{:016x} {} ", s.addr, s.kind as char).into_bytes();
        raw.extend_from_slice(s.name);
        if let Some(m) = s.module {
            raw.extend_from_slice(b"\t[");
            raw.extend_from_slice(m);
            raw.push(b']');
        }
        ensure(parse_kallsyms(&raw) == Some(s), || {
            format!("kallsyms {:?} prints differently", show(line))
        })?;
    }
    let h = hooker(line);
    ensure(h == hooker_spec(line), || {
        format!("hooker {:?}: {h:?}", show(line))
    })?;
    // The same text at another offset names no hooker.
    if let Some(p) = line.windows(5).position(|w| w == b"+0x0/") {
        let mut moved = line.to_vec();
        moved[p + 3] = b'8';
        ensure(hooker(&moved) == Hooker::Plain, || {
            format!("hooker {:?}", show(&moved))
        })?;
    }
    Ok(())
}

/// Runs one buffer; returns a label for the statistics, or what promise it breaks.
pub fn check(buf: &[u8]) -> Result<&'static str, String> {
    let mut lines: Vec<Vec<u8>> = Vec::new();
    let used = for_each_line(buf, |l| lines.push(l.to_vec()));
    let want = buf.iter().rposition(|&c| c == b'\n').map_or(0, |p| p + 1);
    ensure(used == want, || {
        format!(
            "consumed {used} of {} bytes, last newline ends at {want}",
            buf.len()
        )
    })?;
    let mut joined = Vec::new();
    for l in &lines {
        joined.extend_from_slice(l);
        joined.push(b'\n');
    }
    ensure(joined == buf[..used], || {
        "lines are not the buffer's".into()
    })?;
    let mut accepted = 0;
    for line in lines.iter().map(Vec::as_slice).chain([&buf[used..]]) {
        check_line(line)?;
        accepted += usize::from(parse(line).is_some() || parse_kallsyms(line).is_some());
    }
    Ok(match (lines.len(), accepted) {
        (0, _) => "no complete line",
        (_, 0) => "lines, none accepted",
        _ => "lines, some accepted",
    })
}

/// Buffers like the parsers' own tests, for seeds.
pub const SEEDS: &[&[u8]] = &[
    b"ffffffff81001230 do_one_initcall\nffffffffc0042010 ufg_test_add [ufgraph_kunit]\n",
    b"zzz name\nffff\n0 name\nffff name extra\nffff name [mod] x\nffff name mod\n11112222333344445 name\n",
    b"a 1\nb 2\nc 3",
    b"ffffffff82a4c2e0 d event_mutex\nffffffffc0042010 t ufg_test_add\t[ufgraph_kunit]\n0000000000000000 D jiffies\n",
    b"ffffffff82a4c2e0 dd x\nzz d x\nffffffff82a4c2e0 d\nffffffff82a4c2e0 d x [m] y\n",
    b"return_to_handler+0x0/0x2c\narch_rethook_trampoline+0x0/0x40\n__kretprobe_trampoline+0x0/0x50\n",
    b"ufgraph_return_trampoline+0x0/0x60 [ufgraph_kunit]\narch_rethook_trampoline+0x8/0x40\n",
    b"return_to_handler+0x12/0x2c\nvfs_read+0x4a/0x170\nvfs_read+0x0/0x170\n0xffffffff81234567\n_trampoline+0x0/0x10\n\nreturn_to_handler_x+0x0/0x2c\n",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{Rng, Source};

    #[test]
    fn seeds_keep_promises() {
        for s in SEEDS {
            check(s).unwrap_or_else(|e| panic!("{:?}: {e}", show(s)));
        }
    }

    /// The statements of the formats agree with the parsers' own tests.
    #[test]
    fn specs_say_what_the_tests_say() {
        assert_eq!(
            func_spec(b"ffffffffc0042010 ufg_test_add [ufgraph_kunit]")
                .unwrap()
                .module,
            Some(&b"ufgraph_kunit"[..])
        );
        assert_eq!(func_spec(b"0 name"), None);
        assert_eq!(func_spec(b"ffff name mod"), None);
        assert_eq!(sym_spec(b"0000000000000000 D jiffies").unwrap().addr, 0);
        assert_eq!(sym_spec(b"ffffffff82a4c2e0 dd x"), None);
        assert_eq!(
            hooker_spec(b"__kretprobe_trampoline+0x0/0x50"),
            Hooker::Unknown
        );
        assert_eq!(hooker_spec(b"_trampoline+0x0/0x10"), Hooker::Plain);
        assert_eq!(hooker_spec(b"vfs_read+0x0/0x170"), Hooker::Plain);
        assert_eq!(hooker_spec(b"a+b_trampoline+0x0/0x10"), Hooker::Plain);
    }

    /// Seeds with random edits: a short deterministic run in `cargo test`.
    #[test]
    fn short_run() {
        let mut rng = Rng(5);
        const PIECES: &[&[u8]] = &[
            b" ",
            b"\t",
            b"\n",
            b"[",
            b"]",
            b"+0x0/",
            b"_trampoline",
            b"0",
            b"f",
            b"x",
            b"T",
        ];
        for _ in 0..20_000 {
            let mut b = rng.pick(SEEDS).to_vec();
            for _ in 0..1 + rng.below(4) {
                let i = rng.below(b.len() + 1);
                match rng.below(3) {
                    0 => b
                        .splice(i..i, rng.pick(PIECES).iter().copied())
                        .for_each(drop),
                    1 if i < b.len() => b[i] = rng.next() as u8,
                    _ => b.truncate(i),
                }
            }
            check(&b).unwrap_or_else(|e| panic!("{:?}: {e}", show(&b)));
        }
    }
}
