// SPDX-License-Identifier: GPL-2.0

//! Which functions are traceable, and where: ftrace's own list, read from tracefs.
//!
//! Registering an fprobe by glob, by symbol name or by address needs the kernel's symbols and
//! ftrace's record of traceable addresses. The functions that walk them (`kallsyms_lookup_name`,
//! `kallsyms_on_each_symbol`, `ftrace_location`) are not exported to modules, and calling one
//! through its address is unsafe on IBT kernels: objtool seals the ENDBR of functions whose
//! address is never taken, and a sealed one faults when called indirectly on CET hardware (the
//! 6.12 test kernel seals `kallsyms_lookup_name`).
//!
//! So ufgraph calls no unexported function at all. ftrace publishes exactly what is needed in
//! tracefs: `available_filter_functions_addrs` (since 6.5) lists every traceable function, in
//! the kernel and in modules, with its ftrace location, the address callbacks report. We read it
//! with the exported `filp_open()`/`kernel_read()`, from `/sys/kernel/tracing` or, failing
//! that, `/sys/kernel/debug/tracing`. Without tracefs mounted there, registration by name or
//! glob fails with `ENOENT` and a log line saying so. Documentation/symbols.md has the details.

pub mod funclist;
pub mod name;

use crate::bindings;
use crate::sys::global::Global;
use crate::sys::ksym::funclist::Func;
use crate::sys::rcuarray::{Array, RcuArray};
use crate::sys::sync::NoPreempt;
use kernel::alloc::{flags::GFP_ATOMIC, KVVec, KVec};
use kernel::c_str;
use kernel::new_mutex;
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::lock::{mutex::MutexBackend, Guard};
use kernel::sync::Mutex;

const PATHS: [&CStr; 2] = [
    c_str!("/sys/kernel/tracing/available_filter_functions_addrs"),
    c_str!("/sys/kernel/debug/tracing/available_filter_functions_addrs"),
];

struct File(*mut bindings::file);

impl Drop for File {
    fn drop(&mut self) {
        // SAFETY: opened by `ufg_file_open`, closed once.
        unsafe { bindings::ufg_file_close(self.0) };
    }
}

fn open() -> Result<File> {
    // ENOENT unless an attempt failed for another reason (an allocation, say), which is then
    // what the caller gets: "no such file" would send a user looking for tracefs.
    let mut err = ENOENT;
    for p in PATHS {
        // SAFETY: `p` is NUL-terminated; the glue returns a file or an error pointer.
        let f = unsafe { bindings::ufg_file_open(p.as_char_ptr()) };
        let v = f as isize;
        if !f.is_null() && !(-4095..0).contains(&v) {
            return Ok(File(f));
        }
        if !f.is_null() && v != ENOENT.to_errno() as isize {
            err = Error::from_errno(v as i32);
        }
    }
    if err == ENOENT {
        pr_err!("cannot read ftrace's available_filter_functions_addrs: is tracefs mounted at /sys/kernel/tracing?\n");
    } else {
        pr_err!(
            "cannot open ftrace's available_filter_functions_addrs: {:?}\n",
            err
        );
    }
    Err(err)
}

/// Reads `file` to its end with `read`, calling `line` on each complete line; `line` returns
/// `false` to stop.
fn for_each_line(
    file: &File,
    read: unsafe extern "C" fn(
        *mut bindings::file,
        *mut core::ffi::c_void,
        usize,
        *mut i64,
    ) -> isize,
    mut line: impl FnMut(&[u8]) -> bool,
) -> Result {
    let mut buf = KVec::with_capacity(16384, GFP_KERNEL)?;
    buf.extend_with(16384, 0u8, GFP_KERNEL)?;
    let mut pos: i64 = 0;
    let mut have = 0;
    loop {
        // SAFETY: `buf[have..]` is writable for its length; the file is open.
        let n = unsafe {
            read(
                file.0,
                buf[have..].as_mut_ptr().cast(),
                buf.len() - have,
                &mut pos,
            )
        };
        if n < 0 {
            return Err(Error::from_errno(n as i32));
        }
        let end = have + n as usize;
        let mut stop = false;
        let used = funclist::for_each_line(&buf[..end], |l| {
            if !stop {
                stop = !line(l);
            }
        });
        if stop || n == 0 {
            return Ok(());
        }
        if used == 0 && end == buf.len() {
            // A line longer than the buffer cannot be a symbol line: skip it.
            have = 0;
            continue;
        }
        buf.copy_within(used..end, 0);
        have = end - used;
    }
}

