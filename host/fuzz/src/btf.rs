// SPDX-License-Identifier: GPL-2.0

//! The promises of the BTF reader (`src/sys/btf/reader/`): what the module will read from
//! `/sys/kernel/btf/vmlinux` and `/sys/kernel/btf/MODULE` must never make it panic, loop or
//! read out of bounds, and what it accepts must answer as the blob says.
//!
//! An input is one blob, or a base and a split blob over it:
//!
//! ```text
//!   0x00 BLOB                    (first byte even) one base blob
//!   0x01 LEN_LO LEN_HI BASE SPLIT (first byte odd) a base of LEN bytes, then a split blob
//! ```
//!
//! - `measure` and `new` agree: both accept with the same sizes, or refuse with the same error;
//!   a split blob is only looked at over an accepted base;
//! - an accepted blob's every id up to its end reads, and none past it; the name index holds
//!   exactly the named types, sorted by (name, id); `find` gives the lowest id of that name and
//!   kind, over the base and the split blob, as a scan of every type says;
//! - `resolve`, `size` and `scalar` agree with a statement of them in terms of `std` (a
//!   recursive walk of the raw entries), including where a chain is too long or loops;
//! - a FUNC's prototype and parameters are the raw words of its FUNC_PROTO;
//! - a member found by name is reachable from the struct through anonymous members with that
//!   type and offset, and is the struct's own first member of that name if it has one;
//! - the same blob in the other byte order gives the same answers, and so does a view of the
//!   index through `from_parts`.
//!
//! Each check is bounded (a few hundred types and members per input) so that an input costs
//! microseconds to milliseconds.

use std::collections::HashSet;

use ufgraph_pure::sys::btf::reader::{
    layout, Btf, Error, Kind, Member, ScalarKind, MAX_DEPTH, POINTER_SIZE,
};

use crate::common::{ensure, Verdict};

/// How many ids, named types, members each check looks at, at most.
const CAP: u32 = 300;

/// Validates and indexes a blob into `o` and `n`: `measure` and `new` must agree.
fn load<'a>(
    data: &'a [u8],
    base: Option<&'a Btf<'a>>,
    o: &'a mut Vec<u32>,
    n: &'a mut Vec<u32>,
) -> Result<Result<Btf<'a>, Error>, String> {
    let measured = Btf::measure(data, base);
    // On refusal, new() with too little storage refuses the same way, or with Storage when it
    // runs out of room before it reaches what measure() refused.
    let (types, named) = measured.map_or((4, 4), |s| (s.types, s.named));
    o.resize(types, 0);
    n.resize(named, 0);
    let built = Btf::new(data, base, o, n);
    match (&measured, &built) {
        (Ok(_), Ok(_)) => {}
        (Err(a), Err(b)) if a == b || *b == Error::Storage => {}
        _ => {
            return Err(format!(
                "measure {measured:?}, new {:?}",
                built.as_ref().err()
            ))
        }
    }
    Ok(built)
}

/// The raw entry of `id`: kind, vlen, kind_flag, third word, and its trailing words read
/// one by one (`w`), for the statements below.
struct Raw<'a> {
    kind: Kind,
    vlen: u16,
    flag: bool,
    third: u32,
    t: ufgraph_pure::sys::btf::reader::Type<'a>,
}

impl Raw<'_> {
    /// Trailing word `i` (the reader checked the entry's length when it loaded the blob).
    fn w(&self, i: usize) -> u32 {
        self.t.word(i).unwrap()
    }
}

fn raw<'a>(btf: &Btf<'a>, id: u32) -> Option<Raw<'a>> {
    let t = btf.ty(id).ok()?;
    Some(Raw {
        kind: t.kind,
        vlen: t.vlen,
        flag: t.kind_flag,
        third: t.size_or_type,
        t,
    })
}

/// What `resolve` must say: follow modifiers at most MAX_DEPTH times.
fn resolve_spec(btf: &Btf<'_>, mut id: u32) -> Result<u32, Error> {
    for _ in 0..=MAX_DEPTH {
        let r = raw(btf, id).ok_or(Error::TypeId)?;
        if !r.kind.is_modifier() {
            return Ok(id);
        }
        id = r.third;
    }
    Err(Error::Limit)
}

