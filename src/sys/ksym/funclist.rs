// SPDX-License-Identifier: GPL-2.0

//! Lines of ftrace's `available_filter_functions_addrs` (tracefs, Linux 6.5 and later): every
//! traceable function with its ftrace location, the address ftrace callbacks report.
//!
//! ```text
//!   ffffffff81001230 do_one_initcall
//!   ffffffffc0042010 ufg_test_add [ufgraph_kunit]
//! ```
//!
//! Host-tested: no kernel dependency (host/src/lib.rs builds this file for `cargo test` and the
//! fuzzers).

/// One traceable function.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Func<'a> {
    /// The ftrace location (the patched call site).
    pub loc: usize,
    /// The symbol name.
    pub name: &'a [u8],
    /// The module, if not the kernel image.
    pub module: Option<&'a [u8]>,
}

fn hex(s: &[u8]) -> Option<usize> {
    if s.is_empty() || s.len() > 2 * core::mem::size_of::<usize>() {
        return None;
    }
    let mut v: usize = 0;
    for &c in s {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        v = (v << 4) | d as usize;
    }
    Some(v)
}

/// The words of a line: split on spaces and tabs, empty ones skipped (both files align their
/// columns with either).
fn words(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&c| c == b' ' || c == b'\t')
        .filter(|w| !w.is_empty())
}

/// The optional last word of both files, `[MODULE]`: `Some(None)` when there is none (the
/// kernel image), `None` for a word that is not a bracketed name.
fn module(word: Option<&[u8]>) -> Option<Option<&[u8]>> {
    match word {
        None => Some(None),
        Some(m) if m.len() > 2 && m[0] == b'[' && m[m.len() - 1] == b']' => {
            Some(Some(&m[1..m.len() - 1]))
        }
        Some(_) => None,
    }
}

/// Parses one line (without its newline). `None` for anything that is not `ADDR NAME [MODULE]`.
pub fn parse(line: &[u8]) -> Option<Func<'_>> {
    let mut words = words(line);
    let loc = hex(words.next()?)?;
    let name = words.next()?;
    let module = module(words.next())?;
    if words.next().is_some() || loc == 0 {
        return None;
    }
    Some(Func { loc, name, module })
}

/// One line of `/proc/kallsyms`: `ADDR TYPE NAME [\tMODULE]`, e.g.
/// `ffffffff82a4c2e0 d event_mutex` or `ffffffffc0042010 t ufg_test_add\t[ufgraph_kunit]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sym<'a> {
    /// The address (0 when the reader may not see addresses: `kptr_restrict`).
    pub addr: usize,
    /// The symbol type letter (`T`, `t`, `D`, `d`, `B`, `b`, `R`, `r`, ...).
    pub kind: u8,
    /// The symbol name.
    pub name: &'a [u8],
    /// The module, if not the kernel image.
    pub module: Option<&'a [u8]>,
}

/// Parses one `/proc/kallsyms` line (without its newline).
pub fn parse_kallsyms(line: &[u8]) -> Option<Sym<'_>> {
    let mut words = words(line);
    let addr = hex(words.next()?)?;
    let kind = match words.next()? {
        [k] if k.is_ascii_alphabetic() => *k,
        _ => return None,
    };
    let name = words.next()?;
    let module = module(words.next())?;
    if words.next().is_some() {
        return None;
    }
    Some(Sym {
        addr,
        kind,
        name,
        module,
    })
}

/// Splits a buffer of lines, calling `f` on each complete line, and returns how many bytes were
/// consumed: a trailing partial line is left for the next read.
pub fn for_each_line(buf: &[u8], mut f: impl FnMut(&[u8])) -> usize {
    let mut start = 0;
    for (i, &c) in buf.iter().enumerate() {
        if c == b'\n' {
            f(&buf[start..i]);
            start = i + 1;
        }
    }
    start
}

/// Merges two sorted lists into `out` (at least as long as both together), sorted and without
/// duplicates; returns how many it wrote.
pub fn merge_sorted(a: &[usize], b: &[usize], out: &mut [usize]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() || j < b.len() {
        let v = match (a.get(i), b.get(j)) {
            (Some(&x), Some(&y)) if x <= y => {
                i += 1;
                j += usize::from(x == y);
                x
            }
            (_, Some(&y)) => {
                j += 1;
                y
            }
            (Some(&x), None) => {
                i += 1;
                x
            }
            (None, None) => break,
        };
        if n == 0 || out[n - 1] != v {
            out[n] = v;
            n += 1;
        }
    }
    n
}

