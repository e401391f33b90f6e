// SPDX-License-Identifier: GPL-2.0

//! `finalize_fetch_insn()`: the last step of parsing a fetch argument, which writes the store,
//! bitfield and array stages of its [`Fetch`] program for the argument's type, counting
//! upstream's instruction slots as it goes.

use super::argtype::TypeSpec;
use super::builder::{fail, Builder, Fail, LastOp};
use super::error::{ErrCode, Errno};
use super::num::simple_strtoul;
use super::program::{Bitfield, Deref, Fetch, Store, StoreKind, END_SLOT, MAX_DEREFS};
use super::types::FetchType;

/// The store, bitfield and array stages for the type of `spec`, `off` being where upstream's
/// cursor stands.
pub(super) fn finalize<'t>(
    b: Builder<'t>,
    spec: &TypeSpec<'_>,
    off: usize,
) -> Result<Fetch<'t>, Fail> {
    // Upstream points type errors found here at the type's offset in the expression counted from
    // its cursor, which a dereference has moved past the expression's start: the caret lands
    // that much to the right of the type (possibly past the end of the command).
    let at_type = off + spec.from;
    let Some(load) = b.load else {
        return Err(fail(ErrCode::BadFetchArg, off, Errno::Inval));
    };
    let last = b.last_op();
    let mut prog = Tail {
        derefs: b.derefs,
        nderefs: b.nderefs,
        slots: b.slots,
    };
    let store = if spec.ty.is_string() {
        prog.string_store(spec, last, off, at_type)?
    } else {
        prog.value_store(spec.ty, last, off)?
    };
    let bitfield = match spec.name.and_then(|n| n.strip_prefix('b')) {
        Some(bf) => Some(prog.bitfield(bf, spec.ty, at_type)?),
        None => match spec.btf_bitfield {
            Some(bf) => {
                prog.take_slot(fail(ErrCode::TooManyOps, off, Errno::Inval))?;
                Some(bf)
            }
            None => None,
        },
    };
    if spec.count > 0 {
        prog.check_array(store, off, at_type)?;
    }
    Ok(Fetch {
        load,
        derefs: prog.derefs,
        // At most MAX_DEREFS.
        nderefs: prog.nderefs as u8,
        store,
        bitfield,
        count: spec.count as u8,
    })
}

/// The dereferences of a program being finalized, and upstream's instruction slots used so far.
struct Tail {
    derefs: [Deref; MAX_DEREFS],
    nderefs: usize,
    slots: usize,
}

impl Tail {
    /// Folds the last dereference into the store, as upstream rewrites that instruction in place.
    fn fold(&mut self) -> Deref {
        self.nderefs = self.nderefs.saturating_sub(1);
        core::mem::take(&mut self.derefs[self.nderefs.min(MAX_DEREFS - 1)])
    }

    /// Takes a new instruction slot, failing with `full` when only the end marker's is left.
    fn take_slot(&mut self, full: Fail) -> Result<(), Fail> {
        if self.slots == END_SLOT {
            return Err(full);
        }
        self.slots += 1;
        Ok(())
    }

    /// The store of a string type (`string`, `ustring`, `symstr`), after `last`.
    fn string_store(
        &mut self,
        spec: &TypeSpec<'_>,
        last: Option<LastOp>,
        off: usize,
        at_type: usize,
    ) -> Result<Store, Fail> {
        let ty = spec.ty;
        if ty == FetchType::SymStr {
            if !matches!(
                last,
                Some(LastOp::Stack | LastOp::Retval | LastOp::Arg | LastOp::Deref)
            ) {
                return Err(fail(ErrCode::BadSymstring, at_type, Errno::Inval));
            }
        } else if !matches!(
            last,
            Some(LastOp::Deref | LastOp::UserDeref | LastOp::Imm | LastOp::Comm | LastOp::Data)
        ) {
            return Err(fail(ErrCode::BadString, at_type, Errno::Inval));
        }
        // The store gets a new instruction when the value is itself the address (symstr, an
        // immediate, $comm, a string constant) or, for arrays, the address of the first pointer;
        // otherwise it replaces the final dereference.
        let own_slot = ty == FetchType::SymStr
            || matches!(last, Some(LastOp::Imm | LastOp::Comm | LastOp::Data))
            || spec.count > 0;
        let folded = if own_slot {
            self.take_slot(fail(ErrCode::TooManyOps, off, Errno::Inval))?;
            Deref::default()
        } else {
            self.fold()
        };
        let kind = if ty == FetchType::UString || folded.user {
            StoreKind::UserString
        } else if ty == FetchType::SymStr {
            StoreKind::SymString
        } else {
            StoreKind::String
        };
        Ok(Store {
            kind,
            size: ty.size() as u8,
            offset: folded.offset,
        })
    }

    /// The store of a value type: the memory the last dereference reads, else the value itself.
    fn value_store(
        &mut self,
        ty: FetchType,
        last: Option<LastOp>,
        off: usize,
    ) -> Result<Store, Fail> {
        let size = ty.size() as u8;
        if let Some(LastOp::Deref | LastOp::UserDeref) = last {
            let d = self.fold();
            return Ok(Store {
                kind: if d.user {
                    StoreKind::UserMem
                } else {
                    StoreKind::Mem
                },
                size,
                offset: d.offset,
            });
        }
        self.take_slot(fail(ErrCode::TooManyOps, off, Errno::TooBig))?;
        Ok(Store {
            kind: StoreKind::Raw,
            size,
            offset: 0,
        })
    }

    /// The bitfield stage of type `b<bf>` (`bf` = `WIDTH@OFFSET/...`) in a container of `ty`.
    fn bitfield(&mut self, bf: &str, ty: FetchType, at_type: usize) -> Result<Bitfield, Fail> {
        let bad = fail(ErrCode::BadBitfield, at_type, Errno::Inval);
        let bf = bf.as_bytes();
        let (width, end) = simple_strtoul(bf, 0);
        if width == 0 || bf.get(end) != Some(&b'@') {
            return Err(bad);
        }
        let at_offset = bf.get(end + 1..).unwrap_or(&[]);
        let (shift, end) = simple_strtoul(at_offset, 0);
        if end == 0 || at_offset.get(end) != Some(&b'/') {
            return Err(bad);
        }
        self.take_slot(bad)?;
        // In unsigned long, then kept in a u8, as upstream does; a field that does not fit its
        // container is refused, but only after the sum has wrapped.
        let bits = 8 * ty.size() as u64;
        let span = width.wrapping_add(shift);
        if bits < span {
            return Err(bad);
        }
        Ok(Bitfield {
            basesize: ty.size() as u8,
            lshift: bits.wrapping_sub(span) as u8,
            rshift: bits.wrapping_sub(width) as u8,
        })
    }

    /// The array stage: only memory and strings make arrays, and the loop needs a free slot.
    fn check_array(&self, store: Store, off: usize, at_type: usize) -> Result<(), Fail> {
        if !matches!(
            store.kind,
            StoreKind::Mem | StoreKind::String | StoreKind::UserString
        ) {
            return Err(fail(ErrCode::BadString, at_type, Errno::Inval));
        }
        if self.slots == END_SLOT {
            return Err(fail(ErrCode::TooManyOps, off, Errno::TooBig));
        }
        Ok(())
    }
}
