// SPDX-License-Identifier: GPL-2.0

//! The promises of the event record layer (`src/events/program/`): the fetch-argument compiler,
//! the record writer and the renderer, checked on one definition and fake probe hits.
//!
//! A definition that parses is compiled (with a fake symbol table that knows some symbols and
//! not others), then hit against a fake memory drawn from a [`Source`]: kernel and user regions
//! of bytes, sprinkled with NULs and with pointers into both regions, and arguments, stack,
//! entry data and symbol texts. Some hits measure against one memory and store against another
//! (memory changing between the two passes), into records of the measured size or of other
//! sizes.
//!
//! Beyond not panicking, every hit must keep the layer's promises:
//! - a compile error has an errno and a registration error to log;
//! - the fields are where `Program` says, within the argument area; the print fmt and field
//!   types render, naming every field element once;
//! - `store` writes nothing before the argument area (the head is the caller's) and, when
//!   the memory stays the same and the record has the measured size, fills the dynamic area
//!   exactly (every string as long as measured);
//! - every `__data_loc` is a fault (length 0) or lies in the dynamic area, in order, without
//!   overlap, and ends with a NUL;
//! - rendering never fails, on the record, on truncations of it, and on corruptions of it; it
//!   shows one `name=` per argument and each string with a length as a quoted string.

use std::fmt::{self, Write as _};

use crate::common::{Source, CONFIGS};
use ufgraph_pure::events::probedef::{parse, Command};
use ufgraph_pure::events::program::fake::{Fake, Region};
use ufgraph_pure::events::program::{
    compile, dynamic_size, make_data_loc, render_args, split_data_loc, store, write_print_fmt, Out,
    Program, ENTRY_HEAD, EXIT_HEAD, FAULT_STRING, MAX_STRING_SIZE,
};

/// Definitions that reach every kind of store, on top of the shared corpus.
pub const EVENT_SEEDS: &[&str] = &[
    "f:g/e vfs_read a=$arg1 s=+0($arg2):string b=@jiffies:u32 c=+8(+0($stack)):b3@2/8 arr=+0($arg1):x16[3]",
    "f vfs_read a=$arg1:u8 b=$arg1:u16 c=$arg1:u32 d=$arg1:u64 e=$arg1:s8 f=$arg1:s16 g=$arg1:s32 h=$arg1:s64",
    "f vfs_read i=$arg1:x8 j=$arg1:x16 k=$arg1:x32 l=$arg1:x64 m=$arg2:char n=$arg3:symbol",
    "f vfs_read s=+0($arg1):string[3] u=+8($arg2):ustring[2] n=$arg3:u8 c=$comm",
    "f vfs_read k=+0($arg1):string u=+0($arg2):ustring uk=+u0($arg2):string i=\\\"imm\" y=$arg3:symstr",
    "f vfs_read z=+8($arg1):symstr o=+3($arg1):string y=+0(+8($arg1)):symstr[2]",
    "f vfs_read%return a=$arg3 b=+0($arg1):u8 c=$arg3:s8 r=$retval:s32 s=+0($retval):string",
    "f vfs_read%return s=+0($arg2):string[4] t=+u0(+8($arg1)):ustring r=+0($retval):u64[2]",
    "t sched_switch a=$arg1 s=$stack z=$stack2:u32 d=+0($stack9):u8 m=$stack0:string",
    "f vfs_read a=$arg1:b3@2/8 b=$arg1:b64@0/64 c=$arg1:b1@63/64 f=+0($arg2):b4@4/8[3]",
    "f vfs_read f=$arg1:%pD d=+8($arg2):%pd s=\\0xffff888000000000:string[2]",
    "f vfs_read a=@jiffies:string b=@nosuch:u8 c=@jiffies+x d=@jiffies-16:u32[4]",
    "f vfs_read a=+0($arg1):u8[64] b=+0($arg2):string[64]",
];

const KBASE: u64 = 0xffff_8880_0000_0000;
const UBASE: u64 = 0x0000_7fff_0000_0000;
const COMM: u64 = 0xffff_8880_8000_0000;

