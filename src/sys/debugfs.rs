// SPDX-License-Identifier: GPL-2.0

//! debugfs: a directory of read-only files whose contents come from a Rust `show` function.
//!
//! A [`Dir<T>`] owns its files and the data `T` they show. Files are never removed one by one:
//! dropping the `Dir` removes the whole tree with `debugfs_remove()`, which waits for readers in
//! flight (debugfs's file proxy), and only then frees the `file_operations` and the data. So a
//! reader can never see freed memory, and `rmmod` while a file is open is safe.

use crate::bindings;
use core::ffi::{c_int, c_void};
use core::fmt;
use core::pin::Pin;
use kernel::alloc::{flags::GFP_KERNEL, KBox, KVec};
use kernel::prelude::*;
use kernel::str::CStr;
use kernel::sync::Arc;

/// A `seq_file` being filled by a `show` function; write to it with `write!`.
pub struct SeqFile(*mut bindings::seq_file);

impl fmt::Write for SeqFile {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // SAFETY: `self.0` is the seq_file of the `show` call that built us (see `show_shim`),
        // valid for the whole call; `s` is valid for `s.len()` bytes.
        let ret = unsafe { bindings::seq_write(self.0, s.as_ptr().cast(), s.len()) };
        // On overflow seq_file retries `show` with a bigger buffer: stop writing now.
        if ret == 0 {
            Ok(())
        } else {
            Err(fmt::Error)
        }
    }
}

impl SeqFile {
    /// Writes the symbol name of a kernel text address (`%ps`), or the hex address if unknown.
    pub fn symbol(&mut self, addr: usize) -> fmt::Result {
        let mut buf = [0u8; bindings::UFG_KSYM_SYMBOL_LEN];
        // SAFETY: `buf` has the KSYM_SYMBOL_LEN bytes sprint_symbol_no_offset may write.
        let n = unsafe { bindings::sprint_symbol_no_offset(buf.as_mut_ptr().cast(), addr as _) };
        let name = buf
            .get(..n.max(0) as usize)
            .and_then(|b| core::str::from_utf8(b).ok());
        match name {
            Some(name) if !name.is_empty() => fmt::Write::write_str(self, name),
            _ => fmt::Write::write_fmt(self, format_args!("{:#x}", addr)),
        }
    }
}

/// Fills a file: called for each read from the start of the file.
pub type ShowFn<T> = fn(&T, &mut SeqFile) -> fmt::Result;

/// Takes what was written to a file: whole lines (see [`Dir::add_rw_file`]).
pub type WriteFn<T> = fn(&T, &str) -> Result;

/// Called when a file is opened for writing with `O_TRUNC` (`echo x > file`).
pub type TruncFn<T> = fn(&T) -> Result;

// One per file; `i_private` of the file's inode points here.
struct Entry<T> {
    fops: bindings::file_operations,
    data: Arc<T>,
    show: ShowFn<T>,
    write: Option<WriteFn<T>>,
    trunc: Option<TruncFn<T>>,
}

/// The most a written line may take, as upstream's `trace_parse_run_command()` (`WRITE_BUFSIZE`).
const WRITE_BUFSIZE: usize = 4096;

/// A debugfs directory and the files in it, all showing the one `T`.
pub struct Dir<T: Send + Sync + 'static> {
    dentry: *mut bindings::dentry,
    data: Arc<T>,
    entries: KVec<Pin<KBox<Entry<T>>>>,
}

// SAFETY: the dentry pointer is only used to create children and to remove the tree, both of which
// debugfs allows from any task; `T` is Send + Sync.
unsafe impl<T: Send + Sync + 'static> Send for Dir<T> {}
// SAFETY: shared references only read `data` (Sync).
unsafe impl<T: Send + Sync + 'static> Sync for Dir<T> {}

