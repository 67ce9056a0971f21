/* gpu_simt_fiber.c — the fibers the SIMT emulator (gpu_simt.c) runs a block's threads on: one stack and one
 * saved context per thread, and a scheduler context (whoever called frt_fiber_resume) they switch back to.
 * A fiber may also hand the CPU straight to another fiber (frt_fiber_switch), which halves the switches when
 * the scheduler only picks who runs next.
 *
 * Stacks (64 KiB; 256 KiB under ASan, whose redzones make frames larger: a kernel's frames are small, but
 * the sanitizers' own reports run on the fiber's stack) live in one mmap, grown (never shrunk) when a launch
 * wants more threads than it has, each with a PROT_NONE guard page below it, so a kernel that overflows its
 * stack faults instead of writing over its neighbour's. Fibers never end: a fiber's function loops (run the
 * kernel for its thread, yield, run it again for the next block), so nothing is created per block. A fiber
 * left mid-kernel (a launch stopped by a deadlock) is started afresh the next time (frt_fiber_start).
 *
 * Switching: on x86-64 a hand-written switch (push the callee-saved registers, swap stack pointers, pop, ret:
 * about 20 instructions, no system call); elsewhere, or with $FLOWRT_SIMT_FIBERS=ucontext (so the fallback is
 * tested on x86-64 too), makecontext/swapcontext, whose swapcontext calls sigprocmask at every switch. The
 * hand-written switch saves no floating-point control state (MXCSR, x87 control word): every fiber runs on
 * the same OS thread and nothing the emulator runs changes them, so there is nothing per fiber to keep. It
 * starts with endbr64 (a no-op without CET's indirect branch tracking), and is not used while this thread has
 * a CET shadow stack (rdsspq reads a non-zero pointer), which its return into another stack would trip;
 * glibc's swapcontext knows shadow stacks.
 *
 * AddressSanitizer tracks which stack a thread is on; every switch is announced with
 * __sanitizer_start_switch_fiber and confirmed with __sanitizer_finish_switch_fiber, and a fiber stack that
 * was abandoned mid-call is unpoisoned before it is reused (its frames never returned to clear their
 * redzones).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include "flowrt_internal.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FRT_FIBER_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define FRT_FIBER_ASAN 1
#endif
#ifdef FRT_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define FRT_FIBER_STACK (256u * 1024u)
#else
#define FRT_FIBER_STACK (64u * 1024u)
#endif

#if defined(__x86_64__)
#define FRT_FIBER_ASM 1
/* frt_fiber_switch_x86_64(save, load): pushes rbp, rbx, r12-r15, stores rsp in *save, loads rsp = load, pops
 * the same registers of the other context and returns into it. A new context's frame (frt_fiber_start)
 * returns into frt_fiber_entry_x86_64 with the function in r13 and its argument in r12. */
__asm__(".text\n"
        ".globl frt_fiber_switch_x86_64\n"
        ".hidden frt_fiber_switch_x86_64\n"
        ".type frt_fiber_switch_x86_64,@function\n"
        ".p2align 4\n"
        "frt_fiber_switch_x86_64:\n"
        "  endbr64\n"
        "  pushq %rbp\n"
        "  pushq %rbx\n"
        "  pushq %r12\n"
        "  pushq %r13\n"
        "  pushq %r14\n"
        "  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n"
        "  popq %r14\n"
        "  popq %r13\n"
        "  popq %r12\n"
        "  popq %rbx\n"
        "  popq %rbp\n"
        "  ret\n"
        ".size frt_fiber_switch_x86_64, .-frt_fiber_switch_x86_64\n"
        ".globl frt_fiber_entry_x86_64\n"
        ".hidden frt_fiber_entry_x86_64\n"
        ".type frt_fiber_entry_x86_64,@function\n"
        ".p2align 4\n"
        "frt_fiber_entry_x86_64:\n"
        "  endbr64\n"
        "  movq %r12, %rdi\n"
        "  callq *%r13\n"
        "  ud2\n"
        ".size frt_fiber_entry_x86_64, .-frt_fiber_entry_x86_64\n");
void frt_fiber_switch_x86_64(void **save, void *load) __attribute__((visibility("hidden")));
void frt_fiber_entry_x86_64(void) __attribute__((visibility("hidden")));
#endif

#ifdef FRT_FIBER_ASM
/* rdsspq is a no-op (the register keeps its 0) on CPUs without CET and while shadow stacks are off. */
static bool shadow_stack_active(void) {
  uint64_t ssp = 0;
  __asm__ volatile("rdsspq %0" : "+r"(ssp));
  return ssp != 0;
}
#endif

