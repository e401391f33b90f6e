// SPDX-License-Identifier: GPL-2.0

//! Fetch programs: how to read one probe argument (see [`Fetch`]), the parser's output and the
//! input of the event record layer's compiler.

use core::convert::Infallible;

use super::error::Errno;
use super::num::{kstrtoll, NumError};

/// Upstream's instruction budget per argument (`FETCH_INSN_MAX`), end marker included.
pub const FETCH_INSN_MAX: usize = 16;

/// The most dereferences a [`Fetch`] holds: the budget less the end marker and the load.
pub const MAX_DEREFS: usize = FETCH_INSN_MAX - 2;

/// The largest event record upstream accepts for the fixed part of the arguments
/// (`MAX_PROBE_EVENT_SIZE`), in bytes.
pub const MAX_PROBE_EVENT_SIZE: usize = 3072;

/// The index of upstream's end marker, the one instruction slot nothing else may take.
/// The index of upstream's end marker, the one instruction slot nothing else may take.
pub(super) const END_SLOT: usize = FETCH_INSN_MAX - 1;

/// Stage 1 of a [`Fetch`]: where the value comes from.
///
/// Shared by the parser and the programs compiled from its output: `S` is what an immediate
/// string carries, `Y` what a symbol carries. The parser's [`Fetch`] holds their text
/// (`Load<&str>`); a compiled program (`event::Origin`, a `Load<(), NoSymbol>`) keeps the
/// string itself and has resolved every symbol to an [`Imm`](Load::Imm) address, so its load
/// carries neither and cannot be a symbol.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Load<S, Y = S> {
    /// `$argN` on function entry: function argument `n` (from 0) of `ftrace_regs`. For a
    /// tracepoint probe, `n` is N: the stub probed takes a dummy first parameter.
    Arg(u16),
    /// `$argN` on function exit: argument `arg` (from 0), saved at entry in entry-data `slot`.
    EntryArg {
        /// Argument number, from 0.
        arg: u16,
        /// Index of the `unsigned long` in the entry data that holds it.
        slot: u8,
    },
    /// `$retval`: the return value.
    Retval,
    /// `$stackN`: the `n`th `unsigned long` on the stack at the probe.
    Stack(u16),
    /// `$stack`: the stack pointer.
    StackPointer,
    /// `$comm`: the address of the current task's `comm`.
    Comm,
    /// `$current`: the address of the current task's `task_struct`.
    Current,
    /// `\IMM`, or the address of `@ADDR`: a constant.
    Imm(u64),
    /// `\"STR"`: the address of the string (the text between the quotes, kept by the probe).
    ImmStr(S),
    /// `@SYM[+|-OFFS]`: the address of a symbol, written as is; see [`split_symbol_offset`].
    Symbol(Y),
}

/// What the [`Load::Symbol`] of a load whose symbols are all resolved holds: nothing can.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoSymbol {}

impl<S, Y> Load<S, Y> {
    /// The same load with new payloads: `imm_str` maps an immediate string's, `symbol` turns a
    /// symbol into any load (its resolved address, say); the other loads carry over as they are.
    pub fn try_map<T, Z, E>(
        self,
        imm_str: impl FnOnce(S) -> Result<T, E>,
        symbol: impl FnOnce(Y) -> Result<Load<T, Z>, E>,
    ) -> Result<Load<T, Z>, E> {
        Ok(match self {
            Load::Arg(n) => Load::Arg(n),
            Load::EntryArg { arg, slot } => Load::EntryArg { arg, slot },
            Load::Retval => Load::Retval,
            Load::Stack(n) => Load::Stack(n),
            Load::StackPointer => Load::StackPointer,
            Load::Comm => Load::Comm,
            Load::Current => Load::Current,
            Load::Imm(v) => Load::Imm(v),
            Load::ImmStr(s) => Load::ImmStr(imm_str(s)?),
            Load::Symbol(y) => symbol(y)?,
        })
    }
}

/// Stage 2 of a [`Fetch`]: one pointer dereference.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Deref {
    /// Added to the address before reading (upstream keeps it in an `int`).
    pub offset: i32,
    /// Read user memory (`+uOFFS(...)`) instead of kernel memory.
    pub user: bool,
    /// Not a read: the value is a per-CPU address, and becomes this CPU's copy of it
    /// (`this_cpu_ptr()`, upstream's `FETCH_OP_CPU_PTR`); `offset` and `user` are unused.
    pub cpu: bool,
}

/// How stage 3 of a [`Fetch`] produces the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StoreKind {
    /// The value itself (`FETCH_OP_ST_RAW`).
    Raw,
    /// Kernel memory at value + offset (`FETCH_OP_ST_MEM`).
    Mem,
    /// User memory at value + offset (`FETCH_OP_ST_UMEM`).
    UserMem,
    /// The kernel string at value + offset (`FETCH_OP_ST_STRING`).
    String,
    /// The user string at value + offset (`FETCH_OP_ST_USTRING`).
    UserString,
    /// The symbol name of address value + offset (`FETCH_OP_ST_SYMSTR`).
    SymString,
}

/// Stage 3 of a [`Fetch`]: producing the field.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Store {
    /// What to store.
    pub kind: StoreKind,
    /// Size of the field in bytes (4, a `__data_loc`, for strings).
    pub size: u8,
    /// Added to the value before reading memory (0 for `Raw`). The last dereference an argument
    /// writes becomes this offset, as upstream folds it into the store.
    pub offset: i32,
}

/// Stage 4 of a [`Fetch`]: extracting a bitfield from the stored value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Bitfield {
    /// Size of the container in bytes (1, 2, 4 or 8).
    pub basesize: u8,
    /// Left shift first: container bits - (width + offset).
    pub lshift: u8,
    /// Then right shift: container bits - width.
    pub rshift: u8,
}

