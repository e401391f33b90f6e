/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ufgraph's return trampoline for arm64.
 *
 * How we get here. A hooked function F is entered through its patched prologue,
 * `mov x9, lr; bl ftrace_caller`, before any instruction of its own. ftrace_caller saves the
 * caller's registers in a struct ftrace_regs FREGS_SIZE + 32 bytes below F's entry stack
 * pointer (S), the link register in its `lr` field, runs the ftrace callbacks, then loads x30
 * back from that field. Our entry callback wrote our address there, so F's body runs with
 * x30 = ufgraph_return_trampoline, saves it in its frame record if it calls anything, and
 * its final `ret` lands here, with:
 *
 *   sp  = S           (AAPCS64: a function returns with the stack pointer it was given)
 *   x29 = the caller's frame pointer (F restored it, or never changed it)
 *   x0..x7 = the result registers (x0; x0 and x1 for 128-bit values and small structures)
 *   x30 = our own address (or whatever another hooker that F returned to first left there)
 *
 * We build the exit-side ftrace_regs exactly where ftrace_caller had the entry-side ones
 * of the same call, and a frame record on top of them, as if F had called us:
 *
 *   S      -> +--------------------------------+ <- the caller's frame
 *             | x29 (caller's fp) | trampoline |    frame record; x29 points here
 *   S - 16 -> +--------------------------------+
 *             | (16 bytes, unused)             |    ftrace_caller's second record
 *   S - 32 -> +--------------------------------+
 *             | ftrace_regs: x0..x8, fp, lr,   |    exit registers, at the address of
 *             |   sp = S, pc = trampoline      |    the entry ones: &regs->lr == retp
 *   sp     -> +--------------------------------+
 *
 * - Same address as the entry registers: the frame's `retp` (the entry `lr` field) is then
 *   the exit `lr` field, which is how src/fgraph/arch/arm64.rs matches a return to its frame
 *   (a stack pointer test, like x86_64's).
 * - The frame record's return address is the trampoline's until ufgraph_return_handler()
 *   has found the frame, and then, before any return callback runs, the real return address
 *   of the frame being returned from (settle_slot in arm64.rs): the kernel's unwinder, which
 *   follows frame records, shows F's real caller in a trace taken in a return callback, and
 *   ufgraph's unwinder (ufgraph_stack_trace_save) recognises the record either way. Without
 *   a record, a trace taken in a return callback would skip F's caller and map the next
 *   trampoline it meets to the wrong frame.
 * - fp and sp are what upstream's HAVE_FUNCTION_GRAPH_FP_TEST and the return callbacks
 *   read; lr is x30 as we got it; pc is the trampoline: the real address is only known
 *   once ufgraph_return_handler() has popped the frame.
 *
 * Registers: we save and restore x0..x8 and x29; x9..x11 are scratch (caller-saved:
 * F's caller cannot expect them back from F); x18 (the shadow call stack pointer when
 * SCS is on) is never touched here and is preserved by the compiled handler. x30 ends up
 * as the real return address, and we leave with `ret`. The stack pointer stays 16-byte
 * aligned: S is, and FREGS_SIZE + 32 is a multiple of 16 (checked below).
 *
 * BTI. We are only ever reached by a `ret` (F's, or another hooker's trampoline returning
 * to the address it saved, or an exception return for a kretprobe's brk): none is a
 * BTI-checked branch (only BR/BLR are), so there is no `bti c` landing pad, exactly as for
 * the kernel's return_to_handler. SYM_CODE_START, unlike arm64's SYM_FUNC_START, adds none.
 * The way out is `ret` too (x30), which needs no landing pad at the target and returns to
 * the address the return stack predictor holds for F's call, once our own `bl` has
 * balanced. No C code calls us, so no kCFI type hash either. (Module text is mapped
 * guarded, PTE_GP, when the kernel enforces BTI: what matters is that no BR/BLR targets us;
 * kernel objects carry no BTI property note, only the vDSO's do.)
 *
 * PAC (CONFIG_ARM64_PTR_AUTH_KERNEL, -mbranch-protection=pac-ret). A non-leaf F starts
 * its own code with PACIASP, which signs x30 with the stack pointer as modifier, stores the
 * signed value in its frame record, and authenticates it with AUTIASP before `ret`. The
 * ftrace call sits in the patched NOPs *before* PACIASP, and ftrace_caller hands x30 back
 * with the stack pointer restored to S: F signs our address, not the original, and the
 * authentication at its end checks the very value it signed. That is the ordering upstream's
 * prepare_ftrace_return() relies on when it swaps the same `lr` field. Changing the return
 * address *after* PACIASP (in the frame record) would need re-signing with the task's key
 * and S: ufgraph's hand-back at unload therefore leaves signed slots alone (see arm64.rs).
 * Our trampoline signs nothing: it saves no return address of its own (the record holds a
 * constant, and the handler is compiled code that protects its own x30). Its frame record
 * holds a plain address, which the unwinder's PAC stripping leaves unchanged.
 *
 * Shadow call stack: with SCS, F pushes x30 (our address) on the shadow stack in its
 * prologue and pops it into x30 for `ret`: still our address, still correct.
 */
#include <linux/linkage.h>
#include <asm/asm-offsets.h>
#include <asm/assembler.h>

#ifndef CONFIG_DYNAMIC_FTRACE_WITH_ARGS
#error "ufgraph on arm64 needs DYNAMIC_FTRACE_WITH_ARGS (ftrace_regs with the link register)"
#endif

/* What ftrace_caller reserves below S: its ftrace_regs and two frame records. */
#define UFG_FRAME	(FREGS_SIZE + 32)

	.if (FREGS_SIZE % 16) != 0
	.error "ufgraph: FREGS_SIZE is not a multiple of 16: the stack would be misaligned"
	.endif

	.text

SYM_CODE_START(ufgraph_return_trampoline)
	/* The entry registers of this call lived here (see frame_matches in arm64.rs). */
	sub	sp, sp, #UFG_FRAME

	/* A frame record for "F called us from the trampoline", first, for unwinders. */
	adr	x10, ufgraph_return_trampoline
	stp	x29, x10, [sp, #(FREGS_SIZE + 16)]

	/* The result registers, and x8: not one, but it costs nothing to give it back. */
	stp	x0, x1, [sp, #FREGS_X0]
	stp	x2, x3, [sp, #FREGS_X2]
	stp	x4, x5, [sp, #FREGS_X4]
	stp	x6, x7, [sp, #FREGS_X6]
	str	x8,     [sp, #FREGS_X8]

	/* The caller's frame pointer, x30 as it came, the stack pointer F left, and here. */
	str	x29, [sp, #FREGS_FP]
	str	x30, [sp, #FREGS_LR]
	add	x9, sp, #UFG_FRAME
	str	x9,  [sp, #FREGS_SP]
	str	x10, [sp, #FREGS_PC]

	add	x29, sp, #(FREGS_SIZE + 16)

	/* addr = ufgraph_return_handler(fregs): return callbacks, pop, the real address. */
	mov	x0, sp
	bl	ufgraph_return_handler

	/*
	 * The frame is popped: drop our record from the chain at once, so that a trace taken
	 * in an interrupt from here on does not give the next frame's address to it.
	 */
	ldr	x29, [sp, #FREGS_FP]
	mov	x30, x0

	ldp	x0, x1, [sp, #FREGS_X0]
	ldp	x2, x3, [sp, #FREGS_X2]
	ldp	x4, x5, [sp, #FREGS_X4]
	ldp	x6, x7, [sp, #FREGS_X6]
	ldr	x8,     [sp, #FREGS_X8]
	add	sp, sp, #UFG_FRAME

	ret
SYM_CODE_END(ufgraph_return_trampoline)
/* A kprobe in here would run probe handlers between a return and its bookkeeping. */
NOKPROBE(ufgraph_return_trampoline)
