# CFI shapes for test_cfi (tests/unit/test_cfi.c), linked at test time by
# the machine's own toolchain: cc -shared -nostdlib -o cfi-rows.so cfi-rows.s
# Each label marks an instruction a test puts a pc at.
	.text

# gcc's epilogue inside a body: remember_state before it, one-instruction
# rows for each pop, restore_state after it (libdw says the row after the
# restore starts at the remember's address)
	.globl	epi
	.type	epi, @function
	.p2align 4
epi:
	.cfi_startproc
	push	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	push	%rbx
	.cfi_def_cfa_offset 24
	.cfi_offset %rbx, -24
	sub	$8, %rsp
	.cfi_def_cfa_offset 32
	test	%rdi, %rdi
	je	1f
	.cfi_remember_state
	add	$8, %rsp
	.cfi_def_cfa_offset 24
	pop	%rbx
	.cfi_def_cfa_offset 16
	.globl	epi_pop_rbp
epi_pop_rbp:
	pop	%rbp
	.cfi_def_cfa_offset 8
	ret
1:
	.cfi_restore_state
	.globl	epi_body2
epi_body2:
	nop
	nop
	.globl	epi_body2_late
epi_body2_late:
	nop
	add	$8, %rsp
	.cfi_def_cfa_offset 24
	pop	%rbx
	.cfi_def_cfa_offset 16
	pop	%rbp
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size	epi, .-epi

# the outermost frame: the return address is undefined (glibc's _start)
	.globl	outer
	.type	outer, @function
	.p2align 4
outer:
	.cfi_startproc
	.cfi_undefined %rip
	nop
	.globl	outer_body
outer_body:
	call	epi
	nop
	.globl	outer_interrupted
outer_interrupted:
	nop
	hlt
	.cfi_endproc
	.size	outer, .-outer

# glibc's PLT CFA as an expression: rsp + 8 + ((rip & 15) >= 11) * 8
	.globl	plt_like
	.type	plt_like, @function
	.p2align 4
plt_like:
	.cfi_startproc
	.cfi_escape 0x0f, 0x0b, 0x77, 0x08, 0x80, 0x00, 0x3f, 0x1a, 0x3b, 0x2a, 0x33, 0x24, 0x22
	.rept 16
	nop
	.endr
	.cfi_endproc
	.size	plt_like, .-plt_like

# a signal trampoline as glibc's __restore_rt describes it: 'S', the CFA
# read from the saved context (DW_CFA_def_cfa_expression), rip and rsp
# saved there (DW_CFA_expression), rbx a value (DW_CFA_val_expression);
# the FDE starts a byte early, so that a return address at the label
# looked up at pc - 1 finds it
	.p2align 4
	.type	sig_tramp, @function
	.cfi_startproc simple
	.cfi_signal_frame
	.cfi_escape 0x0f, 0x04, 0x77, 0xa0, 0x01, 0x06
	.cfi_escape 0x10, 0x10, 0x03, 0x77, 0xa8, 0x01
	.cfi_escape 0x10, 0x07, 0x03, 0x77, 0xa0, 0x01
	.cfi_escape 0x16, 0x03, 0x02, 0x77, 0x10
	nop
	.globl	sig_tramp
sig_tramp:
	mov	$15, %rax
	syscall
	.cfi_endproc
	.size	sig_tramp, .-sig_tramp

# a handler whose return address is the trampoline
	.globl	handler
	.type	handler, @function
	.p2align 4
handler:
	.cfi_startproc
	nop
	.globl	handler_body
handler_body:
	ret
	.cfi_endproc
	.size	handler, .-handler

# libgcc's _Unwind_RaiseException leaving through a register: CFA rsp+0,
# the return address in rcx
	.globl	jump_out
	.type	jump_out, @function
	.p2align 4
jump_out:
	.cfi_startproc
	pop	%rcx
	.cfi_register %rip, %rcx
	.cfi_def_cfa_offset 0
	.globl	jump_out_jmp
jump_out_jmp:
	jmp	*%rcx
	.cfi_endproc
	.size	jump_out, .-jump_out

# no CFI at all: perf's walk takes the frame pointer here
	.globl	nocfi
	.type	nocfi, @function
	.p2align 4
nocfi:
	nop
	.globl	nocfi_body
nocfi_body:
	nop
	ret
	.size	nocfi, .-nocfi
	.section	.note.GNU-stack,"",@progbits