/// What `size` must say, recursively.
fn size_spec(btf: &Btf<'_>, id: u32, depth: usize) -> Result<u64, Error> {
    if depth > MAX_DEPTH {
        return Err(Error::Limit);
    }
    let r = raw(btf, resolve_spec(btf, id)?).ok_or(Error::TypeId)?;
    match r.kind {
        // Which kinds have a size is the format's, shared; how sizes combine is stated here.
        k if k.has_size() => Ok(u64::from(r.third)),
        Kind::Ptr => Ok(u64::from(POINTER_SIZE)),
        Kind::Array => Ok(size_spec(btf, r.w(0), depth + 1)? * u64::from(r.w(2))),
        _ => Err(Error::Kind),
    }
}

/// Whether struct `id` has a member named `name` of type `ty` at bit offset `off`, directly or
/// through anonymous struct/union members; `None` if the search gave up. Offsets only grow
/// along a path, so the search stays at or below `off`; states are (struct, offset), visited
/// once each, so loops end.
fn reachable(btf: &Btf<'_>, id: u32, name: &[u8], ty: u32, off: u64) -> Option<bool> {
    let mut seen = HashSet::new();
    let mut todo = vec![(id, 0u64)];
    // Members read: a bound on the work, whatever the loops.
    let mut budget = 2_000usize;
    while let Some((sid, base)) = todo.pop() {
        if !seen.insert((sid, base)) {
            continue;
        }
        let Ok(r) = resolve_spec(btf, sid) else {
            continue;
        };
        let Some(t) = raw(btf, r) else { continue };
        if !matches!(t.kind, Kind::Struct | Kind::Union) {
            continue;
        }
        for i in 0..usize::from(t.vlen) {
            budget = budget.checked_sub(1)?;
            let Some(m) = member_at_spec(btf, &t, i) else {
                continue;
            };
            let moff = base + u64::from(m.bit_offset);
            let Ok(mname) = btf.str_at(t.w(3 * i)) else {
                continue;
            };
            if mname.is_empty() && moff <= off {
                todo.push((m.ty, moff));
            } else if mname == name && m.ty == ty && moff == off {
                return Some(true);
            }
        }
    }
    Some(false)
}

/// A member's offset as `member_at` must decode it from the raw words.
fn member_at_spec(btf: &Btf<'_>, t: &Raw, i: usize) -> Option<Member> {
    let (ty, off) = (t.w(3 * i + 1), t.w(3 * i + 2));
    if t.flag {
        return Some(Member {
            ty,
            bit_offset: off & 0xff_ffff,
            bitfield_size: off >> 24,
        });
    }
    let r = raw(btf, resolve_spec(btf, ty).ok()?)?;
    if r.kind == Kind::Int {
        let (int_off, bits) = ((r.w(0) >> 16) & 0xff, r.w(0) & 0xff);
        if int_off != 0 || bits != r.third * 8 {
            return Some(Member {
                ty,
                bit_offset: off.checked_add(int_off)?,
                bitfield_size: bits,
            });
        }
    }
    Some(Member {
        ty,
        bit_offset: off,
        bitfield_size: 0,
    })
}

fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The promises on an accepted blob (`btf`, over its base if split).
fn check_accepted(btf: &Btf<'_>) -> Verdict {
    let end = btf.end_id();
    ensure(
        btf.ty(end).is_err() && btf.ty(end.saturating_add(1000)).is_err(),
        || format!("id {end} past the end reads"),
    )?;
    ensure(btf.ty(0).map(|t| t.kind) == Ok(Kind::Void), || {
        "id 0 is not void".into()
    })?;

    let idx = btf.by_name();
    check_name_index(btf, idx)?;
    check_lookups(btf, idx)?;
    for id in btf.own_ids().take(CAP as usize) {
        check_type(btf, id)?;
    }
    Ok(())
}

