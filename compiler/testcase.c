/* testcase.c — ONNX backend test cases as Debian's libonnx-testdata lays them out: a folder with
 * model.onnx and test_data_set_<k>/ folders of input_<i>.pb and output_<i>.pb TensorProto files.
 *
 * Binding: some inputs feed shapes, axes or counts, which flowc needs at compile time. The importer asks
 * for those lazily (FcBindFn); fc_testcase_bind answers from the case's own data set, matching the
 * TensorProto's name (field 8) first, because a file's position is the input's position among the
 * model's real inputs only when the test generator kept them in order, and falling back on that position.
 * Everything else (the data inputs) stays a graph input, so `flowc check` runs it through kernels.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

enum { MAX_TENSORS = 1024 }; /* input_<i>.pb files looked at per data set */

/* Whether the data set has an entry of this name. lstat, not stat: a dangling symlink is an entry that
 * fails to read (an error naming it), not the end of the list (which reads as "no data" later). */
static bool entry_exists(const char *path) {
  struct stat st;
  return lstat(path, &st) == 0;
}

/* Converts an unpacked TensorProto read from `path` (external data resolves next to the file). */
static FcStatus convert_proto(const FcImportLimits *lim, const char *path, const Onnx__TensorProto *tp, FcArena *arena,
                              FcTestTensor *out, FcDiag *diag) {
  /* The folder part of `path`, however long (a fixed buffer would cut it off). */
  const char *slash = strrchr(path, '/');
  const char *dir = slash ? fc_arena_strndup(arena, path, (size_t)(slash - path)) : ".";
  FcTensor *t = NULL;
  FcDiag local; /* the message names the file, as the .pb readers of --bind do */
  fc_diag_init(&local);
  FcStatus st = fc_onnx_tensor_to_fc(tp, dir, lim, arena, &t, &local);
  if (st != FC_OK) return fc_error(diag, st, "%s: %s", path, local.msg);
  out->name = tp->name && *tp->name ? fc_arena_strdup(arena, tp->name) : NULL;
  out->t = t;
  return FC_OK;
}

static FcStatus read_pb(const FcImportLimits *lim, const char *path, FcArena *arena, FcTestTensor *out, FcDiag *diag) {
  Onnx__TensorProto *tp = NULL;
  FcStatus st = fc_onnx_load_tensor_proto(path, lim, &tp, diag);
  if (st != FC_OK) return st;
  st = convert_proto(lim, path, tp, arena, out, diag);
  onnx__tensor_proto__free_unpacked(tp, NULL);
  return st;
}

FcStatus fc_testcase_read_set(const FcTestCase *tc, int set, const char *kind, FcArena *arena, FcTestTensor **out,
                              int *n, FcDiag *diag) {
  *out = NULL;
  *n = 0;
  char path[8192];
  int count = 0;
  for (; count < MAX_TENSORS; count++) {
    snprintf(path, sizeof path, "%s/test_data_set_%d/%s_%d.pb", tc->dir, set, kind, count);
    if (!entry_exists(path)) break;
  }
  FcTestTensor *ts = FC_NEW_ARRAY(arena, FcTestTensor, (size_t)(count ? count : 1));
  for (int i = 0; i < count; i++) {
    snprintf(path, sizeof path, "%s/test_data_set_%d/%s_%d.pb", tc->dir, set, kind, i);
    FcStatus st = read_pb(&tc->limits, path, arena, &ts[i], diag);
    if (st != FC_OK) return st;
  }
  *out = ts;
  *n = count;
  return FC_OK;
}

int fc_testcase_count_sets(const char *dir) {
  char path[8192];
  int k = 0;
  for (;; k++) {
    snprintf(path, sizeof path, "%s/test_data_set_%d", dir, k);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) break;
  }
  return k;
}

FcStatus fc_testcase_bind(void *ctx, const char *name, int index, FcArena *arena, FcTensor **out, FcDiag *diag) {
  FcTestCase *tc = ctx;
  char path[8192];
  FcTestTensor tt;
  int found = -1;
  for (int i = 0; i < MAX_TENSORS && found < 0; i++) {
    snprintf(path, sizeof path, "%s/test_data_set_%d/input_%d.pb", tc->dir, tc->data_set, i);
    if (!entry_exists(path)) break;
    FcDiag scratch; /* a file that does not parse is reported when (if) it is used, not here */
    fc_diag_init(&scratch);
    Onnx__TensorProto *tp = NULL;
    if (fc_onnx_load_tensor_proto(path, &tc->limits, &tp, &scratch) != FC_OK) continue;
    if (tp->name && strcmp(tp->name, name) == 0) found = i;
    onnx__tensor_proto__free_unpacked(tp, NULL);
  }
  if (found < 0) found = index;
  snprintf(path, sizeof path, "%s/test_data_set_%d/input_%d.pb", tc->dir, tc->data_set, found);
  if (found < 0 || !entry_exists(path)) return FC_ERR_UNSUPPORTED;
  FcStatus st = read_pb(&tc->limits, path, arena, &tt, diag);
  if (st != FC_OK) return st;
  *out = (FcTensor *)tt.t;
  tc->n_bound++;
  return FC_OK;
}

FcStatus fc_testcase_real_inputs(const FcTestCase *tc, FcArena *arena, const char ***names, int *n, FcDiag *diag) {
  char path[8192];
  snprintf(path, sizeof path, "%s/model.onnx", tc->dir);
  Onnx__ModelProto *mp = NULL;
  FcStatus st = fc_onnx_load_model(path, &tc->limits, &mp, diag);
  if (st != FC_OK) return st;
  const Onnx__GraphProto *g = mp->graph;
  size_t n_in = g ? g->n_input : 0;
  const char **v = FC_NEW_ARRAY(arena, const char *, n_in ? n_in : 1);
  int k = 0;
  for (size_t i = 0; i < n_in; i++) {
    const char *nm = g->input[i]->name ? g->input[i]->name : "";
    bool init = false;
    for (size_t j = 0; j < g->n_initializer && !init; j++)
      init = g->initializer[j]->name && strcmp(g->initializer[j]->name, nm) == 0;
    if (!init) v[k++] = fc_arena_strdup(arena, nm);
  }
  fc_onnx_model_free(mp);
  *names = v;
  *n = k;
  return FC_OK;
}
