// SPDX-License-Identifier: GPL-2.0
/*
 * Test fixtures for the KUnit suites (linked into ufgraph_kunit.ko only): plain,
 * traceable C functions with known results. Rust functions are not ftrace-
 * instrumented in 6.12, so hook targets have to be C.
 */
#include <linux/compiler.h>
#include "glue.h"

noinline int ufg_test_add(int a, int b)
{
	return a + b;
}

noinline long ufg_test_mul(long a, long b)
{
	return a * b;
}