/// The name index `idx`: exactly the named own types, sorted.
fn check_name_index(btf: &Btf<'_>, idx: &[u32]) -> Verdict {
    let named: HashSet<u32> = btf
        .own_ids()
        .filter(|&id| !btf.type_name(id).unwrap().is_empty())
        .collect();
    ensure(
        idx.len() == named.len() && idx.iter().all(|id| named.contains(id)),
        || "name index is not the named types".into(),
    )?;
    for w in idx.windows(2) {
        let (a, b) = (btf.type_name(w[0]).unwrap(), btf.type_name(w[1]).unwrap());
        ensure(a < b || (a == b && w[0] < w[1]), || {
            format!("index out of order at {} {}", w[0], w[1])
        })?;
    }
    Ok(())
}

/// Lookups by name, against a scan of every type (the base's too).
fn check_lookups(btf: &Btf<'_>, idx: &[u32]) -> Verdict {
    let all: Vec<u32> = (1..btf.end_id()).collect();
    for &id in idx.iter().take(CAP as usize) {
        let t = btf.ty(id).unwrap();
        let name = btf.type_name(id).unwrap();
        let first = all.iter().copied().find(|&j| {
            let u = btf.ty(j).unwrap();
            u.kind == t.kind && btf.str_at(u.name_off).unwrap() == name
        });
        let found = btf.find(name, t.kind);
        ensure(found.ok() == first, || {
            format!(
                "find({:?}, {:?}) = {found:?}, scan {first:?}",
                show(name),
                t.kind
            )
        })?;
        // A name just past it (a byte more) only if a type has it.
        let mut longer = name.to_vec();
        longer.push(b'_');
        let scan = all
            .iter()
            .copied()
            .find(|&j| btf.type_name(j).unwrap() == longer && btf.ty(j).unwrap().kind == t.kind);
        ensure(btf.find(&longer, t.kind).ok() == scan, || {
            format!("find({:?})", show(&longer))
        })?;
        if t.kind == Kind::Func && found == Ok(id) {
            check_func(btf, id)?;
        }
    }
    Ok(())
}

/// One own type: resolved, sized, as a scalar and its members as the spec says.
fn check_type(btf: &Btf<'_>, id: u32) -> Verdict {
    let r = btf.resolve(id);
    ensure(r == resolve_spec(btf, id), || {
        format!("resolve({id}) = {r:?}, spec {:?}", resolve_spec(btf, id))
    })?;
    let s = btf.size(id);
    let spec = size_spec(btf, id, 0);
    let same = match (s, spec) {
        (Ok(a), Ok(b)) => u64::from(a) == b,
        // The reader refuses a size over u32; the spec computes it in u64.
        (Err(Error::Limit), Ok(b)) => b > u64::from(u32::MAX),
        (Err(a), Err(b)) => a == b,
        _ => false,
    };
    ensure(same, || format!("size({id}) = {s:?}, spec {spec:?}"))?;
    check_scalar(btf, id)?;
    let t = raw(btf, id).unwrap();
    if matches!(t.kind, Kind::Struct | Kind::Union) {
        check_members(btf, id, &t)?;
    }
    Ok(())
}

fn check_scalar(btf: &Btf<'_>, id: u32) -> Verdict {
    let s = btf.scalar(id);
    let want = resolve_spec(btf, id).and_then(|r| {
        let t = raw(btf, r).unwrap();
        Ok(match t.kind {
            Kind::Int => {
                let enc = t.w(0) >> 24;
                let k = [
                    ScalarKind::Int,
                    ScalarKind::Int,
                    ScalarKind::Char,
                    ScalarKind::Int,
                    ScalarKind::Bool,
                ];
                (
                    r,
                    k.get(enc as usize).copied().unwrap_or(ScalarKind::Int),
                    t.third,
                    enc == 1,
                )
            }
            Kind::Ptr => (r, ScalarKind::Ptr, POINTER_SIZE, false),
            Kind::Enum | Kind::Enum64 => (r, ScalarKind::Enum, t.third, t.flag),
            Kind::Float => (r, ScalarKind::Float, t.third, true),
            _ => return Err(Error::Kind),
        })
    });
    ensure(s.map(|s| (s.id, s.kind, s.size, s.signed)) == want, || {
        format!("scalar({id}) = {s:?}, spec {want:?}")
    })
}

