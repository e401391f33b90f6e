// SPDX-License-Identifier: GPL-2.0

//! Field types of probe arguments: upstream's `probe_fetch_types[]` (kernel/trace/trace_probe.c)
//! for a 64-bit kernel.

use super::num::kstrtoull;

/// The type of a probe argument's field, as named after ':' in a fetch argument.
///
/// A bitfield type (`b<width>@<offset>/<container>`) has its container's type (`u8`..`u64`);
/// the bit extraction is part of the argument's [`Fetch`](super::Fetch) program.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FetchType {
    /// `string`: a NUL-terminated kernel string, stored as a `__data_loc`.
    String,
    /// `ustring`: a NUL-terminated user-space string.
    UString,
    /// `symstr`: an address printed as "symbol+offset/size", stored as a string.
    SymStr,
    /// `u8`.
    U8,
    /// `u16`.
    U16,
    /// `u32`.
    U32,
    /// `u64`.
    U64,
    /// `s8`.
    S8,
    /// `s16`.
    S16,
    /// `s32`.
    S32,
    /// `s64`.
    S64,
    /// `x8`: shown in hex.
    X8,
    /// `x16`: shown in hex.
    X16,
    /// `x32`: shown in hex.
    X32,
    /// `x64`: shown in hex; the type of an argument given none.
    X64,
    /// `char`: one byte shown as a character.
    Char,
    /// `symbol`: an address shown as "symbol+offset".
    Symbol,
}

impl FetchType {
    /// Every type, in upstream's table order.
    pub const ALL: [FetchType; 17] = [
        FetchType::String,
        FetchType::UString,
        FetchType::SymStr,
        FetchType::U8,
        FetchType::U16,
        FetchType::U32,
        FetchType::U64,
        FetchType::S8,
        FetchType::S16,
        FetchType::S32,
        FetchType::S64,
        FetchType::X8,
        FetchType::X16,
        FetchType::X32,
        FetchType::X64,
        FetchType::Char,
        FetchType::Symbol,
    ];

    /// The type of an argument written without one: `unsigned long` in hex.
    pub const DEFAULT: FetchType = FetchType::X64;