/// A fake probe hit (the event tests' [`Fake`]): one kernel and one user region of memory,
/// `current->comm`, everything else faults; symbol texts vary with the salt. An empty user
/// string is stored as measured (its NUL), so that a record of the measured size is filled
/// exactly (the promise `check_hit` checks).
fn fake(rng: &mut impl Source) -> Fake {
    let klen = rng.below(1024);
    let ulen = rng.below(256);
    let kmem = region(rng, klen, klen, ulen);
    let umem = region(rng, ulen, klen, ulen);
    let mut f = Fake {
        sp: KBASE + 64,
        comm: COMM,
        sym_salt: Some(rng.next()),
        ..Fake::default()
    };
    let at = |user, start, bytes| Region { user, start, bytes };
    f.regions = vec![
        at(false, KBASE, kmem),
        at(true, UBASE, umem),
        at(false, COMM, b"fuzzer-comm\0\0\0\0\0".to_vec()),
    ];
    f.args = (0..8).map(|_| value(rng, klen, ulen)).collect();
    f.stack = (0..8).map(|_| value(rng, klen, ulen)).collect();
    f.slots = (0..16).map(|_| value(rng, klen, ulen)).collect();
    f.retval = value(rng, klen, ulen);
    f
}

/// An address or value, likely to lead somewhere.
fn value(rng: &mut impl Source, klen: usize, ulen: usize) -> u64 {
    match rng.below(6) {
        0 => KBASE + rng.below(klen + 16) as u64,
        1 => UBASE + rng.below(ulen + 16) as u64,
        2 => rng.below(256) as u64,
        3 => COMM,
        4 => KBASE + (klen as u64).saturating_sub(rng.below(12) as u64),
        _ => rng.next(),
    }
}

/// `len` bytes of text with NULs, and pointers into both regions.
fn region(rng: &mut impl Source, len: usize, klen: usize, ulen: usize) -> Vec<u8> {
    let nul = 1 + rng.below(64);
    let mut m: Vec<u8> = (0..len)
        .map(|_| {
            if rng.below(nul) == 0 {
                0
            } else {
                b' ' + rng.below(95) as u8
            }
        })
        .collect();
    for _ in 0..rng.below(len / 8 + 1) {
        let at = rng.below(len / 8 + 1) * 8;
        let p = value(rng, klen, ulen).to_le_bytes();
        if let Some(dst) = m.get_mut(at..at + 8) {
            dst.copy_from_slice(&p);
        }
    }
    m
}

/// The same hit with memory changed: strings that grow, shrink, or go away.
fn changed(f: &Fake, rng: &mut impl Source) -> Fake {
    let mut f = f.clone();
    for _ in 0..1 + rng.below(8) {
        // The kernel region or the user one.
        let m = &mut f.regions[rng.below(2)].bytes;
        if m.is_empty() {
            continue;
        }
        let i = rng.below(m.len());
        m[i] = if rng.below(2) == 0 { 0 } else { b'a' };
    }
    if rng.below(4) == 0 {
        let k = &mut f.regions[0].bytes;
        k.truncate(rng.below(k.len() + 1));
    }
    f.sym_salt = f.sym_salt.map(|s| s ^ rng.below(2) as u64);
    f
}

/// A symbol table: some names resolve (one to 0, which upstream takes for none), others not.
fn resolve(sym: &str) -> Option<u64> {
    let h = sym.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, c| {
        (h ^ u64::from(c)).wrapping_mul(0x100_0000_01b3)
    });
    match h % 5 {
        0 => None,
        1 => Some(0),
        2 => Some(KBASE + h % 1024),
        _ => Some(0xffff_ffff_8100_0000 + (h >> 40)),
    }
}

/// A rendering sink that counts what it is given.
#[derive(Default)]
struct Seq {
    text: String,
    symbols: usize,
}

impl fmt::Write for Seq {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.text.push_str(s);
        Ok(())
    }
}

impl Out for Seq {
    fn symbol(&mut self, addr: u64) -> fmt::Result {
        self.symbols += 1;
        write!(self.text, "<{addr:x}>")
    }
}

use crate::common::{ensure, Verdict};

fn render(progs: &[Program], rec: &[u8], head: usize) -> Result<String, String> {
    let mut s = Seq::default();
    render_args(progs, rec, head, &mut s).map_err(|_| "render failed".to_string())?;
    let names = progs
        .iter()
        .filter(|p| s.text.contains(&format!(" {}=", p.name())))
        .count();
    ensure(names == progs.len(), || {
        format!("render lost names: {}", s.text)
    })?;
    Ok(s.text)
}