fn check_func(btf: &Btf<'_>, id: u32) -> Verdict {
    let name = btf.type_name(id).unwrap();
    let f = btf.func(name);
    let t = raw(btf, id).unwrap();
    let Some(p) = raw(btf, t.third) else {
        return Err(format!("FUNC {id}'s type {} does not read", t.third));
    };
    if p.kind != Kind::FuncProto {
        return ensure(f == Err(Error::Kind), || {
            format!("func({:?}) = {f:?} with a {:?}", show(name), p.kind)
        });
    }
    let f = f.map_err(|e| format!("func({:?}): {e:?}", show(name)))?;
    let n = usize::from(p.vlen);
    let variadic = n > 0 && p.w(2 * n - 2) == 0 && p.w(2 * n - 1) == 0;
    ensure(
        f.id == id
            && f.linkage == t.vlen
            && f.proto.id == t.third
            && f.proto.ret == p.third
            && f.proto.variadic == variadic,
        || format!("func {f:?}"),
    )?;
    let params = n - usize::from(variadic);
    ensure(usize::from(f.proto.params) == params, || {
        format!("{} params of {n}", f.proto.params)
    })?;
    for i in 0..params.min(CAP as usize) {
        let q = btf
            .param(t.third, i)
            .map_err(|e| format!("param {i}: {e:?}"))?;
        ensure(
            q.ty == p.w(2 * i + 1) && Ok(q.name) == btf.str_at(p.w(2 * i)),
            || format!("param {i}: {q:?}"),
        )?;
        if !q.name.is_empty() {
            let first = (0..i).all(|j| btf.str_at(p.w(2 * j)).ok() != Some(q.name));
            if first {
                ensure(btf.param_index(t.third, q.name) == Ok(i), || {
                    format!("param_index of {i}")
                })?;
            }
        }
    }
    ensure(btf.param(t.third, params) == Err(Error::NotFound), || {
        "param past the last".into()
    })
}

fn check_members(btf: &Btf<'_>, id: u32, t: &Raw) -> Verdict {
    let tt = btf.ty(id).unwrap();
    for i in 0..usize::from(t.vlen).min(CAP as usize / 4) {
        let m = btf.member_at(&tt, i);
        let spec = member_at_spec(btf, t, i);
        ensure(m.ok() == spec, || {
            format!("member_at({id}, {i}) = {m:?}, spec {spec:?}")
        })?;
        let Ok(name) = btf.str_at(t.w(3 * i)) else {
            return Err(format!("member {i}'s name"));
        };
        if name.is_empty() {
            continue;
        }
        let found = btf.member(id, name);
        let first_own = (0..usize::from(t.vlen)).find(|&j| btf.str_at(t.w(3 * j)) == Ok(name));
        if first_own == Some(i) {
            // The struct's own first member of that name comes before any in anonymous members,
            // unless the search stops at a member before it (or at it) that does not decode, or
            // an anonymous one whose type does not resolve: then with an error.
            let broken = (0..=i).any(|j| {
                member_at_spec(btf, t, j).is_none()
                    || (btf.str_at(t.w(3 * j)).is_ok_and(|n| n.is_empty())
                        && resolve_spec(btf, t.w(3 * j + 1)).is_err())
            });
            ensure(found.ok() == spec || (broken && found.is_err()), || {
                format!("member({id}, {:?}) = {found:?}, own {spec:?}", show(name))
            })?;
        }
    }
    // Names reached through anonymous members: what is found is reachable so.
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut budget = CAP;
    collect_names(btf, id, 4, &mut budget, &mut names);
    for name in names.iter().take(8) {
        let found = btf.member(id, name);
        if let Ok(m) = found {
            let there = reachable(btf, id, name, m.ty, u64::from(m.bit_offset));
            ensure(there != Some(false), || {
                format!("member({id}, {:?}) = {m:?}: no such member", show(name))
            })?;
        }
    }
    Ok(())
}

