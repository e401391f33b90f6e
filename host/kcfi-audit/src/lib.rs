// SPDX-License-Identifier: GPL-2.0

//! The kCFI audit of ufgraph's modules (issue #18): the pure logic, on the bytes of the
//! objects (ELF parsing, relocations, the hashes in front of functions and at call sites, the
//! list and its matching). `main.rs` reads the files and runs the external tools (clang for
//! the types' hashes, llvm-cxxfilt).

pub mod elf;
pub mod list;

use elf::{Elf, Loc, Starts, SHF_ALLOC, SHF_EXECINSTR, SHN_LORESERVE, SHT_PROGBITS, STT_FUNC};
use list::{Entry, Kind};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Arch {
    X86_64,
    Arm64,
}

impl Arch {
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86_64 => "x86_64",
            Arch::Arm64 => "arm64",
        }
    }

    /// Relocation types of direct branches (not address-taking).
    fn is_branch(self, rtype: u32) -> bool {
        match self {
            Arch::X86_64 => rtype == R_X86_64_PLT32,
            Arch::Arm64 => rtype == R_AARCH64_JUMP26 || rtype == R_AARCH64_CALL26,
        }
    }
}

const R_X86_64_PC32: u32 = 2;
const R_X86_64_PLT32: u32 = 4;
const R_AARCH64_JUMP26: u32 = 282;
const R_AARCH64_CALL26: u32 = 283;

/// Sections whose relocations point at code without making it an indirect call target: debug
/// info, unwind tables, and the tables objtool and the compiler emit for run-time patching
/// (fentry sites, return thunks, retpolines, kCFI traps, IBT seals...).
const META: &[&str] = &[
    ".debug",
    ".orc_unwind",
    ".call_sites",
    ".return_sites",
    ".cfi_sites",
    ".ibt_endbr_seal",
    "__patchable_function_entries",
    "__kcfi_traps",
    ".retpoline_sites",
    ".static_call_sites",
    ".smp_locks",
    ".altinstructions",
    ".altinstr_replacement",
    "__mcount_loc",
    ".llvm_addrsig",
    ".discard",
    ".eh_frame",
    "__bug_table",
    "__ex_table",
    ".rela",
    ".symtab",
    ".strtab",
];

/// x86_64's ENDBR64.
const ENDBR64: [u8; 4] = [0xf3, 0x0f, 0x1e, 0xfa];
/// arm64: what an indirect call (blr) may land on with BTI: bti c, bti jc, and
/// paciasp/pacibsp (implicit landing pads, as the kernel's own C functions begin).
const BTI_PADS: [u32; 4] = [0xd503245f, 0xd50324df, 0xd503233f, 0xd503237f];
const ARM64_NOP: u32 = 0xd503201f;

/// An address-taken function: its name and the sections referring to it.
pub type Taken = HashMap<Loc, (String, BTreeSet<String>)>;

/// Every function whose address is taken (a relocation to its first byte that is not a direct
/// call or jump, outside the unwind/debug/patching tables), keyed by place (local functions of
/// different objects may share a name: asan.module_ctor), and the count of references into
/// the middle of code (never a valid kCFI target).
pub fn address_taken(elf: &Elf, arch: Arch) -> (Taken, usize) {
    let starts = elf.code_syms();
    let mut taken = Taken::new();
    let mut mid = 0;
    for r in &elf.relas {
        let tgt = &elf.secs[r.tgt];
        if META.iter().any(|m| tgt.name.starts_with(m)) || tgt.flags & SHF_ALLOC == 0 {
            continue;
        }
        let sym = &elf.syms[r.sym];
        if sym.shndx == 0 || sym.shndx >= SHN_LORESERVE {
            continue;
        }
        if !elf.is_code(sym.shndx as usize) || arch.is_branch(r.rtype) {
            continue;
        }
        let mut val = sym.value.wrapping_add(r.addend as u64);
        if arch == Arch::X86_64 && r.rtype == R_X86_64_PC32 && tgt.flags & SHF_EXECINSTR != 0 {
            // rip-relative: the field ends the instruction (lea sym(%rip)); a call or jmp
            // rel32 with a PC32 relocation is still a direct branch.
            let op = (tgt.off + r.off)
                .checked_sub(1)
                .and_then(|o| elf.d.get(o as usize));
            if matches!(op, Some(0xe8 | 0xe9)) {
                continue;
            }
            val = val.wrapping_add(4);
        }
        let k = (sym.shndx as usize, val);
        let Some(name) = starts.get(&k) else {
            mid += 1;
            continue;
        };
        taken
            .entry(k)
            .or_insert_with(|| (name.clone(), BTreeSet::new()))
            .1
            .insert(tgt.name.clone());
    }
    (taken, mid)
}

