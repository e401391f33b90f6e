// SPDX-License-Identifier: GPL-2.0

//! The audit on hand-made modules: one test for each problem it reports.

use super::elf::build::{elf, rela, Sec, S};
use super::*;

const H: u32 = 0x1234_5678;
/// R_X86_64_64, R_AARCH64_ABS64: a pointer in data.
const R_X86_64_64: u32 = 1;
const R_AARCH64_ABS64: u32 = 257;

/// An x86_64 module: `cb` at .text+16 (its `__cfi_cb` preamble, with `pre`, before it; an ENDBR
/// if `endbr`), `other` at .text+32 (an ENDBR, address not taken), `caller` at .text+48 with a
/// kCFI check of `call` (unreadable if None); .data holds &cb; `ibt`: objtool's seal section.
fn x86(pre: u32, endbr: bool, call: Option<u32>, ibt: bool) -> Elf {
    let mut text = vec![0xb8];
    text.extend_from_slice(&pre.to_le_bytes());
    text.extend_from_slice(&[0x90; 11]);
    text.extend_from_slice(if endbr {
        &[0xf3, 0x0f, 0x1e, 0xfa]
    } else {
        &[0xc3, 0xcc, 0xcc, 0xcc]
    });
    text.resize(32, 0xcc);
    text.extend_from_slice(&[0xf3, 0x0f, 0x1e, 0xfa]);
    text.resize(48, 0xcc);
    // movl $-HASH, %r10d; addl -15(%r11), %r10d; je 1f; ud2
    text.extend_from_slice(&[0x41, 0xba]);
    text.extend_from_slice(&call.unwrap_or(0).wrapping_neg().to_le_bytes());
    text.extend_from_slice(if call.is_some() {
        &[0x45, 0x03, 0x53, 0xf1]
    } else {
        &[0x90; 4]
    });
    text.extend_from_slice(&[0x74, 0x02, 0x0f, 0x0b, 0xc3]);
    let mut secs = vec![
        Sec::code(".text", text),
        Sec::data(".data", vec![0; 8]),
        Sec::rela(".rela.data", 2, rela(0, 1, R_X86_64_64, 0)),
        Sec::table("__kcfi_traps", vec![0; 4]),
        Sec::rela(".rela__kcfi_traps", 4, rela(0, 5, R_X86_64_PC32, 60)),
    ];
    if ibt {
        // objtool sealed caller's (nonexistent) ENDBR; other's stays: it must be address-taken.
        secs.push(Sec::table(".ibt_endbr_seal", vec![0; 4]));
        secs.push(Sec::rela(
            ".rela.ibt_endbr_seal",
            6,
            rela(0, 4, R_X86_64_PC32, 0),
        ));
    }
    let syms = [
        S::func("cb", 1, 16),
        S::func("__cfi_cb", 1, 0),
        S::func("other", 1, 32),
        S::func("caller", 1, 48),
        S::new(".text", 3, 1, 0),
    ];
    Elf::parse("/b/t.ko", elf(secs, &syms)).unwrap()
}

/// The audit of `m` with the list `text` (each `c`/`called` entry's C hash: `hashes`, in order).
fn audit(
    arch: Arch,
    text: &str,
    hashes: &[u32],
    externc: &[&str],
    m: &Elf,
    obj: Option<&Elf>,
) -> Audit {
    audit_exports(arch, text, hashes, externc, m, obj, &HashMap::new())
}

fn audit_exports(
    arch: Arch,
    text: &str,
    hashes: &[u32],
    externc: &[&str],
    m: &Elf,
    obj: Option<&Elf>,
    exports: &HashMap<String, u32>,
) -> Audit {
    let mut entries = list::parse_list(text, "kcfi-audit.list").unwrap();
    let mut h = hashes.iter();
    for e in entries
        .iter_mut()
        .filter(|e| matches!(e.kind, Kind::C | Kind::Called))
    {
        e.hash = Some(*h.next().unwrap());
    }
    let externc = externc.iter().map(|s| s.to_string()).collect();
    let mut a = Audit::new(arch, entries, externc, "kcfi-audit.list");
    a.verbose = true;
    a.bti = arch == Arch::Arm64;
    let mut same = |n: &[String]| Ok(n.iter().map(|s| (s.clone(), s.clone())).collect());
    a.module("t.ko", m, obj, exports, &mut same).unwrap();
    a.finish();
    a
}

