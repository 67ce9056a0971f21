/* coll_shm.c — collectives among the ranks of one machine through a shared-memory segment (the MPI
 * backend's intra-node path, coll_mpi.c, which creates the segments and decides which groups use them).
 *
 * One segment per group: a header of one flag a rank (each on its own 128-byte line, so the adjacent-line
 * prefetcher does not bounce them), then two regions of one slot a rank. A call runs in chunks of at most a
 * slot: each rank copies its part of the chunk into its slot, a barrier, then each reads the other slots.
 * Chunk k uses region k % 2, so the writes of chunk k+2 come after a barrier of chunk k+1, which no rank
 * passes before it has finished reading chunk k: one barrier a chunk suffices for all_gather,
 * reduce_scatter, all_to_all and broadcast, and two for all_reduce.
 *
 * Reductions run in a fixed order, the same on every rank: element i of the result is
 * ((x_0 op x_1) op x_2) ... op x_{G-1} over the group's ranks in their order, computed once, by the rank
 * that owns i's part of the chunk, and copied by the others (or, for a small all_reduce, computed by every
 * rank by the same code in the same order) — so every rank holds the same bits. all_reduce:
 * rank r copies the parts of its buffer other than part r into its slot (its own part it reads from its own
 * buffer), reduces part r of every slot into part r of slot 0, a second barrier, and every rank copies the
 * reduced chunk out of slot 0; an all_reduce of at most FRT_SHM_REPLICATED_MAX_BYTES instead copies its whole
 * buffer into its slot and, after one barrier, every rank reduces all of it, in the same order (bench/mpi_link.c,
 * 2 ranks: 1 KiB 0.71 us against 0.90 for the two-barrier way, 4 KiB 1.7 against 1.9, 16 KiB 4.8 against
 * 4.3). Integer sums wrap (computed unsigned), as MPI's do; max and min are
 * `a > b ? a : b` and `a < b ? a : b` with a the lower ranks' value. Today's MPI path gives the same
 * values up to the order of a floating-point sum (Open MPI picks it by size and rank count).
 *
 * The barrier: rank r stores its barrier count into its flag (release) and waits until every flag has
 * reached it (acquire). Waiting spins briefly, then yields the CPU, then sleeps in short naps: the ranks may
 * be more than the cores (the tests run 4 on 2), where a spinning waiter would take the CPU from the rank it
 * waits for. A rank that never arrives is the watchdog's to notice (coll.c); a killed one, mpirun's.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "flowrt_internal.h"

#define FLAG_STRIDE 128 /* bytes between two ranks' flags */
#define LINE 64         /* parts of a chunk start on a cache line, so two ranks never write one line */

static size_t header_bytes(int32_t size) { return ((size_t)size * FLAG_STRIDE + 4095) & ~(size_t)4095; }

bool frt_shm_map_bytes(int32_t size, size_t slot_bytes, size_t *out) {
  size_t slots;
  return size < 1 || frt_mul_overflows((size_t)size * 2, slot_bytes, &slots) ||
         frt_add_overflows(slots, header_bytes(size), out);
}

int frt_shm_map(FrtShm *s, const char *name, bool create, int32_t rank, int32_t size, size_t slot_bytes,
                bool crowded, char *msg, size_t cap) {
  memset(s, 0, sizeof *s);
  size_t bytes;
  if (slot_bytes % LINE || frt_shm_map_bytes(size, slot_bytes, &bytes) || bytes > (size_t)INT64_MAX)
    return frt_coll_fail(msg, cap, "a shared segment of %d slots of %zu bytes is too large", (int)size, slot_bytes);
  int fd = shm_open(name, create ? O_RDWR | O_CREAT | O_EXCL : O_RDWR, 0600);
  if (fd < 0)
    return frt_coll_fail(msg, cap, "shm_open %s: %s", name, strerror(errno));
  /* posix_fallocate, not ftruncate alone: a tmpfs without room for the pages would otherwise grant the size
   * and kill the process with SIGBUS at the first write. */
  int rc = create ? posix_fallocate(fd, 0, (off_t)bytes) : 0;
  struct stat st;
  if (rc == 0 && fstat(fd, &st) != 0)
    rc = errno;
  if (rc == 0 && (uint64_t)st.st_size < bytes)
    rc = EINVAL;
  void *p = rc == 0 ? mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0) : MAP_FAILED;
  if (rc == 0 && p == MAP_FAILED)
    rc = errno;
  close(fd);
  if (rc != 0)
    return frt_coll_fail(msg, cap, "shared segment %s of %zu bytes: %s", name, bytes, strerror(rc));
  s->base = p;
  s->map_bytes = bytes;
  s->slot_bytes = slot_bytes;
  s->rank = rank;
  s->size = size;
  s->crowded = crowded;
  return 0;
}