/// x86_64 with IBT: the code starts objtool left an ENDBR on (it seals, in .ibt_endbr_seal,
/// every ENDBR of a function whose address it did not see taken), in symbol order, or None
/// without IBT. An independent view of which functions are address-taken.
pub fn ibt_view(elf: &Elf, starts: &Starts) -> Option<Vec<(Loc, String)>> {
    if !elf.secs.iter().any(|s| s.name == ".ibt_endbr_seal") {
        return None;
    }
    let sealed: HashSet<Loc> = elf
        .relas
        .iter()
        .filter(|r| elf.secs[r.tgt].name == ".ibt_endbr_seal")
        .map(|r| {
            let s = &elf.syms[r.sym];
            (s.shndx as usize, s.value.wrapping_add(r.addend as u64))
        })
        .collect();
    Some(
        starts
            .order
            .iter()
            .filter(|k| {
                elf.bytes_at(k.0, k.1 as i64, 4) == Some(&ENDBR64[..]) && !sealed.contains(k)
            })
            .map(|k| (*k, starts.map[k].clone()))
            .collect(),
    )
}

/// The kCFI type hash in front of the function `name` at (shndx, off), or None if it has none.
pub fn preamble_hash(elf: &Elf, arch: Arch, shndx: usize, off: u64, name: &str) -> Option<u32> {
    let off = off as i64;
    match arch {
        Arch::X86_64 => {
            // __cfi_NAME: movl $HASH, %eax; 11 nops (16 bytes, with FUNCTION_PADDING_CFI).
            let b = elf.bytes_at(shndx, off - 16, 16)?;
            if b[0] != 0xb8
                || b[5..].iter().any(|&x| x != 0x90)
                || !elf.names.contains(&format!("__cfi_{}", name))
            {
                return None;
            }
            Some(u32::from_le_bytes([b[1], b[2], b[3], b[4]]))
        }
        Arch::Arm64 => {
            // The hash is the word right before the function (before the patchable NOPs, if any).
            let mut p = off - 4;
            for _ in 0..2 {
                if elf.word_at(shndx, p) != Some(ARM64_NOP) {
                    break;
                }
                p -= 4;
            }
            elf.word_at(shndx, p)
        }
    }
}

/// The types the module's kCFI-checked indirect calls check: {hash: the functions making
/// them}, the count of checks whose hash could not be read, and the notes on those.
pub struct Calls {
    pub seen: BTreeMap<u32, Vec<String>>,
    pub unread: usize,
    pub notes: Vec<String>,
}

impl Calls {
    pub fn total(&self) -> usize {
        self.seen.values().map(|v| v.len()).sum()
    }
}

/// Every kCFI check of the module (x86_64: those `__kcfi_traps` lists; arm64: every
/// `brk #0x8xxx`) and the hash it checks.
pub fn call_site_hashes(elf: &Elf, arch: Arch) -> Calls {
    let funcs = FuncIndex::new(elf);
    let mut c = Calls {
        seen: BTreeMap::new(),
        unread: 0,
        notes: Vec::new(),
    };
    let checks = match arch {
        Arch::X86_64 => x86_checks(elf),
        Arch::Arm64 => arm64_checks(elf),
    };
    for (shndx, trap, h) in checks {
        c.found(&funcs, shndx, trap, h);
    }
    c
}

/// A module's functions by place, to find the one a kCFI check is in.
struct FuncIndex<'e> {
    /// (section, offset, name), sorted.
    funcs: Vec<(u16, u64, &'e str)>,
    /// The module's file name, for the notes.
    base: String,
}

impl<'e> FuncIndex<'e> {
    fn new(elf: &'e Elf) -> Self {
        let mut funcs: Vec<(u16, u64, &str)> = elf
            .syms
            .iter()
            .filter(|s| s.typ == STT_FUNC && s.shndx != 0)
            .map(|s| (s.shndx, s.value, s.name.as_str()))
            .collect();
        funcs.sort();
        let base = elf.path.rsplit('/').next().unwrap_or(&elf.path).to_string();
        FuncIndex { funcs, base }
    }