/// Member names of `id`, and of its anonymous members.
fn collect_names(btf: &Btf<'_>, id: u32, depth: usize, budget: &mut u32, out: &mut Vec<Vec<u8>>) {
    let Ok(r) = resolve_spec(btf, id) else { return };
    let Some(t) = raw(btf, r) else { return };
    if depth == 0 || !matches!(t.kind, Kind::Struct | Kind::Union) {
        return;
    }
    for i in 0..usize::from(t.vlen) {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let name = btf.str_at(t.w(3 * i)).unwrap_or(b"");
        if name.is_empty() {
            collect_names(btf, t.w(3 * i + 1), depth - 1, budget, out);
        } else {
            out.push(name.to_vec());
        }
    }
}

/// `data` in the other byte order, if its header reads.
fn swap(data: &[u8]) -> Option<Vec<u8>> {
    let l = layout(data).ok()?;
    let mut v = data.to_vec();
    v.swap(0, 1);
    for w in v[4..24].chunks_exact_mut(4) {
        w.reverse();
    }
    for w in v[l.types.0..l.types.0 + l.types.1].chunks_exact_mut(4) {
        w.reverse();
    }
    Some(v)
}

/// The same answers from two readers of one blob (other byte order, or another view).
fn same_answers(a: &Btf<'_>, b: &Btf<'_>, what: &str) -> Verdict {
    ensure(
        a.end_id() == b.end_id() && a.by_name() == b.by_name(),
        || format!("{what}: other ids or index"),
    )?;
    for id in 0..a.end_id().min(CAP) {
        let (ta, tb) = (a.ty(id).unwrap(), b.ty(id).unwrap());
        ensure(
            (ta.kind, ta.name_off, ta.vlen, ta.kind_flag, ta.size_or_type)
                == (tb.kind, tb.name_off, tb.vlen, tb.kind_flag, tb.size_or_type)
                && a.type_name(id) == b.type_name(id)
                && a.resolve(id) == b.resolve(id)
                && a.size(id) == b.size(id)
                && a.scalar(id) == b.scalar(id),
            || format!("{what}: type {id} reads differently"),
        )?;
    }
    for &id in a.by_name().iter().take(CAP as usize) {
        let name = a.type_name(id).unwrap();
        let kind = a.ty(id).unwrap().kind;
        ensure(
            a.find(name, kind) == b.find(name, kind) && a.func(name) == b.func(name),
            || format!("{what}: {:?} found differently", show(name)),
        )?;
    }
    Ok(())
}

/// Runs one input; returns a label for the statistics, or what promise it breaks.
pub fn check(data: &[u8]) -> Result<&'static str, String> {
    let Some((&mode, rest)) = data.split_first() else {
        return Ok("empty");
    };
    let (mut o, mut n, mut o2, mut n2) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    if mode & 1 == 0 {
        let Ok(btf) = load(rest, None, &mut o, &mut n)? else {
            return Ok("refused");
        };
        check_accepted(&btf)?;
        let swapped = swap(rest).ok_or("an accepted blob's header does not read")?;
        let other = load(&swapped, None, &mut o2, &mut n2)?
            .map_err(|e| format!("the other byte order refused: {e:?}"))?;
        same_answers(&btf, &other, "byte order")?;
        let view = Btf::from_parts(rest, None, btf.offsets(), btf.by_name())
            .map_err(|e| format!("from_parts: {e:?}"))?;
        same_answers(&btf, &view, "from_parts")?;
        return Ok("accepted");
    }
    let len = match rest {
        [lo, hi, ..] => usize::from(u16::from_le_bytes([*lo, *hi])),
        _ => return Ok("short split"),
    };
    let rest = &rest[2..];
    let (base, split) = rest.split_at(len.min(rest.len()));
    let Ok(base) = load(base, None, &mut o, &mut n)? else {
        return Ok("base refused");
    };
    let Ok(m) = load(split, Some(&base), &mut o2, &mut n2)? else {
        return Ok("split refused");
    };
    ensure(m.first_id() == base.end_id(), || {
        "split ids do not continue the base's".into()
    })?;
    check_accepted(&m)?;
    Ok("split accepted")
}

