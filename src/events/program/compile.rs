// SPDX-License-Identifier: GPL-2.0

//! Compiled fetch arguments: a parsed [`FetchArg`] made self-contained.

use core::fmt;

use super::super::probedef::{
    split_symbol_offset, Bitfield, Deref, Errno, FetchArg, FetchType, Load, NoSymbol, Store,
    StoreKind, MAX_ARGSTR_LEN, MAX_ARG_NAME_LEN, MAX_DEREFS,
};

/// The longest text of an immediate string (`\"TEXT"`): the whole expression is at most
/// [`MAX_ARGSTR_LEN`] bytes, quotes included.
pub const MAX_IMMSTR_LEN: usize = MAX_ARGSTR_LEN;

/// Stage 1 of a [`Program`]: a [`Load`] with nothing left to look up. It reads
/// [`Env::arg`](super::Env::arg) for `Arg`, [`Env::entry_slot`](super::Env::entry_slot) for
/// `EntryArg` (its `arg` is for the record only: the slot is what is read), and so on; an
/// `@SYM[+|-OFFS]` is an `Imm`, resolved to its address, and `ImmStr` stands for the program's
/// immediate string ([`Program::imm_str`]), which upstream addresses in memory of its own:
/// here it never is an address, only the source of a string store.
pub type Origin = Load<(), NoSymbol>;

/// A short string kept in the program itself.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Inline<const N: usize> {
    buf: [u8; N],
    len: u8,
}

impl<const N: usize> Inline<N> {
    const EMPTY: Self = Inline {
        buf: [0; N],
        len: 0,
    };

    fn new(s: &str) -> Option<Self> {
        let mut buf = [0; N];
        crate::sys::slice::copy(buf.get_mut(..s.len())?, s.as_bytes());
        Some(Inline {
            buf,
            len: u8::try_from(s.len()).ok()?,
        })
    }

    fn as_str(&self) -> &str {
        // Made from a &str, cut at its end: always UTF-8.
        core::str::from_utf8(self.buf.get(..usize::from(self.len)).unwrap_or(&[])).unwrap_or("")
    }
}

impl<const N: usize> fmt::Debug for Inline<N> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// One compiled fetch argument: the field it fills and the program that fills it.
///
/// It owns everything it needs (the name and an immediate string are copied in, a symbol is
/// resolved), so it outlives the command it was parsed from; upstream's `struct probe_arg`
/// after `traceprobe_update_arg()`. About 260 bytes.
///
/// The program runs the stages documented on [`probedef::Fetch`](super::super::probedef::Fetch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Program {
    name: Inline<MAX_ARG_NAME_LEN>,
    ty: FetchType,
    /// Offset of the field among the argument fields.
    offset: u16,
    origin: Origin,
    imm_str: Inline<MAX_IMMSTR_LEN>,
    /// Only the first `nderefs` are used; the rest stay default, so that `Eq` compares programs.
    derefs: [Deref; MAX_DEREFS],
    nderefs: u8,
    store: Store,
    bitfield: Option<Bitfield>,
    count: u8,
}

impl Program {
    /// The field name.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }

    /// The field type (a bitfield's container type).
    pub fn ty(&self) -> FetchType {
        self.ty
    }

    /// The number of array elements, 0 for a scalar.
    pub fn count(&self) -> u8 {
        self.count
    }

    /// Offset of the field among the argument fields (`FetchArg::offset`).
    pub fn offset(&self) -> usize {
        usize::from(self.offset)
    }

    /// Writes the field's C type as upstream's `format` file shows it: the type's `fmttype`,
    /// or `"%s[%d]"` of it for an array (`"u8[10]"`, `"__data_loc char[][4]"`).
    pub fn write_field_type(&self, w: &mut impl fmt::Write) -> fmt::Result {
        w.write_str(self.ty.format_type())?;
        if self.count > 0 {
            write!(w, "[{}]", self.count)?;
        }
        Ok(())
    }

    /// Offset of the field from the start of the record, whose head takes `head` bytes.
    pub fn field_offset(&self, head: usize) -> usize {
        head + self.offset()
    }

    /// Bytes of the field in the fixed part of the record (a `__data_loc` per string).
    pub fn field_size(&self) -> usize {
        self.ty.size() * usize::from(self.count.max(1))
    }