/* Where fiber i's stack starts (its lowest address, above the guard page) in the mapping. */
static unsigned char *stack_lo(const FrtFiberPool *p, int32_t i) {
  return p->map + (size_t)i * p->slot_bytes + p->guard_bytes;
}

FrtStatus frt_fibers_init(FrtFiberPool *p, void (*fn)(void *ctx, int32_t i), void *ctx, FrtError *err) {
  memset(p, 0, sizeof *p);
  p->fn = fn;
  p->ctx = ctx;
  p->current = -1;
  const char *mode = getenv("FLOWRT_SIMT_FIBERS");
  if (mode && *mode && strcmp(mode, "ucontext") != 0 && strcmp(mode, "native") != 0)
    return frt_errorf(err, FRT_ERR_INPUT, "FLOWRT_SIMT_FIBERS wants native or ucontext, got '%s'", mode);
#ifdef FRT_FIBER_ASM
  p->use_ucontext = (mode && strcmp(mode, "ucontext") == 0) || shadow_stack_active();
#else
  p->use_ucontext = true;
#endif
  long page = sysconf(_SC_PAGESIZE);
  p->guard_bytes = page > 0 ? (size_t)page : 4096;
  p->stack_bytes = (FRT_FIBER_STACK + p->guard_bytes - 1) / p->guard_bytes * p->guard_bytes;
  p->slot_bytes = p->guard_bytes + p->stack_bytes;
  return FRT_OK;
}

FrtStatus frt_fibers_reserve(FrtFiberPool *p, int32_t n, FrtError *err) {
  if (n <= p->cap)
    return FRT_OK;
  size_t bytes;
  if (frt_mul_overflows((size_t)n, p->slot_bytes, &bytes))
    return frt_errorf(err, FRT_ERR_RESOURCE, "%d fiber stacks: size overflows", (int)n);
  unsigned char *map = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED)
    return frt_errorf(err, FRT_ERR_RESOURCE, "cannot map %zu bytes of fiber stacks: %s", bytes, strerror(errno));
  for (int32_t i = 0; i < n; i++) {
    if (mprotect(map + (size_t)i * p->slot_bytes, p->guard_bytes, PROT_NONE) != 0) {
      int e = errno;
      munmap(map, bytes);
      return frt_errorf(err, FRT_ERR_RESOURCE, "cannot protect a fiber stack's guard page: %s", strerror(e));
    }
  }
  void **sp = calloc((size_t)n, sizeof *sp);
  bool *started = calloc((size_t)n, sizeof *started);
  /* The last ucontext is the scheduler's. */
  ucontext_t *uc = p->use_ucontext ? calloc((size_t)n + 1, sizeof *uc) : NULL;
  if (!sp || !started || (p->use_ucontext && !uc)) {
    free(sp);
    free(started);
    free(uc);
    munmap(map, bytes);
    return frt_errorf(err, FRT_ERR_RESOURCE, "out of memory for %d fibers", (int)n);
  }
  /* Nothing runs on the old stacks between launches (every fiber is parked or abandoned), so they go, and
   * every fiber starts afresh on its new stack. */
  frt_fibers_release(p);
  p->map = map;
  p->map_bytes = bytes;
  p->sp = sp;
  p->started = started;
  p->uc = uc;
  p->cap = n;
  return FRT_OK;
}

void frt_fibers_release(FrtFiberPool *p) {
  if (p->map) {
#ifdef FRT_FIBER_ASAN
    /* Abandoned frames' poison must not outlive the mapping (the range may be mapped again). */
    for (int32_t i = 0; i < p->cap; i++)
      __asan_unpoison_memory_region(stack_lo(p, i), p->stack_bytes);
#endif
    munmap(p->map, p->map_bytes);
  }
  free(p->sp);
  free(p->started);
  free(p->uc);
  p->map = NULL;
  p->map_bytes = 0;
  p->sp = NULL;
  p->started = NULL;
  p->uc = NULL;
  p->cap = 0;
}

static void fiber_trampoline(void *pool);

/* Bytes left unused at the top of fiber i's stack. Without them every fiber's hot frames would sit at the
 * same offset in a page, so in the same few cache sets (the stacks are a whole number of pages apart): a
 * block of 1024 threads then missed the L1 and L2 caches at nearly every switch. */
static size_t colour(int32_t i) { return (size_t)(i % 64) * 64; }

/* ucontext's makecontext passes int arguments only: the pointer travels as two halves. */
static void ucontext_entry(unsigned lo, unsigned hi) {
  fiber_trampoline((void *)(uintptr_t)(((uint64_t)hi << 32) | lo));
}

