// SPDX-License-Identifier: GPL-2.0

//! An argument's type: what follows the expression's first ':' (`parse_probe_arg_type()`).

use super::builder::{fail, Fail};
use super::config::MAX_ARRAY_LEN;
use super::error::{ErrCode, Errno};
use super::num::kstrtouint;
use super::program::Bitfield;
use super::types::FetchType;

/// The parts of an argument's expression around its type.
pub(super) struct TypeSpec<'t> {
    /// The fetch expression, before the first ':'.
    pub(super) expr: &'t str,
    /// The type text, without an array suffix.
    pub(super) name: Option<&'t str>,
    /// Where the type text starts in the expression (0 when there is none).
    pub(super) from: usize,
    pub(super) ty: FetchType,
    pub(super) count: u32,
    /// The bitfield stage of a BTF member whose type was not written.
    pub(super) btf_bitfield: Option<Bitfield>,
}

/// `parse_probe_arg_type()`: splits `body` (at byte `at` of its word) at its first ':' and reads
/// the type and array size after it.
pub(super) fn parse_type(body: &str, at: usize) -> Result<TypeSpec<'_>, Fail> {
    let inval = |code, offset| fail(code, offset, Errno::Inval);
    let (expr, type_from) = match body.find(':') {
        Some(colon) => (body.get(..colon).unwrap_or(""), Some(colon + 1)),
        None => (body, None),
    };
    let mut name = type_from.and_then(|t| body.get(t..));
    let mut count = 0;
    if let (Some(t), Some(text)) = (type_from, name) {
        if let Some(open) = text.find('[') {
            let num_from = t + open + 1;
            let num_text = body.get(num_from..).unwrap_or("");
            let Some(close) = num_text.find(']') else {
                return Err(inval(ErrCode::ArrayNoClose, at + body.len()));
            };
            let num_end = num_from + close;
            if num_end + 1 != body.len() {
                return Err(inval(ErrCode::BadArraySuffix, at + num_end + 1));
            }
            count = match kstrtouint(num_text.get(..close).unwrap_or(""), 0) {
                Ok(n) if n != 0 => n,
                _ => return Err(inval(ErrCode::BadArrayNum, at + num_from)),
            };
            if count > MAX_ARRAY_LEN as u32 {
                return Err(inval(ErrCode::ArrayTooBig, at + num_from));
            }
            name = text.get(..open);
        }
    }
    let type_at = at + type_from.unwrap_or(0);
    // $comm and immediate strings are strings whatever one writes; only "string" may be written.
    let ty = if expr == "$comm" || expr == "$COMM" || expr.starts_with("\\\"") {
        if count != 0 || name.is_some_and(|n| n != "string") {
            return Err(inval(ErrCode::NeedStringType, type_at));
        }
        FetchType::String
    } else {
        FetchType::find(name).ok_or(inval(ErrCode::BadType, type_at))?
    };
    Ok(TypeSpec {
        expr,
        name,
        from: type_from.unwrap_or(0),
        ty,
        count,
        btf_bitfield: None,
    })
}