/// Calls `f` on every traceable function; `f` returns `false` to stop. Process context.
pub fn for_each_function(mut f: impl FnMut(&Func<'_>) -> bool) -> Result {
    let file = open()?;
    for_each_line(
        &file,
        bindings::ufg_file_read,
        |line| match funclist::parse(line) {
            Some(func) => f(&func),
            None => true,
        },
    )
}

/// What to resolve into functions: what an fprobe or a graph ops' filter is registered on.
pub enum Target<'a> {
    /// Functions whose names match a glob, and not a second one.
    Filter(&'a CStr, Option<&'a CStr>),
    /// Functions by address (start or ftrace location).
    Ips(&'a [usize]),
    /// Functions by name.
    Syms(&'a [&'a CStr]),
}

/// The ftrace locations `t` selects, sorted and without duplicates, leaving out the functions
/// `skip` says (a going module's). `ENOENT` (with a log line naming it) for an unknown symbol or
/// an empty match, `EINVAL` for an address that is neither a traceable function's ftrace
/// location nor its start, or is a function `skip` says. Process context.
///
/// Without `skip`, nothing is left out (and addresses are not looked up in kallsyms).
pub fn resolve(t: &Target<'_>, skip: Option<&dyn Fn(&Func<'_>) -> bool>) -> Result<KVec<usize>> {
    let check_ips = skip.is_some();
    let skip = |f: &Func<'_>| skip.is_some_and(|s| s(f));
    let mut out = KVec::new();
    match t {
        Target::Ips(ips) => {
            out = locations(ips)?;
            // A going module's functions are still ftrace's until `ftrace_release_mod()`, after
            // the notifiers: by address too, they must not be hooked once `skip` names them.
            let mut buf = [0u8; bindings::UFG_KSYM_SYMBOL_LEN];
            for &loc in out.iter().filter(|_| check_ips) {
                let n = symbol_with_offset(loc, &mut buf).min(buf.len());
                let Some((name, module)) = name::parts(&buf[..n]) else {
                    continue;
                };
                if skip(&Func { loc, name, module }) {
                    pr_err!("ufgraph: {:#x} is in a module going away\n", loc);
                    return Err(EINVAL);
                }
            }
        }
        Target::Syms(syms) => {
            let mut found: KVec<Option<usize>> = KVec::new();
            found.extend_with(syms.len(), None, GFP_KERNEL)?;
            // The names sorted (as positions), searched by binary search per function.
            let mut order: KVec<usize> = KVec::with_capacity(syms.len(), GFP_KERNEL)?;
            for i in 0..syms.len() {
                order.push(i, GFP_KERNEL)?;
            }
            crate::sys::slice::sort_by(&mut order, |&a, &b| {
                syms[a].as_bytes() < syms[b].as_bytes()
            });
            for_each_function(|f| {
                if skip(f) {
                    return true;
                }
                let from = order.partition_point(|&i| syms[i].as_bytes() < f.name);
                for &i in order[from..]
                    .iter()
                    .take_while(|&&i| syms[i].as_bytes() == f.name)
                {
                    if found[i].is_none() {
                        found[i] = Some(f.loc);
                    }
                }
                true
            })?;
            for (i, loc) in found.iter().enumerate() {
                let Some(loc) = loc else {
                    pr_err!("ufgraph: {} is not a traceable function\n", syms[i]);
                    return Err(ENOENT);
                };
                out.push(*loc, GFP_KERNEL)?;
            }
        }
        Target::Filter(filter, notfilter) => {
            let mut err = Ok(());
            let mut name = [0u8; 256];
            for_each_function(|f| {
                if f.name.len() >= name.len() || skip(f) {
                    return true;
                }
                crate::sys::slice::copy(&mut name[..f.name.len()], f.name);
                name[f.name.len()] = 0;
                // SAFETY: NUL-terminated just above, no NUL inside (a symbol name).
                let n = unsafe { CStr::from_bytes_with_nul_unchecked(&name[..=f.name.len()]) };
                if glob_match(filter, n) && !notfilter.is_some_and(|nf| glob_match(nf, n)) {
                    if out.push(f.loc, GFP_KERNEL).is_err() {
                        err = Err(ENOMEM);
                        return false;
                    }
                }
                true
            })?;
            err?;
        }
    }
    crate::sys::slice::sort(&mut out);
    let mut n = 0;
    for i in 0..out.len() {
        if i == 0 || out[i] != out[n - 1] {
            out[n] = out[i];
            n += 1;
        }
    }
    // SAFETY: `n <= len`, and the first `n` elements are initialised.
    unsafe { out.set_len(n) };
    if out.is_empty() {
        if let Target::Filter(f, _) = t {
            pr_err!("ufgraph: no traceable function matches {}\n", f);
        }
        return Err(ENOENT);
    }
    Ok(out)
}