    /// The function a check at (shndx, trap) is in: the last one starting at or before it.
    fn containing(&self, shndx: usize, trap: u64) -> Option<(u16, u64, &'e str)> {
        let funcs = &self.funcs;
        let i = funcs.partition_point(|f| (f.0 as usize, f.1) <= (shndx, trap));
        if i > 0 && funcs[i - 1].0 as usize == shndx {
            Some(funcs[i - 1])
        } else {
            None
        }
    }
}

impl Calls {
    /// Records the check at (shndx, trap) and the hash it checks (`None`: not read).
    fn found(&mut self, funcs: &FuncIndex, shndx: usize, trap: u64, h: Option<u32>) {
        let f = funcs.containing(shndx, trap);
        match h {
            None => {
                self.unread += 1;
                self.notes.push(match f {
                    Some(f) => format!(
                        "note     {}: cannot read the kCFI check before the trap at {}+{:#x}",
                        funcs.base,
                        f.2,
                        trap - f.1
                    ),
                    // (the first version printed just the offset there)
                    None => format!("{:#x}", trap),
                });
            }
            Some(h) => self
                .seen
                .entry(h)
                .or_default()
                .push(f.map_or("?", |f| f.2).to_string()),
        }
    }
}

/// x86_64's kCFI checks, in `__kcfi_traps` order: (section, offset of the ud2, the hash).
/// `__kcfi_traps` lists each check's ud2:
/// movl $-HASH, %r10d; addl -15(%r11), %r10d; je 1f; ud2
fn x86_checks(elf: &Elf) -> Vec<(usize, u64, Option<u32>)> {
    elf.relas
        .iter()
        .filter(|r| elf.secs[r.tgt].name == "__kcfi_traps")
        .map(|r| {
            let sym = &elf.syms[r.sym];
            let trap = sym.value.wrapping_add(r.addend as u64);
            let h = elf
                .bytes_at(sym.shndx as usize, trap as i64 - 12, 14)
                .and_then(|b| {
                    (b[..2] == [0x41, 0xba]
                        && b[6..10] == [0x45, 0x03, 0x53, 0xf1]
                        && b[12..] == [0x0f, 0x0b])
                    .then(|| u32::from_le_bytes([b[2], b[3], b[4], b[5]]).wrapping_neg())
                });
            (sym.shndx as usize, trap, h)
        })
        .collect()
}

/// arm64's kCFI checks, in code order: (section, offset of the brk, the hash). Each check
/// ends in `brk #0x8xxx` (the ESR tells the kernel it is kCFI's):
/// ldur w16, [xN, #-4]; mov(k) w17, #lo; movk w17, #hi, lsl #16; cmp w16, w17;
/// b.eq 1f; brk (a tail call loads the hash into another register: cmp wN, w17)
fn arm64_checks(elf: &Elf) -> Vec<(usize, u64, Option<u32>)> {
    let mut checks = Vec::new();
    for sec in elf
        .secs
        .iter()
        .filter(|s| s.flags & SHF_EXECINSTR != 0 && s.typ == SHT_PROGBITS)
    {
        let Some(bytes) = elf.bytes_at(sec.i, 0, (sec.size / 4 * 4) as usize) else {
            continue;
        };
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        for (i, &w) in words.iter().enumerate() {
            if w & 0xffe0001f != 0xd4200000 || !(0x8000..=0x8fff).contains(&((w >> 5) & 0xffff)) {
                continue;
            }
            let h = if i >= 4 {
                arm64_check_hash(&words[i - 4..i])
            } else {
                None
            };
            checks.push((sec.i, 4 * i as u64, h));
        }
    }
    checks
}

/// The hash an arm64 kCFI check compares with, from the four instructions before its brk:
/// mov(k) w17, #lo; movk w17, #hi, lsl #16; cmp wN, w17; b.eq +8.
pub fn arm64_check_hash(w: &[u32]) -> Option<u32> {
    let [lo, hi, cmp, beq] = *w else { return None };
    let ok = (lo & 0xffe0001f == 0x72800011 || lo & 0xffe0001f == 0x52800011)
        && hi & 0xffe0001f == 0x72a00011
        && cmp & 0xfffffc1f == 0x6b11001f
        && beq == 0x54000040;
    ok.then_some(((lo >> 5) & 0xffff) | (((hi >> 5) & 0xffff) << 16))
}

