// SPDX-License-Identifier: GPL-2.0

//! A parsed fetch argument ([`FetchArg`]): the field it defines, its text, and its program.

use core::fmt;

use super::argv::DentryExpansion;
use super::program::Fetch;
use super::types::FetchType;

/// The text of a fetch argument as upstream shows and compares it (its `comm`): as written,
/// or, for a `%pd`/`%pD` argument, as rewritten.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Comm<'a> {
    text: &'a str,
    dentry: Option<DentryExpansion>,
}

impl<'a> Comm<'a> {
    /// A comm for the expression `text` (what follows `NAME=`), rewritten by `dentry` if set.
    pub(super) fn new(text: &'a str, dentry: Option<DentryExpansion>) -> Self {
        Comm { text, dentry }
    }

    /// The expression as written in the command.
    pub fn as_written(&self) -> &'a str {
        self.text
    }

    /// The `%pd`/`%pD` rewrite applied, if any.
    pub fn dentry(&self) -> Option<DentryExpansion> {
        self.dentry
    }

    /// Whether the comm, as displayed, equals `s` (upstream compares comms with `strcmp()`).
    pub fn eq_str(&self, s: &str) -> bool {
        display_eq(self, s)
    }
}

impl fmt::Display for Comm<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.dentry {
            None => f.write_str(self.text),
            Some(d) => {
                let inner = self
                    .text
                    .get(..self.text.len().saturating_sub(4))
                    .unwrap_or("");
                d.write_prefix(f)?;
                f.write_str(inner)?;
                d.write_suffix(f)
            }
        }
    }
}

/// Whether `d` displays as exactly `s`, without allocating.
pub(super) fn display_eq(d: &impl fmt::Display, s: &str) -> bool {
    struct Cmp<'s>(&'s str);
    impl fmt::Write for Cmp<'_> {
        fn write_str(&mut self, part: &str) -> fmt::Result {
            self.0 = self.0.strip_prefix(part).ok_or(fmt::Error)?;
            Ok(())
        }
    }
    let mut cmp = Cmp(s);
    fmt::write(&mut cmp, format_args!("{}", d)).is_ok() && cmp.0.is_empty()
}

/// One parsed fetch argument: the field it defines and how to fill it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FetchArg<'a> {
    /// The field name: as given before '=', else upstream's default `argN` (N from 1).
    pub name: &'a str,
    /// The expression.
    pub comm: Comm<'a>,
    /// The field type (a bitfield's container type).
    pub ty: FetchType,
    /// Offset of the field among the argument fields of the event record (upstream's
    /// `parg->offset`), in bytes.
    pub offset: u16,
    /// How to read the value.
    pub fetch: Fetch<'a>,
}

impl<'a> FetchArg<'a> {
    /// The number of array elements, 0 for a scalar.
    pub fn count(&self) -> u8 {
        self.fetch.count
    }

    /// Bytes the field takes in the fixed part of the record.
    pub fn size(&self) -> usize {
        self.ty.size() * usize::from(self.count().max(1))
    }

    /// Whether the field is (an array of) `__data_loc` strings with data after the fixed part.
    pub fn is_dynamic(&self) -> bool {
        self.ty.is_string()
    }

    /// What upstream compares between probes of one event.
    pub fn sig(&self) -> ArgSig<'a> {
        ArgSig {
            name: self.name,
            ty: self.ty,
            count: self.count(),
        }
    }
}

/// The part of an argument that must match across the probes of one event
/// (`trace_probe_compare_arg_type()`): name, type and array size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ArgSig<'s> {
    /// The field name.
    pub name: &'s str,
    /// The field type.
    pub ty: FetchType,
    /// Array elements, 0 for a scalar.
    pub count: u8,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comm_displays_rewrite() {
        let exp = DentryExpansion {
            kind: super::super::DentryKind::File,
            name_offset: 0x28,
            file_offset: 0x48,
        };
        let c = Comm::new("$arg1:%pD", Some(exp));
        assert!(c.eq_str("+0x0(+0x28(+0x48($arg1))):string"));
        assert!(!c.eq_str("+0x0(+0x28(+0x48($arg1))):strin"));
        assert!(!c.eq_str("+0x0(+0x28(+0x48($arg1))):stringx"));
        assert_eq!(c.as_written(), "$arg1:%pD");
        assert!(Comm::new("$arg1", None).eq_str("$arg1"));
    }
}