/// The `__data_loc`s of the record, in field order.
fn data_locs(progs: &[Program], rec: &[u8], head: usize) -> Vec<Option<u32>> {
    let mut locs = Vec::new();
    for p in progs.iter().filter(|p| p.is_dynamic()) {
        for j in 0..usize::from(p.count().max(1)) {
            let at = p.field_offset(head) + 4 * j;
            locs.push(
                rec.get(at..at + 4)
                    .map(|b| u32::from_le_bytes(b.try_into().unwrap())),
            );
        }
    }
    locs
}

/// Checks one hit of `progs`, whose head takes `head` bytes and arguments `args_size`.
fn check_hit(
    rng: &mut impl Source,
    progs: &[Program],
    head: usize,
    args_size: usize,
) -> Result<&'static str, String> {
    let hit = store_hit(rng, progs, head, args_size)?;
    let used = check_strings(progs, &hit.rec, head, args_size)?;
    // (Past the strings a string read that faulted may have left bytes, as upstream's does.)
    // (Strings beyond 64 KiB cannot be addressed by a data_loc, and are cut.)
    let fixed_end = head + args_size;
    let len = hit.rec.len();
    let same = hit.stable && len == hit.exact;
    if same && hit.exact <= 0x1_0000 {
        ensure(used == hit.dsize, || {
            format!("stored {used} of {} measured", hit.dsize)
        })?;
    } else {
        ensure(len < fixed_end || used <= len - fixed_end, || {
            "strings overflow".into()
        })?;
    }
    let label = match (progs.iter().any(Program::is_dynamic), used > 0, same) {
        (false, _, true) => "hit: no strings",
        (false, _, false) => "hit: no strings, resized",
        (true, true, true) => "hit: strings stored",
        (true, true, false) => "hit: strings stored, memory changed or resized",
        (true, false, _) => "hit: strings all fault",
    };
    check_rendering(rng, progs, hit.rec, head)?;
    Ok(label)
}

/// A record stored by one hit.
struct Hit {
    rec: Vec<u8>,
    /// The size the record needs: head, arguments and the strings measured.
    exact: usize,
    /// The strings' size measured before the store.
    dsize: usize,
    /// Whether the memories stayed the same between measuring and storing.
    stable: bool,
}

/// Stores one hit into a record of the exact size, or a smaller or larger one, from fake
/// memories that may change between measuring the strings and storing them.
fn store_hit(
    rng: &mut impl Source,
    progs: &[Program],
    head: usize,
    args_size: usize,
) -> Result<Hit, String> {
    let env = fake(rng);
    let stable = rng.below(4) != 0;
    let second = if stable {
        env.clone()
    } else {
        changed(&env, rng)
    };
    let dsize = dynamic_size(progs, &env);
    ensure(dsize <= progs.len() * 64 * MAX_STRING_SIZE, || {
        format!("dynamic size {dsize}")
    })?;
    let exact = head + args_size + dsize;
    let len = match rng.below(8) {
        0 => rng.below(exact + 1),
        1 => exact + rng.below(64),
        _ => exact,
    };
    let mut rec = vec![0xa5u8; len];
    store(progs, &second, &mut rec, head, args_size);
    ensure(rec.iter().take(head).all(|&b| b == 0xa5), || {
        "head written".into()
    })?;
    Ok(Hit {
        rec,
        exact,
        dsize,
        stable,
    })
}

/// Strings: faults, or in the dynamic area, in order, NUL-terminated. Returns the bytes they
/// take.
fn check_strings(
    progs: &[Program],
    rec: &[u8],
    head: usize,
    args_size: usize,
) -> Result<usize, String> {
    let mut cursor = head + args_size;
    let mut used = 0;
    for loc in data_locs(progs, rec, head).into_iter().flatten() {
        let (l, off) = split_data_loc(loc);
        if l == 0 {
            continue;
        }
        ensure(off == cursor, || {
            format!("data_loc {loc:#x} not at {cursor}")
        })?;
        ensure(off + l <= rec.len(), || {
            format!("data_loc {loc:#x} past {}", rec.len())
        })?;
        ensure(rec[off + l - 1] == 0, || {
            format!("data_loc {loc:#x}: no NUL")
        })?;
        cursor += l;
        used += l;
    }
    Ok(used)
}