    /// Whether the `format` file calls the field signed (upstream: the signed types and the
    /// strings).
    pub fn is_signed(&self) -> bool {
        self.ty.is_signed()
    }

    /// Whether the field is (an array of) strings, with data after the fixed fields.
    pub fn is_dynamic(&self) -> bool {
        self.ty.is_string()
    }

    /// Stage 1.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// The text of an immediate string ([`Origin::ImmStr`]); "" for other programs.
    pub fn imm_str(&self) -> &str {
        self.imm_str.as_str()
    }

    /// Stage 2: the dereferences, innermost first.
    pub fn derefs(&self) -> &[Deref] {
        self.derefs.get(..usize::from(self.nderefs)).unwrap_or(&[])
    }

    /// Stage 3.
    pub fn store(&self) -> Store {
        self.store
    }

    /// Stage 4.
    pub fn bitfield(&self) -> Option<Bitfield> {
        self.bitfield
    }

    /// Whether the store reads a string (kernel, user or symbol).
    pub(super) fn stores_string(&self) -> bool {
        matches!(
            self.store.kind,
            StoreKind::String | StoreKind::UserString | StoreKind::SymString
        )
    }
}

/// Why an argument does not compile: what upstream's `traceprobe_update_arg()` and the copies
/// of `traceprobe_parse_probe_arg()` fail with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompileError {
    /// `@SYM`: no such symbol (`-ENOENT`; upstream logs `BAD_PROBE_ADDR`).
    UnknownSymbol,
    /// `@SYM+OFFS`: the offset is not a number (upstream's `kstrtol()` errno).
    BadSymbolOffset(Errno),
    /// A name or an immediate string longer than the parser allows (not reached from
    /// [`probedef::parse`](super::super::probedef::parse)).
    TooLong,
}

impl CompileError {
    /// The errno as the kernel returns it (negative). Pass it to
    /// [`ProbeDef::registration_error`](super::super::probedef::ProbeDef::registration_error)
    /// for upstream's log entry.
    pub fn errno(&self) -> i32 {
        match self {
            CompileError::UnknownSymbol => Errno::NoEnt.to_kernel(),
            CompileError::BadSymbolOffset(e) => e.to_kernel(),
            CompileError::TooLong => Errno::TooBig.to_kernel(),
        }
    }
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CompileError::UnknownSymbol => f.write_str("unknown symbol"),
            CompileError::BadSymbolOffset(_) => f.write_str("bad symbol offset"),
            CompileError::TooLong => f.write_str("argument too long"),
        }
    }
}

/// Compiles one parsed argument.
///
/// `resolve(sym)` is the address of kernel symbol `sym` (`kallsyms_lookup_name()`), `None` (or
/// 0, as upstream reads it) if there is none. `@SYM+OFFS` adds `OFFS` to it, wrapping as
/// upstream's `unsigned long` does.
pub fn compile(
    arg: &FetchArg<'_>,
    mut resolve: impl FnMut(&str) -> Option<u64>,
) -> Result<Program, CompileError> {
    let f = &arg.fetch;
    let mut imm_str = Inline::EMPTY;
    let origin: Origin = f.load.try_map(
        |s| {
            imm_str = Inline::new(s).ok_or(CompileError::TooLong)?;
            Ok(())
        },
        |s| {
            let (sym, offset) = split_symbol_offset(s).map_err(CompileError::BadSymbolOffset)?;
            match resolve(sym) {
                Some(addr) if addr != 0 => Ok(Load::Imm(addr.wrapping_add(offset as u64))),
                _ => Err(CompileError::UnknownSymbol),
            }
        },
    )?;
    let mut derefs = [Deref::default(); MAX_DEREFS];
    let used = f.derefs();
    if used.len() > derefs.len() {
        return Err(CompileError::TooLong);
    }
    crate::sys::slice::copy(&mut derefs[..used.len()], used);
    Ok(Program {
        name: Inline::new(arg.name).ok_or(CompileError::TooLong)?,
        ty: arg.ty,
        offset: arg.offset,
        origin,
        imm_str,
        derefs,
        // At most MAX_DEREFS (14).
        nderefs: used.len() as u8,
        store: f.store,
        bitfield: f.bitfield,
        count: f.count,
    })
}
