/* pool.c — the thread pool behind generated code's parallel loops.
 *
 * Workers start once and then wait for jobs. A job is one frt_parallel_for: [0, n) is cut into
 * `chunks` = min(4 × threads, n, max_chunks) contiguous chunks, chunk i = [i*q + min(i, r), ...) with
 * q = n / chunks, r = n % chunks, so a given (n, chunks) always gives the same boundaries (results never
 * depend on scheduling, only on the chunk count).
 *
 * Chunks are owned first, then shared: thread t (the caller is 0, workers 1 ..) owns a contiguous run of
 * the chunks, split like the chunks themselves, and takes them from the front; a thread whose own run is
 * exhausted steals from the back of the others' runs. Owning keeps a thread on the same part of memory
 * from one kernel to the next (consecutive kernels mostly walk the same tensor in the same order), so a
 * memory-bound kernel reads what its own core just wrote instead of pulling it from the other core's
 * cache; and claiming in one's own run touches only one's own cache line. Each run lives in its own
 * atomic word (generation, end, next), claimed with a compare-and-swap that succeeds only for the
 * current generation, so a worker that the OS has not scheduled yet costs nothing: the others steal its
 * chunks, and the job ends when `done` reaches the chunk count — a late worker later finds the
 * generation changed or no chunk left and goes back to waiting. A thread adds the chunks it ran to
 * `done` once, when it finds none left, not once a chunk. A job's fields (fn, ctx, n) are read only
 * after a successful claim, while that chunk is unfinished, so the caller cannot have replaced them.
 * Each chunk index runs exactly once per job, so frt_task_index names a private scratch slot.
 *
 * Publication: the caller writes the job and every run's word, then the job word (release) under the
 * mutex and broadcasts; workers poll it (acquire) for up to `spin_s` (2 ms; FLOWC_SPIN_US overrides)
 * before sleeping on the condition variable. Completion: the thread whose count brings `done` to the
 * chunk count signals `done_cv` under the mutex; the caller polls `done` just as long, then waits. The
 * polling is long because a wake-up through the kernel is slow and erratic on virtual machines (tens to
 * hundreds of µs when the woken vCPU is halted): with a shorter poll a worker (or the caller) falls
 * asleep across the gap between two kernels and pays that wake-up again and again. A call never
 * allocates.
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
#define DEFAULT_SPIN_US 2000
#define MAX_SPIN_US 1000000
#define CACHE_LINE 64

/* One thread's run of chunks: generation (bits 32..63), end (16..31), next unclaimed chunk (0..15). */
typedef struct Run {
  _Alignas(CACHE_LINE) _Atomic uint64_t word;
} Run;

struct FrtPool {
  int n_threads; /* including the calling thread */
  pthread_t *threads;
  struct Worker *workers;
  pthread_mutex_t mu;
  pthread_cond_t wake;    /* workers: the job word changed generation */
  pthread_cond_t done_cv; /* caller: done reached the chunk count */
  Run *runs; /* one a thread, by thread index */
  /* The job word workers wait on: generation (bits 32..63), chunk count (16..31). */
  _Alignas(CACHE_LINE) _Atomic uint64_t job;
  _Alignas(CACHE_LINE) atomic_int done; /* chunks finished in the current job */
  atomic_bool busy;       /* a parallel_for owns the pool */
  atomic_bool stop;
  double spin_s;          /* how long a thread polls before it sleeps */
  /* --profile: per-kernel seconds (frt_pool_set_profile), and the time of the last tick */
  double *profile;
  int32_t profile_n;
  double profile_last;
  /* The current job: written by the caller before publishing its generation, read after a claim. */
  FrtTaskFn fn;
  void *ctx;
  int64_t n;
};

typedef struct Worker {
  FrtPool *pool;
  int index; /* 1 .. n_threads-1; the caller is 0 */
} Worker;

/* Set while this thread runs a task, so nested parallel_for calls run inline. */
static _Thread_local bool in_task;
/* The chunk index of the outermost task this thread runs (0 outside tasks): frt_task_index. */
static _Thread_local int task_slot;

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
  int64_t begin = frt_part_begin(n, chunks, i), end = frt_part_begin(n, chunks, i + 1);
  bool outer = in_task;
  in_task = true;
  if (!outer)
    task_slot = i;
  fn(ctx, begin, end);
  if (!outer)
    task_slot = 0;
  in_task = outer;
}

/* Polling with a deadline: spin_more returns false once `seconds` have passed since the first call
 * (checking the clock every 32 pauses, about 1 µs), and pauses otherwise. */