/// The program that reads one probe argument.
///
/// Upstream compiles each fetch argument into an array of `struct fetch_insn` run in fixed
/// stages (kernel/trace/trace_probe_tmpl.h). A [`Fetch`] is that array with the stages made
/// explicit, so that the interpreter is straight-line code:
///
/// ```text
///   1. load     val = <Load>                        exactly one
///   2. derefs   for d in derefs:                    zero or more
///                   lval = val
///                   val  = read_ulong(val + d.offset)          (user memory if d.user)
///                   (if d.cpu: val = this CPU's copy of per-CPU address val, no read)
///   3. store    write the field at `dest` from val, by store.kind:
///                 Raw        the low store.size bytes of val
///                 Mem        store.size bytes at val + store.offset   (UserMem: user memory)
///                 String     the NUL-terminated string at val + store.offset (UserString: user)
///                 SymString  the "symbol+off/size" text of address val + store.offset
///   4. bitfield if Some(b): x = stored value (b.basesize bytes);
///                 x = (x << b.lshift) >> b.rshift, in b.basesize-byte arithmetic
///   5. array    if count > 0, repeat 3-4 for elements 1..count:
///                 non-strings: dest += store.size; val += store.size
///                 strings:     val = lval + 8 * i, then redo the last deref of stage 2
///                              (an array of string pointers; fails if there is no deref)
/// ```
///
/// [`Load`] maps to upstream's first-stage ops: `Arg(n)` is `regs_get_kernel_argument(n)` (for
/// tracepoint probes n is already shifted past the stub's dummy first parameter), `EntryArg`
/// reads slot `slot` (8 bytes each) of the entry data a return probe saved at function entry
/// (see [`ProbeDef::entry_args`](super::ProbeDef::entry_args)), `Comm` is the address of
/// `current->comm`, `ImmStr` the address of a copy of the string, and `Symbol` the address
/// `kallsyms` gives the symbol (resolved when the probe is registered: see
/// [`split_symbol_offset`]).
///
/// All memory reads are nofault reads. A failed dereference ends the argument's fetch, as it
/// ends upstream's `process_fetch_insn_bottom()`; failed string reads store what upstream's
/// `fetch_store_string()` stores.
///
/// Shift amounts and offsets keep upstream's C types: a dereference offset is parsed as a
/// `long` and kept as an `int` (so it wraps the same way), and a bitfield's shifts are computed
/// in `unsigned long` and kept in a `u8`. An interpreter must not trap on a shift of the full
/// width or more (use `checked_shl(..).unwrap_or(0)`).
///
/// # The limits
///
/// Upstream gives each argument 16 instructions, the last one reserved for its end marker; a
/// symbol load takes two. The parser counts instructions the same way, so that it refuses
/// exactly the nestings upstream refuses, with the same error (`TOO_MANY_OPS`, or
/// `BAD_BITFIELD` when only the bitfield does not fit).
#[derive(Clone, Copy, Debug, Eq, Hash)]
pub struct Fetch<'a> {
    /// Stage 1.
    pub load: Load<&'a str>,
    pub(super) derefs: [Deref; MAX_DEREFS],
    pub(super) nderefs: u8,
    /// Stage 3.
    pub store: Store,
    /// Stage 4, if the type is a bitfield.
    pub bitfield: Option<Bitfield>,
    /// Stage 5: the number of array elements, 0 for a scalar.
    pub count: u8,
}

impl<'a> Fetch<'a> {
    /// Stage 2: the dereferences, innermost first.
    pub fn derefs(&self) -> &[Deref] {
        self.derefs.get(..usize::from(self.nderefs)).unwrap_or(&[])
    }

    /// The same program with the text of its load replaced through `f`.
    pub(super) fn map_text<'b>(self, f: impl Fn(&'a str) -> &'b str) -> Fetch<'b> {
        let mapped = self
            .load
            .try_map(|s| Ok::<_, Infallible>(f(s)), |y| Ok(Load::Symbol(f(y))));
        let load = match mapped {
            Ok(load) => load,
            Err(never) => match never {},
        };
        Fetch {
            load,
            derefs: self.derefs,
            nderefs: self.nderefs,
            store: self.store,
            bitfield: self.bitfield,
            count: self.count,
        }
    }
}

impl PartialEq for Fetch<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.load == other.load
            && self.derefs() == other.derefs()
            && self.store == other.store
            && self.bitfield == other.bitfield
            && self.count == other.count
    }
}

/// `traceprobe_split_symbol_offset()`: splits the text of a [`Load::Symbol`] into the symbol and
/// the offset to add to its address, as upstream does when it registers the probe.
///
/// The offset starts at the first '+' or '-' and must be a whole number; upstream fails the
/// registration otherwise (with `FAIL_REG_PROBE`).
pub fn split_symbol_offset(text: &str) -> Result<(&str, i64), Errno> {
    match text.find(['+', '-']) {
        Some(at) => {
            let offset = kstrtoll(text.get(at..).unwrap_or(""), 0).map_err(NumError::errno)?;
            Ok((text.get(..at).unwrap_or(""), offset))
        }
        None => Ok((text, 0)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symbol_offsets_split_like_upstream() {
        assert_eq!(split_symbol_offset("jiffies"), Ok(("jiffies", 0)));
        assert_eq!(split_symbol_offset("jiffies+0x10"), Ok(("jiffies", 16)));
        assert_eq!(split_symbol_offset("jiffies-8"), Ok(("jiffies", -8)));
        assert_eq!(split_symbol_offset("a-b+1"), Err(Errno::Inval));
        assert_eq!(split_symbol_offset(""), Ok(("", 0)));
    }
}