/// Membership in a sorted list, for queries that mostly come in ascending order (a
/// registration's functions, sorted, against the list of ftrace locations): each query starts
/// where the last one ended, so that a walk over all of the list's members costs one compare
/// each, and a sparse walk a binary search of what is left. A query below the last one found
/// (queries out of order) searches the whole list: every answer is `list.binary_search`'s.
pub struct SortedMembers<'a> {
    list: &'a [usize],
    /// Everything below it is below every query so far (the list is sorted).
    cur: usize,
}

impl<'a> SortedMembers<'a> {
    /// Queries of `list`, which must be sorted.
    pub fn new(list: &'a [usize]) -> Self {
        Self { list, cur: 0 }
    }

    /// Whether `x` is in the list.
    pub fn contains(&mut self, x: usize) -> bool {
        let rest = self.list.get(self.cur..).unwrap_or(&[]);
        match rest.first() {
            Some(&y) if y == x => {
                self.cur += 1;
                return true;
            }
            _ => {}
        }
        if self.cur > 0 && self.list.get(self.cur - 1).is_some_and(|&y| y >= x) {
            // At or below where the walk got to: out of order, or a repeat.
            return self.list.binary_search(&x).is_ok();
        }
        self.cur += rest.partition_point(|&y| y < x);
        if self.list.get(self.cur) == Some(&x) {
            self.cur += 1;
            true
        } else {
            false
        }
    }
}

/// Whether an arm64 instruction is a `BTI` (any of its targets: the kernel's
/// `aarch64_insn_is_bti()`).
pub fn is_bti(insn: u32) -> bool {
    insn & 0xffff_ff3f == 0xd503_241f
}