typedef struct Spin {
  double until;
  unsigned i;
} Spin;

static bool spin_more(Spin *s, double seconds) {
  if (s->i++ % 32 == 0) {
    double now = frt_now_seconds();
    if (s->i == 1)
      s->until = now + seconds;
    else if (now >= s->until)
      return false;
  }
  cpu_relax();
  return true;
}

static uint32_t gen_of(uint64_t w) { return (uint32_t)(w >> 32); }

/* Waits until the job word's generation differs from `seen` (or the pool stops); returns the word. */
static uint64_t wait_gen(FrtPool *p, uint32_t seen) {
  uint64_t w;
  Spin spin = {0};
  do {
    w = atomic_load_explicit(&p->job, memory_order_acquire);
    if (gen_of(w) != seen || atomic_load_explicit(&p->stop, memory_order_relaxed))
      return w;
  } while (spin_more(&spin, p->spin_s));
  pthread_mutex_lock(&p->mu);
  while (gen_of(w = atomic_load_explicit(&p->job, memory_order_acquire)) == seen &&
         !atomic_load_explicit(&p->stop, memory_order_relaxed))
    pthread_cond_wait(&p->wake, &p->mu);
  pthread_mutex_unlock(&p->mu);
  return w;
}

/* Claims a chunk of generation g from run r: its front (the owner) or its back (a thief). Returns its
 * index, or -1 when the generation moved on or the run is empty. */
static int claim_in(Run *r, uint32_t g, bool front) {
  uint64_t w = atomic_load_explicit(&r->word, memory_order_acquire);
  for (;;) {
    int end = (int)((w >> 16) & 0xffff), next = (int)(w & 0xffff);
    if (gen_of(w) != g || next >= end)
      return -1;
    uint64_t claimed = front ? w + 1 : w - ((uint64_t)1 << 16);
    if (atomic_compare_exchange_weak_explicit(&r->word, &w, claimed, memory_order_acq_rel, memory_order_acquire))
      return front ? next : end - 1;
  }
}

/* Runs chunks of generation g, thread `self`'s own first, then the others' from their backs, until none
 * is left; then adds them to `done`, and the thread that completes the job wakes the caller. */
static void run_claimed(FrtPool *p, uint32_t g, int self) {
  uint64_t job = atomic_load_explicit(&p->job, memory_order_acquire);
  if (gen_of(job) != g)
    return; /* a later job: its runs carry its generation, so no claim of g could succeed */
  int chunks = (int)((job >> 16) & 0xffff), ran = 0, i;
  while ((i = claim_in(&p->runs[self], g, true)) >= 0) {
    run_chunk(p->fn, p->ctx, p->n, chunks, i);
    ran++;
  }
  for (int k = 1; k < p->n_threads; k++) {
    Run *victim = &p->runs[(self + k) % p->n_threads];
    while ((i = claim_in(victim, g, false)) >= 0) {
      run_chunk(p->fn, p->ctx, p->n, chunks, i);
      ran++;
    }
  }
  if (ran > 0 && atomic_fetch_add_explicit(&p->done, ran, memory_order_acq_rel) + ran == chunks) {
    pthread_mutex_lock(&p->mu);
    pthread_cond_signal(&p->done_cv);
    pthread_mutex_unlock(&p->mu);
  }
}

static void *worker_main(void *arg) {
  Worker *w = arg;
  FrtPool *p = w->pool;
  uint32_t seen = 0;
  for (;;) {
    uint64_t word = wait_gen(p, seen);
    if (atomic_load_explicit(&p->stop, memory_order_acquire))
      break;
    seen = gen_of(word);
    run_claimed(p, seen, w->index);
  }
  return NULL;
}

int frt_default_threads(void) {
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
    pthread_cond_destroy(&p->done_cv);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
  }
  free(p->threads);
  free(p->workers);
  free(p->runs);
  free(p);
}