FrtStatus frt_fiber_start(FrtFiberPool *p, int32_t i, FrtError *err) {
  unsigned char *lo = stack_lo(p, i);
#ifdef FRT_FIBER_ASAN
  /* A fiber abandoned mid-kernel left its frames' redzones poisoned. */
  __asan_unpoison_memory_region(lo, p->stack_bytes);
#endif
  if (p->use_ucontext) {
    ucontext_t *uc = (ucontext_t *)p->uc + i;
    if (getcontext(uc) != 0)
      return frt_errorf(err, FRT_ERR_RESOURCE, "getcontext: %s", strerror(errno));
    uc->uc_stack.ss_sp = lo;
    uc->uc_stack.ss_size = p->stack_bytes - colour(i);
    uc->uc_link = NULL;
    uintptr_t self = (uintptr_t)p;
    makecontext(uc, (void (*)(void))ucontext_entry, 2, (unsigned)(self & 0xffffffffu), (unsigned)(self >> 32));
  }
#ifdef FRT_FIBER_ASM
  else {
    /* The frame frt_fiber_switch_x86_64 pops: r15, r14, r13 = the trampoline, r12 = its argument (the
     * pool), rbx, rbp = 0 (ends the frame-pointer chain ASan's unwinder follows), then the return address
     * (the entry). At the entry's call the stack must be 16-byte aligned: sp + 56 is. */
    uintptr_t top = ((uintptr_t)(lo + p->stack_bytes - colour(i))) & ~(uintptr_t)15;
    uint64_t *frame = (uint64_t *)(top - 72);
    frame[0] = 0;
    frame[1] = 0;
    frame[2] = (uint64_t)(uintptr_t)fiber_trampoline;
    frame[3] = (uint64_t)(uintptr_t)p;
    frame[4] = 0;
    frame[5] = 0;
    frame[6] = (uint64_t)(uintptr_t)frt_fiber_entry_x86_64;
    p->sp[i] = frame;
  }
#endif
  p->started[i] = true;
  return FRT_OK;
}

/* In a fiber just switched to: confirm the switch to ASan, learning the scheduler's stack when it came from
 * there (the only stack a fiber cannot name itself). */
static void arrived(FrtFiberPool *p, void *fake) {
#ifdef FRT_FIBER_ASAN
  if (p->from_scheduler)
    __sanitizer_finish_switch_fiber(fake, &p->sched_bottom, &p->sched_size);
  else
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
}

/* The first code a fiber runs (p->current is its index, set by whoever switched to it), then the pool's
 * function, which never returns. */
static void fiber_trampoline(void *pool) {
  FrtFiberPool *p = pool;
  int32_t i = p->current;
  arrived(p, NULL);
  p->fn(p->ctx, i);
  abort(); /* unreachable: a fiber's function loops forever */
}

void frt_fiber_resume(FrtFiberPool *p, int32_t i) {
  p->current = i;
  p->from_scheduler = true;
#ifdef FRT_FIBER_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(&fake, stack_lo(p, i), p->stack_bytes);
#endif
  if (p->use_ucontext)
    swapcontext((ucontext_t *)p->uc + p->cap, (ucontext_t *)p->uc + i);
#ifdef FRT_FIBER_ASM
  else
    frt_fiber_switch_x86_64(&p->sched_sp, p->sp[i]);
#endif
#ifdef FRT_FIBER_ASAN
  __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
  p->current = -1;
}

void frt_fiber_switch(FrtFiberPool *p, int32_t to) {
  int32_t i = p->current;
  p->current = to;
  p->from_scheduler = false;
#ifdef FRT_FIBER_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(&fake, stack_lo(p, to), p->stack_bytes);
#endif
  if (p->use_ucontext)
    swapcontext((ucontext_t *)p->uc + i, (ucontext_t *)p->uc + to);
#ifdef FRT_FIBER_ASM
  else
    frt_fiber_switch_x86_64(&p->sp[i], p->sp[to]);
#endif
#ifdef FRT_FIBER_ASAN
  arrived(p, fake);
#else
  arrived(p, NULL);
#endif
}

void frt_fiber_yield(FrtFiberPool *p) {
  int32_t i = p->current;
#ifdef FRT_FIBER_ASAN
  void *fake = NULL;
  __sanitizer_start_switch_fiber(&fake, p->sched_bottom, p->sched_size);
#endif
  if (p->use_ucontext)
    swapcontext((ucontext_t *)p->uc + i, (ucontext_t *)p->uc + p->cap);
#ifdef FRT_FIBER_ASM
  else
    frt_fiber_switch_x86_64(&p->sp[i], p->sched_sp);
#endif
#ifdef FRT_FIBER_ASAN
  arrived(p, fake);
#else
  arrived(p, NULL);
#endif
}