fn problems(a: &Audit) -> Vec<&str> {
    a.out
        .iter()
        .map(|s| s.as_str())
        .filter(|s| s.starts_with("MISMATCH") || s.starts_with("UNKNOWN"))
        .collect()
}

#[test]
fn finds_the_hashes() {
    let m = x86(H, true, Some(H), false);
    let (taken, mid) = address_taken(&m, Arch::X86_64);
    assert_eq!(taken.len(), 1);
    assert_eq!(taken[&(1, 16)].0, "cb");
    assert_eq!(mid, 0);
    assert_eq!(preamble_hash(&m, Arch::X86_64, 1, 16, "cb"), Some(H));
    // No __cfi_ symbol, or no preamble: no hash.
    assert_eq!(preamble_hash(&m, Arch::X86_64, 1, 48, "caller"), None);
    let c = call_site_hashes(&m, Arch::X86_64);
    assert_eq!(
        c.seen.into_iter().collect::<Vec<_>>(),
        [(H, vec!["caller".to_string()])]
    );
    assert_eq!(c.unread, 0);
}

#[test]
fn all_good() {
    let m = x86(H, true, Some(H), false);
    let a = audit(
        Arch::X86_64,
        "cb  c (t)0\nlabel  called (t)0\n",
        &[H, H],
        &[],
        &m,
        None,
    );
    assert_eq!(a.bad, 0, "{:?}", a.out);
    assert_eq!(
        a.out,
        [
            "called   t.ko: 1 indirect calls check (t)0 (12345678)",
            "ok       t.ko: cb 12345678 = (t)0",
            "kcfi-audit x86_64: 1 address-taken functions: 1 c; 1 kCFI-checked indirect calls, each to a known type; 1 checks of C API handler types; 0 problem(s)",
        ]
    );
}

#[test]
fn mismatch() {
    let m = x86(H, true, Some(H), false);
    let a = audit(Arch::X86_64, "cb  c (t)0\n", &[0x8765_4321], &[], &m, None);
    assert_eq!(
        problems(&a),
        ["MISMATCH t.ko: cb: hash 12345678, C calls it through (t)0 (87654321); list line 1"]
    );
    assert_eq!(a.bad, 1);
}

#[test]
fn unknown_function() {
    let m = x86(H, true, Some(H), false);
    let a = audit(Arch::X86_64, "x  c (t)0\n", &[H], &[], &m, None);
    assert_eq!(
        problems(&a),
        [
            "UNKNOWN  t.ko: cb (hash 12345678; referred to from .data): add it to kcfi-audit.list",
            "UNKNOWN  no callback or no checked indirect call found: the audit cannot read these modules"
        ]
    );
    assert!(a
        .out
        .contains(&"note     list line 1 (x) matched no function".to_string()));
}

#[test]
fn unknown_call_site_hash() {
    let m = x86(H, true, Some(0xabcd), false);
    let a = audit(Arch::X86_64, "cb  c (t)0\n", &[H], &[], &m, None);
    assert_eq!(
        problems(&a),
        ["UNKNOWN  t.ko: indirect call checking 0000abcd, which no function of the module and no type in the list has, in caller"]
    );
}

#[test]
fn unreadable_check() {
    let m = x86(H, true, None, false);
    let a = audit(Arch::X86_64, "cb  c (t)0\n", &[H], &[], &m, None);
    assert!(a.out.contains(
        &"note     t.ko: cannot read the kCFI check before the trap at caller+0xc".to_string()
    ));
    assert_eq!(
        problems(&a),
        [
            "UNKNOWN  t.ko: 1 of 1 kCFI checks not read (a code sequence the audit does not know: teach call_site_hashes)",
            "UNKNOWN  no callback or no checked indirect call found: the audit cannot read these modules"
        ]
    );
}

