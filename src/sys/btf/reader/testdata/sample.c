// SPDX-License-Identifier: GPL-2.0
// Source of sample.btf (the BTF parser's host tests, src/sys/btf/reader/tests.rs):
//   clang-19 -g -O2 -target bpf -c sample.c -o sample.o
//   llvm-objcopy-19 --dump-section .BTF=sample.btf sample.o
// Types like the kernel's: typedefs, const/volatile, bitfields, anonymous members, enums,
// pointers, arrays, a variadic function pointer (BPF has no variadic functions).

typedef unsigned long long u64;
typedef int s32;
typedef unsigned short u16;
typedef s32 const volatile cvs32;

enum color { RED = -1, GREEN = 2, BLUE = 0x7fffffff };
enum big { HUGE = 0x100000000ULL };

struct dentry;

struct qstr {
	union {
		struct {
			unsigned int hash;
			unsigned int len;
		};
		u64 hash_len;
	};
	const unsigned char *name;
};

struct file {
	unsigned int f_flags : 3;
	unsigned int f_mode : 13;
	signed char f_char;
	struct qstr f_name;
	struct dentry *f_dentry;
	union {
		long f_long;
		struct {
			u16 lo, hi;
		} f_pair;
	};
	enum color f_color;
	enum big f_big;
	cvs32 f_count;
	char f_buf[16];
	_Bool f_ok;
	double f_float;
};

__attribute__((noinline)) long vfs_read(struct file *file, char *buf, unsigned long count, long long *pos)
{
	return file->f_count + count + *pos + buf[0];
}

__attribute__((noinline)) void no_args(void)
{
	asm volatile("");
}

struct ops {
	int (*log)(const char *fmt, ...);
};

static __attribute__((noinline)) short local_fn(cvs32 x, enum color c, _Bool b)
{
	return x + c + b;
}

int entry(struct file *f, struct ops *ops)
{
	return vfs_read(f, 0, 1, 0) + ops->log("x", 1) + local_fn(1, RED, 1);
}

int counter;
