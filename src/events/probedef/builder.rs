// SPDX-License-Identifier: GPL-2.0

//! A fetch program under construction ([`Builder`]), counting upstream's instruction slots, and
//! how parsing one argument fails ([`Fail`]).

use super::error::{ErrCode, Errno};
use super::program::{Deref, Load, END_SLOT, MAX_DEREFS};

/// A failure in one argument: the error and its offset in the argument's word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Fail {
    pub(super) code: ErrCode,
    pub(super) offset: usize,
    pub(super) errno: Errno,
    pub(super) also: Option<ErrCode>,
}

pub(super) const fn fail(code: ErrCode, offset: usize, errno: Errno) -> Fail {
    Fail {
        code,
        offset,
        errno,
        also: None,
    }
}

/// Upstream's last-written instruction, which several checks look at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum LastOp {
    Arg,
    EntryData,
    Retval,
    Stack,
    StackPointer,
    Comm,
    Current,
    Imm,
    Data,
    Deref,
    UserDeref,
    /// `this_cpu_ptr()`: a per-CPU address made this CPU's.
    CpuPtr,
}

/// A program under construction, with upstream's instruction count.
pub(super) struct Builder<'t> {
    pub(super) load: Option<Load<&'t str>>,
    pub(super) derefs: [Deref; MAX_DEREFS],
    pub(super) nderefs: usize,
    /// Instruction slots upstream would have used so far.
    pub(super) slots: usize,
}

impl<'t> Builder<'t> {
    pub(super) fn new() -> Self {
        Builder {
            load: None,
            derefs: [Deref::default(); MAX_DEREFS],
            nderefs: 0,
            slots: 0,
        }
    }

    /// Sets the load. It is the innermost operand, so upstream writes it at slot 0 (a symbol
    /// takes slots 0 and 1: an unresolved-symbol holder, then the immediate it resolves into).
    pub(super) fn set_load(&mut self, load: Load<&'t str>) {
        self.slots = if matches!(load, Load::Symbol(_)) {
            2
        } else {
            1
        };
        self.load = Some(load);
    }

    pub(super) fn last_op(&self) -> Option<LastOp> {
        if let Some(d) = self.nderefs.checked_sub(1).and_then(|i| self.derefs.get(i)) {
            return Some(if d.cpu {
                LastOp::CpuPtr
            } else if d.user {
                LastOp::UserDeref
            } else {
                LastOp::Deref
            });
        }
        Some(match self.load? {
            Load::Arg(_) => LastOp::Arg,
            Load::EntryArg { .. } => LastOp::EntryData,
            Load::Retval => LastOp::Retval,
            Load::Stack(_) => LastOp::Stack,
            Load::StackPointer => LastOp::StackPointer,
            Load::Comm => LastOp::Comm,
            Load::Current => LastOp::Current,
            Load::Imm(_) | Load::Symbol(_) => LastOp::Imm,
            Load::ImmStr(_) => LastOp::Data,
        })
    }

    /// Replaces the last dereference (`this_cpu_ptr(@SYM)` takes the place of the read of
    /// `@SYM`: the symbol's address is the per-CPU address). `false` if there is none.
    pub(super) fn replace_last_deref(&mut self, d: Deref) -> bool {
        match self
            .nderefs
            .checked_sub(1)
            .and_then(|i| self.derefs.get_mut(i))
        {
            Some(last) => {
                *last = d;
                true
            }
            None => false,
        }
    }

    /// Appends a dereference (upstream: `if (++code == end) TOO_MANY_OPS`).
    pub(super) fn push_deref(&mut self, d: Deref, at: usize) -> Result<(), Fail> {
        let too_many = fail(ErrCode::TooManyOps, at, Errno::Inval);
        if self.slots == END_SLOT {
            return Err(too_many);
        }
        *self.derefs.get_mut(self.nderefs).ok_or(too_many)? = d;
        self.nderefs += 1;
        self.slots += 1;
        Ok(())
    }
}