#[test]
fn called_type_never_checked() {
    let m = x86(H, true, Some(H), false);
    let a = audit(
        Arch::X86_64,
        "cb  c (t)0\nlabel  called (u)0\n",
        &[H, 0x77],
        &[],
        &m,
        None,
    );
    assert_eq!(
        problems(&a),
        ["MISMATCH t.ko: no indirect call checks (u)0 (00000077), which ufgraph calls C handlers through (list line 2): is its Rust type encoded as C's?"]
    );
}

#[test]
fn missing_endbr() {
    let m = x86(H, false, Some(H), true);
    let a = audit(
        Arch::X86_64,
        "cb  c (t)0\nother  none never\n",
        &[H],
        &[],
        &m,
        Some(&m),
    );
    // `other` keeps its ENDBR without being address-taken: objtool and the audit disagree.
    assert_eq!(
        problems(&a),
        [
            "UNKNOWN  t.ko: objtool kept the ENDBR of other (address taken), the audit did not find its address taken: teach address_taken",
            "MISMATCH t.ko: cb: no ENDBR, but called indirectly: IBT would stop the call",
        ]
    );
    // With an ENDBR, only the disagreement is left.
    let m = x86(H, true, Some(H), true);
    let a = audit(Arch::X86_64, "cb  c (t)0\n", &[H], &[], &m, Some(&m));
    assert_eq!(problems(&a).len(), 1);
    assert!(problems(&a)[0].contains("objtool kept the ENDBR of other"));
}

#[test]
fn rust_only_but_extern_c() {
    let m = x86(H, true, Some(H), false);
    let text = "cb  rust a Rust fn pointer\n";
    let a = audit(Arch::X86_64, text, &[], &["cb"], &m, None);
    assert_eq!(
        problems(&a)[0],
        "MISMATCH t.ko: cb is listed as Rust-only (line 1), but src/ defines an extern \"C\" fn cb: which C type calls it?"
    );
    // Not extern "C": fine, but with no C callback at all the audit says it cannot read the
    // modules.
    let a = audit(Arch::X86_64, text, &[], &[], &m, None);
    assert!(a
        .out
        .contains(&"rust     t.ko: cb (a Rust fn pointer)".to_string()));
    assert_eq!(
        problems(&a),
        ["UNKNOWN  no callback or no checked indirect call found: the audit cannot read these modules"]
    );
    assert_eq!(a.bad, 1);
}

#[test]
fn exports() {
    let m = x86(H, true, Some(H), false);
    let mut ex = HashMap::new();
    let a = audit_exports(Arch::X86_64, "cb  export\n", &[], &[], &m, None, &ex);
    assert_eq!(
        problems(&a)[0],
        "UNKNOWN  t.ko: cb: no C prototype hash (not declared in a header exports.c includes?)"
    );
    ex.insert("cb".to_string(), H);
    let a = audit_exports(Arch::X86_64, "cb  export\n", &[], &[], &m, None, &ex);
    assert!(a
        .out
        .contains(&"ok       t.ko: cb 12345678 = its prototype in include/ufgraph/".to_string()));
    ex.insert("cb".to_string(), 1);
    let a = audit_exports(Arch::X86_64, "cb  export\n", &[], &[], &m, None, &ex);
    assert_eq!(
        problems(&a)[0],
        "MISMATCH t.ko: cb: hash 12345678, C calls it through its prototype in include/ufgraph/ (00000001); list line 1"
    );
}

#[test]
fn x86_relocation_kinds() {
    // .text: f at 0; g at 16. Relocations from code: a call (e8, PC32), a jmp (PLT32), a lea
    // (PC32, -4: the field ends the instruction) and one into the middle of g.
    let mut text = vec![0xcc; 32];
    text[3] = 0xe8;
    text[13] = 0x8d;
    let mut r = rela(4, 2, R_X86_64_PC32, -4);
    r.extend(rela(9, 2, R_X86_64_PLT32, -4));
    r.extend(rela(14, 1, R_X86_64_PC32, -4));
    r.extend(rela(20, 2, R_X86_64_64, 3));
    let d = elf(
        vec![
            Sec::code(".text", text),
            Sec::rela(".rela.text", 1, r),
            Sec::table(".orc_unwind_ip", vec![0; 4]),
            Sec::rela(".rela.orc_unwind_ip", 3, rela(0, 2, R_X86_64_PC32, 0)),
        ],
        &[S::func("f", 1, 0), S::func("g", 1, 16)],
    );
    let m = Elf::parse("t.ko", d).unwrap();
    let (taken, mid) = address_taken(&m, Arch::X86_64);
    assert_eq!(taken.keys().collect::<Vec<_>>(), [&(1, 0)]);
    assert_eq!(taken[&(1, 0)].1.iter().collect::<Vec<_>>(), [".text"]);
    assert_eq!(mid, 1);
}

