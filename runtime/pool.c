/* pool.c — the thread pool behind generated code's parallel loops.
 *
 * Workers start once and then wait for jobs. A job is one frt_parallel_for: [0, n) is cut into
 * min(threads, n) contiguous chunks, chunk i = [i*q + min(i, r), ...) with q = n / chunks, r = n % chunks,
 * so a given (n, threads) always gives the same boundaries (results never depend on scheduling).
 * The caller runs chunk 0 itself; worker i runs chunk i.
 *
 * Publication: the caller writes the job, then bumps `gen` (release) under the mutex and broadcasts;
 * workers spin briefly on `gen` (acquire) before sleeping on the condition variable, because kernels come
 * in quick succession and a futex wake costs more than a short spin. Completion mirrors it: each worker
 * decrements `pending` (acq_rel), the last one signals `done` under the mutex, and the caller spins then
 * waits. Every worker takes part in every job (an empty chunk is a no-op), so no worker can still be
 * reading a job the caller has already replaced. A call never allocates.
 *
 * Re-entrancy: a parallel_for from inside a task (any thread, any pool) runs inline, and so does a call
 * made while another thread is using the same pool — neither can deadlock.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sched.h>
#endif

#include "flowrt_internal.h"

#define FRT_MAX_THREADS 1024
/* Some tens of µs of polling before a thread sleeps: long enough to bridge the gap between two kernels,
 * short enough not to starve other threads when the machine is oversubscribed. */
#define SPIN_ITERATIONS 2000

struct FrtPool {
  int n_threads; /* including the calling thread */
  pthread_t *threads;
  struct Worker *workers;
  pthread_mutex_t mu;
  pthread_cond_t wake; /* workers: gen changed */
  pthread_cond_t done; /* caller: pending reached 0 */
  atomic_uint gen;     /* bumped per job and at shutdown */
  atomic_int pending;  /* workers yet to finish the current job */
  atomic_bool busy;    /* a parallel_for owns the pool */
  atomic_bool stop;
  /* The current job: written by the caller before bumping gen, read by workers after seeing it. */
  FrtTaskFn fn;
  void *ctx;
  int64_t n;
  int chunks;
};

typedef struct Worker {
  FrtPool *pool;
  int index; /* 1 .. n_threads-1; the chunk it runs */
} Worker;

/* Set while this thread runs a task, so nested parallel_for calls run inline. */
static _Thread_local bool in_task;

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static void run_chunk(FrtTaskFn fn, void *ctx, int64_t n, int chunks, int i) {
  if (i >= chunks)
    return;
  int64_t q = n / chunks, r = n % chunks;
  int64_t begin = (int64_t)i * q + (i < r ? i : r);
  int64_t end = begin + q + (i < r ? 1 : 0);
  bool outer = in_task;
  in_task = true;
  fn(ctx, begin, end);
  in_task = outer;
}

static unsigned wait_gen(FrtPool *p, unsigned seen) {
  unsigned g;
  for (int i = 0; i < SPIN_ITERATIONS; i++) {
    g = atomic_load_explicit(&p->gen, memory_order_acquire);
    if (g != seen)
      return g;
    cpu_relax();
  }
  pthread_mutex_lock(&p->mu);
  while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen)
    pthread_cond_wait(&p->wake, &p->mu);
  pthread_mutex_unlock(&p->mu);
  return g;
}

static void *worker_main(void *arg) {
  Worker *w = arg;
  FrtPool *p = w->pool;
  unsigned seen = 0;
  for (;;) {
    seen = wait_gen(p, seen);
    if (atomic_load_explicit(&p->stop, memory_order_acquire))
      break;
    run_chunk(p->fn, p->ctx, p->n, p->chunks, w->index);
    if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
      pthread_mutex_lock(&p->mu);
      pthread_cond_signal(&p->done);
      pthread_mutex_unlock(&p->mu);
    }
  }
  return NULL;
}