/// The module of the first traceable function named `name`: `Ok(None)` if the kernel image
/// has it first, or no traceable function has that name. Process context.
pub fn module_of(name: &[u8]) -> Result<Option<KVec<u8>>> {
    let mut module: Option<KVec<u8>> = None;
    let mut err = Ok(());
    for_each_function(|f| {
        if f.name != name {
            return true;
        }
        if let Some(m) = f.module {
            let mut v = KVec::new();
            err = v.extend_from_slice(m, GFP_KERNEL);
            module = Some(v);
        }
        false
    })?;
    err?;
    Ok(module)
}

/// The address of the kernel symbol `name` (any type: functions, data) from `/proc/kallsyms`,
/// the one unexported-symbol resolver of ufgraph (Documentation/symbols.md). Symbols of the
/// kernel image come first; a module's count only if the image has none of that name.
///
/// `Ok(None)` when there is no such symbol, or when the kernel hides addresses from us
/// (`kptr_restrict`), which callers report as a missing symbol. Process context.
pub fn lookup_kallsyms(name: &[u8]) -> Result<Option<usize>> {
    // SAFETY: a NUL-terminated path; the glue returns a file or an error pointer.
    let f = unsafe { bindings::ufg_file_open(c_str!("/proc/kallsyms").as_char_ptr()) };
    let v = f as isize;
    if f.is_null() || (-4095..0).contains(&v) {
        pr_err!(
            "cannot open /proc/kallsyms ({})\n",
            if f.is_null() { 0 } else { v }
        );
        return Err(ENOENT);
    }
    let file = File(f);
    let (mut image, mut module) = (None, None);
    for_each_line(&file, bindings::ufg_proc_seq_read, |line| {
        if let Some(s) = funclist::parse_kallsyms(line) {
            if s.name == name && s.addr != 0 {
                if s.module.is_none() {
                    image = Some(s.addr);
                    return false;
                }
                module = module.or(Some(s.addr));
            }
        }
        true
    })?;
    Ok(image.or(module))
}

/// Like [`lookup_kallsyms`], for what ufgraph cannot work without: logs which symbol is
/// missing and why, and fails with `ENOENT`.
pub fn require(name: &CStr) -> Result<usize> {
    match lookup_kallsyms(name.as_bytes())? {
        Some(a) => Ok(a),
        None => {
            pr_err!("kernel symbol {} not found in /proc/kallsyms (needs CONFIG_KALLSYMS_ALL, and addresses visible to root: kptr_restrict < 2)\n", name);
            Err(ENOENT)
        }
    }
}

/// The ftrace location of the first traceable function named `name`.
pub fn lookup(name: &CStr) -> Result<Option<usize>> {
    let mut found = None;
    for_each_function(|f| {
        if f.name == name.as_bytes() {
            found = Some(f.loc);
            return false;
        }
        true
    })?;
    Ok(found)
}