/// What the audit knows besides the module: the list (with each C type's hash), the names
/// src/ defines `extern "C"`, the architecture.
pub struct Audit {
    pub arch: Arch,
    pub entries: Vec<Entry>,
    pub externc: HashSet<String>,
    /// The list file's name, for the messages.
    pub list_name: String,
    /// arm64 with CONFIG_ARM64_BTI_KERNEL.
    pub bti: bool,
    pub verbose: bool,
    /// The report so far.
    pub out: Vec<String>,
    pub bad: usize,
    pub ncalls: usize,
    /// Functions (and `called` checks) found per kind.
    pub kinds: BTreeMap<&'static str, usize>,
}

/// Demangles names: {mangled: demangled}.
pub type Demangle<'a> = dyn FnMut(&[String]) -> Result<HashMap<String, String>, String> + 'a;

/// The module [`Audit::module`] audits: its name, its ELF, the hashes of its exports'
/// prototypes, and (x86_64 with IBT) the code starts objtool left an ENDBR on.
struct Module<'m> {
    ko: &'m str,
    elf: &'m Elf,
    exports: &'m HashMap<String, u32>,
    ibt: Option<&'m HashSet<Loc>>,
}

impl Audit {
    pub fn new(
        arch: Arch,
        entries: Vec<Entry>,
        externc: HashSet<String>,
        list_name: &str,
    ) -> Audit {
        Audit {
            arch,
            entries,
            externc,
            list_name: list_name.to_string(),
            bti: false,
            verbose: false,
            out: Vec::new(),
            bad: 0,
            ncalls: 0,
            kinds: BTreeMap::new(),
        }
    }

    fn say(&mut self, s: String) {
        self.out.push(s);
    }

    fn problem(&mut self, s: String) {
        self.out.push(s);
        self.bad += 1;
    }

    /// Audits one module `ko` (its ELF `elf`; `obj`: the object objtool processed, read when
    /// the module has IBT seals; `exports`: the hash of each export's C prototype).
    pub fn module(
        &mut self,
        ko: &str,
        elf: &Elf,
        obj: Option<&Elf>,
        exports: &HashMap<String, u32>,
        demangle: &mut Demangle,
    ) -> Result<(), String> {
        let arch = self.arch;
        let (taken, mid) = address_taken(elf, arch);
        let ibt = if arch == Arch::X86_64 {
            ibt_view(elf, &elf.code_syms())
        } else {
            None
        };
        let ibt: Option<HashSet<Loc>> = ibt.map(|v| v.into_iter().map(|(k, _)| k).collect());
        if ibt.is_some() {
            if let Some(obj) = obj {
                self.objtool_view(ko, obj);
            }
        }
        let calls = call_site_hashes(elf, arch);
        self.called_types(ko, &calls);
        let m = Module {
            ko,
            elf,
            exports,
            ibt: ibt.as_ref(),
        };
        let hashes = self.functions(&m, &taken, demangle)?;
        self.call_targets(ko, &calls, &hashes, demangle)?;
        self.ncalls += calls.total();
        if mid > 0 {
            self.say(format!(
                "note     {}: {} references into the middle of functions (not call targets)",
                ko, mid
            ));
        }
        Ok(())
    }

    /// objtool's own view, on the object it processed (ufgraph.o: the .ko adds the .mod.o
    /// objtool never sees): the functions it found address-taken must be the audit's.
    fn objtool_view(&mut self, ko: &str, obj: &Elf) {
        let (obj_taken, _) = address_taken(obj, self.arch);
        let mut kept = ibt_view(obj, &obj.code_syms()).unwrap_or_default();
        kept.sort_by(|a, b| a.1.cmp(&b.1));
        for (k, n) in kept {
            if !obj_taken.contains_key(&k) {
                self.problem(format!(
                    "UNKNOWN  {}: objtool kept the ENDBR of {} (address taken), the audit did not find its address taken: teach address_taken",
                    ko, n
                ));
            }
        }
    }

