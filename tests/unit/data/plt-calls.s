# tests/unit/test_cfi.c: two calls through the PLT, linked at test time by
# lld and by ld without its PLT's CFI (--no-ld-generated-unwind-info), each
# also with IBT's PLT (.plt.sec); the caller's own CFI is the assembler's.
	.text
	.globl	caller
	.type	caller, @function
caller:
	.cfi_startproc
	call	ext_a@PLT
	.globl	caller_ret
caller_ret:
	call	ext_b@PLT
	ret
	.cfi_endproc
	.size	caller, .-caller
	.section .note.GNU-stack,"",@progbits