/// arm64's ftrace location of a call-site entry with `DYNAMIC_FTRACE_WITH_CALL_OPS` (the
/// kernel's `ftrace_call_adjust()` there): the entry is the first of the two NOPs before the
/// function, 8-byte aligned (they hold the ops pointer); the location is the second NOP after
/// the entry point, one instruction further when the entry point is a BTI (`bti_kernel`:
/// `ARM64_BTI_KERNEL`; `insn_at` reads the instruction at an address, `None` if it cannot).
/// 0 for a misaligned entry, which ftrace refuses too.
///
/// ```text
///   site+0   NOP          ops pointer, low half
///   site+4   NOP          ops pointer, high half
///   site+8   func:  NOP   (or BTI, then everything below one instruction later)
///   site+12  NOP          patched to BL: the location
/// ```
pub fn arm64_call_ops_location(
    site: usize,
    bti_kernel: bool,
    insn_at: impl FnOnce(usize) -> Option<u32>,
) -> usize {
    const INSN: usize = 4;
    if !site.is_multiple_of(8) {
        return 0;
    }
    let mut a = site + 2 * INSN;
    if bti_kernel && insn_at(a).is_some_and(is_bti) {
        a += INSN;
    }
    a + INSN
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `SortedMembers` answers as `binary_search` does, for queries in order (dense, sparse,
    /// past both ends), out of order and repeated.
    #[test]
    fn sorted_members_answer_as_a_binary_search() {
        let list: Vec<usize> = (0..200).map(|i| 10 + i * 3).collect();
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let dense: Vec<usize> = list.clone();
        let sparse: Vec<usize> = (0..700).step_by(7).collect();
        let mut random: Vec<usize> = (0..300).map(|_| (next() % 700) as usize).collect();
        let mut sorted_random = random.clone();
        sorted_random.sort_unstable();
        random.push(list[0]);
        random.push(usize::MAX);
        for queries in [
            &dense,
            &sparse,
            &random,
            &sorted_random,
            &vec![],
            &vec![5, 5, 10, 10, 9],
        ] {
            let mut m = SortedMembers::new(&list);
            for &q in queries.iter() {
                assert_eq!(m.contains(q), list.binary_search(&q).is_ok(), "{q}");
            }
        }
        let mut m = SortedMembers::new(&[]);
        assert!(!m.contains(0));
    }

    #[test]
    fn call_ops_locations() {
        const NOP: u32 = 0xd503_201f;
        const BTI_C: u32 = 0xd503_245f;
        let base = 0xffff_8000_8010_0000usize;
        // No BTI at the entry point: entry + 12; a BTI there: entry + 16.
        assert_eq!(
            arm64_call_ops_location(base, true, |_| Some(NOP)),
            base + 12
        );
        assert_eq!(
            arm64_call_ops_location(base, true, |_| Some(BTI_C)),
            base + 16
        );
        // The instruction read is the entry point's, 8 past the entry.
        let mut read = None;
        arm64_call_ops_location(base, true, |a| {
            read = Some(a);
            Some(NOP)
        });
        assert_eq!(read, Some(base + 8));
        // Without BTI in the kernel nothing is read; an unreadable entry point is no BTI.
        assert_eq!(
            arm64_call_ops_location(base, false, |_| panic!("read")),
            base + 12
        );
        assert_eq!(arm64_call_ops_location(base, true, |_| None), base + 12);
        // Misaligned: no location.
        for off in [4, 2, 1] {
            assert_eq!(arm64_call_ops_location(base + off, true, |_| Some(NOP)), 0);
        }
    }

    #[test]
    fn kernel_and_module_lines() {
        assert_eq!(
            parse(b"ffffffff81001230 do_one_initcall"),
            Some(Func {
                loc: 0xffff_ffff_8100_1230,
                name: b"do_one_initcall",
                module: None
            })
        );
        assert_eq!(
            parse(b"ffffffffc0042010 ufg_test_add [ufgraph_kunit]"),
            Some(Func {
                loc: 0xffff_ffff_c004_2010,
                name: b"ufg_test_add",
                module: Some(b"ufgraph_kunit")
            })
        );
    }

    #[test]
    fn garbage_is_refused() {
        for bad in [
            &b""[..],
            b"zzz name",
            b"ffff",
            b"0 name",
            b"ffff name extra",
            b"ffff name [mod] x",
            b"ffff name mod",
            b"11112222333344445 name",
        ] {
            assert_eq!(parse(bad), None, "{:?}", core::str::from_utf8(bad));
        }
    }

    #[test]
    fn lines_across_reads() {
        let mut seen = Vec::new();
        let used = for_each_line(b"a 1\nb 2\nc 3", |l| seen.push(l.to_vec()));
        assert_eq!(seen, vec![b"a 1".to_vec(), b"b 2".to_vec()]);
        assert_eq!(used, 8);
        assert_eq!(for_each_line(b"no newline", |_| panic!()), 0);
    }

    #[test]
    fn merges() {
        let mut out = [0usize; 16];
        let n = merge_sorted(&[1, 3, 5, 9], &[2, 3, 4, 10, 11], &mut out);
        assert_eq!(&out[..n], &[1, 2, 3, 4, 5, 9, 10, 11]);
        let n = merge_sorted(&[], &[7, 7, 8], &mut out);
        assert_eq!(&out[..n], &[7, 8]);
        let n = merge_sorted(&[4, 5], &[], &mut out);
        assert_eq!(&out[..n], &[4, 5]);
        let n = merge_sorted(&[1, 2], &[1, 2], &mut out);
        assert_eq!(&out[..n], &[1, 2]);
        assert_eq!(merge_sorted(&[], &[], &mut out), 0);
    }

    #[test]
    fn bti() {
        // bti c, bti j, bti jc, bti; not a nop (d503201f) nor paciasp (d503233f).
        for i in [0xd503245f, 0xd503249f, 0xd50324df, 0xd503241f] {
            assert!(is_bti(i), "{i:#x}");
        }
        for i in [0xd503201f, 0xd503233f, 0] {
            assert!(!is_bti(i), "{i:#x}");
        }
    }

    #[test]
    fn kallsyms_lines() {
        let s = parse_kallsyms(b"ffffffff82a4c2e0 d event_mutex").unwrap();
        assert_eq!(
            (s.addr, s.kind, s.name, s.module),
            (0xffffffff82a4c2e0, b'd', &b"event_mutex"[..], None)
        );
        let s = parse_kallsyms(b"ffffffffc0042010 t ufg_test_add\t[ufgraph_kunit]").unwrap();
        assert_eq!(s.module, Some(&b"ufgraph_kunit"[..]));
        assert_eq!(
            parse_kallsyms(b"0000000000000000 D jiffies").unwrap().addr,
            0
        );
        assert!(parse_kallsyms(b"ffffffff82a4c2e0 dd x").is_none());
        assert!(parse_kallsyms(b"zz d x").is_none());
        assert!(parse_kallsyms(b"ffffffff82a4c2e0 d").is_none());
        assert!(parse_kallsyms(b"ffffffff82a4c2e0 d x [m] y").is_none());
    }
}