    /// The module's kCFI checks: all read, and one for each C API handler type the list says
    /// ufgraph calls (`called`).
    fn called_types(&mut self, ko: &str, calls: &Calls) {
        self.out.extend(calls.notes.iter().cloned());
        if calls.unread > 0 {
            self.problem(format!(
                "UNKNOWN  {}: {} of {} kCFI checks not read (a code sequence the audit does not know: teach call_site_hashes)",
                ko,
                calls.unread,
                calls.unread + calls.total()
            ));
        }
        for i in 0..self.entries.len() {
            let e = &self.entries[i];
            if e.kind != Kind::Called {
                continue;
            }
            let (h, expr) = (e.hash.unwrap_or(0), e.expr.clone());
            match calls.seen.get(&h) {
                None => {
                    let line = e.line;
                    self.problem(format!(
                        "MISMATCH {}: no indirect call checks {} ({:08x}), which ufgraph calls C handlers through (list line {}): is its Rust type encoded as C's?",
                        ko, expr, h, line
                    ));
                }
                Some(sites) => {
                    *self.kinds.entry("called").or_default() += 1;
                    if self.verbose {
                        let n = sites.len();
                        self.say(format!(
                            "called   {}: {} indirect calls check {} ({:08x})",
                            ko, n, expr, h
                        ));
                    }
                }
            }
        }
    }

    /// Every address-taken function, in the order of the demangled names, against the list;
    /// returns the hashes found in front of them.
    fn functions(
        &mut self,
        m: &Module,
        taken: &Taken,
        demangle: &mut Demangle,
    ) -> Result<HashSet<Option<u32>>, String> {
        let names: BTreeSet<String> = taken.values().map(|v| v.0.clone()).collect();
        let names: Vec<String> = names.into_iter().collect();
        let dem = demangle(&names)?;
        let dem_of = |n: &str| {
            dem.get(n)
                .cloned()
                .ok_or_else(|| format!("kcfi-audit: {} not demangled", n))
        };
        let mut order: Vec<(String, Loc)> = Vec::with_capacity(taken.len());
        for (k, v) in taken {
            order.push((dem_of(&v.0)?, *k));
        }
        order.sort();
        let mut hashes: HashSet<Option<u32>> = HashSet::new();
        for (d, k) in order {
            let (name, wher) = &taken[&k];
            hashes.insert(self.function(m, k, name, &d, wher));
        }
        Ok(hashes)
    }

    /// One address-taken function `name` at `k` (demangled `d`; referred to from the sections
    /// `wher`): its list entry, its landing pad, its hash against the one C calls it through.
    /// Returns the hash in front of it.
    fn function(
        &mut self,
        m: &Module,
        k: Loc,
        name: &str,
        d: &str,
        wher: &BTreeSet<String>,
    ) -> Option<u32> {
        let ko = m.ko;
        let (shndx, off) = k;
        let pretty = list::pretty_name(d);
        let got = preamble_hash(m.elf, self.arch, shndx, off, name);
        let gots = got.map_or("none".to_string(), |g| format!("{:08x}", g));
        let Some(ei) = self.entries.iter().position(|e| e.matches(&pretty)) else {
            let list = self.list_name.clone();
            self.problem(format!(
                "UNKNOWN  {}: {} (hash {}; referred to from {}): add it to {}",
                ko,
                pretty,
                gots,
                wher.iter().cloned().collect::<Vec<_>>().join(", "),
                list
            ));
            return got;
        };
        self.entries[ei].used += 1;
        let (kind, line, expr) = (
            self.entries[ei].kind,
            self.entries[ei].line,
            self.entries[ei].expr.clone(),
        );
        *self.kinds.entry(kind.name()).or_default() += 1;
        self.landing_pad(m, k, kind, &pretty);
        let last = list::last_component(&pretty);
        if kind == Kind::Rust && self.externc.contains(last) {
            let last = last.to_string();
            self.problem(format!(
                "MISMATCH {}: {} is listed as Rust-only (line {}), but src/ defines an extern \"C\" fn {}: which C type calls it?",
                ko, pretty, line, last
            ));
            return got;
        }
        if matches!(kind, Kind::Rust | Kind::None) {
            if self.verbose {
                self.say(format!("{:8} {}: {} ({})", kind.name(), ko, pretty, expr));
            }
            return got;
        }
        let (want, what) = if kind == Kind::Export {
            (
                m.exports.get(name).copied(),
                "its prototype in include/ufgraph/".to_string(),
            )
        } else {
            (self.entries[ei].hash, expr)
        };
        match want {
            None => self.problem(format!(
                "UNKNOWN  {}: {}: no C prototype hash (not declared in a header exports.c includes?)",
                ko, pretty
            )),
            Some(w) if got != Some(w) => self.problem(format!(
                "MISMATCH {}: {}: hash {}, C calls it through {} ({:08x}); list line {}",
                ko, pretty, gots, what, w, line
            )),
            Some(w) => {
                if self.verbose {
                    self.say(format!("ok       {}: {} {:08x} = {}", ko, pretty, w, what));
                }
            }
        }
        got
    }

