/* SPDX-License-Identifier: GPL-2.0 */
/*
 * ufgraph's return trampoline for x86_64.
 *
 * A hooked function's return address was replaced, at its entry, by the address of
 * ufgraph_return_trampoline; its `ret` lands here with %rax/%rdx holding the return value
 * and %rsp just above the slot that held the address. We build the exit-side
 * ftrace_regs (the return registers, %rbp, the stack pointer the function left), let
 * ufgraph_return_handler() run the return callbacks and give us the real return
 * address, restore the return registers and go there.
 *
 *   entry:  rsp -> [caller's frame]          (the `ret` popped our address from rsp-8)
 *   then:   rsp -> [ftrace_regs (pt_regs)][slot rsp-8, still holding our address]
 *
 * Re-claiming the slot below the stack pointer makes the frame look like a call to us
 * from the hooked function's caller: UNWIND_HINT_FUNC then lets an unwinder started inside
 * a return callback walk out through the trampoline. ufgraph_return_handler() writes the
 * real return address into that slot once it has found the frame, before any return
 * callback runs (settle_slot in src/fgraph/arch/x86_64.rs), so the kernel's own unwinder
 * (stack_trace_save() in a callback, perf callchains) goes on to the real caller.
 *
 * Our address also turns up as the return address of hooked frames further out. The
 * kernel's unwinder cannot know where their real return addresses are (on our shadow
 * stack): it looks up the unwind data of the instruction before a return address, and the
 * guard below, just before the trampoline's first byte, tells it "undefined": it stops
 * there cleanly instead of reading whatever code the linker put before us.
 * ufgraph_stack_trace_save() walks through them.
 *
 * We are reached by `ret`, never by an indirect call or jump: no ENDBR (IBT only checks
 * indirect branch targets). The way out is a `ret` too, through a call that puts the
 * real address on the stack (as upstream's return_to_handler does): an indirect `jmp`
 * would need an ENDBR at the target, and `ret` keeps the return stack buffer balanced.
 * With return thunks configured, RET becomes the thunk.
 */
#include <linux/linkage.h>
#include <asm/asm-offsets.h>
#include <asm/ptrace.h>
#include <asm/alternative.h>
#include <asm/nospec-branch.h>
#include <asm/unwind_hints.h>

	.code64
	.section .text, "ax"

SYM_CODE_START(ufgraph_return_trampoline_guard)
	UNWIND_HINT_UNDEFINED
	ANNOTATE_NOENDBR
	int3
SYM_INNER_LABEL(ufgraph_return_trampoline, SYM_L_GLOBAL)
	UNWIND_HINT_UNDEFINED
	ANNOTATE_NOENDBR

	/* The stack pointer as the hooked function left it. */
	movq	%rsp, %rdi
	subq	$8, %rsp
	UNWIND_HINT_FUNC

	subq	$PTREGS_SIZE, %rsp
	movq	%rax, RAX(%rsp)
	movq	%rdx, RDX(%rsp)
	movq	%rbp, RBP(%rsp)
	movq	%rdi, RSP(%rsp)
	/*
	 * cs = 0: these are partial registers (ftrace_get_regs() says NULL). The block is a
	 * whole pt_regs: the kretprobe shim fills the rest in place for its handler, and puts
	 * cs back to 0 after it (sys::regs::with_exit_pt_regs). Only RAX and RDX are read back.
	 */
	movq	$0, CS(%rsp)
	movq	%rsp, %rdi

	call	ufgraph_return_handler

	movq	%rax, %rdi
	movq	RDX(%rsp), %rdx
	movq	RAX(%rsp), %rax
	addq	$PTREGS_SIZE + 8, %rsp
	/*
	 * From here the frame cannot be described: the real return address is in %rdi, and
	 * the call below pushes an address inside this trampoline. An unwinder that lands
	 * here (a stack trace taken from an interrupt) must stop, not walk that address.
	 */
	UNWIND_HINT_UNDEFINED

	ANNOTATE_INTRA_FUNCTION_CALL
	call	.Lufg_do_ret
	int3
.Lufg_do_ret:
	movq	%rdi, (%rsp)
	ALTERNATIVE __stringify(RET), \
		    __stringify(ANNOTATE_UNRET_SAFE; ret; int3), \
		    X86_FEATURE_CALL_DEPTH
SYM_CODE_END(ufgraph_return_trampoline_guard)
