// SPDX-License-Identifier: GPL-2.0

//! Per-CPU data: arrays with one element per possible CPU, and `PerCpuPtr`, a word of the
//! kernel's per-CPU memory (the task table's cache of the current task's stack).

use crate::sys::task::{nr_cpu_ids, this_cpu};
use core::sync::atomic::AtomicPtr;
use kernel::alloc::{Flags, KVVec};
use kernel::prelude::*;

/// One `init()` per possible CPU, indexed by CPU number.
pub fn per_cpu_vec<T>(gfp: Flags, init: impl Fn() -> T) -> Result<KVVec<T>> {
    let n = nr_cpu_ids();
    let mut v = KVVec::with_capacity(n, gfp)?;
    for _ in 0..n {
        v.push(init(), gfp)?;
    }
    Ok(v)
}

extern "C" {
    /// Each possible CPU's offset of its per-CPU area (exported on x86_64 and arm64 SMP
    /// kernels): a per-CPU variable's copy for CPU `n` is at its address plus entry `n`.
    /// Declared at its full size (NR_CPUS), so that reading any entry stays inside the object
    /// Rust is told of.
    static __per_cpu_offset: [usize; crate::bindings::UFG_NR_CPUS];
}

/// This CPU's copy of the per-CPU variable at per-CPU address `addr`, as `this_cpu_ptr()`
/// computes it: an address, nothing is read there. The caller keeps preemption disabled (probe
/// handlers do) for the CPU to stay the same.
pub fn this_cpu_ptr(addr: usize) -> usize {
    let cpu = this_cpu();
    if cpu >= nr_cpu_ids() {
        return addr;
    }
    addr.wrapping_add(cpu_offset(cpu))
}

/// CPU `cpu`'s entry of `__per_cpu_offset` (0 past its NR_CPUS entries, which no CPU number
/// reaches: CPU numbers are below nr_cpu_ids <= NR_CPUS, so the check is one compare with a
/// constant that never fails).
#[inline(always)]
fn cpu_offset(cpu: usize) -> usize {
    // SAFETY: `__per_cpu_offset` is set up at boot and never written again; `get` checks the
    // index against its declared size.
    unsafe {
        (*core::ptr::addr_of!(__per_cpu_offset))
            .get(cpu)
            .copied()
            .unwrap_or(0)
    }
}

/// One pointer per possible CPU, in the kernel's per-CPU memory (`alloc_percpu()`): reading this
/// CPU's is what the hot path does on every hooked entry and return (the task-stack cache), and
/// on x86_64 it is one `%gs`-relative load, as `this_cpu_read()` compiles to, where an array
/// indexed by CPU number costs its base, its length, the CPU number and a bounds check.
///
/// ```text
///   addr (a per-CPU address, the same on every CPU)
///     CPU 0: addr + __per_cpu_offset[0] --> [ *mut T ]   x86_64: %gs base = this CPU's offset,
///     CPU 1: addr + __per_cpu_offset[1] --> [ *mut T ]   so `mov %gs:(addr)` reads this CPU's
///     ...                                                 copy, with nothing else loaded
/// ```
///
/// The owning CPU reads and writes its copy with plain aligned word accesses (atomic on every
/// architecture the module builds for); other CPUs reach it as an [`AtomicPtr`] ([`Self::each`]).
pub struct PerCpuPtr<T> {
    /// `void __percpu *` from `alloc_percpu()` (`ufg_alloc_percpu`), freed by `drop`.
    addr: core::ptr::NonNull<u8>,
    _t: core::marker::PhantomData<*mut T>,
}

// SAFETY: the words are pointers only, reached by whole-word accesses as an `AtomicPtr`'s are;
// what they point to is the user's business, as with `AtomicPtr`.
unsafe impl<T> Send for PerCpuPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for PerCpuPtr<T> {}

impl<T> PerCpuPtr<T> {
    /// Every CPU's pointer null (allocated with `GFP_KERNEL`: may sleep).
    pub fn new() -> Result<Self> {
        let word = core::mem::size_of::<usize>();
        // SAFETY: no preconditions but process context; per-CPU memory comes zeroed (every
        // pointer null).
        let p = unsafe { crate::bindings::ufg_alloc_percpu(word, word) };
        Ok(Self {
            addr: core::ptr::NonNull::new(p.cast::<u8>()).ok_or(ENOMEM)?,
            _t: core::marker::PhantomData,
        })
    }