    /// A function called indirectly (its kind not `none`) must begin where IBT (x86_64: an
    /// ENDBR objtool kept) or BTI (arm64: a landing pad) lets an indirect call land.
    fn landing_pad(&mut self, m: &Module, k: Loc, kind: Kind, pretty: &str) {
        let ko = m.ko;
        if let Some(ibt) = m.ibt {
            if kind != Kind::None && !ibt.contains(&k) {
                self.problem(format!(
                    "MISMATCH {}: {}: no ENDBR, but called indirectly: IBT would stop the call",
                    ko, pretty
                ));
            }
        }
        if self.bti
            && kind != Kind::None
            && !m
                .elf
                .word_at(k.0, k.1 as i64)
                .is_some_and(|w| BTI_PADS.contains(&w))
        {
            self.problem(format!(
                "MISMATCH {}: {}: no BTI landing pad, but called indirectly: BTI would stop the call",
                ko, pretty
            ));
        }
    }

    /// Every indirect call the module makes must check a hash that something it can reach
    /// has: one of its own address-taken functions (Rust fn pointers, vtables, callbacks it
    /// calls back itself) or a C type the list names (`called`, `c`). Another hash is a
    /// call to a function of unknown type (a kernel function pointer through a Rust type).
    fn call_targets(
        &mut self,
        ko: &str,
        calls: &Calls,
        hashes: &HashSet<Option<u32>>,
        demangle: &mut Demangle,
    ) -> Result<(), String> {
        let mut targets: HashSet<u32> = hashes.iter().flatten().copied().collect();
        targets.extend(self.entries.iter().filter_map(|e| e.hash));
        for (h, sites) in &calls.seen {
            if !targets.contains(h) {
                let set: BTreeSet<String> = sites.iter().cloned().collect();
                let set: Vec<String> = set.into_iter().collect();
                let fns = demangle(&set)?;
                let mut fns: Vec<String> = set.iter().filter_map(|s| fns.get(s).cloned()).collect();
                fns.sort();
                self.problem(format!(
                    "UNKNOWN  {}: indirect call checking {:08x}, which no function of the module and no type in the list has, in {}",
                    ko,
                    h,
                    fns.join(", ")
                ));
            }
        }
        Ok(())
    }

    /// The report's end: list entries nothing matched, the sanity check, the summary.
    pub fn finish(&mut self) {
        let unused: Vec<String> = self
            .entries
            .iter()
            .filter(|e| e.used == 0 && e.kind != Kind::Called)
            .map(|e| {
                format!(
                    "note     list line {} ({}) matched no function",
                    e.line, e.pat
                )
            })
            .collect();
        self.out.extend(unused);
        let called = self.kinds.remove("called").unwrap_or(0);
        let total: usize = self.kinds.values().sum();
        if self.kinds.get("c").copied().unwrap_or(0) == 0 || self.ncalls == 0 {
            // Every build has callbacks and indirect calls: finding none means the audit no
            // longer understands the objects (a relocation or check sequence it does not know).
            self.problem(
                "UNKNOWN  no callback or no checked indirect call found: the audit cannot read these modules".into(),
            );
        }
        let kinds: Vec<String> = self
            .kinds
            .iter()
            .map(|(k, v)| format!("{} {}", v, k))
            .collect();
        let s = format!(
            "kcfi-audit {}: {} address-taken functions: {}; {} kCFI-checked indirect calls, each to a known type; {} checks of C API handler types; {} problem(s)",
            self.arch.name(),
            total,
            kinds.join(", "),
            self.ncalls,
            called,
            self.bad
        );
        self.say(s);
    }
}

#[cfg(test)]
mod tests;
