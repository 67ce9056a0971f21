/* model.c — the checked entry into a compiled model.
 *
 * Generated code trusts its arguments (no checks in the kernels), so this is where a caller's mistake
 * — a model built for another runtime version, a missing buffer, a misaligned workspace — becomes a
 * status and a message instead of a crash. It allocates nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flowrt_internal.h"

size_t frt_model_workspace_size(const FrtModel *m) {
  if (!m || m->workspace_size > SIZE_MAX)
    return 0;
  return (size_t)m->workspace_size;
}

/* The rank whose program runs in this process: the collectives' (frt_coll_rank) once started, else 0 (a
 * process without collectives is rank 0, as frt_coll_rank says). */
static int32_t calling_rank(void) { return frt_coll_active() ? frt_coll_rank(-1) : 0; }

/* A multiversioned model's variants are listed best CPU first (a rank-specialised SBP program has one per
 * CPU and rank, each carrying its rank), so the first this CPU can run and that is this rank's (or any
 * rank's) is the one to take. The choice is made again at each call (a getenv and one remembered check per
 * variant tried): it costs well under a microsecond, and the generated NAME_run keeps its own choice, so an
 * SBP program's collectives must be started (frt_coll_init) before its first run. */
const FrtModel *frt_model_variant(const FrtModel *m, FrtError *err) {
  if (!m)
    return frt_errorf(err, FRT_ERR_INPUT, "frt_model_variant: NULL model"), NULL;
  int32_t rank = calling_rank();
  if (m->n_variants <= 0) {
    if (m->n_ranks > 1 && m->rank >= 0 && m->rank != rank)
      return frt_errorf(err, FRT_ERR_INPUT,
                        "this is rank %d's program of an SBP program built per rank; it cannot run as rank %d",
                        (int)m->rank, (int)rank), NULL;
    return m;
  }
  if (!m->variants)
    return frt_errorf(err, FRT_ERR_INPUT, "malformed model description"), NULL;
  const char *force = getenv("FLOWRT_CPU_VARIANT");
  char msg[512] = "";
  bool rank_seen = false;
  for (int32_t i = 0; i < m->n_variants; i++) {
    const FrtModel *v = m->variants[i];
    if (!v)
      return frt_errorf(err, FRT_ERR_INPUT, "malformed model description"), NULL;
    if (m->n_ranks > 1 && v->rank >= 0 && v->rank != rank)
      continue;
    rank_seen = true;
    if (force && *force && (!v->cpu || strcmp(v->cpu, force) != 0))
      continue;
    if (frt_cpu_check_const(v->cpu_features, v->cpu, msg, sizeof msg) == 0)
      return v;
    if (force && *force)
      break;
  }
  if (!rank_seen)
    return frt_errorf(err, FRT_ERR_INPUT, "the model has no program for rank %d (it was built per rank for %d ranks)",
                      (int)rank, (int)m->n_ranks), NULL;
  if (force && *force && !msg[0])
    return frt_errorf(err, FRT_ERR_INPUT, "FLOWRT_CPU_VARIANT=%s names none of the model's CPUs (%s)", force,
                      m->cpu ? m->cpu : "?"), NULL;
  return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s", msg), NULL;
}

int frt_model_check_cpu(const FrtModel *m, char *msg, size_t cap) {
  FrtError err;
  const FrtModel *v = frt_model_variant(m, &err);
  if (v && frt_cpu_check_const(v->cpu_features, v->cpu, msg, cap) == 0)
    return 0;
  if (!v && msg && cap)
    snprintf(msg, cap, "%s", err.msg);
  return -1;
}

FrtStatus frt_model_run(const FrtModel *m, const void *const *inputs, void *const *outputs, void *workspace,
                        FrtPool *pool, FrtError *err) {
  if (!m)
    return frt_errorf(err, FRT_ERR_INPUT, "frt_model_run: NULL model");
  const char *name = m->name ? m->name : "?";
  if (m->abi_version != FRT_ABI_VERSION)
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s' was built for runtime ABI %u, this runtime is ABI %d",
                      name, (unsigned)m->abi_version, FRT_ABI_VERSION);
  /* A multiversioned model runs as the variant for this CPU: its kernel names index the return code. */
  FrtError verr;
  if (!(m = frt_model_variant(m, &verr)))
    return frt_errorf(err, verr.status, "model '%s': %s", name, verr.msg);
  if (m->abi_version != FRT_ABI_VERSION)
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s': malformed model description", name);
  if (!m->run || m->n_inputs < 0 || m->n_outputs < 0 || (m->n_inputs && !m->inputs) ||
      (m->n_outputs && !m->outputs))
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s': malformed model description", name);
  if (m->workspace_size > SIZE_MAX)
    return frt_errorf(err, FRT_ERR_RESOURCE, "model '%s': workspace of %llu bytes does not fit in memory",
                      name, (unsigned long long)m->workspace_size);
  if (m->n_inputs && !inputs)
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s': NULL inputs array", name);
  if (m->n_outputs && !outputs)
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s': NULL outputs array", name);
  for (int32_t i = 0; i < m->n_inputs; i++)
    if (!inputs[i])
      return frt_errorf(err, FRT_ERR_INPUT, "model '%s': input %d ('%s') is NULL", name, (int)i,
                        m->inputs[i].name ? m->inputs[i].name : "?");
  for (int32_t i = 0; i < m->n_outputs; i++)
    if (!outputs[i])
      return frt_errorf(err, FRT_ERR_INPUT, "model '%s': output %d ('%s') is NULL", name, (int)i,
                        m->outputs[i].name ? m->outputs[i].name : "?");
  if (m->workspace_size && !workspace)
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s': needs a workspace of %llu bytes, got NULL", name,
                      (unsigned long long)m->workspace_size);
  if ((uintptr_t)workspace % FRT_ALIGN)
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s': the workspace is not %d-byte aligned", name,
                      FRT_ALIGN);
  char cpu_msg[512];
  if (frt_cpu_check_const(m->cpu_features, m->cpu, cpu_msg, sizeof cpu_msg) != 0)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "model '%s': %s", name, cpu_msg);
  frt_coll_clear_error();
  int rc = m->run(inputs, outputs, workspace, pool);
  if (rc != 0) {
    /* A collective that failed left its message (runtime/coll.c); rc names its kernel. */
    const char *coll_msg = frt_coll_last_error();
    if (coll_msg[0])
      return frt_errorf(err, FRT_ERR_RESOURCE, "model '%s': %s: %s", name,
                        rc >= 1 && rc <= m->n_kernels && m->kernel_names && m->kernel_names[rc - 1]
                            ? m->kernel_names[rc - 1]
                            : "a collective",
                        coll_msg);
    /* rc is 1 + the index of the kernel that found bad data; kernel_names says which node that is. */
    if (rc >= 1 && rc <= m->n_kernels && m->kernel_names && m->kernel_names[rc - 1])
      return frt_errorf(err, FRT_ERR_INPUT,
                        "model '%s': %s: bad data at run time (an index out of range, ...)", name,
                        m->kernel_names[rc - 1]);
    return frt_errorf(err, FRT_ERR_INPUT, "model '%s': run failed in kernel %d", name, rc - 1);
  }
  if (err) {
    err->status = FRT_OK;
    err->msg[0] = 0;
  }
  return FRT_OK;
}