    /// This CPU's pointer (`_np`: the CPU stays this one while the caller uses it).
    #[inline(always)]
    pub fn get(&self, _np: &crate::sys::sync::NoPreempt) -> *mut T {
        // SAFETY: `addr` is a live per-CPU word (ours until `drop`), read whole.
        unsafe { this_cpu_read(self.addr.as_ptr() as usize) as *mut T }
    }

    /// Sets this CPU's pointer.
    #[inline(always)]
    pub fn set(&self, v: *mut T, _np: &crate::sys::sync::NoPreempt) {
        // SAFETY: as in `get`, written whole.
        unsafe { this_cpu_write(self.addr.as_ptr() as usize, v as usize) };
    }

    /// Calls `f` with each possible CPU's pointer, as an atomic: the owner may be changing it.
    pub fn each(&self, mut f: impl FnMut(&AtomicPtr<T>)) {
        for cpu in 0..nr_cpu_ids() {
            if !crate::sys::task::cpu_possible_bit(cpu) {
                continue;
            }
            let p =
                (self.addr.as_ptr() as usize).wrapping_add(cpu_offset(cpu)) as *const AtomicPtr<T>;
            // SAFETY: CPU `cpu`'s copy of our word: allocated for every possible CPU, aligned,
            // alive until `drop`; its owner accesses it only whole, as an atomic would.
            f(unsafe { &*p });
        }
    }
}

extern "C" {
    /// The word [`CpuCache`] owns: `DEFINE_PER_CPU(void *, ufg_stack_cache)` in the glue
    /// (task.c). A per-CPU address, as the kernel's per-CPU symbols are: never dereferenced as
    /// it is, only with a CPU's offset added (x86_64: `%gs`-relative).
    static ufg_stack_cache: u8;
}

/// Whether a [`CpuCache`] exists (it owns its per-CPU word).
static CACHE_TAKEN: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// One pointer per CPU, as [`PerCpuPtr`], in a word of this module's static per-CPU area
/// instead of `alloc_percpu()` memory: reading this CPU's copy needs no pointer to the word
/// first (x86_64: `movq %gs:ufg_stack_cache(%rip)`, as `this_cpu_read()` of a `DEFINE_PER_CPU`
/// variable compiles to), one load fewer than [`PerCpuPtr`] and nothing to find before it.
/// There is one such word: one `CpuCache` at a time owns it ([`CpuCache::take`]), the task
/// table's cache of the current task's stack, read at every hooked entry and return.
pub struct CpuCache<T> {
    _t: core::marker::PhantomData<*mut T>,
}

// SAFETY: as for `PerCpuPtr`: whole-word pointer accesses only.
unsafe impl<T> Send for CpuCache<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for CpuCache<T> {}

impl<T> CpuCache<T> {
    /// The word, every CPU's pointer set to null; `EBUSY` while another `CpuCache` has it.
    pub fn take() -> Result<Self> {
        if CACHE_TAKEN.swap(true, core::sync::atomic::Ordering::Acquire) {
            return Err(EBUSY);
        }
        let c = Self {
            _t: core::marker::PhantomData,
        };
        // The module's per-CPU area starts zeroed, but a previous owner may have left pointers.
        c.each(|p| p.store(core::ptr::null_mut(), core::sync::atomic::Ordering::Relaxed));
        Ok(c)
    }

    /// The word's per-CPU address.
    #[inline(always)]
    fn addr() -> usize {
        // Only the symbol's address is taken (a per-CPU address), nothing is read.
        core::ptr::addr_of!(ufg_stack_cache) as usize
    }

    /// This CPU's pointer (`np`: the CPU stays this one while the caller uses it).
    #[inline(always)]
    pub fn get(&self, np: &crate::sys::sync::NoPreempt) -> *mut T {
        Self::peek(np)
    }

