// SPDX-License-Identifier: GPL-2.0

//! What kallsyms says of an address (`sprint_symbol()`: `name+0x1f/0x80 [module]`), read for
//! one question teardown asks: is this address the very start of another hooker's return
//! trampoline?
//!
//! A return address points just past a call instruction, never at the first byte of a function;
//! a return-hooking mechanism's trampoline is entered exactly there. So a saved return slot that
//! holds the start of a function called like a return trampoline belongs to a hooker that
//! stacked over the frame:
//!
//! ```text
//!   return_to_handler+0x0/0x..           the kernel's function_graph (x86_64, arm64)
//!   arch_rethook_trampoline+0x0/0x..     rethook: kretprobes and fprobes on x86_64
//!   __kretprobe_trampoline+0x0/0x..      kretprobes without rethook
//!   ufgraph_return_trampoline+0x0/0x.. [ufgraph_kunit]   another ufgraph
//! ```
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

use crate::sys::hookers::stacks::Hooker;

/// What the address `s` (kallsyms' text for it) names is to teardown: offset 0 of a return
/// trampoline (the function_graph tracer's, rethook's, or another symbol ending in
/// `_trampoline`), or an ordinary address.
pub fn hooker(s: &[u8]) -> Hooker {
    let Some(plus) = s.iter().position(|&c| c == b'+') else {
        return Hooker::Plain;
    };
    let (name, rest) = s.split_at(plus);
    if !rest.starts_with(b"+0x0/") {
        return Hooker::Plain;
    }
    match name {
        b"return_to_handler" => Hooker::Fgraph,
        b"arch_rethook_trampoline" => Hooker::Rethook,
        _ if name.len() > b"_trampoline".len() && name.ends_with(b"_trampoline") => Hooker::Unknown,
        _ => Hooker::Plain,
    }
}

/// The function name and the module (`None`: the kernel image) in kallsyms' text `s` for an
/// address (`name+0x1f/0x80 [module]`); `None` when the text names no symbol (a bare address).
/// What an address resolves to when it is checked against the modules going away.
pub fn parts(s: &[u8]) -> Option<(&[u8], Option<&[u8]>)> {
    let plus = s.iter().position(|&c| c == b'+')?;
    let (name, rest) = s.split_at(plus);
    if name.is_empty() {
        return None;
    }
    let module = rest
        .iter()
        .position(|&c| c == b'[')
        .and_then(|open| rest.get(open + 1..))
        .and_then(|m| m.iter().position(|&c| c == b']').map(|close| &m[..close]))
        // `[module]` may carry a build id after a blank (CONFIG_STACKTRACE_BUILD_ID).
        .map(|m| m.split(|&c| c == b' ').next().unwrap_or(m))
        .filter(|m| !m.is_empty());
    Some((name, module))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_modules() {
        assert_eq!(parts(b"vfs_read+0x4/0x1a0"), Some((&b"vfs_read"[..], None)));
        assert_eq!(
            parts(b"ufg_test_add+0x0/0x20 [ufgraph_kunit]"),
            Some((&b"ufg_test_add"[..], Some(&b"ufgraph_kunit"[..])))
        );
        assert_eq!(
            parts(b"f+0x0/0x20 [m 0123abcd]"),
            Some((&b"f"[..], Some(&b"m"[..])))
        );
        assert_eq!(parts(b"0xffffffffc0001000"), None);
        assert_eq!(parts(b"+0x0/0x10"), None);
        assert_eq!(parts(b"f+0x0/0x10 []"), Some((&b"f"[..], None)));
        assert_eq!(parts(b"f+0x0/0x10 [m"), Some((&b"f"[..], None)));
    }

    fn is_trampoline(s: &[u8]) -> bool {
        hooker(s) != Hooker::Plain
    }

    #[test]
    fn trampolines_at_their_start() {
        assert!(is_trampoline(b"return_to_handler+0x0/0x2c"));
        assert!(is_trampoline(b"arch_rethook_trampoline+0x0/0x40"));
        assert!(is_trampoline(b"__kretprobe_trampoline+0x0/0x50"));
        assert!(is_trampoline(
            b"ufgraph_return_trampoline+0x0/0x60 [ufgraph_kunit]"
        ));
    }

    #[test]
    fn which_hooker() {
        assert_eq!(hooker(b"return_to_handler+0x0/0x2c"), Hooker::Fgraph);
        assert_eq!(hooker(b"arch_rethook_trampoline+0x0/0x40"), Hooker::Rethook);
        assert_eq!(
            hooker(b"ufgraph_return_trampoline+0x0/0x60 [ufgraph_kunit]"),
            Hooker::Unknown
        );
        assert_eq!(hooker(b"arch_rethook_trampoline+0x8/0x40"), Hooker::Plain);
    }

    #[test]
    fn not_trampolines() {
        // Inside a trampoline (a task preempted there), a return address, plain addresses.
        assert!(!is_trampoline(b"return_to_handler+0x12/0x2c"));
        assert!(!is_trampoline(b"vfs_read+0x4a/0x170"));
        assert!(!is_trampoline(b"vfs_read+0x0/0x170"));
        assert!(!is_trampoline(b"0xffffffff81234567"));
        assert!(!is_trampoline(b"_trampoline+0x0/0x10"));
        assert!(!is_trampoline(b""));
        assert!(!is_trampoline(b"return_to_handler_x+0x0/0x2c"));
    }
}
