// SPDX-License-Identifier: GPL-2.0

//! The command line as upstream sees it: words, `%pd`/`%pD` expansion and error positions.
//!
//! Upstream splits a command with `argv_split()` and, when it logs an error, glues the words back
//! with single spaces: the caret position counts in that rebuilt command, not in what the user
//! wrote. Before parsing the fetch arguments it also rewrites every `ARG:%pd`/`ARG:%pD` word in
//! place (`traceprobe_expand_dentry_args()`), so errors from then on show, and point into, the
//! rewritten words. Nothing here allocates: words are slices of the command and the rewritten
//! words are produced on demand through `fmt::Write`.

use core::fmt::{self, Write};

use super::config::Config;
use super::num::is_space;

/// Upstream's bound on the text all `%pd`/`%pD` rewrites of one command take together
/// (`MAX_DENTRY_ARGS_LEN`, each rewrite counted with its terminating NUL).
pub const MAX_DENTRY_ARGS_LEN: usize = 256;

/// The part of a command upstream looks at: C strings end at the first NUL.
pub(super) fn c_str(cmd: &str) -> &str {
    cmd.split('\0').next().unwrap_or("")
}

/// `argv_split()`: the words of a command, separated by runs of whitespace.
#[derive(Clone, Debug)]
pub(super) struct Words<'a> {
    rest: &'a str,
}

/// The words of `cmd`.
pub(super) fn words(cmd: &str) -> Words<'_> {
    Words { rest: cmd }
}

impl<'a> Words<'a> {
    /// The text from the next word on ("" when no word is left).
    pub(super) fn remainder(&self) -> &'a str {
        let start = self
            .rest
            .bytes()
            .position(|c| !is_space(c))
            .unwrap_or(self.rest.len());
        self.rest.get(start..).unwrap_or("")
    }
}

impl<'a> Iterator for Words<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.remainder();
        if rest.is_empty() {
            self.rest = rest;
            return None;
        }
        // Whitespace is ASCII, so both cuts fall on character boundaries (`split_at_checked`
        // keeps a panic path, which objtool cannot follow in a KASAN build, out of the module).
        let end = rest.bytes().position(is_space).unwrap_or(rest.len());
        let (word, tail) = rest.split_at_checked(end).unwrap_or((rest, ""));
        self.rest = tail;
        Some(word)
    }
}

/// Which `%p` shorthand a fetch argument ends with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DentryKind {
    /// `ARG:%pd`: ARG is a `struct dentry *`; record its name.
    Dentry,
    /// `ARG:%pD`: ARG is a `struct file *`; record its dentry's name.
    File,
}

impl DentryKind {
    /// Upstream's test, `glob_match("*:%p[dD]", word)`: the word ends with ":%pd" or ":%pD".
    pub(super) fn of(word: &str) -> Option<DentryKind> {
        if word.ends_with(":%pd") {
            Some(DentryKind::Dentry)
        } else if word.ends_with(":%pD") {
            Some(DentryKind::File)
        } else {
            None
        }
    }
}

/// How a `%pd`/`%pD` fetch argument is rewritten: the structure offsets the rewrite needs.
///
/// `NAME=ARG:%pd` becomes `NAME=+0x0(+0xD(ARG)):string` and `NAME=ARG:%pD` becomes
/// `NAME=+0x0(+0xD(+0xF(ARG))):string`, with D = `offsetof(struct dentry, d_name.name)` and
/// F = `offsetof(struct file, f_path.dentry)`, in lowercase hex.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DentryExpansion {
    /// Which shorthand was written.
    pub kind: DentryKind,
    /// `offsetof(struct dentry, d_name.name)`.
    pub name_offset: u32,
    /// `offsetof(struct file, f_path.dentry)` (used by `%pD` only).
    pub file_offset: u32,
}

impl DentryExpansion {
    /// The expansion of `word` under `cfg`, if `word` is a `%pd`/`%pD` argument.
    pub(super) fn of(word: &str, cfg: &Config) -> Option<DentryExpansion> {
        DentryKind::of(word).map(|kind| DentryExpansion {
            kind,
            name_offset: cfg.dentry_name_offset,
            file_offset: cfg.file_dentry_offset,
        })
    }

