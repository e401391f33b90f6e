// SPDX-License-Identifier: GPL-2.0

//! The running kernel's BTF, read from sysfs: `/sys/kernel/btf/vmlinux`, and a module's
//! `/sys/kernel/btf/MODULE`, split over it (issue 17: BTF arguments for `f:` events).
//!
//! The kernel's own BTF object (`btf_vmlinux`, `btf_get_module_btf()`) is not exported to
//! modules, but sysfs hands out the raw blob the kernel validated at boot (or at the module's
//! load). ufgraph reads it with the exported `filp_open()`/`kernel_read()` into a vmalloc'ed
//! buffer and indexes it with the pure reader (`crate::pure::btf`): the offset of every type and
//! the named types sorted by name, about 600 KB for vmlinux's 100,000 types. Only process
//! context: reading a file sleeps.

use crate::bindings;
use crate::pure::btf::{self, Btf};
use crate::pure::probedef;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering::*};
use kernel::alloc::{KBox, KVVec};
use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;

/// The largest blob read: vmlinux's BTF is a few MB (Debian's 6.12: about 6 MB).
const MAX_SIZE: usize = 64 << 20;

/// A blob read from sysfs, with its index.
pub struct KernelBtf {
    data: KVVec<u8>,
    /// The blob's length: `data` may be longer (the read stops at end of file).
    len: usize,
    offsets: KVVec<u32>,
    names: KVVec<u32>,
}

struct File(*mut bindings::file);

impl Drop for File {
    fn drop(&mut self) {
        // SAFETY: opened by `ufg_file_open`, closed once.
        unsafe { bindings::ufg_file_close(self.0) };
    }
}

/// Reads the file at `path` whole: its bytes in a buffer, and how many there are.
fn read(path: &CStr) -> Result<(KVVec<u8>, usize)> {
    // SAFETY: `path` is NUL-terminated; the glue returns a file or an error pointer.
    let f = unsafe { bindings::ufg_file_open(path.as_char_ptr()) };
    let v = f as isize;
    if f.is_null() {
        return Err(ENOENT);
    }
    if (-4095..0).contains(&v) {
        return Err(Error::from_errno(v as i32));
    }
    let file = File(f);
    // SAFETY: the file is open.
    let size = unsafe { bindings::ufg_file_size(file.0) };
    // One byte more than the inode says, to see the end of file in the first pass.
    let mut want = usize::try_from(size)
        .unwrap_or(0)
        .saturating_add(1)
        .min(MAX_SIZE);
    let mut buf = KVVec::new();
    let mut len = 0usize;
    let mut pos: i64 = 0;
    loop {
        if len == buf.len() {
            if buf.len() >= MAX_SIZE {
                return Err(EFBIG);
            }
            let grow = want.max(buf.len()).min(MAX_SIZE - buf.len()).max(1);
            buf.extend_with(grow, 0u8, GFP_KERNEL)?;
            want = 0;
        }
        let room = buf.len() - len;
        // SAFETY: `buf[len..]` is writable for `room` bytes; the file is open; `pos` is ours.
        let n = unsafe {
            bindings::ufg_file_read_plain(file.0, buf[len..].as_mut_ptr().cast(), room, &mut pos)
        };
        if n < 0 {
            return Err(Error::from_errno(n as i32));
        }
        if n == 0 {
            return Ok((buf, len));
        }
        len += (n as usize).min(room);
    }
}

impl KernelBtf {
    /// Reads the blob at `path` and indexes it, split over `base` if given (a module's BTF
    /// over vmlinux's). A blob the reader refuses gives `EINVAL`, and a log line with why.
    pub fn load(path: &CStr, base: Option<&Btf<'_>>) -> Result<KernelBtf> {
        let (data, len) = read(path)?;
        let blob = &data[..len];
        let bad = |e: btf::Error| {
            pr_err!("{}: BTF refused: {:?}\n", path, e);
            EINVAL
        };
        let sizes = Btf::measure(blob, base).map_err(bad)?;
        let mut offsets = KVVec::new();
        offsets.extend_with(sizes.types, 0u32, GFP_KERNEL)?;
        let mut names = KVVec::new();
        names.extend_with(sizes.named, 0u32, GFP_KERNEL)?;
        Btf::new(blob, base, &mut offsets, &mut names).map_err(bad)?;
        Ok(KernelBtf {
            data,
            len,
            offsets,
            names,
        })
    }

    /// The reader over this blob and its index, split over `base` if it was loaded so (the
    /// same base): O(1).
    pub fn btf<'a>(&'a self, base: Option<&'a Btf<'a>>) -> Result<Btf<'a>> {
        Btf::from_parts(&self.data[..self.len], base, &self.offsets, &self.names)
            .map_err(|_| EINVAL)
    }

    /// The blob's size in bytes, and the index's.
    pub fn bytes(&self) -> (usize, usize) {
        (self.len, 4 * (self.offsets.len() + self.names.len()))
    }
}

impl probedef::BtfSource for KernelBtf {
    fn function(&self, name: &str, tracepoint: bool) -> Option<(Btf<'_>, btf::Func)> {
        probedef::find_function(self.btf(None).ok()?, name, tracepoint)
    }
}

/// vmlinux's BTF for the events' BTF arguments: read on first use, in process context, and
/// kept until the module goes (definitions parse their stored commands again with it, so it
/// must not change under them). A kernel without it (`CONFIG_DEBUG_INFO_BTF` off) is tried
/// once: the events then parse as upstream's without `CONFIG_PROBE_EVENTS_BTF_ARGS`.
pub struct LazyVmlinux {
    btf: AtomicPtr<KernelBtf>,
    /// Set once a load was tried, whatever came of it.
    tried: AtomicBool,
}

impl LazyVmlinux {
    /// Nothing read yet.
    pub const fn new() -> Self {
        LazyVmlinux {
            btf: AtomicPtr::new(core::ptr::null_mut()),
            tried: AtomicBool::new(false),
        }
    }

    /// Reads vmlinux's BTF if no load was tried yet. Two first callers at once both read it;
    /// one copy is kept.
    pub fn load(&self) {
        if self.tried.load(Acquire) {
            return;
        }
        match KernelBtf::load(c_str!("/sys/kernel/btf/vmlinux"), None)
            .and_then(|k| KBox::new(k, GFP_KERNEL).map_err(Into::into))
        {
            Ok(k) => {
                let p = KBox::into_raw(k);
                if self
                    .btf
                    .compare_exchange(core::ptr::null_mut(), p, AcqRel, Acquire)
                    .is_err()
                {
                    // SAFETY: `p` came from `KBox::into_raw` just above and was not published.
                    drop(unsafe { KBox::from_raw(p) });
                }
            }
            Err(e) => pr_info!("no BTF arguments for events: vmlinux BTF: {:?}\n", e),
        }
        self.tried.store(true, Release);
    }

    /// The BTF, if it was read.
    pub fn get(&self) -> Option<&KernelBtf> {
        let p = self.btf.load(Acquire);
        // SAFETY: published once by `load`, freed only by `drop`, which takes `&mut self`.
        (!p.is_null()).then(|| unsafe { &*p })
    }
}

impl Default for LazyVmlinux {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for LazyVmlinux {
    fn drop(&mut self) {
        let p = *self.btf.get_mut();
        if !p.is_null() {
            // SAFETY: published by `load` from `KBox::into_raw`; nobody borrows it past `&mut self`.
            drop(unsafe { KBox::from_raw(p) });
        }
    }
}
