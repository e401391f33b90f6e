// SPDX-License-Identifier: GPL-2.0

//! KUnit suites written in Rust (the 6.12 kernel crate has assertions, but no way to declare a
//! suite).
//!
//! [`kunit_suite!`](crate::kunit_suite) lays out a `struct kunit_suite` and its `struct kunit_case`
//! array as statics and puts a pointer to the suite in the module's `.kunit_test_suites` section,
//! exactly where `kunit_test_suites()` puts it in C: the module loader finds it there and KUnit
//! runs the suite when the module goes live, printing KTAP.
//!
//! A case is a plain `fn(&mut Test) -> CaseResult`; the checking macros return early with
//! [`Failed`] after marking the test failed and logging where and why.

use crate::bindings;
use core::fmt::{self, Write};

/// A running KUnit test case.
pub struct Test {
    raw: *mut bindings::kunit,
}

/// A check failed; the failure is already recorded in the KUnit test.
#[derive(Debug)]
pub struct Failed;

/// What a test case returns.
pub type CaseResult = Result<(), Failed>;

impl From<kernel::error::Error> for Failed {
    fn from(e: kernel::error::Error) -> Self {
        // Logged by `Test::check_ok`, the way to turn kernel errors into failures with context.
        let _ = e;
        Failed
    }
}

// Formats into a fixed buffer, truncating: failure messages must not allocate.
struct Buf {
    b: [u8; 256],
    n: usize,
}

impl Write for Buf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.b.len() - 1 - self.n;
        let take = s.len().min(room);
        crate::sys::slice::copy(&mut self.b[self.n..self.n + take], &s.as_bytes()[..take]);
        self.n += take;
        Ok(())
    }
}

impl Test {
    /// Wraps the `struct kunit` KUnit passes to a case.
    ///
    /// # Safety
    ///
    /// `raw` must be the live `struct kunit` of the running case.
    pub unsafe fn from_raw(raw: *mut bindings::kunit) -> Self {
        Self { raw }
    }

    fn emit(&self, fail: bool, args: fmt::Arguments<'_>) {
        let mut buf = Buf { b: [0; 256], n: 0 };
        let _ = buf.write_fmt(args);
        buf.b[buf.n] = 0;
        let msg = buf.b.as_ptr().cast();
        // SAFETY: `self.raw` is the live test (type invariant); `msg` is NUL-terminated and
        // outlives the call, which copies it.
        unsafe {
            if fail {
                bindings::ufg_kunit_fail(self.raw, msg)
            } else {
                bindings::ufg_kunit_info(self.raw, msg)
            }
        }
    }

    /// Marks the test failed with a message.
    pub fn fail(&self, args: fmt::Arguments<'_>) -> Failed {
        self.emit(true, args);
        Failed
    }

    /// Marks the test skipped, with why: the case should return right after.
    pub fn skip(&self, why: &kernel::str::CStr) {
        // SAFETY: `self.raw` is the live test (type invariant); `why` is NUL-terminated and
        // the glue copies it.
        unsafe { bindings::ufg_kunit_skip(self.raw, why.as_char_ptr()) };
    }

    /// Logs a diagnostic line in the test's KTAP output.
    pub fn info(&self, args: fmt::Arguments<'_>) {
        self.emit(false, args);
    }

    /// Unwraps a kernel `Result`, failing the test with the error and where it happened.
    #[track_caller]
    pub fn check_ok<T>(&self, r: kernel::error::Result<T>, what: &str) -> Result<T, Failed> {
        r.map_err(|e| {
            let loc = core::panic::Location::caller();
            self.fail(format_args!(
                "{}:{}: {} failed: {:?}",
                loc.file(),
                loc.line(),
                what,
                e
            ))
        })
    }
}

/// Fails the test (and returns from the case) unless `cond` holds.
#[macro_export]
macro_rules! kcheck {
    ($t:expr, $cond:expr $(,)?) => {
        if !$cond {
            return Err($t.fail(format_args!("{}:{}: check failed: {}", file!(), line!(), stringify!($cond))));
        }
    };
    ($t:expr, $cond:expr, $($fmt:tt)+) => {
        if !$cond {
            return Err($t.fail(format_args!("{}:{}: check failed: {}: {}", file!(), line!(),
                stringify!($cond), format_args!($($fmt)+))));
        }
    };
}

