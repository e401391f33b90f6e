// SPDX-License-Identifier: GPL-2.0

//! The running kernel's BTF, read from sysfs: `/sys/kernel/btf/vmlinux`, and a module's
//! `/sys/kernel/btf/MODULE`, split over it (issue 17: BTF arguments for `f:` events).
//!
//! The kernel's own BTF object (`btf_vmlinux`, `btf_get_module_btf()`) is not exported to
//! modules, but sysfs hands out the raw blob the kernel validated at boot (or at the module's
//! load). ufgraph reads it with the exported `filp_open()`/`kernel_read()` into a vmalloc'ed
//! buffer and indexes it with its reader (`reader/`, host-tested): the offset of every type and
//! the named types sorted by name, about 600 KB for vmlinux's 100,000 types. Only process
//! context: reading a file sleeps.
//!
//! A definition's arguments are resolved with a [`Source`]: vmlinux's BTF first, then, for a
//! function vmlinux's BTF does not describe, the split BTF of the module that has it, as
//! upstream's `bpf_find_btf_id()` searches the modules' BTF after vmlinux's. The module's blob
//! is read when the definition is parsed and kept with the definition, which parses its stored
//! text again with it (to list it, compare it, remove it): see [`Source`] for its lifetime.

pub mod reader;

use crate::bindings;
use core::cell::OnceCell;
use core::sync::atomic::{AtomicBool, AtomicPtr, Ordering::*};
use kernel::alloc::{KBox, KVVec, KVec};
use kernel::c_str;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;
use reader::Btf;

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
        let bad = |e: reader::Error| {
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

/// Where a module's BTF is: `/sys/kernel/btf/MODULE`, NUL-terminated. `None` for a name that is
/// no module's (the names come from ftrace's list, but a path is built from them).
fn module_path(module: &[u8]) -> Option<KVec<u8>> {
    const DIR: &[u8] = b"/sys/kernel/btf/";
    if module.is_empty()
        || module == b"vmlinux"
        || !module
            .iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
    {
        return None;
    }
    let mut p = KVec::with_capacity(DIR.len() + module.len() + 1, GFP_KERNEL).ok()?;
    p.extend_from_slice(DIR, GFP_KERNEL).ok()?;
    p.extend_from_slice(module, GFP_KERNEL).ok()?;
    p.push(0, GFP_KERNEL).ok()?;
    Some(p)
}

/// The BTF of the module that has function `name` (a tracepoint's probe stub for
/// `tracepoint`), split over `base`; `None` if no module has it, or the module has no BTF.
fn load_module_of(base: &Btf<'_>, name: &str, tracepoint: bool) -> Option<Arc<KernelBtf>> {
    // A glob names no one function; upstream's search by name finds none either.
    if name
        .bytes()
        .any(|c| matches!(c, b'*' | b'?' | b'[' | b'\\'))
    {
        return None;
    }
    let mut sym = KVec::new();
    if tracepoint {
        sym.extend_from_slice(b"__probestub_", GFP_KERNEL).ok()?;
    }
    sym.extend_from_slice(name.as_bytes(), GFP_KERNEL).ok()?;
    let module = crate::sys::ksym::module_of(&sym).ok()??;
    let path = module_path(&module)?;
    let path = CStr::from_bytes_with_nul(&path).ok()?;
    match KernelBtf::load(path, Some(base)) {
        Ok(k) => Arc::new(k, GFP_KERNEL).ok(),
        // A module built without BTF: its functions' arguments have none, as upstream.
        Err(e) if e == ENOENT => None,
        Err(e) => {
            pr_warn!("{}: no BTF arguments from it: {:?}\n", path, e);
            None
        }
    }
}

/// The BTF a definition's arguments are resolved with (`events::btfsource` makes it the parser's
/// `BtfSource`): vmlinux's,
/// then the split BTF of the module that has the probed function.
///
/// A new definition's source reads the module's BTF when the parser first asks for a
/// function vmlinux's BTF does not describe; [`Source::module`] then hands it over, and the
/// definition keeps it to parse its stored text again ([`Source::stored`]). Lifetime: the copy
/// is ufgraph's own memory, read from sysfs, not the kernel's `struct btf` (which upstream pins
/// with a reference while it parses), so a module that goes away meanwhile leaves it valid:
/// the definition then fails to register, or hooks nothing, as the fprobe core drops a going
/// module's functions. It is never used for another definition: each new definition reads the
/// file again, so a module loaded again (perhaps rebuilt, its types renumbered) is never
/// described by an old copy. A definition keeps its copy until it is removed, only to parse
/// its own text the way it was parsed (what upstream keeps instead is the compiled fetch
/// code): freed with the definition.
pub struct Source<'a> {
    base: Btf<'a>,
    /// Unset until looked for (a new definition); set to `None` for a stored definition parsed
    /// without a module's BTF.
    module: OnceCell<Option<Arc<KernelBtf>>>,
}

impl<'a> Source<'a> {
    /// For a new definition: a module's BTF is read when it is needed.
    pub fn new(vmlinux: &'a KernelBtf) -> Option<Self> {
        Some(Source {
            base: vmlinux.btf(None).ok()?,
            module: OnceCell::new(),
        })
    }

    /// For a stored definition: the module's BTF it was parsed with, if any; nothing is read.
    pub fn stored(vmlinux: &'a KernelBtf, module: Option<&Arc<KernelBtf>>) -> Option<Self> {
        Some(Source {
            base: vmlinux.btf(None).ok()?,
            module: OnceCell::from(module.cloned()),
        })
    }

    /// The module's BTF the parser used, for the definition to keep.
    pub fn module(&self) -> Option<Arc<KernelBtf>> {
        self.module.get().cloned().flatten()
    }

    /// vmlinux's BTF.
    pub fn base(&self) -> Btf<'a> {
        self.base
    }

    /// The split BTF of the module that has function `name` (a tracepoint's probe stub for
    /// `tracepoint`), read when first asked for: a source describes at most one module, the
    /// one of the first name vmlinux's BTF did not describe.
    pub fn module_btf(&self, name: &str, tracepoint: bool) -> Option<Btf<'_>> {
        let m = self
            .module
            .get_or_init(|| load_module_of(&self.base, name, tracepoint))
            .as_ref()?;
        m.btf(Some(&self.base)).ok()
    }
}
