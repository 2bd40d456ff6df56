/* Hand-written fiber context switch (no syscalls, unlike glibc swapcontext).
 *
 *   void emu_fiber_switch(void **save_sp, void *new_sp);
 *     saves the callee-saved registers of the running context on its stack,
 *     stores its stack pointer in *save_sp and resumes the context whose stack
 *     pointer is new_sp.
 *   emu_fiber_trampoline: first "return address" of a fresh fiber; calls
 *     entry(arg) with entry/arg taken from callee-saved registers prepared by
 *     emu_fiber_init (runtime.cpp).  entry never returns.
 * Floating-point control state (MXCSR / FPCR) is shared by all fibers of a
 * launch and never changed by kernels, so it is not switched.
 */
#if defined(__x86_64__)
        .text
        .globl  emu_fiber_switch
        .hidden emu_fiber_switch
        .type   emu_fiber_switch,@function
emu_fiber_switch:
        pushq   %rbp
        pushq   %rbx
        pushq   %r12
        pushq   %r13
        pushq   %r14
        pushq   %r15
        movq    %rsp, (%rdi)
        movq    %rsi, %rsp
        popq    %r15
        popq    %r14
        popq    %r13
        popq    %r12
        popq    %rbx
        popq    %rbp
        ret
        .size   emu_fiber_switch,.-emu_fiber_switch

        .globl  emu_fiber_trampoline
        .hidden emu_fiber_trampoline
        .type   emu_fiber_trampoline,@function
emu_fiber_trampoline:
        /* r12 = entry, r13 = arg; rsp is 16-byte aligned here */
        movq    %r13, %rdi
        callq   *%r12
        ud2
        .size   emu_fiber_trampoline,.-emu_fiber_trampoline
        .section .note.GNU-stack,"",@progbits

#elif defined(__aarch64__)
        .text
        .globl  emu_fiber_switch
        .hidden emu_fiber_switch
        .type   emu_fiber_switch,%function
emu_fiber_switch:
        sub     sp, sp, #176
        stp     x19, x20, [sp, #0]
        stp     x21, x22, [sp, #16]
        stp     x23, x24, [sp, #32]
        stp     x25, x26, [sp, #48]
        stp     x27, x28, [sp, #64]
        stp     x29, x30, [sp, #80]
        stp     d8,  d9,  [sp, #96]
        stp     d10, d11, [sp, #112]
        stp     d12, d13, [sp, #128]
        stp     d14, d15, [sp, #144]
        mov     x9, sp
        str     x9, [x0]
        mov     sp, x1
        ldp     x19, x20, [sp, #0]
        ldp     x21, x22, [sp, #16]
        ldp     x23, x24, [sp, #32]
        ldp     x25, x26, [sp, #48]
        ldp     x27, x28, [sp, #64]
        ldp     x29, x30, [sp, #80]
        ldp     d8,  d9,  [sp, #96]
        ldp     d10, d11, [sp, #112]
        ldp     d12, d13, [sp, #128]
        ldp     d14, d15, [sp, #144]
        add     sp, sp, #176
        ret
        .size   emu_fiber_switch,.-emu_fiber_switch

        .globl  emu_fiber_trampoline
        .hidden emu_fiber_trampoline
        .type   emu_fiber_trampoline,%function
emu_fiber_trampoline:
        /* x19 = entry, x20 = arg */
        mov     x0, x20
        blr     x19
        brk     #0
        .size   emu_fiber_trampoline,.-emu_fiber_trampoline
        .section .note.GNU-stack,"",%progbits
#else
#error "CPU emulator fibers support x86-64 and aarch64 only"
#endif