/// What `addr` is to teardown: the first byte of a return-hooking trampoline (the kernel's
/// function_graph, rethook, another), or an ordinary address (see `sys::ksym::name::hooker`).
/// Safe in any context kallsyms lookups are (atomic included: teardown calls it under
/// `stop_machine`).
pub fn hooker(addr: usize) -> crate::sys::hookers::stacks::Hooker {
    let mut buf = [0u8; bindings::UFG_KSYM_SYMBOL_LEN];
    // SAFETY: `buf` has the KSYM_SYMBOL_LEN bytes sprint_symbol may write.
    let n = unsafe { bindings::sprint_symbol(buf.as_mut_ptr().cast(), addr as _) };
    crate::sys::ksym::name::hooker(&buf[..n.clamp(0, buf.len() as _) as usize])
}

/// ftrace's locations, sorted, kept while a module notifier watches (`fprobe::capi::ModuleWatch`
/// owns the list and tells it of modules): read from `available_filter_functions_addrs` at the
/// first resolution that needs it (ftrace prints a symbol name for each of its records: about
/// 140 million instructions for 18000 functions, the fixed cost of a registration without the
/// list), then edited as modules come and go, never read again:
///
/// ```text
///   COMING  ftrace has made records of the module's call sites (`ftrace_module_init()`): add
///           them, from the module's own list (`struct module`'s `ftrace_callsites`), each as
///           ftrace adjusts it into a location (`callsite_location`)
///   LIVE    ftrace forgets the module's init functions (`ftrace_free_mem()`, right after):
///           take out those in its init text
///   GOING   ftrace forgets the module (`ftrace_release_mod()`, after the notifiers): take out
///           everything inside it
/// ```
///
/// Each edit builds a new sorted array and publishes it; the old one is freed by RCU
/// (`sys::rcuarray`): readers search it with preemption disabled, and nothing waits.
///
/// ftrace drops records after the notifiers have run (both rows above), so a reading that
/// comes after a LIVE or GOING notifier found no list to edit may see records that are about
/// to go, or, ftrace's file restarting each chunk by record index, miss records behind ones
/// dropped meanwhile. Such a list is provisional: the next module event drops it rather than
/// editing it, and the resolution after that reads the file again (what the list did before
/// it was kept, at every module event).
#[pin_data]
pub struct LocList {
    /// Serialises the list's writers: the first reading and the notifier's edits.
    #[pin]
    lock: Mutex<ReadState>,
    locs: RcuArray<usize>,
}

/// Whether a reading of the file can be trusted (see [`LocList`]).
#[derive(Default)]
struct ReadState {
    /// A LIVE or GOING notifier found no list since the last reading: ftrace may still be
    /// dropping records.
    unsettled: bool,
    /// The list was read while `unsettled`.
    provisional: bool,
}

/// The list of this module instance's notifier, while it watches.
static LIST: Global<LocList> = Global::new();

impl LocList {
    /// No list yet: the first resolution reads it.
    pub fn new() -> impl PinInit<Self> {
        pin_init!(Self {
            lock <- new_mutex!(ReadState::default()),
            locs: RcuArray::new(),
        })
    }

    /// Makes this the list resolutions use.
    ///
    /// # Safety
    ///
    /// `self` must stay pinned and valid until after [`LocList::withdraw`], and no resolution
    /// may still be running when it is dropped (the module's users are gone by then).
    pub unsafe fn publish(&self) -> Result {
        // SAFETY: the caller's contract.
        unsafe { LIST.publish(self) }
    }

    /// Stops resolutions from using this list.
    pub fn withdraw(&self) {
        LIST.withdraw(self);
    }

    /// Publishes `new` (`None`: drop the list; the next resolution reads the file again).
    fn set(&self, new: Option<Array<usize>>) {
        self.locs.replace(new);
    }