    /// [`CpuCache::get`] without the owner at hand: what the owner last set on this CPU (null
    /// while there is none: the word is cleared when its owner takes it and when it drops it).
    /// The owner's invariants say what a non-null pointer is worth.
    #[inline(always)]
    pub fn peek(_np: &crate::sys::sync::NoPreempt) -> *mut T {
        #[cfg(target_arch = "x86_64")]
        {
            let v: usize;
            // SAFETY: a `%gs`-relative load of this CPU's copy of our per-CPU word, read whole,
            // as `this_cpu_read()` reads a `DEFINE_PER_CPU` variable of a module.
            unsafe {
                core::arch::asm!("movq %gs:{c}(%rip), {v}", c = sym ufg_stack_cache, v = out(reg) v,
                    options(att_syntax, nostack, readonly, preserves_flags))
            };
            v as *mut T
        }
        #[cfg(not(target_arch = "x86_64"))]
        // SAFETY: this CPU's copy of our per-CPU word, read whole.
        unsafe {
            this_cpu_read(Self::addr()) as *mut T
        }
    }

    /// Sets this CPU's pointer.
    #[inline(always)]
    pub fn set(&self, v: *mut T, _np: &crate::sys::sync::NoPreempt) {
        // SAFETY: as in `get`, written whole.
        unsafe { this_cpu_write(Self::addr(), v as usize) };
    }

    /// Calls `f` with each possible CPU's pointer, as an atomic: the owner may be changing it.
    pub fn each(&self, mut f: impl FnMut(&AtomicPtr<T>)) {
        for cpu in 0..nr_cpu_ids() {
            if !crate::sys::task::cpu_possible_bit(cpu) {
                continue;
            }
            let p = Self::addr().wrapping_add(cpu_offset(cpu)) as *const AtomicPtr<T>;
            // SAFETY: CPU `cpu`'s copy of our `void *` (aligned, in the module's per-CPU area for
            // as long as the module lives), which its owner only accesses whole, as an atomic.
            f(unsafe { &*p });
        }
    }
}

impl<T> Drop for CpuCache<T> {
    fn drop(&mut self) {
        self.each(|p| p.store(core::ptr::null_mut(), core::sync::atomic::Ordering::Relaxed));
        CACHE_TAKEN.store(false, core::sync::atomic::Ordering::Release);
    }
}

impl<T> Drop for PerCpuPtr<T> {
    fn drop(&mut self) {
        // SAFETY: allocated by `new`, freed once; `&mut self`: nobody reads it any more.
        unsafe { crate::bindings::free_percpu(self.addr.as_ptr().cast()) };
    }
}

/// This CPU's copy of the word at per-CPU address `addr`.
///
/// # Safety
///
/// `addr` is a live per-CPU word (from `alloc_percpu()`), and the caller keeps the CPU.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn this_cpu_read(addr: usize) -> usize {
    let v: usize;
    // SAFETY: the caller's contract: `%gs` is this CPU's per-CPU base, so `%gs:addr` is this
    // CPU's copy, as `this_cpu_read()` addresses it.
    unsafe {
        core::arch::asm!("movq %gs:({a}), {v}", a = in(reg) addr, v = out(reg) v,
            options(att_syntax, nostack, readonly, preserves_flags))
    };
    v
}

/// Sets this CPU's copy of the word at per-CPU address `addr`.
///
/// # Safety
///
/// As for [`this_cpu_read`].
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn this_cpu_write(addr: usize, v: usize) {
    // SAFETY: as in `this_cpu_read`.
    unsafe {
        core::arch::asm!("movq {v}, %gs:({a})", a = in(reg) addr, v = in(reg) v,
            options(att_syntax, nostack, preserves_flags))
    };
}

/// This CPU's copy of per-CPU address `addr`, where no register holds the per-CPU base.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn this_cpu_word(addr: usize) -> *mut usize {
    addr.wrapping_add(cpu_offset(crate::sys::hot::cpu())) as *mut usize
}

/// As x86_64's, through the CPU's offset.
///
/// # Safety
///
/// As for x86_64's.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn this_cpu_read(addr: usize) -> usize {
    // SAFETY: the caller's contract: this CPU's copy of a live per-CPU word.
    unsafe { this_cpu_word(addr).read_volatile() }
}

/// As x86_64's, through the CPU's offset.
///
/// # Safety
///
/// As for x86_64's.
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
unsafe fn this_cpu_write(addr: usize, v: usize) {
    // SAFETY: as in `this_cpu_read`.
    unsafe { this_cpu_word(addr).write_volatile(v) };
}