    /// Writes what upstream puts before the argument's expression.
    pub(super) fn write_prefix<W: Write>(&self, w: &mut W) -> fmt::Result {
        write!(w, "+0x0(+0x{:x}(", self.name_offset)?;
        if self.kind == DentryKind::File {
            write!(w, "+0x{:x}(", self.file_offset)?;
        }
        Ok(())
    }

    /// Writes what upstream puts after the argument's expression.
    pub(super) fn write_suffix<W: Write>(&self, w: &mut W) -> fmt::Result {
        w.write_str(if self.kind == DentryKind::File {
            "))):string"
        } else {
            ")):string"
        })
    }

    /// Length of the prefix [`Self::write_prefix`] writes.
    pub(super) fn prefix_len(&self) -> usize {
        let mut n = Counter(0);
        let _ = self.write_prefix(&mut n);
        n.0
    }
}

/// A `%pd`/`%pD` word split the way upstream rewrites it: `NAME=` kept, `:%pX` dropped.
#[derive(Clone, Copy, Debug)]
pub(super) struct DentryWord<'a> {
    /// The name and its '=' ("" when the word has no name).
    pub(super) head: &'a str,
    /// The expression the rewrite wraps: the word without its name and its ":%pX".
    pub(super) inner: &'a str,
    pub(super) exp: DentryExpansion,
}

impl<'a> DentryWord<'a> {
    /// Splits `word`, if it is a `%pd`/`%pD` argument.
    pub(super) fn of(word: &'a str, cfg: &Config) -> Option<DentryWord<'a>> {
        let exp = DentryExpansion::of(word, cfg)?;
        // The last four bytes are ":%pd"/":%pD", so the cut is on a character boundary and any
        // '=' upstream finds (strchr() on the whole word) comes before it.
        let body = word.get(..word.len() - 4)?;
        let head_len = body.find('=').map_or(0, |eq| eq + 1);
        let (head, inner) = body.split_at_checked(head_len)?;
        Some(DentryWord { head, inner, exp })
    }

    /// Writes the rewritten word.
    pub(super) fn write<W: Write>(&self, w: &mut W) -> fmt::Result {
        w.write_str(self.head)?;
        self.exp.write_prefix(w)?;
        w.write_str(self.inner)?;
        self.exp.write_suffix(w)
    }

    /// Length of the rewritten word.
    pub(super) fn len(&self) -> usize {
        let mut n = Counter(0);
        let _ = self.write(&mut n);
        n.0
    }

    /// Where `inner` starts in the rewritten word.
    pub(super) fn inner_at(&self) -> usize {
        self.head.len() + self.exp.prefix_len()
    }
}

/// A `fmt::Write` that only counts bytes.
struct Counter(usize);

impl Write for Counter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.0 += s.len();
        Ok(())
    }
}

/// A `fmt::Write` into a fixed buffer; fails when full.
pub(super) struct BufWriter<'b> {
    buf: &'b mut [u8],
    len: usize,
}

impl<'b> BufWriter<'b> {
    /// An empty writer over `buf`.
    pub(super) fn new(buf: &'b mut [u8]) -> Self {
        BufWriter { buf, len: 0 }
    }

    /// What was written.
    pub(super) fn into_str(self) -> &'b str {
        let BufWriter { buf, len } = self;
        let buf: &'b [u8] = buf;
        // Only whole `&str`s were copied in, so this cannot fail.
        core::str::from_utf8(buf.get(..len).unwrap_or(&[])).unwrap_or("")
    }
}

