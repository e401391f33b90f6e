// SPDX-License-Identifier: GPL-2.0

//! Reads of memory at addresses a probe definition names, which may be bad: through
//! `copy_from_kernel_nofault()` and `copy_from_user_nofault()`, which check the address and
//! catch faults, so that a bad address makes the read fail instead of oopsing.

use crate::bindings;

/// Copies `buf.len()` bytes of kernel memory at `addr` into `buf`; false if any of it cannot
/// be read.
#[inline(always)]
pub fn read_kernel(addr: u64, buf: &mut [u8]) -> bool {
    // SAFETY: copy_from_kernel_nofault() checks the address and catches faults; `buf` is
    // writable for its length.
    unsafe {
        bindings::copy_from_kernel_nofault(
            buf.as_mut_ptr().cast(),
            addr as usize as *const _,
            buf.len(),
        ) == 0
    }
}

/// Copies `buf.len()` bytes of the current task's user memory at `addr` into `buf`; false if
/// any of it cannot be read.
#[inline(always)]
pub fn read_user(addr: u64, buf: &mut [u8]) -> bool {
    // SAFETY: copy_from_user_nofault() checks access_ok() and catches faults; `buf` is
    // writable for its length.
    unsafe {
        bindings::copy_from_user_nofault(
            buf.as_mut_ptr().cast(),
            addr as usize as *const _,
            buf.len(),
        ) == 0
    }
}

/// Where user space ends for the current task (`TASK_SIZE`), where user and kernel addresses
/// do not overlap (x86_64, arm64); 0 elsewhere.
#[inline(always)]
pub fn user_space_end() -> u64 {
    // SAFETY: no preconditions (TASK_SIZE of the current task).
    unsafe { bindings::ufg_user_space_end() as u64 }
}