/// `single_open`'s show callback.
///
/// # Safety
///
/// Called by seq_file only, for a file opened by [`open_shim`] (its `private` an `Entry<T>`).
unsafe extern "C" fn show_shim<T: Send + Sync + 'static>(
    m: *mut bindings::seq_file,
    _v: *mut c_void,
) -> c_int {
    // SAFETY: `single_open` in `open_shim` made `private` the `Entry<T>` the inode points to; the
    // entry lives until the `Dir` is dropped, which first removes the file and waits for readers.
    let entry = unsafe { &*(*m).private.cast::<Entry<T>>() };
    let mut seq = SeqFile(m);
    // A formatting error means the seq_file buffer overflowed: returning 0 makes seq_read
    // retry with a bigger buffer.
    let _ = (entry.show)(&entry.data, &mut seq);
    0
}

/// The file's `open`.
///
/// # Safety
///
/// Called by the VFS only, for a file created with an `Entry<T>` as `i_private`.
unsafe extern "C" fn open_shim<T: Send + Sync + 'static>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: the VFS passes a valid inode and file; `i_private` is the `Entry<T>` given to
    // debugfs_create_file, alive while the file exists (see `show_shim`).
    unsafe { bindings::single_open(file, Some(show_shim::<T>), (*inode).i_private) }
}

/// The writable file's `open`.
///
/// # Safety
///
/// As for [`open_shim`].
unsafe extern "C" fn rw_open_shim<T: Send + Sync + 'static>(
    inode: *mut bindings::inode,
    file: *mut bindings::file,
) -> c_int {
    // SAFETY: as in `open_shim`.
    let entry = unsafe { &*(*inode).i_private.cast::<Entry<T>>() };
    // SAFETY: the VFS passes a valid file.
    if unsafe { bindings::ufg_file_truncating(file) } {
        // SAFETY: no preconditions.
        if !unsafe { bindings::ufg_capable_admin() } {
            return EPERM.to_errno();
        }
        if let Some(trunc) = entry.trunc {
            if let Err(e) = trunc(&entry.data) {
                return e.to_errno();
            }
        }
    }
    // SAFETY: as in `open_shim`.
    unsafe { open_shim::<T>(inode, file) }
}

/// The writable file's `write`.
///
/// # Safety
///
/// Called by the VFS only, for a file opened by [`rw_open_shim`], with a user buffer of
/// `count` bytes.
unsafe extern "C" fn write_shim<T: Send + Sync + 'static>(
    file: *mut bindings::file,
    ubuf: *const kernel::ffi::c_char,
    count: usize,
    _ppos: *mut bindings::loff_t,
) -> isize {
    // SAFETY: `open_shim` made `private_data` a seq_file whose `private` is our entry, which
    // lives while the file exists (see `show_shim`).
    let entry = unsafe {
        &*(*bindings::ufg_file_private(file).cast::<bindings::seq_file>())
            .private
            .cast::<Entry<T>>()
    };
    let Some(write) = entry.write else {
        return EINVAL.to_errno() as isize;
    };
    // SAFETY: no preconditions.
    if !unsafe { bindings::ufg_capable_admin() } {
        return EPERM.to_errno() as isize;
    }
    match write_lines(ubuf as usize, count, |s| write(&entry.data, s)) {
        Ok(()) => count as isize,
        Err(e) => e.to_errno() as isize,
    }
}

/// Reads `count` bytes of user memory at `ubuf` a buffer at a time and hands `f` whole lines,
/// as upstream's `trace_parse_run_command()`: a line may not exceed the buffer, and a final
/// line without a newline is a line.
fn write_lines(ubuf: usize, count: usize, mut f: impl FnMut(&str) -> Result) -> Result {
    let mut buf = KVec::with_capacity(WRITE_BUFSIZE, GFP_KERNEL)?;
    buf.extend_with(WRITE_BUFSIZE, 0u8, GFP_KERNEL)?;
    let mut done = 0;
    while done < count {
        let n = (count - done).min(WRITE_BUFSIZE - 1);
        let chunk = &mut buf[..n];
        kernel::uaccess::UserSlice::new(ubuf + done, n)
            .reader()
            .read_slice(chunk)?;
        let take = if done + n < count {
            match chunk.iter().rposition(|&c| c == b'\n') {
                Some(i) => i + 1,
                None => {
                    pr_warn!(
                        "ufgraph: line too long in a write (more than {} bytes)\n",
                        WRITE_BUFSIZE - 1
                    );
                    return Err(EINVAL);
                }
            }
        } else {
            n
        };
        let text = core::str::from_utf8(&chunk[..take]).map_err(|_| EINVAL)?;
        f(text)?;
        done += take;
    }
    Ok(())
}