impl Write for BufWriter<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let end = self.len.checked_add(s.len()).ok_or(fmt::Error)?;
        let dst = self.buf.get_mut(self.len..end).ok_or(fmt::Error)?;
        crate::sys::slice::copy(dst, s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Writes word `index` of a command as upstream's log shows it: rewritten if it is a `%pd`/`%pD`
/// fetch argument (index >= 2) and `expanded` carries the configuration of the rewrite.
fn write_word<W: Write>(
    w: &mut W,
    index: usize,
    word: &str,
    expanded: Option<&Config>,
) -> fmt::Result {
    match expanded
        .filter(|_| index >= 2)
        .and_then(|cfg| DentryWord::of(word, cfg))
    {
        Some(d) => d.write(w),
        None => w.write_str(word),
    }
}

/// Length of word `index` as upstream's log shows it (see [`write_word`]).
fn word_len(index: usize, word: &str, expanded: Option<&Config>) -> usize {
    let mut n = Counter(0);
    let _ = write_word(&mut n, index, word, expanded);
    n.0
}

/// Writes the command as upstream's error log shows it: the words joined by single spaces.
pub(super) fn write_command<W: Write>(
    w: &mut W,
    cmd: &str,
    expanded: Option<&Config>,
) -> fmt::Result {
    for (i, word) in words(c_str(cmd)).enumerate() {
        if i > 0 {
            w.write_char(' ')?;
        }
        write_word(w, i, word, expanded)?;
    }
    Ok(())
}

/// `__trace_probe_log_err()`: the caret position of an error at byte `offset` of word `index`.
///
/// An index past the last word puts the caret one past the end of the command, whatever the
/// offset (upstream's rule; no fprobe error uses it).
pub(super) fn error_pos(
    cmd: &str,
    index: usize,
    offset: usize,
    expanded: Option<&Config>,
) -> usize {
    let mut len = 0;
    for (i, word) in words(c_str(cmd)).enumerate() {
        if i == index {
            return len + offset;
        }
        len += word_len(i, word, expanded) + 1;
    }
    len
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::string::String;

    const CFG: Config = Config {
        max_stack_index: 2048,
        dentry_name_offset: 0x28,
        file_dentry_offset: 0x48,
    };

    fn command(cmd: &str, expanded: bool) -> String {
        let mut s = String::new();
        write_command(&mut s, cmd, expanded.then_some(&CFG)).unwrap();
        s
    }

    #[test]
    fn words_split_on_kernel_whitespace() {
        let w: std::vec::Vec<_> = words(" \tf:a/b  vfs_read\x0b$arg1\r\n x ").collect();
        assert_eq!(w, ["f:a/b", "vfs_read", "$arg1", "x"]);
        assert_eq!(words("").count(), 0);
        assert_eq!(words(" \n ").count(), 0);
        let mut it = words("a  b c");
        it.next();
        assert_eq!(it.remainder(), "b c");
    }

    #[test]
    fn c_str_stops_at_nul() {
        assert_eq!(c_str("f a\0b"), "f a");
        assert_eq!(c_str("\0"), "");
    }

    #[test]
    fn dentry_rewrite_matches_upstream() {
        assert_eq!(
            command("f vfs_read f=$arg1:%pD d=+0($arg2):%pd", true),
            "f vfs_read f=+0x0(+0x28(+0x48($arg1))):string d=+0x0(+0x28(+0($arg2))):string"
        );
        assert_eq!(
            command("f vfs_read $arg1:%pd", true),
            "f vfs_read +0x0(+0x28($arg1)):string"
        );
        assert_eq!(
            command("f vfs_read $arg1:%pd", false),
            "f vfs_read $arg1:%pd"
        );
        // The symbol is not a fetch argument, even if it looks like one.
        assert_eq!(
            command("f x:%pd $arg1:%pd", true),
            "f x:%pd +0x0(+0x28($arg1)):string"
        );
        // '=' only counts before the suffix; an empty expression stays empty.
        assert_eq!(command("f s =:%pd", true), "f s =+0x0(+0x28()):string");
        assert_eq!(command("f s :%pD", true), "f s +0x0(+0x28(+0x48())):string");
        let d = DentryWord::of("n=$arg1:%pd", &CFG).unwrap();
        assert_eq!(d.len(), "n=+0x0(+0x28($arg1)):string".len());
        assert_eq!(d.inner_at(), "n=+0x0(+0x28(".len());
    }

    #[test]
    fn positions_count_rebuilt_command() {
        assert_eq!(error_pos("f   vfs_read  $arg1", 2, 1, None), 12);
        assert_eq!(error_pos("f vfs_read", 0, 1, None), 1);
        assert_eq!(error_pos("f vfs_read", 5, 3, None), 11);
        assert_eq!(error_pos("f vfs_read $arg1:%pd @x", 3, 0, Some(&CFG)), 37);
        assert_eq!(error_pos("f vfs_read $arg1:%pd @x", 3, 0, None), 21);
    }

    #[test]
    fn buf_writer_refuses_overflow() {
        let mut buf = [0u8; 4];
        let mut w = BufWriter::new(&mut buf);
        assert!(w.write_str("abc").is_ok());
        assert!(w.write_str("de").is_err());
        assert_eq!(w.into_str(), "abc");
    }
}