/// Fails the test (and returns from the case) unless `a == b`, printing both.
#[macro_export]
macro_rules! kcheck_eq {
    ($t:expr, $a:expr, $b:expr $(,)?) => {{
        let (a, b) = (&$a, &$b);
        if a != b {
            return Err($t.fail(format_args!(
                "{}:{}: {} == {} failed: {:?} != {:?}",
                file!(),
                line!(),
                stringify!($a),
                stringify!($b),
                a,
                b
            )));
        }
    }};
}

/// Copies a suite name into the fixed `char name[256]` of `struct kunit_suite`, at compile time.
pub const fn suite_name(s: &str) -> [u8; 256] {
    let b = s.as_bytes();
    assert!(b.len() < 256, "KUnit suite name too long");
    let mut out = [0u8; 256];
    let mut i = 0;
    while i < b.len() {
        out[i] = b[i];
        i += 1;
    }
    out
}

/// A `struct kunit_case` for the array a suite points to.
pub const fn case(
    run: unsafe extern "C" fn(*mut bindings::kunit),
    name: &'static kernel::str::CStr,
) -> bindings::kunit_case {
    // SAFETY: all-zero is the valid "no params, no attributes, not run yet" kunit_case.
    let mut c: bindings::kunit_case = unsafe { core::mem::zeroed() };
    c.run_case = Some(run);
    c.name = name.as_char_ptr();
    c
}

/// The all-zero case that ends a case array.
pub const fn end_case() -> bindings::kunit_case {
    // SAFETY: all-zero is the terminator KUnit looks for (`run_case == NULL`).
    unsafe { core::mem::zeroed() }
}

/// Whether the cases must be skipped: they count on a graph core nobody else uses, so they do
/// not run (KUnit reports them skipped) when the module was loaded with a user of its own
/// (`func=`, `graph=`: a test of coexisting ufgraph instances loads it that way).
pub fn must_skip() -> bool {
    crate::param_func().is_some() || crate::param_graph().is_some()
}

/// A pointer to a suite in `.kunit_test_suites`.
#[repr(transparent)]
pub struct SuitePtr(pub *mut bindings::kunit_suite);
// SAFETY: the pointer is only read, by KUnit, which serialises the runs of a suite.
unsafe impl Sync for SuitePtr {}

/// Declares a KUnit suite of Rust cases:
///
/// ```ignore
/// kunit_suite!(COUNTER_SUITE, "ufgraph_counter", [counts_calls, rejects_bad_glob]);
/// ```
///
/// Each case is a `fn(&mut Test) -> CaseResult` in scope; its KTAP name is its Rust name.
#[macro_export]
macro_rules! kunit_suite {
    ($id:ident, $name:literal, [$($case:ident),+ $(,)?]) => {
        #[allow(non_snake_case)]
        mod $id {
            use $crate::bindings;
            use $crate::sys::ktest::{case, end_case, suite_name, SuitePtr, Test};

            $(
                /// The KUnit case.
                ///
                /// # Safety
                ///
                /// Called by KUnit only, with the live `struct kunit` of this run.
                unsafe extern "C" fn $case(raw: *mut bindings::kunit) {
                    if $crate::sys::ktest::must_skip() {
                        // SAFETY: as below; the glue marks the case skipped.
                        unsafe { bindings::ufg_kunit_skip(raw, kernel::c_str!("the module was loaded with a user of its own (func=, graph=)").as_char_ptr()) };
                        return;
                    }
                    // SAFETY: KUnit calls a case with the live `struct kunit` of this run.
                    let mut t = unsafe { Test::from_raw(raw) };
                    let _ = super::$case(&mut t);
                }
            )+

            const N: usize = [$(stringify!($case)),+].len();
            static mut CASES: [bindings::kunit_case; N + 1] = {
                let mut cases = [end_case(); N + 1];
                let mut i = 0;
                $(
                    cases[i] = case($case, kernel::c_str!(stringify!($case)));
                    i += 1;
                )+
                let _ = i;
                cases
            };
            static mut SUITE: bindings::kunit_suite = {
                // SAFETY: all-zero is a valid suite with no init/exit hooks and no attributes.
                let mut s: bindings::kunit_suite = unsafe { core::mem::zeroed() };
                s.name = suite_name($name);
                s.test_cases = core::ptr::addr_of_mut!(CASES).cast();
                s
            };
            #[used]
            #[link_section = ".kunit_test_suites"]
            static PTR: SuitePtr = SuitePtr(core::ptr::addr_of_mut!(SUITE));
        }
    };
}