static void shutdown_workers(FrtPool *p, int started) {
  pthread_mutex_lock(&p->mu);
  atomic_store_explicit(&p->stop, true, memory_order_release);
  atomic_fetch_add_explicit(&p->job, (uint64_t)1 << 32, memory_order_release);
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
    n_threads = frt_default_threads();
  FrtPool *p = calloc(1, sizeof *p);
  if (!p) {
    frt_errorf(err, FRT_ERR_RESOURCE, "out of memory creating a thread pool");
    return NULL;
  }
  p->n_threads = n_threads;
  p->spin_s = DEFAULT_SPIN_US * 1e-6;
  const char *spin_env = getenv("FLOWC_SPIN_US");
  if (spin_env && *spin_env) {
    char *end;
    double us = strtod(spin_env, &end);
    if (*end || !(us >= 0 && us <= MAX_SPIN_US)) {
      free(p);
      frt_errorf(err, FRT_ERR_INPUT, "FLOWC_SPIN_US='%s' is not a number of microseconds in 0..%d", spin_env,
                 MAX_SPIN_US);
      return NULL;
    }
    p->spin_s = us * 1e-6;
  }
  atomic_init(&p->job, 0);
  atomic_init(&p->done, 0);
  atomic_init(&p->busy, false);
  atomic_init(&p->stop, false);
  if (n_threads == 1)
    return p;
  p->threads = calloc((size_t)n_threads - 1, sizeof *p->threads);
  p->workers = calloc((size_t)n_threads - 1, sizeof *p->workers);
  p->runs = aligned_alloc(CACHE_LINE, (size_t)n_threads * sizeof *p->runs);
  if (!p->threads || !p->workers || !p->runs) {
    free(p->threads);
    free(p->workers);
    free(p->runs);
    free(p);
    frt_errorf(err, FRT_ERR_RESOURCE, "out of memory creating a thread pool");
    return NULL;
  }
  for (int t = 0; t < n_threads; t++)
    atomic_init(&p->runs[t].word, 0);
  pthread_mutex_init(&p->mu, NULL);
  pthread_cond_init(&p->wake, NULL);
  pthread_cond_init(&p->done_cv, NULL);
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

int frt_task_index(void) { return task_slot; }

void frt_pool_set_profile(FrtPool *pool, double *acc, int32_t n) {
  if (!pool)
    return;
  pool->profile = n > 0 ? acc : NULL;
  pool->profile_n = n;
}

void frt_profile_tick(FrtPool *pool, int32_t k) {
  if (!pool || !pool->profile)
    return;
  double now = frt_now_seconds();
  if (k >= 0 && k < pool->profile_n)
    pool->profile[k] += now - pool->profile_last;
  pool->profile_last = now;
}

void frt_parallel_for(FrtPool *pool, int64_t n, FrtTaskFn fn, void *ctx) {
  frt_parallel_for_max(pool, n, FRT_MAX_THREADS, fn, ctx);
}

void frt_parallel_for_max(FrtPool *pool, int64_t n, int max_chunks, FrtTaskFn fn, void *ctx) {
  if (n <= 0 || !fn)
    return;
  if (max_chunks < 1)
    max_chunks = 1;
  bool inline_run = !pool || pool->n_threads == 1 || n == 1 || max_chunks == 1 || in_task;
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
  /* FRT_CHUNKS_PER_THREAD chunks a thread: a thread that finishes early (or a kernel whose iterations
   * differ in cost) takes another chunk instead of waiting for the slowest. */
  int64_t want = (int64_t)p->n_threads * FRT_CHUNKS_PER_THREAD;
  int chunks = (int)(n < want ? n : want);
  if (chunks > max_chunks)
    chunks = max_chunks;
  atomic_store_explicit(&p->done, 0, memory_order_relaxed);
  uint32_t g = gen_of(atomic_load_explicit(&p->job, memory_order_relaxed)) + 1;
  /* Thread t owns chunks [frt_part_begin(t), frt_part_begin(t + 1)) of `chunks` cut into n_threads parts. */
  for (int t = 0; t < p->n_threads; t++) {
    uint64_t first = (uint64_t)frt_part_begin(chunks, p->n_threads, t);
    uint64_t end = (uint64_t)frt_part_begin(chunks, p->n_threads, t + 1);
    atomic_store_explicit(&p->runs[t].word, (uint64_t)g << 32 | end << 16 | first, memory_order_relaxed);
  }
  pthread_mutex_lock(&p->mu);
  atomic_store_explicit(&p->job, (uint64_t)g << 32 | (uint64_t)chunks << 16, memory_order_release);
  pthread_cond_broadcast(&p->wake);
  pthread_mutex_unlock(&p->mu);

  run_claimed(p, g, 0);

  bool finished;
  Spin spin = {0};
  while (!(finished = atomic_load_explicit(&p->done, memory_order_acquire) == chunks) && spin_more(&spin, p->spin_s)) {
  }
  if (!finished) {
    pthread_mutex_lock(&p->mu);
    while (atomic_load_explicit(&p->done, memory_order_acquire) != chunks)
      pthread_cond_wait(&p->done_cv, &p->mu);
    pthread_mutex_unlock(&p->mu);
  }
  atomic_store_explicit(&p->busy, false, memory_order_release);
}
