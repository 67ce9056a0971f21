/* once.c — one-time initialisation for generated code (frt_once).
 *
 * A model whose weights are stored in 16 bits (`flowc build --quantize fp16|bf16`) expands them into f32
 * buffers before its first run. Its generated run function tests its own `state` word first (an acquire
 * load: after the expansion the whole cost of this file is that one load) and calls frt_once only while
 * the word is 0. One process-wide mutex serialises the expansions: a thread that arrives while another
 * expands waits for it, then sees the word set and returns. The expansion happens once per process, not
 * per pool or workspace, and needs no allocation; the mutex is static, so nothing has to be set up or torn
 * down. Expansions are rare (once per model variant), so one lock for all models costs nothing.
 */
#include <pthread.h>
#include <stdatomic.h>

#include "flowrt.h"

static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;

void frt_once(int32_t *state, void (*init)(void)) {
  /* The generated code stores and loads this word as a plain i32 (with LLVM's atomic orderings). */
  _Atomic int32_t *s = (_Atomic int32_t *)state;
  if (atomic_load_explicit(s, memory_order_acquire)) return;
  pthread_mutex_lock(&once_lock);
  if (!atomic_load_explicit(s, memory_order_relaxed)) {
    init();
    atomic_store_explicit(s, 1, memory_order_release);
  }
  pthread_mutex_unlock(&once_lock);
}
