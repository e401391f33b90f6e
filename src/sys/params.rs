// SPDX-License-Identifier: GPL-2.0

//! The module's parameters (`func=`, `graph=`), which the C glue declares: `module_param()` is
//! a macro that 6.12's kernel crate cannot express for a module with a C part.

use crate::bindings;
use kernel::str::CStr;

/// A string module parameter as the glue returns it, if given and not empty.
///
/// # Safety
///
/// `p` must be NULL or a NUL-terminated string that lives as long as the module.
unsafe fn param(p: *const kernel::ffi::c_char) -> Option<&'static CStr> {
    if p.is_null() {
        return None;
    }
    // SAFETY: `p` is a valid NUL-terminated string living as long as the module (caller).
    let s = unsafe { CStr::from_char_ptr(p) };
    (!s.is_empty()).then_some(s)
}

/// `func=`: the function (or glob) whose calls the demo counter hooks, if given.
pub fn func() -> Option<&'static CStr> {
    // SAFETY: the glue returns the module parameter: NULL or a NUL-terminated string that the
    // module loader owns for the module's lifetime (0444: never rewritten).
    unsafe { param(bindings::ufg_param_func()) }
}

/// `graph=`: the function (or glob) whose entries and returns the demo graph ops counts.
pub fn graph() -> Option<&'static CStr> {
    // SAFETY: as for `func`.
    unsafe { param(bindings::ufg_param_graph()) }
}
