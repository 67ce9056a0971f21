/* run_lib.c — a C program using a model built with `flowc build --emit lib -o DIR/libmodel.a`, the way
 * a user would: through the generated header model.h and the one archive (model + libflowrt).
 *
 *   run_lib CASE_DIR   (an ONNX backend test case: test_data_set_0/input_<i>.pb, output_<i>.pb)
 *
 * Reads the inputs with libflowrt's tensor reader (flowrt.h, from the same archive), checks them against
 * the sizes the header announces, runs the model three times — on the calling thread (pool NULL), on a
 * two-thread pool, and again with a workspace full of garbage (the run must not depend on its contents)
 * — and compares every output with the expected .pb: dtype and shape exactly, floats within rtol 1e-3
 * and atol 1e-7 (NaN equals NaN), everything else bit for bit. Prints `PASS <n> outputs` or one line
 * saying what differs, and exits 0 or 1.
 *
 * Compiled by tests/lit/aot/lib.test with the generated header directory and runtime/ on the include path.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"  /* generated: declares model_run, model_workspace_size, model_model */
#include "flowrt.h" /* after the generated header: it completes struct FrtModel and struct FrtPool */

#define MAX_TENSORS 64

static int fail(const char *what, const char *detail) {
  printf("FAIL: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
  return 1;
}

static int compare(int k, const FrtTensor *got_desc, const void *got, const FrtTensor *want) {
  char msg[256];
  if (got_desc->dtype != want->dtype || got_desc->rank != want->rank ||
      memcmp(got_desc->dims, want->dims, (size_t)want->rank * sizeof want->dims[0]) != 0) {
    snprintf(msg, sizeof msg, "output %d: dtype/shape differ from the expected output", k);
    return fail(msg, NULL);
  }
  size_t es = frt_dtype_size(want->dtype), n = es ? want->nbytes / es : 0;
  for (size_t i = 0; i < n; i++) {
    double g, w;
    if (want->dtype == FRT_F32) {
      g = ((const float *)got)[i];
      w = ((const float *)want->data)[i];
    } else if (want->dtype == FRT_F64) {
      g = ((const double *)got)[i];
      w = ((const double *)want->data)[i];
    } else {
      if (memcmp((const char *)got + i * es, (const char *)want->data + i * es, es) != 0) {
        snprintf(msg, sizeof msg, "output %d element %zu differs (bitwise)", k, i);
        return fail(msg, NULL);
      }
      continue;
    }
    if ((isnan(g) && isnan(w)) || g == w) continue;
    if (!(fabs(g - w) <= 1e-7 + 1e-3 * fabs(w))) {
      snprintf(msg, sizeof msg, "output %d element %zu is %.9g, want %.9g", k, i, g, w);
      return fail(msg, NULL);
    }
  }
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 2) return fail("usage", "run_lib CASE_DIR");
  const FrtModel *m = &model_model;
  if (m->n_inputs != MODEL_NUM_INPUTS || m->n_outputs != MODEL_NUM_OUTPUTS || m->n_inputs > MAX_TENSORS ||
      m->n_outputs > MAX_TENSORS)
    return fail("the header's counts disagree with the model", NULL);
  size_t ws_size = model_workspace_size();
  if (ws_size % 64 != 0 || ws_size < frt_model_workspace_size(m))
    return fail("model_workspace_size() is not a multiple of 64 covering the model's workspace", NULL);

  FrtError err = {0};
  FrtTensor in[MAX_TENSORS], want[MAX_TENSORS];
  const void *inputs[MAX_TENSORS];
  void *outputs[MAX_TENSORS], *first[MAX_TENSORS];
  char path[4096];
  for (int i = 0; i < m->n_inputs; i++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/input_%d.pb", argv[1], i);
    if (frt_tensor_read(path, &in[i], &err) != FRT_OK) return fail("reading an input", err.msg);
    if (in[i].dtype != m->inputs[i].dtype || in[i].rank != m->inputs[i].rank)
      return fail("an input's dtype or rank differs from the model's", path);
    inputs[i] = in[i].data;
  }
#ifdef MODEL_INPUT_0_BYTES
  if (m->n_inputs > 0 && in[0].nbytes != MODEL_INPUT_0_BYTES) return fail("MODEL_INPUT_0_BYTES is wrong", NULL);
#endif
  for (int i = 0; i < m->n_outputs; i++) {
    snprintf(path, sizeof path, "%s/test_data_set_0/output_%d.pb", argv[1], i);
    if (frt_tensor_read(path, &want[i], &err) != FRT_OK) return fail("reading an expected output", err.msg);
    outputs[i] = malloc(want[i].nbytes ? want[i].nbytes : 1);
    first[i] = malloc(want[i].nbytes ? want[i].nbytes : 1);
    if (!outputs[i] || !first[i]) return fail("out of memory", NULL);
  }
#ifdef MODEL_OUTPUT_0_BYTES
  if (m->n_outputs > 0 && want[0].nbytes != MODEL_OUTPUT_0_BYTES) return fail("MODEL_OUTPUT_0_BYTES is wrong", NULL);
#endif
  void *ws = aligned_alloc(64, ws_size ? ws_size : 64);
  if (!ws) return fail("out of memory", NULL);

  FrtPool *pool = frt_pool_create(2, &err);
  if (!pool) return fail("frt_pool_create", err.msg);
  for (int pass = 0; pass < 3; pass++) {
    if (pass == 2) memset(ws, 0xA5, ws_size);
    int rc = model_run(inputs, (void *const *)outputs, ws, pass == 1 ? pool : NULL);
    if (rc != 0) return fail("model_run returned nonzero", NULL);
    for (int i = 0; i < m->n_outputs; i++) {
      FrtTensor desc = {.dtype = m->outputs[i].dtype, .rank = m->outputs[i].rank};
      memcpy(desc.dims, m->outputs[i].dims, (size_t)desc.rank * sizeof desc.dims[0]);
      if (compare(i, &desc, outputs[i], &want[i])) return 1;
      if (pass == 0) memcpy(first[i], outputs[i], want[i].nbytes);
      else if (memcmp(first[i], outputs[i], want[i].nbytes) != 0)
        return fail(pass == 1 ? "the pooled run differs from the single-threaded one"
                              : "a run with a dirty workspace differs from the first",
                    NULL);
      memset(outputs[i], 0, want[i].nbytes);
    }
  }
  frt_pool_destroy(pool);
  free(ws);
  for (int i = 0; i < m->n_inputs; i++) frt_tensor_free(&in[i]);
  for (int i = 0; i < m->n_outputs; i++) {
    frt_tensor_free(&want[i]);
    free(outputs[i]);
    free(first[i]);
  }
  printf("PASS %d outputs\n", (int)m->n_outputs);
  return 0;
}