    /// The list, read from the file if there is none yet. Writers' lock held (`g`).
    fn get_or_read<'a>(
        &'a self,
        g: &'a mut Guard<'_, ReadState, MutexBackend>,
    ) -> Result<&'a [usize]> {
        // SAFETY: the writers' lock is held for `'a` (`g`): no replacement meanwhile.
        if let Some(l) = unsafe { self.locs.get_w() } {
            return Ok(l);
        }
        let locs = read_locations()?;
        let mut a = Array::zeroed(locs.len(), GFP_KERNEL)?;
        a.as_mut_slice().copy_from_slice(&locs);
        g.provisional = g.unsettled;
        g.unsettled = false;
        self.set(Some(a));
        // SAFETY: as above.
        Ok(unsafe { self.locs.get_w() }.unwrap_or(&[]))
    }

    /// Adds the functions of `m`, a module coming (its records made).
    ///
    /// # Safety
    ///
    /// `m` must be a module in `MODULE_STATE_COMING`, valid for the call.
    pub unsafe fn module_coming(&self, m: *const bindings::module) {
        let mut g = self.lock.lock();
        // SAFETY: as above (the list of call sites is the module's, valid while it is).
        let sites = unsafe { module_callsites(m) };
        // No list: the first resolution will read the module's functions too.
        let Some(old) = self.editable(&mut g, false) else {
            return;
        };
        let mut add = KVec::new();
        let ok = add.reserve(sites.len(), GFP_KERNEL).is_ok();
        if ok {
            // ftrace skips null entries (padding between object files). Entries outside the
            // module's memory would be no function of it (a live module's freed init text,
            // when a test replays a module's coming).
            // SAFETY: `m` is valid for the call.
            let within = |a: usize| unsafe { bindings::ufg_within_module(a as _, m) };
            for &s in sites.iter().filter(|&&s| s != 0 && within(s)) {
                let l = callsite_location(s);
                if l != 0 {
                    let _ = add.push(l, GFP_KERNEL);
                }
            }
            crate::sys::slice::sort(&mut add);
        }
        let new = ok
            .then(|| Array::zeroed(old.len() + add.len(), GFP_KERNEL).ok())
            .flatten()
            .map(|mut a| {
                let n = funclist::merge_sorted(old, &add, a.as_mut_slice());
                a.truncate(n);
                a
            });
        // Out of memory: no list rather than a wrong one.
        self.set(new);
        drop(g);
    }

    /// The list, for the notifier to edit (writers' lock held, `g`); `None` when there is none
    /// (`dropping`: a LIVE or GOING event, after which ftrace drops records) or it was
    /// provisional (then dropped).
    fn editable<'a>(
        &'a self,
        g: &'a mut Guard<'_, ReadState, MutexBackend>,
        dropping: bool,
    ) -> Option<&'a [usize]> {
        if core::mem::take(&mut g.provisional) {
            self.set(None);
        }
        // SAFETY: the lock is held for `'a` (`g`): no replacement while the slice is used.
        let l = unsafe { self.locs.get_w() };
        if l.is_none() && dropping {
            g.unsettled = true;
        }
        l
    }

    /// Takes out the addresses `gone` says (a module's, or its init text's).
    fn remove(&self, gone: impl Fn(usize) -> bool) {
        let mut g = self.lock.lock();
        let Some(old) = self.editable(&mut g, true) else {
            return;
        };
        let n = old.iter().filter(|&&l| !gone(l)).count();
        if n == old.len() {
            return;
        }
        let new = Array::zeroed(n, GFP_KERNEL).ok().map(|mut a| {
            for (d, &l) in a
                .as_mut_slice()
                .iter_mut()
                .zip(old.iter().filter(|&&l| !gone(l)))
            {
                *d = l;
            }
            a
        });
        self.set(new);
    }

    /// Takes out the init functions of `m`, a module just gone live.
    ///
    /// # Safety
    ///
    /// `m` must be a module, valid for the call.
    pub unsafe fn module_live(&self, m: *const bindings::module) {
        // SAFETY: `m` is valid for the call (the caller's contract).
        self.remove(|l| unsafe { bindings::ufg_within_module_init(l as _, m) });
    }

    /// Takes out every function of `m`, a module going away.
    ///
    /// # Safety
    ///
    /// `m` must be a module, valid for the call.
    pub unsafe fn module_going(&self, m: *const bindings::module) {
        // SAFETY: `m` is valid for the call (the caller's contract).
        self.remove(|l| unsafe { bindings::ufg_within_module(l as _, m) });
    }

    /// Tests only: whether the kept list equals a fresh reading of the file (`Ok(None)`), or
    /// the first difference: `(index, kept, read)` (0 past an end). `Ok(None)` with no list.
    #[cfg(ufgraph_kunit)]
    pub fn test_compare_with_file(&self) -> Result<Option<(usize, usize, usize)>> {
        let g = self.lock.lock();
        // SAFETY: the lock is held: no replacement while the slice is used.
        let Some(kept) = (unsafe { self.locs.get_w() }) else {
            return Ok(None);
        };
        let read = read_locations()?;
        drop(g);
        let n = kept.len().max(read.len());
        Ok((0..n)
            .map(|i| {
                (
                    i,
                    kept.get(i).copied().unwrap_or(0),
                    read.get(i).copied().unwrap_or(0),
                )
            })
            .find(|&(_, k, r)| k != r))
    }

    /// Tests only: drops the list and forgets module events, as if none had come since ufgraph
    /// loaded (the next reading is not provisional).
    #[cfg(ufgraph_kunit)]
    pub fn test_reset(&self) {
        let mut g = self.lock.lock();
        self.set(None);
        *g = ReadState::default();
    }

    /// Tests only: whether there is a list.
    #[cfg(ufgraph_kunit)]
    pub fn test_has_list(&self) -> bool {
        let _g = self.lock.lock();
        // SAFETY: the lock is held: no replacement meanwhile (only the null test is made).
        unsafe { self.locs.get_w() }.is_some()
    }

    /// Tests only: the list as it is (read first if there is none), copied.
    #[cfg(ufgraph_kunit)]
    pub fn test_kept(&self) -> Result<KVec<usize>> {
        let mut g = self.lock.lock();
        let l = self.get_or_read(&mut g)?;
        let mut v = KVec::with_capacity(l.len(), GFP_KERNEL)?;
        v.extend_from_slice(l, GFP_KERNEL)?;
        Ok(v)
    }
}

