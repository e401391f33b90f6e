// SPDX-License-Identifier: GPL-2.0

//! The kernel's number conversions and character classes, as the definition parser needs them.
//!
//! Upstream reads every number of a definition with `kstrto*()` (lib/kstrtox.c), except the two
//! numbers of a bitfield type, read with `simple_strtoul()` (lib/vsprintf.c). The two differ in
//! what they accept, and error positions depend on it, so both are ported here exactly:
//!
//! - `kstrto*()` wants the whole string to be one number (an optional single trailing newline
//!   aside), fails with `-EINVAL` on anything else and with `-ERANGE` on overflow;
//! - `simple_strtoul()` stops at the first character that is not a digit, never fails, and wraps
//!   on overflow.
//!
//! Both guess the base when asked for base 0: "0x" followed by a hex digit means 16, a leading
//! "0" means 8, anything else 10.
//!
//! The character classes are those of the kernel's `_ctype` table (lib/ctype.c), which is
//! Latin-1, not ASCII: bytes 0xc0..=0xff but 0xd7 and 0xf7 are letters. It matters for the
//! position of a bad character in a tracepoint name, where a UTF-8 lead byte counts as a letter.

use super::error::Errno;

/// Why a `kstrto*()` conversion failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum NumError {
    /// Not a number (`-EINVAL`).
    Invalid,
    /// A number too big for the type (`-ERANGE`).
    Range,
}

impl NumError {
    /// The errno upstream returns for this failure.
    pub(super) const fn errno(self) -> Errno {
        match self {
            NumError::Invalid => Errno::Inval,
            NumError::Range => Errno::Range,
        }
    }
}

/// `_parse_integer_fixup_radix()`: the base to use and how many prefix bytes ("0x") to skip.
fn fixup_radix(s: &[u8], base: u32) -> (usize, u32) {
    let at = |i: usize| s.get(i).copied().unwrap_or(0);
    // `_tolower()` is an unconditional `| 0x20`; only 'x' and 'X' map to 'x'.
    let x_prefix = at(0) == b'0' && at(1) | 0x20 == b'x';
    let base = match base {
        0 if x_prefix && at(2).is_ascii_hexdigit() => 16,
        0 if at(0) == b'0' => 8,
        0 => 10,
        b => b,
    };
    (if base == 16 && x_prefix { 2 } else { 0 }, base)
}

/// `_parse_integer()`: the value of the leading digits of `s`, how many bytes they take, and
/// whether the value overflowed (in which case it wrapped, as upstream's does).
fn parse_integer(s: &[u8], base: u32) -> (u64, usize, bool) {
    let base = u64::from(base);
    let (mut res, mut used, mut overflow) = (0u64, 0usize, false);
    for &c in s {
        let lc = c | 0x20;
        let val = match c {
            b'0'..=b'9' => u64::from(c - b'0'),
            _ if (b'a'..=b'f').contains(&lc) => u64::from(lc - b'a' + 10),
            _ => break,
        };
        if val >= base {
            break;
        }
        // Upstream only checks once the value is within reach of overflowing in base 16.
        if res & (!0u64 << 60) != 0 && res > (u64::MAX - val) / base {
            overflow = true;
        }
        res = res.wrapping_mul(base).wrapping_add(val);
        used += 1;
    }
    (res, used, overflow)
}

/// `_kstrtoull()`: no sign allowed.
fn kstrtoull_nosign(s: &[u8], base: u32) -> Result<u64, NumError> {
    let (skip, base) = fixup_radix(s, base);
    let digits = s.get(skip..).unwrap_or(&[]);
    let (val, used, overflow) = parse_integer(digits, base);
    if overflow {
        return Err(NumError::Range);
    }
    if used == 0 {
        return Err(NumError::Invalid);
    }
    let rest = digits.get(used..).unwrap_or(&[]);
    match rest {
        [] | [b'\n'] => Ok(val),
        _ => Err(NumError::Invalid),
    }
}

/// `kstrtoull()` (and `kstrtoul()`, the same on 64-bit): an optional leading '+', then a number.
pub(super) fn kstrtoull(s: &str, base: u32) -> Result<u64, NumError> {
    let s = s.as_bytes();
    kstrtoull_nosign(s.strip_prefix(b"+").unwrap_or(s), base)
}

/// `kstrtoll()` (and `kstrtol()`, the same on 64-bit): an optional sign, then a number.
pub(super) fn kstrtoll(s: &str, base: u32) -> Result<i64, NumError> {
    match s.as_bytes().strip_prefix(b"-") {
        Some(digits) => neg_kstrtoll(digits, base),
        None => {
            let v = kstrtoull(s, base)?;
            i64::try_from(v).map_err(|_| NumError::Range)
        }
    }
}

/// `kstrtoll()` of `"-"` followed by `digits`, for callers that have the sign apart.
pub(super) fn neg_kstrtoll(digits: &[u8], base: u32) -> Result<i64, NumError> {
    let v = kstrtoull_nosign(digits, base)?;
    // Upstream: `if ((long long)-tmp > 0) return -ERANGE;`: -0 and -2^63 pass, so does
    // nothing else above 2^63.
    let neg = v.wrapping_neg() as i64;
    if neg > 0 {
        return Err(NumError::Range);
    }
    Ok(neg)
}

/// `kstrtouint()`.
pub(super) fn kstrtouint(s: &str, base: u32) -> Result<u32, NumError> {
    u32::try_from(kstrtoull(s, base)?).map_err(|_| NumError::Range)
}

/// `simple_strtoul()`: the value of the leading number of `s` and the index where it stops.
/// Never fails: no digit gives (0, 0) (or (0, 2) after a lone "0x" in base 16).
pub(super) fn simple_strtoul(s: &[u8], base: u32) -> (u64, usize) {
    let (skip, base) = fixup_radix(s, base);
    let (val, used, _) = parse_integer(s.get(skip..).unwrap_or(&[]), base);
    (val, skip + used)
}

