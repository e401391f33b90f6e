typedef unsigned int u32;
struct inode { u32 i_ino; long i_size; };
struct file { struct inode *f_inode; unsigned int f_flags; };
struct mydev { struct file *filp; u32 id; };
int mydev_open(struct mydev *dev, struct inode *inode, ...) { return dev->id + inode->i_ino; }