/// Tests only: this module instance's list, while its notifier watches.
#[cfg(ufgraph_kunit)]
pub fn test_list() -> Option<&'static LocList> {
    LIST.get()
}

/// The module's raw call-site entries (`ftrace_callsites`: what ftrace made its records from).
///
/// # Safety
///
/// `m` must be a valid module, and stay so while the slice is used.
unsafe fn module_callsites<'a>(m: *const bindings::module) -> &'a [usize] {
    let mut n: core::ffi::c_uint = 0;
    // SAFETY: `m` is valid; the glue reads two fields.
    let p = unsafe { bindings::ufg_module_callsites(m, &mut n) };
    if p.is_null() || n == 0 {
        return &[];
    }
    // SAFETY: the module's array of `n` call sites, in its memory while it is loaded.
    unsafe { core::slice::from_raw_parts(p.cast::<usize>(), n as usize) }
}

/// The ftrace location ftrace makes of a module's raw call-site entry (its
/// `ftrace_call_adjust()`, not exported and out of line on arm64); 0 for none. On x86_64 the
/// entry is the `call __fentry__` itself.
#[cfg(CONFIG_X86_64)]
fn callsite_location(site: usize) -> usize {
    site
}

/// On arm64 the entry is the first of the patchable NOPs: the location is the one ftrace patches
/// to `BL`. Without CALL_OPS it follows the first NOP after the entry point (a BTI, if any,
/// comes before that NOP); with CALL_OPS two NOPs before the entry point hold the ops pointer,
/// and a BTI after it moves both of the entry's NOPs.
#[cfg(CONFIG_ARM64)]
fn callsite_location(site: usize) -> usize {
    #[cfg(not(CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS))]
    {
        site + 4
    }
    #[cfg(CONFIG_DYNAMIC_FTRACE_WITH_CALL_OPS)]
    {
        // A module's text, readable: read without faulting all the same.
        funclist::arm64_call_ops_location(site, cfg!(CONFIG_ARM64_BTI_KERNEL), |a| {
            let mut insn = [0u8; 4];
            crate::sys::nofault::read_kernel(a as u64, &mut insn).then(|| u32::from_le_bytes(insn))
        })
    }
}