/// An arm64 module: `cb` at .text+12, after its hash `pre` and two patchable NOPs, beginning
/// with a landing pad if `pad`; `caller` at +16 with a kCFI check of `call`; .data holds &cb
/// and a CALL26 branches to cb (not address-taking).
fn arm64(pre: u32, pad: bool, call: u32) -> Elf {
    let words = [
        pre,
        ARM64_NOP,
        ARM64_NOP,
        if pad { 0xd503245f } else { 0xd65f03c0 },
        0xb85fc110,                          // ldur w16, [x8, #-4]
        0x52800011 | ((call & 0xffff) << 5), // mov w17, #lo
        0x72a00011 | ((call >> 16) << 5),    // movk w17, #hi, lsl #16
        0x6b11021f,                          // cmp w16, w17
        0x54000040,                          // b.eq +8
        0xd4200000 | (0x8228 << 5),          // brk #0x8228
        0x94000000,                          // bl cb
    ];
    let text: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    let d = elf(
        vec![
            Sec::code(".text", text),
            Sec::rela(".rela.text", 1, rela(40, 1, R_AARCH64_CALL26, 0)),
            Sec::data(".data", vec![0; 8]),
            Sec::rela(".rela.data", 3, rela(0, 1, R_AARCH64_ABS64, 0)),
        ],
        &[
            S::func("cb", 1, 12),
            S::func("caller", 1, 16),
            S::new("$x", 0, 1, 12),
        ],
    );
    Elf::parse("t.ko", d).unwrap()
}

#[test]
fn arm64_hashes() {
    let m = arm64(H, true, H);
    assert_eq!(preamble_hash(&m, Arch::Arm64, 1, 12, "cb"), Some(H));
    let c = call_site_hashes(&m, Arch::Arm64);
    assert_eq!(
        c.seen.into_iter().collect::<Vec<_>>(),
        [(H, vec!["caller".to_string()])]
    );
    let (taken, _) = address_taken(&m, Arch::Arm64);
    assert_eq!(taken[&(1, 12)].1.iter().collect::<Vec<_>>(), [".data"]);
    let a = audit(Arch::Arm64, "cb  c (t)0\n", &[H], &[], &m, None);
    assert_eq!(a.bad, 0, "{:?}", a.out);
    assert!(a
        .out
        .contains(&"ok       t.ko: cb 12345678 = (t)0".to_string()));
}

#[test]
fn missing_bti() {
    let m = arm64(H, false, H);
    let a = audit(Arch::Arm64, "cb  c (t)0\n", &[H], &[], &m, None);
    assert_eq!(
        problems(&a),
        ["MISMATCH t.ko: cb: no BTI landing pad, but called indirectly: BTI would stop the call"]
    );
    // A function never called indirectly needs none.
    let a = audit(Arch::Arm64, "cb  none returned into\n", &[], &[], &m, None);
    assert!(!problems(&a).iter().any(|p| p.contains("BTI")));
}

#[test]
fn arm64_check_sequence() {
    // movk for the low half too (a hash whose low half needs it), and a tail call's cmp w9, w17.
    assert_eq!(
        arm64_check_hash(&[
            0x72800011 | (0x5678 << 5),
            0x72a00011 | (0x1234 << 5),
            0x6b11013f,
            0x54000040
        ]),
        Some(H)
    );
    assert_eq!(
        arm64_check_hash(&[0x52800011, 0x72a00011, 0x6b11021f, 0x54000041]),
        None
    );
}