void frt_shm_unlink(const char *name) { shm_unlink(name); }

void frt_shm_unmap(FrtShm *s) {
  if (s->base)
    munmap(s->base, s->map_bytes);
  memset(s, 0, sizeof *s);
}

/* ---- the barrier ---------------------------------------------------------------------------------------- */

static _Atomic uint64_t *flag(const FrtShm *s, int32_t m) {
  return (_Atomic uint64_t *)(void *)(s->base + (size_t)m * FLAG_STRIDE);
}

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ __volatile__("yield");
#endif
}

static double seconds_now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* Until *f >= e. Spins (long where every rank has a core, briefly where they share), yields for a
 * millisecond, then naps 50 us at a time: a hung peer (the watchdog's case) then costs no CPU. */
static void wait_for(const FrtShm *s, _Atomic uint64_t *f, uint64_t e) {
  int spins = s->crowded ? 64 : 4000;
  for (int i = 0; i < spins; i++) {
    if (atomic_load_explicit(f, memory_order_acquire) >= e)
      return;
    cpu_relax();
  }
  double t0 = seconds_now();
  for (unsigned i = 0;; i++) {
    if (atomic_load_explicit(f, memory_order_acquire) >= e)
      return;
    if ((i & 15) != 15 || seconds_now() - t0 < 1e-3) {
      sched_yield();
    } else {
      struct timespec nap = {0, 50000};
      nanosleep(&nap, NULL);
    }
  }
}

static void barrier(FrtShm *s) {
  uint64_t e = ++s->epoch;
  atomic_store_explicit(flag(s, s->rank), e, memory_order_release);
  for (int32_t m = 0; m < s->size; m++)
    if (m != s->rank)
      wait_for(s, flag(s, m), e);
}

/* Rank m's slot in region k % 2 of the segment. */
static unsigned char *slot(const FrtShm *s, uint64_t k, int32_t m) {
  return s->base + header_bytes(s->size) + ((size_t)(k & 1) * (size_t)s->size + (size_t)m) * s->slot_bytes;
}

/* Part p of a chunk of n elements of es bytes: [*lo, *lo + *len), whole cache lines except the last. */
static void part(int64_t n, size_t es, int32_t g, int32_t p, int64_t *lo, int64_t *len) {
  int64_t unit = es < LINE ? (int64_t)(LINE / es) : 1, blocks = (n + unit - 1) / unit;
  int64_t a = blocks * p / g * unit, b = blocks * (p + 1) / g * unit;
  *lo = a < n ? a : n;
  *len = (b < n ? b : n) - *lo;
}

/* ---- reductions: out[i] = a[i] op b[i], out equal to a or b or apart ------------------------------------ */

#define SUM(x, y) ((x) + (y))
#define MAX(x, y) ((x) > (y) ? (x) : (y))
#define MIN(x, y) ((x) < (y) ? (x) : (y))
#define KERNEL(name, T, OP)                                                                                   \
  static void name(void *out, const void *a, const void *b, int64_t n) {                                      \
    T *o = out;                                                                                               \
    const T *x = a, *y = b;                                                                                   \
    for (int64_t i = 0; i < n; i++)                                                                           \
      o[i] = (T)OP(x[i], y[i]);                                                                               \
  }
/* Sums of signed integers are computed in their unsigned type: they wrap instead of overflowing. */
#define KERNELS(tag, T, U)                                                                                    \
  KERNEL(sum_##tag, U, SUM)                                                                                   \
  KERNEL(max_##tag, T, MAX)                                                                                   \
  KERNEL(min_##tag, T, MIN)
KERNELS(f32, float, float)
KERNELS(f64, double, double)
KERNELS(i8, int8_t, uint8_t)
KERNELS(u8, uint8_t, uint8_t)
KERNELS(i16, int16_t, uint16_t)
KERNELS(u16, uint16_t, uint16_t)
KERNELS(i32, int32_t, uint32_t)
KERNELS(u32, uint32_t, uint32_t)
KERNELS(i64, int64_t, uint64_t)
KERNELS(u64, uint64_t, uint64_t)

typedef void (*Kernel)(void *out, const void *a, const void *b, int64_t n);

#define PICK(tag) return op == FRT_REDUCE_SUM ? sum_##tag : op == FRT_REDUCE_MAX ? max_##tag : min_##tag
static Kernel kernel_of(FrtDtype dt, FrtReduceOp op) {
  switch (dt) {
  case FRT_F32: PICK(f32);
  case FRT_F64: PICK(f64);
  case FRT_I8: PICK(i8);
  case FRT_U8: case FRT_BOOL: PICK(u8);
  case FRT_I16: PICK(i16);
  case FRT_U16: PICK(u16);
  case FRT_I32: PICK(i32);
  case FRT_U32: PICK(u32);
  case FRT_I64: PICK(i64);
  case FRT_U64: PICK(u64);
  case FRT_F16: case FRT_BF16: break;
  }
  return NULL;
}

/* out = src(0) op src(1) op ... in rank order; src(m) is slot m at `off` bytes, or `mine` for this rank.
 * out may be slot 0 at `off` (element by element, each read before it is written). */
static void reduce_ranks(const FrtShm *s, Kernel k, uint64_t chunk, size_t off, const unsigned char *mine,
                         void *out, int64_t n) {
  const unsigned char *src0 = s->rank == 0 ? mine : slot(s, chunk, 0) + off;
  const unsigned char *src1 = s->rank == 1 ? mine : slot(s, chunk, 1) + off;
  k(out, src0, src1, n);
  for (int32_t m = 2; m < s->size; m++)
    k(out, out, m == s->rank ? mine : slot(s, chunk, m) + off, n);
}

/* ---- the collectives ------------------------------------------------------------------------------------ */

/* A small all_reduce as an all_gather into the slots and the same reduction, in the same order, on every
 * rank: one barrier instead of two, which is what a few KiB cost. */
static void all_reduce_replicated(FrtShm *s, Kernel k, unsigned char *buf, int64_t n, size_t es) {
  uint64_t c = s->chunks++;
  unsigned char *own = slot(s, c, s->rank);
  memcpy(own, buf, (size_t)n * es);
  barrier(s);
  /* This rank's values from its slot, not from buf, which the reduction overwrites as it goes. */
  reduce_ranks(s, k, c, 0, own, buf, n);
}

int frt_shm_all_reduce(FrtShm *s, void *buf, int64_t count, FrtDtype dt, FrtReduceOp op) {
  Kernel k = kernel_of(dt, op);
  size_t es = frt_dtype_size(dt);
  int64_t per = (int64_t)(s->slot_bytes / es);
  if ((size_t)count * es <= FRT_SHM_REPLICATED_MAX_BYTES && count <= per) {
    all_reduce_replicated(s, k, buf, count, es);
    return 0;
  }
  for (int64_t at = 0; at < count; at += per) {
    int64_t n = count - at < per ? count - at : per, lo, len;
    unsigned char *mine = (unsigned char *)buf + (size_t)at * es;
    uint64_t c = s->chunks++;
    unsigned char *own = slot(s, c, s->rank);
    for (int32_t p = 0; p < s->size; p++) {
      part(n, es, s->size, p, &lo, &len);
      if (p != s->rank && len)
        memcpy(own + (size_t)lo * es, mine + (size_t)lo * es, (size_t)len * es);
    }
    barrier(s);
    part(n, es, s->size, s->rank, &lo, &len);
    if (len)
      reduce_ranks(s, k, c, (size_t)lo * es, mine + (size_t)lo * es, slot(s, c, 0) + (size_t)lo * es, len);
    barrier(s);
    memcpy(mine, slot(s, c, 0), (size_t)n * es);
  }
  return 0;
}

int frt_shm_all_gather(FrtShm *s, const void *send, void *recv, int64_t count, FrtDtype dt) {
  size_t es = frt_dtype_size(dt);
  int64_t per = (int64_t)(s->slot_bytes / es);
  for (int64_t at = 0; at < count; at += per) {
    int64_t n = count - at < per ? count - at : per;
    const unsigned char *mine = (const unsigned char *)send + (size_t)at * es;
    uint64_t c = s->chunks++;
    memcpy(slot(s, c, s->rank), mine, (size_t)n * es);
    barrier(s);
    for (int32_t m = 0; m < s->size; m++)
      memcpy((unsigned char *)recv + ((size_t)m * (size_t)count + (size_t)at) * es, m == s->rank ? mine : slot(s, c, m),
             (size_t)n * es);
  }
  return 0;
}

/* reduce_scatter and all_to_all: each rank's send holds one section of count elements for every rank; a
 * chunk moves elements [at, at + n) of every section, section p of the chunk at p * n in the slot. */
static void scatter_chunk(FrtShm *s, uint64_t c, const void *send, int64_t count, int64_t at, int64_t n, size_t es) {
  unsigned char *own = slot(s, c, s->rank);
  for (int32_t p = 0; p < s->size; p++)
    if (p != s->rank)
      memcpy(own + (size_t)p * (size_t)n * es, (const unsigned char *)send + ((size_t)p * (size_t)count + (size_t)at) * es,
             (size_t)n * es);
}

int frt_shm_reduce_scatter(FrtShm *s, const void *send, void *recv, int64_t count, FrtDtype dt, FrtReduceOp op) {
  Kernel k = kernel_of(dt, op);
  size_t es = frt_dtype_size(dt);
  int64_t per = (int64_t)(s->slot_bytes / es / (size_t)s->size);
  for (int64_t at = 0; at < count; at += per) {
    int64_t n = count - at < per ? count - at : per;
    uint64_t c = s->chunks++;
    scatter_chunk(s, c, send, count, at, n, es);
    barrier(s);
    const unsigned char *mine = (const unsigned char *)send + ((size_t)s->rank * (size_t)count + (size_t)at) * es;
    reduce_ranks(s, k, c, (size_t)s->rank * (size_t)n * es, mine, (unsigned char *)recv + (size_t)at * es, n);
  }
  return 0;
}

int frt_shm_all_to_all(FrtShm *s, const void *send, void *recv, int64_t count, FrtDtype dt) {
  size_t es = frt_dtype_size(dt);
  int64_t per = (int64_t)(s->slot_bytes / es / (size_t)s->size);
  for (int64_t at = 0; at < count; at += per) {
    int64_t n = count - at < per ? count - at : per;
    uint64_t c = s->chunks++;
    scatter_chunk(s, c, send, count, at, n, es);
    barrier(s);
    for (int32_t m = 0; m < s->size; m++) {
      const unsigned char *from =
          m == s->rank ? (const unsigned char *)send + ((size_t)m * (size_t)count + (size_t)at) * es
                       : slot(s, c, m) + (size_t)s->rank * (size_t)n * es;
      memcpy((unsigned char *)recv + ((size_t)m * (size_t)count + (size_t)at) * es, from, (size_t)n * es);
    }
  }
  return 0;
}

int frt_shm_broadcast(FrtShm *s, void *buf, int64_t count, FrtDtype dt, int32_t root) {
  size_t es = frt_dtype_size(dt);
  int64_t per = (int64_t)(s->slot_bytes / es);
  for (int64_t at = 0; at < count; at += per) {
    int64_t n = count - at < per ? count - at : per;
    unsigned char *mine = (unsigned char *)buf + (size_t)at * es;
    uint64_t c = s->chunks++;
    if (s->rank == root)
      memcpy(slot(s, c, root), mine, (size_t)n * es);
    barrier(s);
    if (s->rank != root)
      memcpy(mine, slot(s, c, root), (size_t)n * es);
  }
  return 0;
}