/// Reads every ftrace location from the file, sorted. Process context.
fn read_locations() -> Result<KVVec<usize>> {
    let mut locs = KVVec::new();
    let mut nomem = false;
    for_each_function(|func| {
        nomem = locs.push(func.loc, GFP_KERNEL).is_err();
        !nomem
    })?;
    if nomem {
        return Err(ENOMEM);
    }
    crate::sys::slice::sort(&mut locs);
    Ok(locs)
}

/// Runs `f` on the current location list (reading it first if there is none), or, when no
/// module notifier keeps one, on the file read now. `f` runs with preemption disabled: it must
/// not sleep.
fn with_locations<R>(f: impl FnOnce(&[usize]) -> R) -> Result<R> {
    let Some(list) = LIST.get() else {
        return Ok(f(&read_locations()?));
    };
    {
        let np = NoPreempt::new();
        if let Some(l) = list.locs.get(&np) {
            return Ok(f(l));
        }
    }
    // Read it (once: resolutions that find none wait for the first one's reading).
    let mut g = list.lock.lock();
    list.get_or_read(&mut g)?;
    drop(g);
    let np = NoPreempt::new();
    // A module's edit that failed for memory may have dropped it again: then read it now.
    match list.locs.get(&np) {
        Some(l) => Ok(f(l)),
        None => {
            drop(np);
            Ok(f(&read_locations()?))
        }
    }
}

/// Leaves out of `ips` (ftrace locations) those the kept location list no longer has: the init
/// functions of a module that went live, which ftrace still lists (and resolutions by name and
/// glob, which read its file, still find) until the loader frees them, after the notifiers.
/// Nothing is left out when no list is kept (it is, while ufgraph's module notifier watches).
/// Safe in any context that may disable preemption.
pub fn keep_listed(ips: &mut KVec<usize>) {
    let Some(list) = LIST.get() else {
        return;
    };
    let np = NoPreempt::new();
    if let Some(l) = list.locs.get(&np) {
        // `ips` are sorted (a registration's functions): one compare each on a mass attach.
        let mut members = funclist::SortedMembers::new(l);
        crate::sys::kvec::retain(ips, |&ip| members.contains(ip));
    }
}

/// The ftrace locations of the functions at `ips` (each a function's ftrace location or its
/// start), in the same order: what ftrace callbacks report as `ip` for them. `EINVAL` (with a
/// log line) for an address that is neither.
pub fn locations(ips: &[usize]) -> Result<KVec<usize>> {
    let found = try_locations(ips)?;
    let mut out = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
    for (i, l) in found.iter().enumerate() {
        let Some(l) = *l else {
            pr_err!("{:#x} is not a traceable function\n", ips[i]);
            return Err(EINVAL);
        };
        out.push(l, GFP_KERNEL)?;
    }
    Ok(out)
}

/// [`locations`], quietly: `None` for an address that is no traceable function (any more: a
/// module's, once it went).
pub fn try_locations(ips: &[usize]) -> Result<KVec<Option<usize>>> {
    // Room for everything up front: the list's read section disables preemption, where
    // PREEMPT_RT allows no allocation, even GFP_ATOMIC (the pushes below never allocate).
    let mut out = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
    // Which of `ips` are starts, not locations: checked outside the list's read section (the
    // check looks symbols up).
    let mut starts: KVec<(usize, usize)> = KVec::with_capacity(ips.len(), GFP_KERNEL)?;
    let mut nomem = false;
    with_locations(|locs| {
        for (i, &a) in ips.iter().enumerate() {
            // The first location at or after `a`: `a` itself, or the location a few bytes into
            // the function `a` starts (ENDBR, BTI, patchable entry).
            let at = locs.partition_point(|&l| l < a);
            let found = match locs.get(at) {
                Some(&l) if l == a => Some(a),
                Some(&l) if l - a <= 16 => {
                    if starts.push((i, l), GFP_ATOMIC).is_err() {
                        nomem = true;
                        return;
                    }
                    None
                }
                _ => None,
            };
            if out.push(found, GFP_ATOMIC).is_err() {
                nomem = true;
                return;
            }
        }
    })?;
    if nomem {
        return Err(ENOMEM);
    }
    for &(i, l) in starts.iter() {
        if same_function_start(ips[i], l) {
            out[i] = Some(l);
        }
    }
    Ok(out)
}