impl<T: Send + Sync + 'static> Dir<T> {
    /// Creates `/sys/kernel/debug/NAME`, whose files will show `data`.
    pub fn new(name: &CStr, data: Arc<T>) -> Result<Self> {
        // SAFETY: `name` is a valid NUL-terminated string; a NULL parent is the debugfs root.
        let dentry =
            unsafe { bindings::debugfs_create_dir(name.as_char_ptr(), core::ptr::null_mut()) };
        check_dentry(dentry)?;
        Ok(Self {
            dentry,
            data,
            entries: KVec::new(),
        })
    }

    /// Adds a read-only (0400, root only) file whose contents `show` writes.
    pub fn add_file(
        &mut self,
        name: &CStr,
        module: &'static ThisModule,
        show: ShowFn<T>,
    ) -> Result {
        let fops = bindings::file_operations {
            owner: module.as_ptr().cast(),
            open: Some(open_shim::<T>),
            read: Some(bindings::seq_read),
            llseek: Some(bindings::seq_lseek),
            release: Some(bindings::single_release),
            ..Default::default()
        };
        self.add(name, 0o400, fops, show, None, None)
    }

    /// Adds a read-write (0600, root only) file: reads show `show`; each `write()` is cut into
    /// whole lines for `write` (a line of at most 4095 bytes); an open with `O_TRUNC` calls
    /// `trunc` first, and fails with its error. Writing needs `CAP_SYS_ADMIN`.
    pub fn add_rw_file(
        &mut self,
        name: &CStr,
        module: &'static ThisModule,
        show: ShowFn<T>,
        write: WriteFn<T>,
        trunc: TruncFn<T>,
    ) -> Result {
        let fops = bindings::file_operations {
            owner: module.as_ptr().cast(),
            open: Some(rw_open_shim::<T>),
            read: Some(bindings::seq_read),
            write: Some(write_shim::<T>),
            llseek: Some(bindings::seq_lseek),
            release: Some(bindings::single_release),
            ..Default::default()
        };
        self.add(name, 0o600, fops, show, Some(write), Some(trunc))
    }

    fn add(
        &mut self,
        name: &CStr,
        mode: u16,
        fops: bindings::file_operations,
        show: ShowFn<T>,
        write: Option<WriteFn<T>>,
        trunc: Option<TruncFn<T>>,
    ) -> Result {
        let entry = KBox::pin(
            Entry {
                fops,
                data: self.data.clone(),
                show,
                write,
                trunc,
            },
            GFP_KERNEL,
        )?;
        self.entries.reserve(1, GFP_KERNEL)?;
        let private = (&*entry as *const Entry<T>).cast_mut().cast::<c_void>();
        // SAFETY: `name` is NUL-terminated; `self.dentry` is our live directory; `entry` (and the
        // fops in it) is pinned and lives until `self` is dropped, after the tree is removed.
        let dentry = unsafe {
            bindings::debugfs_create_file(
                name.as_char_ptr(),
                mode,
                self.dentry,
                private,
                &entry.fops,
            )
        };
        check_dentry(dentry)?;
        // Cannot fail: space was reserved above.
        self.entries.push(entry, GFP_KERNEL)?;
        Ok(())
    }
}

impl<T: Send + Sync + 'static> Drop for Dir<T> {
    fn drop(&mut self) {
        // SAFETY: `self.dentry` is the directory we created; removing it removes our files and
        // waits for open readers to leave our callbacks. `entries` is dropped after this.
        unsafe { bindings::debugfs_remove(self.dentry) };
    }
}

fn check_dentry(d: *mut bindings::dentry) -> Result {
    if d.is_null() {
        return Err(ENOMEM);
    }
    let v = d as isize;
    if (-4095..0).contains(&v) {
        return Err(Error::from_errno(v as c_int));
    }
    Ok(())
}