    /// The name written after ':' in a definition.
    pub const fn name(self) -> &'static str {
        match self {
            FetchType::String => "string",
            FetchType::UString => "ustring",
            FetchType::SymStr => "symstr",
            FetchType::U8 => "u8",
            FetchType::U16 => "u16",
            FetchType::U32 => "u32",
            FetchType::U64 => "u64",
            FetchType::S8 => "s8",
            FetchType::S16 => "s16",
            FetchType::S32 => "s32",
            FetchType::S64 => "s64",
            FetchType::X8 => "x8",
            FetchType::X16 => "x16",
            FetchType::X32 => "x32",
            FetchType::X64 => "x64",
            FetchType::Char => "char",
            FetchType::Symbol => "symbol",
        }
    }

    /// Size of the field in the event record, in bytes. String types store a 32-bit
    /// `__data_loc` (length << 16 | offset) there; their bytes follow the fixed fields.
    pub const fn size(self) -> usize {
        match self {
            FetchType::String | FetchType::UString | FetchType::SymStr => 4,
            FetchType::U8 | FetchType::S8 | FetchType::X8 | FetchType::Char => 1,
            FetchType::U16 | FetchType::S16 | FetchType::X16 => 2,
            FetchType::U32 | FetchType::S32 | FetchType::X32 => 4,
            FetchType::U64 | FetchType::S64 | FetchType::X64 | FetchType::Symbol => 8,
        }
    }

    /// Whether the field is signed in the event format. Upstream marks the string types signed.
    pub const fn is_signed(self) -> bool {
        matches!(
            self,
            FetchType::String
                | FetchType::UString
                | FetchType::SymStr
                | FetchType::S8
                | FetchType::S16
                | FetchType::S32
                | FetchType::S64
        )
    }

    /// Whether the value is a string stored as a `__data_loc` (a dynamic field).
    pub const fn is_string(self) -> bool {
        matches!(
            self,
            FetchType::String | FetchType::UString | FetchType::SymStr
        )
    }

    /// The printf format of the field in the event's print fmt, as upstream writes it into the
    /// format file (the string one with its escaped quotes).
    pub const fn print_fmt(self) -> &'static str {
        match self {
            FetchType::String | FetchType::UString | FetchType::SymStr => "\\\"%s\\\"",
            FetchType::U8 | FetchType::U16 | FetchType::U32 => "%u",
            FetchType::U64 => "%Lu",
            FetchType::S8 | FetchType::S16 | FetchType::S32 => "%d",
            FetchType::S64 => "%Ld",
            FetchType::X8 | FetchType::X16 | FetchType::X32 => "0x%x",
            FetchType::X64 => "0x%Lx",
            FetchType::Char => "'%c'",
            FetchType::Symbol => "%pS",
        }
    }

    /// The C type of the field in the event's format file.
    pub const fn format_type(self) -> &'static str {
        match self {
            FetchType::String | FetchType::UString | FetchType::SymStr => "__data_loc char[]",
            FetchType::U8 | FetchType::X8 | FetchType::Char => "u8",
            FetchType::U16 | FetchType::X16 => "u16",
            FetchType::U32 | FetchType::X32 => "u32",
            FetchType::U64 | FetchType::X64 | FetchType::Symbol => "u64",
            FetchType::S8 => "s8",
            FetchType::S16 => "s16",
            FetchType::S32 => "s32",
            FetchType::S64 => "s64",
        }
    }

    /// The type named exactly `name`, if any (bitfields are not names: see [`FetchType::find`]).
    pub fn from_name(name: &str) -> Option<FetchType> {
        FetchType::ALL.into_iter().find(|t| t.name() == name)
    }

    /// `find_fetch_type()`: the type a fetch argument's type text denotes, the default for none.
    ///
    /// A text starting with 'b' is a bitfield: only its container size (after the first '/') is
    /// read here; the width and offset are checked when the fetch program is built.
    pub fn find(text: Option<&str>) -> Option<FetchType> {
        let Some(text) = text else {
            return Some(FetchType::DEFAULT);
        };
        if text.starts_with('b') {
            let (_, container) = text.split_once('/')?;
            return match kstrtoull(container, 0) {
                Ok(8) => Some(FetchType::U8),
                Ok(16) => Some(FetchType::U16),
                Ok(32) => Some(FetchType::U32),
                Ok(64) => Some(FetchType::U64),
                _ => None,
            };
        }
        FetchType::from_name(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for t in FetchType::ALL {
            assert_eq!(FetchType::from_name(t.name()), Some(t));
            assert_eq!(FetchType::find(Some(t.name())), Some(t));
        }
        assert_eq!(FetchType::from_name("u128"), None);
        assert_eq!(FetchType::from_name(""), None);
    }

    #[test]
    fn find_defaults_and_bitfields() {
        assert_eq!(FetchType::find(None), Some(FetchType::X64));
        assert_eq!(FetchType::find(Some("b4@2/8")), Some(FetchType::U8));
        assert_eq!(FetchType::find(Some("b1@0/0x10")), Some(FetchType::U16));
        assert_eq!(FetchType::find(Some("bxx/32")), Some(FetchType::U32));
        assert_eq!(FetchType::find(Some("b4@2/64")), Some(FetchType::U64));
        assert_eq!(FetchType::find(Some("b4@2/12")), None);
        assert_eq!(FetchType::find(Some("b4@2")), None);
        assert_eq!(FetchType::find(Some("bogus")), None);
    }

    #[test]
    fn sizes_and_formats() {
        assert_eq!(FetchType::String.size(), 4);
        assert_eq!(FetchType::Symbol.size(), 8);
        assert_eq!(FetchType::Char.format_type(), "u8");
        assert_eq!(FetchType::X64.print_fmt(), "0x%Lx");
        assert!(FetchType::String.is_signed() && !FetchType::U8.is_signed());
        assert!(FetchType::SymStr.is_string() && !FetchType::Symbol.is_string());
    }
}
