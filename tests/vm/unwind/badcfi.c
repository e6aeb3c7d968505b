/*
 * Workload for tests/suites/83-unwind.sh: a function whose CFI misses a
 * push (as glibc's i386 memcpy's does), so the return address its CFI
 * reads is the pushed pointer into .bss.  Built -static for i386 (the
 * data segment one page off its file offsets: perf's walk fails there)
 * and for x86-64 (offsets kept: perf prints the data frame, then stops).
 * x86-64 also calls strlen in a loop: a static binary calls glibc's
 * IFUNCs through .plt stubs that no CFI covers, where perf's walk stops
 * (its libdw falls back to the frame pointer) and dstack's walks on.
 */
#include <string.h>
static volatile unsigned long sink;
char buf[4096];
void lying(unsigned long n);
#ifdef __i386__
__asm__(".text\n.globl lying\n.type lying,@function\nlying:\n.cfi_startproc\n"
	"\tpushl $buf+0x100\n"          /* no .cfi_adjust_cfa_offset */
	"\tmovl 8(%esp), %ecx\n"
	"1:\tdecl %ecx\n\tjnz 1b\n"
	"\taddl $4, %esp\n\tret\n.cfi_endproc\n.size lying, .-lying\n");
#else
__asm__(".text\n.globl lying\n.type lying,@function\nlying:\n.cfi_startproc\n"
	"\tleaq buf+0x100(%rip), %rax\n\tpushq %rax\n"   /* no .cfi_adjust_cfa_offset */
	"\tmovq %rdi, %rcx\n"
	"1:\tdecq %rcx\n\tjnz 1b\n"
	"\taddq $8, %rsp\n\tret\n.cfi_endproc\n.size lying, .-lying\n");
#endif
__attribute__((noinline)) static void outer(int i) { lying(20000000); sink += (unsigned long)i; }
static const char *volatile empty = buf;
__attribute__((noinline)) static void stubs(long n) { for (long i = 0; i < n; i++) sink += strlen(empty); }
int main(void)
{
	for (int i = 0; i < 10; i++)
		outer(i);
#ifndef __i386__
	stubs(15000000);
#endif
	return sink == 45 ? 0 : 1;
}