/// `isalpha()` of the kernel's Latin-1 `_ctype` table.
pub(super) const fn is_alpha(c: u8) -> bool {
    c.is_ascii_alphabetic() || (c >= 0xc0 && c != 0xd7 && c != 0xf7)
}

/// `isalnum()` of the kernel's `_ctype` table.
pub(super) const fn is_alnum(c: u8) -> bool {
    is_alpha(c) || c.is_ascii_digit()
}

/// `isspace()` of the kernel's `_ctype` table, restricted to ASCII.
///
/// The kernel also counts 0xa0 (Latin-1 no-break space). In UTF-8 text that byte only occurs
/// inside a multi-byte character, where splitting would cut the character: we do not split there.
pub(super) const fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// `__is_good_name()` (kernel/trace/trace.h): a C identifier, plus '-' when `hyphen_ok`
/// (group names: `is_good_system_name()`).
pub(super) fn is_good_name(name: &str, hyphen_ok: bool) -> bool {
    let ok = |c: u8, first: bool| {
        is_alpha(c) || c == b'_' || (hyphen_ok && c == b'-') || (!first && c.is_ascii_digit())
    };
    let mut bytes = name.bytes();
    match bytes.next() {
        Some(c) if ok(c, true) => bytes.all(|c| ok(c, false)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kstrtoull_follows_kstrtox() {
        assert_eq!(kstrtoull("0", 0), Ok(0));
        assert_eq!(kstrtoull("+12", 0), Ok(12));
        assert_eq!(kstrtoull("0x1f", 0), Ok(0x1f));
        assert_eq!(kstrtoull("0X1F", 0), Ok(0x1f));
        assert_eq!(kstrtoull("017", 0), Ok(0o17));
        assert_eq!(kstrtoull("12\n", 0), Ok(12));
        assert_eq!(kstrtoull("12\n\n", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoull("", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoull("+", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoull("-1", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoull("++1", 0), Err(NumError::Invalid));
        // "0x" without a hex digit is octal 0 followed by junk.
        assert_eq!(kstrtoull("0x", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoull("0xg", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoull("08", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoull("0ab1", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoull("0x10", 10), Err(NumError::Invalid));
        assert_eq!(kstrtoull("18446744073709551615", 0), Ok(u64::MAX));
        assert_eq!(kstrtoull("18446744073709551616", 0), Err(NumError::Range));
        assert_eq!(kstrtoull("0xffffffffffffffff", 0), Ok(u64::MAX));
        assert_eq!(kstrtoull("0x10000000000000000", 0), Err(NumError::Range));
        // Overflow wins over trailing junk, as in upstream.
        assert_eq!(kstrtoull("99999999999999999999x", 0), Err(NumError::Range));
    }

    #[test]
    fn kstrtoll_follows_kstrtox() {
        assert_eq!(kstrtoll("-8", 0), Ok(-8));
        assert_eq!(kstrtoll("+8", 0), Ok(8));
        assert_eq!(kstrtoll("-0", 0), Ok(0));
        assert_eq!(kstrtoll("-0x10", 0), Ok(-16));
        assert_eq!(kstrtoll("9223372036854775807", 0), Ok(i64::MAX));
        assert_eq!(kstrtoll("9223372036854775808", 0), Err(NumError::Range));
        assert_eq!(kstrtoll("-9223372036854775808", 0), Ok(i64::MIN));
        assert_eq!(kstrtoll("-9223372036854775809", 0), Err(NumError::Range));
        // kstrtoll() does not take a '+' after a '-'.
        assert_eq!(kstrtoll("-+8", 0), Err(NumError::Invalid));
        assert_eq!(kstrtoll("--8", 0), Err(NumError::Invalid));
        assert_eq!(neg_kstrtoll(b"8", 0), Ok(-8));
    }

    #[test]
    fn kstrtouint_range() {
        assert_eq!(kstrtouint("4294967295", 0), Ok(u32::MAX));
        assert_eq!(kstrtouint("4294967296", 0), Err(NumError::Range));
    }

    #[test]
    fn simple_strtoul_stops_at_junk() {
        assert_eq!(simple_strtoul(b"10@2/8", 0), (10, 2));
        assert_eq!(simple_strtoul(b"a/16", 0), (0, 0));
        assert_eq!(simple_strtoul(b"0x1f@", 0), (0x1f, 4));
        assert_eq!(simple_strtoul(b"0x@", 0), (0, 1));
        assert_eq!(simple_strtoul(b"", 0), (0, 0));
        // Wraps instead of failing.
        assert_eq!(simple_strtoul(b"18446744073709551616", 0), (0, 20));
    }

    #[test]
    fn ctype_is_latin1() {
        assert!(is_alpha(b'a') && is_alpha(b'Z') && !is_alpha(b'_') && !is_alpha(b'1'));
        assert!(is_alpha(0xc3) && is_alpha(0xff) && !is_alpha(0xd7) && !is_alpha(0xf7));
        assert!(!is_alpha(0xa9) && !is_alnum(0x80));
        assert!(is_space(b' ') && is_space(0x0b) && !is_space(0xa0) && !is_space(b'_'));
    }

    #[test]
    fn good_names() {
        assert!(is_good_name("foo_1", false));
        assert!(is_good_name("_x", false));
        assert!(!is_good_name("1x", false));
        assert!(!is_good_name("", false));
        assert!(!is_good_name("a.b", false));
        assert!(!is_good_name("a-b", false));
        assert!(is_good_name("a-b", true));
        assert!(is_good_name("-a", true));
        assert!(!is_good_name("é", false));
    }
}
