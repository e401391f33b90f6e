typedef unsigned int u32;
struct inode { u32 i_ino; long i_size; };
struct file { struct inode *f_inode; unsigned int f_flags; };
long vfs_read(struct file *file, char *buf, unsigned long count) { return file->f_flags + count + buf[0]; }