/// Whether `addr` is the start of the function whose ftrace location is `loc`.
fn same_function_start(addr: usize, loc: usize) -> bool {
    let (mut a, mut b) = (
        [0u8; bindings::UFG_KSYM_SYMBOL_LEN],
        [0u8; bindings::UFG_KSYM_SYMBOL_LEN],
    );
    // SAFETY: each buffer has the KSYM_SYMBOL_LEN bytes sprint_symbol may write.
    let (na, nb) = unsafe {
        (
            bindings::sprint_symbol(a.as_mut_ptr().cast(), addr as _),
            bindings::sprint_symbol(b.as_mut_ptr().cast(), loc as _),
        )
    };
    let (a, b) = (&a[..na.max(0) as usize], &b[..nb.max(0) as usize]);
    // `name+0x0/size` and `name+0x4/size`: the same name, `addr` at offset 0.
    fn name(s: &[u8]) -> Option<&[u8]> {
        s.iter().position(|&c| c == b'+').map(|p| &s[..p])
    }
    match (name(a), name(b)) {
        (Some(x), Some(y)) => x == y && a[x.len()..].starts_with(b"+0x0/"),
        _ => false,
    }
}

/// Room for a symbol name as [`symbol_name`] writes it (`KSYM_SYMBOL_LEN`).
pub type SymbolBuf = [u8; bindings::UFG_KSYM_SYMBOL_LEN];

/// The name of the function `addr` is in, without offset (`%ps`), written into `buf`; "?" if
/// it is not valid UTF-8.
pub fn symbol_name(addr: usize, buf: &mut SymbolBuf) -> &str {
    // SAFETY: `buf` has the KSYM_SYMBOL_LEN bytes sprint_symbol_no_offset may write.
    let n = unsafe { bindings::sprint_symbol_no_offset(buf.as_mut_ptr().cast(), addr as _) };
    core::str::from_utf8(&buf[..n.clamp(0, buf.len() as _) as usize]).unwrap_or("?")
}

/// The symbol `addr` is in, with offset and size (`%pS`: `name+0x10/0x40`), written into
/// `buf`; returns the length `sprint_symbol()` reports (callers clamp it to what they slice).
#[inline(always)]
pub fn symbol_with_offset(addr: usize, buf: &mut SymbolBuf) -> usize {
    // SAFETY: `buf` has the KSYM_SYMBOL_LEN bytes sprint_symbol may write.
    let n = unsafe { bindings::sprint_symbol(buf.as_mut_ptr().cast(), addr as _) };
    n.max(0) as usize
}

/// Whether `addr` is a function of the kernel image, which never goes away; a module's
/// functions may (with the module), and their addresses be reused by the next module loaded.
/// kallsyms' own lookup (which sees addresses whatever `kptr_restrict` says) must name a symbol
/// of no module: a function of the image always has one; an address of a module, gone or not,
/// never does (a module gone is nobody's: a bare address; a BPF program or trampoline there is
/// `[bpf]` and the like). "Not a module's" would not do: a module freed already is not one, and
/// its old functions would pass for the image's. Safe in any context kallsyms lookups are.
pub fn is_image_function(addr: usize) -> bool {
    let mut buf = [0u8; bindings::UFG_KSYM_SYMBOL_LEN];
    let n = symbol_with_offset(addr, &mut buf).min(buf.len());
    name::parts(&buf[..n]).is_some_and(|(_, module)| module.is_none())
}

/// ftrace's glob semantics (`*`, `?`, `[...]`), the kernel's own `glob_match()`.
pub fn glob_match(pat: &CStr, s: &CStr) -> bool {
    // SAFETY: two NUL-terminated strings, only read.
    unsafe { bindings::ufg_glob_match(pat.as_char_ptr(), s.as_char_ptr()) }
}
