// SPDX-License-Identifier: GPL-2.0

//! `traceprobe_expand_meta_args()`: with BTF, `$arg*` stands for every parameter of the probed
//! function by name, and `$argN[:TYPE]` is rewritten to parameter N's name (`$arg2` is `buf`
//! on vfs_read, named and typed by BTF). The rewritten arguments are what the definition
//! parses; errors still point into the command as written, at the rewritten argument's index,
//! as upstream's log does.

use core::fmt::Write;

use super::argv::{self, BufWriter};
use super::btfarg::FuncBtf;
use super::error::{ErrCode, Errno};
use super::num::simple_strtoul;

/// Upstream's buffer for the names `$arg*` and `$argN` are rewritten to (`MAX_BTF_ARGS_LEN`):
/// all of them, each with its type suffix and a NUL, must fit.
pub const MAX_BTF_ARGS_LEN: usize = 128;

/// The room a rewrite may need beyond the command's own length: a scratch buffer of
/// `cmd.len() + EXPAND_ROOM` bytes always holds a definition's rewritten arguments.
pub const EXPAND_ROOM: usize = MAX_BTF_ARGS_LEN;

/// An expansion error: the code, errno, and the word index (from 0 for the first argument) it
/// is logged at (offset 0).
pub(super) type ExpandError = (ErrCode, Errno, usize);

/// What a definition's arguments are after expansion.
pub(super) struct Expanded<'a> {
    /// The arguments, rewritten or as written.
    pub(super) args: &'a str,
    /// Whether they were rewritten (upstream then logs later errors in the command as written,
    /// `%pd` arguments not rewritten).
    pub(super) rewritten: bool,
}

/// `argv_has_var_arg()`: whether a word starts with `$arg`, and which word is `$arg*`.
fn has_var_arg(args: &str) -> Result<(bool, Option<usize>), ExpandError> {
    let (mut found, mut star) = (false, None);
    for (i, word) in argv::words(args).enumerate() {
        if !word.starts_with("$arg") {
            continue;
        }
        found = true;
        match word.as_bytes().get(4) {
            Some(c) if c.is_ascii_digit() => {}
            Some(b'*') if star.is_some() => {
                return Err((ErrCode::DoubleArgs, Errno::Inval, i));
            }
            Some(b'*') => star = Some(i),
            _ => return Err((ErrCode::BadVar, Errno::Inval, i)),
        }
    }
    Ok((found, star))
}

/// The last word that starts with `$arg`, where upstream's log index stays.
fn last_var_arg(args: &str) -> usize {
    argv::words(args)
        .enumerate()
        .filter(|(_, w)| w.starts_with("$arg"))
        .last()
        .map_or(0, |(i, _)| i)
}

/// Rewrites `args` into `scratch` when they use `$arg*`/`$argN` and `fb` (the function's BTF,
/// `None` without it) has parameters; `btf` says whether BTF arguments are supported at all.
pub(super) fn expand<'a>(
    args: &'a str,
    btf: bool,
    fb: Option<FuncBtf<'a>>,
    scratch: &'a mut [u8],
) -> Result<Expanded<'a>, ExpandError> {
    let as_is = Expanded {
        args,
        rewritten: false,
    };
    let (found, star) = has_var_arg(args)?;
    if !found {
        return Ok(as_is);
    }
    let fb = match fb.filter(|f| btf && f.nr_params() > 0) {
        Some(fb) => fb,
        None if star.is_some() => {
            return Err((ErrCode::NosupBtfarg, Errno::OpNotSupp, last_var_arg(args)));
        }
        None => return Ok(as_is),
    };
    let mut w = BufWriter::new(scratch);
    // Bytes of upstream's name buffer used so far.
    let mut used = 0;
    for (i, word) in argv::words(args).enumerate() {
        if i > 0 {
            w.write_char(' ')
                .map_err(|_| (ErrCode::Args2long, Errno::TooBig, i))?;
        }
        if Some(i) == star {
            for n in 0..fb.nr_params() {
                if n > 0 {
                    w.write_char(' ')
                        .map_err(|_| (ErrCode::Args2long, Errno::TooBig, i))?;
                }
                used = write_name(&mut w, &fb, n, "", used, i)?;
            }
        } else if let Some(num) = word.strip_prefix("$arg") {
            let (n, end) = simple_strtoul(num.as_bytes(), 10);
            let ty = num.get(end..).unwrap_or("");
            if !(ty.is_empty() || ty.starts_with(':')) {
                return Err((ErrCode::BadVar, Errno::NoEnt, i));
            }
            // Upstream keeps N in an int.
            let n = n as u32 as i32;
            if n == 0 {
                return Err((ErrCode::BadArgNum, Errno::Inval, i));
            }
            // A negative N (from 2^31 on) is no parameter.
            let idx = usize::try_from(n).map_or(usize::MAX, |n| n - 1);
            used = write_name(&mut w, &fb, idx, ty, used, i)?;
        } else {
            w.write_str(word)
                .map_err(|_| (ErrCode::Args2long, Errno::TooBig, i))?;
        }
    }
    Ok(Expanded {
        args: w.into_str(),
        rewritten: true,
    })
}

/// `sprint_nth_btf_arg()`: parameter `n`'s name followed by `ty`, for the word at index `i`,
/// `used` bytes of upstream's buffer taken; the bytes taken after it.
fn write_name(
    w: &mut BufWriter<'_>,
    fb: &FuncBtf<'_>,
    n: usize,
    ty: &str,
    used: usize,
    i: usize,
) -> Result<usize, ExpandError> {
    if n >= fb.nr_params() {
        return Err((ErrCode::NoBtfarg, Errno::NoEnt, i));
    }
    let name = fb
        .param_name(n)
        .ok_or((ErrCode::NoBtfEntry, Errno::NoEnt, i))?;
    let len = name.len() + ty.len();
    if len >= MAX_BTF_ARGS_LEN - used {
        return Err((ErrCode::Args2long, Errno::TooBig, i));
    }
    w.write_str(name)
        .and_then(|()| w.write_str(ty))
        .map_err(|_| (ErrCode::Args2long, Errno::TooBig, i))?;
    Ok(used + len + 1)
}