/// Rendering: each string with a length is quoted, and truncated and corrupted records render
/// too.
fn check_rendering(
    rng: &mut impl Source,
    progs: &[Program],
    mut rec: Vec<u8>,
    head: usize,
) -> Verdict {
    let shown = render(progs, &rec, head)?;
    let faults = shown.matches(FAULT_STRING).count();
    let locs = data_locs(progs, &rec, head);
    let empty = locs
        .iter()
        .filter(|l| l.is_none_or(|l| split_data_loc(l).0 == 0))
        .count();
    ensure(faults >= empty, || {
        format!("{empty} faulted strings, {faults} shown: {shown}")
    })?;

    let cut = rng.below(rec.len() + 1);
    render(progs, &rec[..cut], head)?;
    for _ in 0..1 + rng.below(4) {
        if rec.is_empty() {
            break;
        }
        let i = rng.below(rec.len());
        rec[i] = rng.next() as u8;
    }
    if let Some(Some(_)) = locs.first() {
        // A data_loc pointing anywhere.
        let p = progs.iter().find(|p| p.is_dynamic()).unwrap();
        let at = p.field_offset(head);
        if let Some(dst) = rec.get_mut(at..at + 4) {
            let bogus = make_data_loc(rng.below(0x10000), rng.below(0x10000));
            dst.copy_from_slice(&bogus.to_le_bytes());
        }
    }
    render(progs, &rec, head)?;
    Ok(())
}

fn check_program(p: &Program, head: usize, args_size: usize) -> Verdict {
    let end = p.field_offset(head) + p.field_size();
    ensure(
        p.field_offset(head) >= head && end <= head + args_size,
        || {
            format!(
                "field {} at {}..{end} outside {head}+{args_size}",
                p.name(),
                p.field_offset(head)
            )
        },
    )?;
    let mut ty = String::new();
    p.write_field_type(&mut ty)
        .map_err(|_| "field type failed")?;
    let want = if p.count() > 0 {
        format!("[{}]", p.count())
    } else {
        String::new()
    };
    ensure(ty.ends_with(&want) && ty.len() > want.len(), || {
        format!("field type {ty}")
    })
}

fn check_print_fmt(progs: &[Program], is_return: bool) -> Verdict {
    let mut fmt = String::new();
    write_print_fmt(progs, is_return, &mut fmt).map_err(|_| "print fmt failed")?;
    // Fields named after the format: the head's, then one per element.
    let elements: usize = progs.iter().map(|p| usize::from(p.count().max(1))).sum();
    let close = fmt
        .rfind("\", ")
        .ok_or_else(|| format!("print fmt {fmt}"))?;
    let named = fmt[close..].matches(", ").count();
    ensure(named == elements + if is_return { 2 } else { 1 }, || {
        format!("print fmt names {named} fields for {elements}: {fmt}")
    })
}

/// Runs one input, drawing its hits from `rng`; returns a label for the statistics, or what
/// promise the input breaks.
pub fn check(rng: &mut impl Source, input: &str) -> Result<&'static str, String> {
    let Ok(Command::Add(d)) = parse(input, &CONFIGS[0]) else {
        return Ok("(not a definition)");
    };
    let mut progs = Vec::with_capacity(d.nargs());
    for a in d.args() {
        match compile(&a, resolve) {
            Ok(p) => progs.push(p),
            Err(e) => {
                ensure(e.errno() < 0, || format!("errno {}", e.errno()))?;
                ensure(d.registration_error(e.errno()).is_some(), || {
                    "no error to log".into()
                })?;
                return Ok("(does not compile)");
            }
        }
    }
    let head = if d.is_return() { EXIT_HEAD } else { ENTRY_HEAD };
    for p in &progs {
        check_program(p, head, d.args_size())?;
    }
    check_print_fmt(&progs, d.is_return())?;
    let mut label = "";
    for _ in 0..2 {
        label = check_hit(rng, &progs, head, d.args_size())?;
    }
    Ok(label)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{Rng, SEEDS};

    #[test]
    fn seeds_keep_invariants() {
        let mut rng = Rng(7);
        for s in EVENT_SEEDS.iter().chain(SEEDS) {
            for _ in 0..50 {
                check(&mut rng, s).unwrap_or_else(|e| panic!("{s:?}: {e}"));
            }
        }
    }

    #[test]
    fn short_run() {
        crate::common::short_run(EVENT_SEEDS, 5_000, check);
    }
}
