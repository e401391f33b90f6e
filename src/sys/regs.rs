// SPDX-License-Identifier: GPL-2.0

//! `struct pt_regs`, built from ftrace's registers for the interfaces that want one: the
//! kretprobe API's handlers and perf samples. ufgraph never has real exception registers at a
//! hooked call: these hold what `ftrace_regs` saved, the rest zero.

use crate::bindings;
use crate::sys::ftrace::Regs;

/// The C `struct pt_regs`, named here because the kretprobe API's handlers take a pointer to
/// one (built by [`fill_pt_regs`]).
pub type PtRegs = bindings::pt_regs;

/// The `pt_regs` the kretprobe API's handlers and perf samples get, from ftrace's registers:
/// what `ftrace_regs` holds (at an entry the argument registers, ax, bp, sp and ip; at a return,
/// `ret_addr` given, ax, dx, bp and sp, with ip = the return address, as the kernel's kretprobes
/// report it), cs the kernel's, flags the always-set bit, every other field zero. Each field is
/// written once, in place: no memset, no call.
#[cfg(CONFIG_X86_64)]
#[inline(always)]
pub fn fill_pt_regs(
    regs: &Regs,
    ret_addr: Option<usize>,
    out: &mut core::mem::MaybeUninit<PtRegs>,
) {
    use crate::sys::hot::fregs as o;
    let w = |off: usize| regs.word(off);
    // The argument registers are not saved at a return.
    let arg = |n: usize| if ret_addr.is_none() { w(o::ARGS[n]) } else { 0 };
    out.write(bindings::pt_regs {
        r15: 0,
        r14: 0,
        r13: 0,
        r12: 0,
        bp: w(o::BP),
        bx: 0,
        r11: 0,
        r10: 0,
        r9: arg(5),
        r8: arg(4),
        ax: w(o::RETVAL),
        cx: arg(3),
        dx: w(o::DX),
        si: arg(1),
        di: arg(0),
        orig_ax: 0,
        ip: ret_addr.unwrap_or_else(|| regs.ip()),
        __bindgen_anon_1: bindings::pt_regs__bindgen_ty_1 {
            csx: bindings::UFG_KERNEL_CS as u64,
        },
        flags: bindings::UFG_EFLAGS_FIXED as _,
        sp: w(o::SP),
        __bindgen_anon_2: bindings::pt_regs__bindgen_ty_2 { ssx: 0 },
    });
}

/// Calls `f` with the `pt_regs` a kretprobe API's return handler gets at a hooked function's
/// return, with `regs` the registers ufgraph's return trampoline saved: the fields
/// [`fill_pt_regs`] writes, made in place in the trampoline's block (x86_64: a whole
/// `pt_regs`, of which the trampoline wrote ax, dx, bp and sp and set cs to 0, and reads back
/// ax and dx): 17 stores, where a copy is 4 loads, 21 stores and a frame.
///
/// ```text
///   the block:   r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di orig_ax ip cs    flags sp ss
///   trampoline:                  bp                  ax    dx                   0           sp
///   this:        0   0   0   0      0  0   0   0  0     0     0  0  0       ret KERNEL FIXED 0
///   after `f`:                                                                  0
/// ```
///
/// `ax` and `dx` are the return's live registers, as the kernel's kretprobes' are: a handler
/// that sets the return value (`regs_set_return_value()`) changes what the function returns,
/// and later exit callbacks reading these registers see it. The other fields go back into no
/// CPU register (the trampoline reads back only ax and dx), and a later call of this function
/// writes them afresh. `cs` is set back to 0 after `f`: later callbacks find partial registers,
/// as the trampoline made them (`ftrace_get_regs()` says NULL).
///
/// # Safety
///
/// `regs` must be the register block ufgraph's x86_64 return trampoline passed the return
/// handler (`ufgraph_return_trampoline`), during that return: not ftrace's registers at an
/// entry, whose other fields ftrace restores into the CPU's registers.
#[cfg(CONFIG_X86_64)]
#[inline(always)]
pub unsafe fn with_exit_pt_regs<R>(
    regs: &Regs,
    ret_addr: usize,
    f: impl FnOnce(*mut PtRegs) -> R,
) -> R {
    use core::ptr::addr_of_mut;
    // `struct ftrace_regs` is a `struct pt_regs` at offset 0 on x86_64 (and the trampoline
    // reserves PTREGS_SIZE bytes for it).
    const _: () = assert!(
        bindings::UFG_FREGS_PT_REGS == 0
            && bindings::UFG_FREGS_SIZE == core::mem::size_of::<PtRegs>()
    );
    let p = regs.as_ptr().cast::<PtRegs>();
    // The trampoline reads back only ax and dx, which are not written here; `Regs` is an
    // `Opaque`, so writes through a shared borrow of it are allowed.
    // SAFETY: `p` is the trampoline's block (the caller's contract), a whole `pt_regs` on its
    // stack, live for the return, and every field written is one the trampoline ignores.
    unsafe {
        addr_of_mut!((*p).r15).write(0);
        addr_of_mut!((*p).r14).write(0);
        addr_of_mut!((*p).r13).write(0);
        addr_of_mut!((*p).r12).write(0);
        addr_of_mut!((*p).bx).write(0);
        addr_of_mut!((*p).r11).write(0);
        addr_of_mut!((*p).r10).write(0);
        addr_of_mut!((*p).r9).write(0);
        addr_of_mut!((*p).r8).write(0);
        addr_of_mut!((*p).cx).write(0);
        addr_of_mut!((*p).si).write(0);
        addr_of_mut!((*p).di).write(0);
        addr_of_mut!((*p).orig_ax).write(0);
        addr_of_mut!((*p).ip).write(ret_addr as _);
        addr_of_mut!((*p).__bindgen_anon_1).write(bindings::pt_regs__bindgen_ty_1 {
            csx: bindings::UFG_KERNEL_CS as u64,
        });
        addr_of_mut!((*p).flags).write(bindings::UFG_EFLAGS_FIXED as _);
        addr_of_mut!((*p).__bindgen_anon_2).write(bindings::pt_regs__bindgen_ty_2 { ssx: 0 });
    }
    let r = f(p);
    // SAFETY: as above.
    unsafe {
        addr_of_mut!((*p).__bindgen_anon_1).write(bindings::pt_regs__bindgen_ty_1 { csx: 0 })
    };
    r
}

/// The `pt_regs` the kretprobe API's handlers and perf samples get, from ftrace's registers
/// (the glue: arm64's `ftrace_partial_regs()` is a static inline): x0..x8, fp, sp, lr and pc
/// (at a return, `ret_addr`: the return address), every other field zero.
#[cfg(CONFIG_ARM64)]
pub fn fill_pt_regs(
    regs: &Regs,
    ret_addr: Option<usize>,
    out: &mut core::mem::MaybeUninit<PtRegs>,
) {
    // SAFETY: `regs` wraps valid registers (type invariant); the glue writes `out` whole.
    unsafe {
        match ret_addr {
            Some(a) => bindings::ufg_regs_from_exit(regs.as_ptr(), out.as_mut_ptr(), a as _),
            None => bindings::ufg_regs_from_entry(regs.as_ptr(), out.as_mut_ptr()),
        }
    }
}