const SAMPLE: &[u8] = include_bytes!("../../../src/sys/btf/reader/testdata/sample.btf");
const SPLIT_BASE: &[u8] = include_bytes!("../../../src/sys/btf/reader/testdata/split-base.btf");
const SPLIT_MOD: &[u8] = include_bytes!("../../../src/sys/btf/reader/testdata/split-mod.btf");

/// A blob of raw type words and strings, little-endian.
fn blob(types: &[u32], strs: &[u8]) -> Vec<u8> {
    let tl = types.len() as u32 * 4;
    let mut v = vec![0x9f, 0xeb, 1, 0];
    for w in [24, 0, tl, tl, strs.len() as u32] {
        v.extend(w.to_le_bytes());
    }
    for w in types {
        v.extend(w.to_le_bytes());
    }
    v.extend(strs);
    v
}

/// The inputs the seeds are made of: the test blobs (both byte orders), the split pair, small
/// blobs whose types loop.
pub fn seeds() -> Vec<Vec<u8>> {
    let single = |b: &[u8]| [&[0u8][..], b].concat();
    let mut out = vec![
        single(SAMPLE),
        single(&swap(SAMPLE).unwrap()),
        single(SPLIT_BASE),
    ];
    let mut split = vec![1u8];
    split.extend((SPLIT_BASE.len() as u16).to_le_bytes());
    split.extend(SPLIT_BASE);
    split.extend(SPLIT_MOD);
    out.push(split);
    // Typedefs of each other, a const of itself, an array of itself, a struct whose anonymous
    // members are itself, a FUNC of an INT.
    let strs = b"\0a\0b\0int\0self\0f\0x\0";
    let int = 1 << 24;
    out.push(single(&blob(
        &[
            1,
            8 << 24,
            2, //
            3,
            8 << 24,
            1, //
            0,
            10 << 24,
            3, //
            0,
            3 << 24,
            0,
            4,
            5,
            2, //
            5,
            int,
            4,
            1 << 24 | 32, //
            9,
            4 << 24 | 2,
            8,
            0,
            6,
            0,
            0,
            6,
            32, //
            14,
            12 << 24 | 1,
            5, //
        ],
        strs,
    )));
    // A struct with a bitfield in old style (INT of 3 bits at bit 2) and new style.
    out.push(single(&blob(
        &[
            5,
            int,
            4,
            1 << 24 | 2 << 16 | 3, //
            9,
            4 << 24 | 1 << 31 | 2,
            4,
            16,
            1,
            5 << 24 | 3,
            3,
            1,
            8, //
            9,
            5 << 24 | 1,
            4,
            1,
            1,
            0, //
        ],
        strs,
    )));
    out.push(single(&blob(&[], b"\0")));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::common::{Rng, Source};

    #[test]
    fn seeds_keep_promises() {
        let labels: Vec<&str> = seeds()
            .iter()
            .map(|s| check(s).unwrap_or_else(|e| panic!("{e}")))
            .collect();
        assert_eq!(
            labels,
            [
                "accepted",
                "accepted",
                "accepted",
                "split accepted",
                "accepted",
                "accepted",
                "accepted"
            ]
        );
    }

    /// Seeds with random edits of words and bytes: a short deterministic run in `cargo test`.
    #[test]
    fn short_run() {
        let mut rng = Rng(17);
        let seeds = seeds();
        let mut accepted = 0;
        for _ in 0..3000 {
            let mut b = rng.pick(&seeds).clone();
            for _ in 0..1 + rng.below(3) {
                let i = 1 + rng.below(b.len() - 1);
                match rng.below(4) {
                    0 => b[i] = rng.next() as u8,
                    1 => b[i] ^= 1 << rng.below(8),
                    2 if i + 4 <= b.len() => {
                        b[i..i + 4].copy_from_slice(&(rng.below(40) as u32).to_le_bytes())
                    }
                    _ => b[i] = b[i].wrapping_add(1),
                }
            }
            let label = check(&b).unwrap_or_else(|e| panic!("{e}"));
            accepted += usize::from(label.contains("accepted"));
        }
        assert!(accepted > 300, "only {accepted} mutated blobs accepted");
    }
}
