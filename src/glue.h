/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C glue: only what Rust cannot express in 6.12 -- static inline helpers the
 * kernel crate does not wrap, module parameters, and EXPORT_SYMBOL_GPL of our
 * Rust functions to C modules. No logic lives here.
 */
#ifndef UFGRAPH_GLUE_H
#define UFGRAPH_GLUE_H

#include <linux/types.h>

struct ftrace_regs;
struct kunit;
struct module;

/* Module parameters (module_param cannot be declared from Rust in 6.12). */
const char *ufg_param_func(void);

/* struct ftrace_regs accessors: static inline per architecture. */
unsigned long ufg_fregs_ip(const struct ftrace_regs *fregs);
unsigned long ufg_fregs_sp(const struct ftrace_regs *fregs);
unsigned long ufg_fregs_arg(const struct ftrace_regs *fregs, unsigned int n);
unsigned long ufg_fregs_retval(const struct ftrace_regs *fregs);

/* KUnit: kunit_set_failure() and kunit_err() are inline/macros. */
void ufg_kunit_fail(struct kunit *test, const char *msg);
void ufg_kunit_info(struct kunit *test, const char *msg);

struct module *ufg_this_module(void);

/* Test fixtures (testfns.c), linked into ufgraph_kunit.ko only. */
int ufg_test_add(int a, int b);
long ufg_test_mul(long a, long b);

#endif
