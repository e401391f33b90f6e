// SPDX-License-Identifier: GPL-2.0
/*
 * Files (src/sys/ksym.rs reads ftrace's function list and /proc/kallsyms, src/sys/btf.rs the
 * BTF blobs; src/sys/debugfs.rs the control files' modes; src/events/mod.rs the `+0(...)`
 * string fetches of struct file and dentry names): seq_file reads into kernel buffers,
 * struct file fields, offsets and capable().
 */

/*
 * The seq_files ufgraph opens for itself (ftrace's function list, /proc/kallsyms) get a lock
 * class of their own. Every seq_file's m->lock is one lockdep class, and tracefs readers take
 * event_mutex under theirs (events/.../format, set_event): reading our own private file under
 * event_mutex, as enabling an fprobe event does when it matches its glob again, would look to
 * lockdep like the reverse order. Nothing else ever takes the lock of a file we opened, and
 * under it ftrace's list takes only ftrace_lock, which the kernel itself takes under
 * event_mutex.
 */
static struct lock_class_key ufg_own_seq_key;

struct file *ufg_file_open(const char *path)
{
	struct file *f = filp_open(path, O_RDONLY, 0);

	if (!IS_ERR(f) && f->f_op->read == seq_read && f->private_data)
		lockdep_set_class(&((struct seq_file *)f->private_data)->lock, &ufg_own_seq_key);
	return f;
}

/* seq_read_iter() into a kernel buffer: what seq_read() does for a user one. */
static long seq_read_kernel(struct file *f, void *buf, unsigned long len, long long *pos)
{
	struct kvec kv = { .iov_base = buf, .iov_len = len };
	struct iov_iter iter;
	struct kiocb kiocb;
	ssize_t n;

	init_sync_kiocb(&kiocb, f);
	kiocb.ki_pos = *pos;
	iov_iter_kvec(&iter, ITER_DEST, &kv, 1, len);
	n = seq_read_iter(&kiocb, &iter);
	*pos = kiocb.ki_pos;
	return n;
}

long ufg_file_read(struct file *f, void *buf, unsigned long len, long long *pos)
{
	/*
	 * tracefs lists are seq_files with only ->read (seq_read), which kernel_read()
	 * refuses; seq_read_iter() on a kernel buffer is what it would have done.
	 */
	if (f->f_op->read != seq_read)
		return -EINVAL;
	return seq_read_kernel(f, buf, len, pos);
}

long ufg_proc_seq_read(struct file *f, void *buf, unsigned long len, long long *pos)
{
	/*
	 * /proc/kallsyms is a seq_file (kallsyms_open() puts it in ->private_data) behind
	 * procfs's proc_reg_read(), which kernel_read() refuses. seq_read_iter() is what
	 * seq_read() would do. Only for procfs files whose ->private_data is a seq_file:
	 * the caller opens /proc/kallsyms and nothing else.
	 */
	if (file_inode(f)->i_sb->s_magic != PROC_SUPER_MAGIC || !f->private_data)
		return -EINVAL;
	return seq_read_kernel(f, buf, len, pos);
}

/*
 * kernel_read() of a file that has ->read_iter: sysfs files such as /sys/kernel/btf/vmlinux
 * (kernfs), which the seq_file readers above do not take.
 */
long ufg_file_read_plain(struct file *f, void *buf, unsigned long len, long long *pos)
{
	return kernel_read(f, buf, len, pos);
}

/* The size the inode gives: a sysfs binary attribute's (the BTF blob's) size. */
long long ufg_file_size(struct file *f)
{
	return i_size_read(file_inode(f));
}

void ufg_file_close(struct file *f)
{
	filp_close(f, NULL);
}

bool ufg_capable_admin(void)
{
	return capable(CAP_SYS_ADMIN);
}

bool ufg_file_truncating(const struct file *f)
{
	return (f->f_mode & FMODE_WRITE) && (f->f_flags & O_TRUNC);
}

void *ufg_file_private(const struct file *f)
{
	return f->private_data;
}

unsigned int ufg_dentry_name_offset(void)
{
	return offsetof(struct dentry, d_name.name);
}

unsigned int ufg_file_dentry_offset(void)
{
	return offsetof(struct file, f_path.dentry);
}
