// SPDX-License-Identifier: GPL-2.0
/*
 * KUnit (src/sys/ktest.rs): kunit_set_failure(), kunit_err(), kunit_info() and
 * kunit_mark_skipped() are macros or static inlines.
 */

void ufg_kunit_fail(struct kunit *test, const char *msg)
{
	kunit_set_failure(test);
	kunit_err(test, "%s", msg);
}

void ufg_kunit_info(struct kunit *test, const char *msg)
{
	kunit_info(test, "%s", msg);
}

void ufg_kunit_skip(struct kunit *test, const char *msg)
{
	kunit_mark_skipped(test, "%s", msg);
}