static int default_threads(void) {
#ifdef __linux__
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
    return CPU_COUNT(&set) < FRT_MAX_THREADS ? CPU_COUNT(&set) : FRT_MAX_THREADS;
#endif
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)(n < FRT_MAX_THREADS ? n : FRT_MAX_THREADS) : 1;
}

static void free_pool(FrtPool *p) {
  if (p->n_threads > 1) {
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
  }
  free(p->threads);
  free(p->workers);
  free(p);
}

static void shutdown_workers(FrtPool *p, int started) {
  pthread_mutex_lock(&p->mu);
  atomic_store_explicit(&p->stop, true, memory_order_release);
  atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);
  for (int i = 0; i < started; i++)
    pthread_join(p->threads[i], NULL);
}

FrtPool *frt_pool_create(int n_threads, FrtError *err) {
  if (n_threads < 0 || n_threads > FRT_MAX_THREADS) {
    frt_errorf(err, FRT_ERR_INPUT, "thread count %d is outside 0..%d", n_threads, FRT_MAX_THREADS);
    return NULL;
  }
  if (n_threads == 0)
    n_threads = default_threads();
  FrtPool *p = calloc(1, sizeof *p);
  if (!p) {
    frt_errorf(err, FRT_ERR_RESOURCE, "out of memory creating a thread pool");
    return NULL;
  }
  p->n_threads = n_threads;
  atomic_init(&p->gen, 0);
  atomic_init(&p->pending, 0);
  atomic_init(&p->busy, false);
  atomic_init(&p->stop, false);
  if (n_threads == 1)
    return p;
  p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
  p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
  if (!p->threads || !p->workers) {
    free(p->threads);
    free(p->workers);
    free(p);
    frt_errorf(err, FRT_ERR_RESOURCE, "out of memory creating a thread pool");
    return NULL;
  }
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done, NULL);
  /* Workers inherit a full signal mask: signals meant for the program go to its main thread. */
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  int started = 0, rc = 0;
  for (; started < n_threads - 1; started++) {
    p->workers[started] = (Worker){p, started + 1};
    rc = pthread_create(&p->threads[started], NULL, worker_main, &p->workers[started]);
    if (rc != 0)
      break;
  }
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  if (rc != 0) {
    shutdown_workers(p, started);
    frt_errorf(err, FRT_ERR_RESOURCE, "cannot start thread %d of %d: %s", started + 2, n_threads,
               strerror(rc));
    free_pool(p);
    return NULL;
  }
  return p;
}

void frt_pool_destroy(FrtPool *pool) {
  if (!pool)
    return;
  if (pool->n_threads > 1)
    shutdown_workers(pool, pool->n_threads - 1);
  free_pool(pool);
}

int frt_pool_threads(const FrtPool *pool) { return pool ? pool->n_threads : 1; }

void frt_parallel_for(FrtPool *pool, int64_t n, FrtTaskFn fn, void *ctx) {
  if (n <= 0 || !fn)
    return;
  bool inline_run = !pool || pool->n_threads == 1 || n == 1 || in_task;
  if (!inline_run && atomic_exchange_explicit(&pool->busy, true, memory_order_acquire))
    inline_run = true;
  if (inline_run) {
    run_chunk(fn, ctx, n, 1, 0);
    return;
  }
  FrtPool *p = pool;
  p->fn = fn;
  p->ctx = ctx;
  p->n = n;
  p->chunks = n < p->n_threads ? (int)n : p->n_threads;
  atomic_store_explicit(&p->pending, p->n_threads - 1, memory_order_relaxed);
  pthread_mutex_lock(&p->mu);
  atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);

  run_chunk(fn, ctx, n, p->chunks, 0);

  bool finished = false;
  for (int i = 0; i < SPIN_ITERATIONS && !finished; i++) {
    finished = atomic_load_explicit(&p->pending, memory_order_acquire) == 0;
    if (!finished)
      cpu_relax();
  }
  if (!finished) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0)
      pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  atomic_store_explicit(&p->busy, false, memory_order_release);
}
