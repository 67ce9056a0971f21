/* test_onnx_load.c — the ONNX loader and importer: limits, wire checks, tensors, external data,
 * typed fields, tensor files, bindings, Constant nodes and the one unsupported-ops message.
 *
 * The models come from tools/make_test_models.py, run at start-up into a fresh temporary folder
 * (removed at exit) with Debian's /usr/bin/python3; FLOWC_TEST_MODELS=DIR uses an already generated
 * folder instead. The script is found through FLOWC_SOURCE_ROOT or, by default, through this file's
 * __FILE__ path (relative to the build root, which is two folders above this executable).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "onnx_file.h"

static char models[PATH_MAX];
static char tmp_root[PATH_MAX];

/* ---- set-up ---------------------------------------------------------------------------------------- */

static bool is_file(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* The source tree's root, from FLOWC_SOURCE_ROOT or from __FILE__ (absolute, or relative to the cwd or
 * to the build root two folders above this executable). */
static bool find_source_root(char *out, size_t cap) {
  const char *env = getenv("FLOWC_SOURCE_ROOT");
  if (env) {
    snprintf(out, cap, "%s", env);
    return true;
  }
  const char *suffix = "tests/unit/test_onnx_load.c";
  const char *file = __FILE__;
  size_t flen = strlen(file), slen = strlen(suffix);
  if (flen < slen || strcmp(file + flen - slen, suffix) != 0) return false;
  char cands[2][2 * PATH_MAX + 16];
  snprintf(cands[0], sizeof cands[0], "%s", file);
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  cands[1][0] = '\0';
  if (n > 0 && file[0] != '/') {
    exe[n] = '\0';
    *strrchr(exe, '/') = '\0';
    snprintf(cands[1], sizeof cands[1], "%s/../../%s", exe, file);
  }
  for (int i = 0; i < 2; i++) {
    if (!cands[i][0] || !is_file(cands[i])) continue;
    char real[PATH_MAX];
    if (!realpath(cands[i], real)) continue;
    real[strlen(real) - slen] = '\0';
    snprintf(out, cap, "%s", real);
    return true;
  }
  return false;
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw) {
  (void)sb, (void)flag, (void)ftw;
  return remove(p);
}

static int setup_models(void **state) {
  (void)state;
  const char *env = getenv("FLOWC_TEST_MODELS");
  if (env) {
    snprintf(models, sizeof models, "%s", env);
    return 0;
  }
  char root[PATH_MAX];
  if (!find_source_root(root, sizeof root)) {
    fprintf(stderr, "cannot find the source tree (set FLOWC_SOURCE_ROOT or FLOWC_TEST_MODELS)\n");
    return -1;
  }
  snprintf(tmp_root, sizeof tmp_root, "/tmp/flowc-onnx-test-XXXXXX");
  if (!mkdtemp(tmp_root)) return -1;
  snprintf(models, sizeof models, "%s", tmp_root);
  char cmd[3 * PATH_MAX];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tools/make_test_models.py' '%s'", root, models);
  if (system(cmd) != 0) {
    fprintf(stderr, "failed: %s\n", cmd);
    return -1;
  }
  return 0;
}

static int teardown_models(void **state) {
  (void)state;
  if (tmp_root[0]) nftw(tmp_root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

/* ---- helpers ------------------------------------------------------------------------------------- */

/* models/<rel>, in one of a few rotating buffers. */
static const char *mp(const char *rel) {
  static char bufs[8][PATH_MAX + 256];
  static int next;
  char *b = bufs[next++ % 8];
  snprintf(b, sizeof bufs[0], "%s/%s", models, rel);
  return b;
}

static FcImportOptions defaults(void) {
  FcImportOptions o;
  fc_import_options_default(&o);
  return o;
}

static FcModule *import_ok(const char *rel, const FcImportOptions *o) {
  FcDiag d;
  fc_diag_init(&d);
  FcModule *m = NULL;
  FcStatus st = fc_onnx_import(mp(rel), o, &m, &d);
  if (st != FC_OK) fail_msg("%s: %s: %s", rel, fc_status_name(st), d.msg);
  assert_non_null(m);
  return m;
}

/* Imports a model that must fail with `want` and a message containing every fragment given. */
static void import_fails(const char *rel, const FcImportOptions *o, FcStatus want, ...) {
  FcDiag d;
  fc_diag_init(&d);
  FcModule *m = (FcModule *)1;
  FcStatus st = fc_onnx_import(mp(rel), o, &m, &d);
  assert_null(m);
  if (st != want) fail_msg("%s: wanted %s, got %s: %s", rel, fc_status_name(want), fc_status_name(st), d.msg);
  assert_int_equal(d.status, want);
  assert_null(strchr(d.msg, '\n'));
  va_list ap;
  va_start(ap, want);
  for (const char *frag; (frag = va_arg(ap, const char *));)
    if (!strstr(d.msg, frag)) fail_msg("%s: message '%s' lacks '%s'", rel, d.msg, frag);
  va_end(ap);
}

static void tensor_fails(const char *rel, FcStatus want, const char *frag) {
  FcImportOptions o = defaults();
  FcArena a;
  fc_arena_init(&a);
  FcDiag d;
  fc_diag_init(&d);
  FcTensor *t = (FcTensor *)1;
  FcStatus st = fc_read_tensor_file(mp(rel), &o.limits, &a, &t, &d);
  fc_arena_free(&a);
  assert_null(t);
  if (st != want || !strstr(d.msg, frag))
    fail_msg("%s: wanted %s '%s', got %s: %s", rel, fc_status_name(want), frag, fc_status_name(st), d.msg);
}

static FcTensor *read_tensor(FcArena *a, const char *rel) {
  FcImportOptions o = defaults();
  FcDiag d;
  fc_diag_init(&d);
  FcTensor *t = NULL;
  if (fc_read_tensor_file(mp(rel), &o.limits, a, &t, &d) != FC_OK) fail_msg("%s: %s", rel, d.msg);
  return t;
}

static const FcTensor *output_const(FcModule *m, int i) {
  const FcTensor *t = fc_value_const(fc_graph_output(m->graph, i));
  assert_non_null(t);
  return t;
}

static void assert_type(const FcType *t, const char *want) {
  char buf[256];
  assert_string_equal(fc_type_str(t, buf, sizeof buf), want);
}

static int64_t file_size(const char *p) {
  struct stat st;
  assert_int_equal(stat(p, &st), 0);
  return (int64_t)st.st_size;
}

/* ---- loading and limits -------------------------------------------------------------------------- */

static void test_load_tiny(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  FcDiag d;
  fc_diag_init(&d);
  Onnx__ModelProto *m;
  assert_int_equal(fc_onnx_load_model(mp("tiny.onnx"), &o.limits, &m, &d), FC_OK);
  assert_non_null(m->graph);
  assert_int_equal(m->graph->n_node, 1);
  assert_string_equal(m->graph->node[0]->op_type, "Add");
  assert_int_equal(m->graph->n_initializer, 1);
  fc_onnx_model_free(m);
}

static void test_file_size_limit(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  int64_t size = file_size(mp("passthrough.onnx"));
  o.limits.max_file_bytes = size;
  FcModule *m = import_ok("passthrough.onnx", &o);
  fc_module_destroy(m);
  o.limits.max_file_bytes = size - 1;
  char want[64];
  snprintf(want, sizeof want, "is %lld bytes, over the limit of %lld bytes", (long long)size, (long long)size - 1);
  import_fails("passthrough.onnx", &o, FC_ERR_LIMIT, want, "--max-file-size", NULL);
}

static void test_not_a_file(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  import_fails("ext", &o, FC_ERR_IO, "is a directory", NULL);
  import_fails("no_such_model.onnx", &o, FC_ERR_IO, "cannot open", "No such file", NULL);
  import_fails("npy/not_npy.bin", &o, FC_ERR_INPUT, "not a valid ONNX model", NULL);
}

static void test_nesting_limit(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  FcDiag d;
  fc_diag_init(&d);
  Onnx__ModelProto *m;
  assert_int_equal(fc_onnx_load_model(mp("nest64.onnx"), &o.limits, &m, &d), FC_OK);
  fc_onnx_model_free(m);
  import_fails("nest65.onnx", &o, FC_ERR_LIMIT, "deeper than the limit of 64", "--max-nesting", NULL);
  o.limits.max_nesting = 10;
  fc_diag_init(&d);
  assert_int_equal(fc_onnx_load_model(mp("nest10.onnx"), &o.limits, &m, &d), FC_OK);
  fc_onnx_model_free(m);
  import_fails("nest11.onnx", &o, FC_ERR_LIMIT, "deeper than the limit of 10", "--max-nesting", NULL);
  /* Within the limit the import gets past the loader to the nodes (whose Ifs read an undefined 'c'). */
  o = defaults();
  import_fails("nest64.onnx", &o, FC_ERR_INPUT, "node 'if0' (If): input 'c' is not produced", NULL);
}

/* Writes a varint just before *p (building messages back to front). */
static void put_varint_before(uint8_t **p, uint64_t v) {
  uint8_t tmp[10];
  int n = 0;
  do {
    tmp[n] = (uint8_t)(v & 0x7f);
    v >>= 7;
    if (v) tmp[n] |= 0x80;
    n++;
  } while (v);
  *p -= n;
  memcpy(*p, tmp, (size_t)n);
}

static void wrap_before(uint8_t **p, const uint8_t *end, uint8_t tag) {
  put_varint_before(p, (uint64_t)(end - *p));
  *--*p = tag;
}

/* Model{graph{node{attribute{g{node{...}}}}}}, `levels` subgraphs deep: 2 + 3*levels messages. */
static uint8_t *deep_model(int levels, size_t *len) {
  size_t cap = (size_t)levels * 3 * 6 + 16;
  uint8_t *buf = malloc(cap), *end = buf + cap, *p = end;
  for (int i = 0; i < levels; i++) {
    wrap_before(&p, end, 0x32); /* AttributeProto.g */
    wrap_before(&p, end, 0x2a); /* NodeProto.attribute */
    wrap_before(&p, end, 0x0a); /* GraphProto.node */
  }
  wrap_before(&p, end, 0x3a); /* ModelProto.graph */
  *len = (size_t)(end - p);
  memmove(buf, p, *len);
  return buf;
}

static void test_deep_nesting_no_recursion(void **state) {
  (void)state;
  size_t len;
  uint8_t *buf = deep_model(200000, &len); /* 600002 messages: protobuf-c would overflow the stack */
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_onnx_wire_check(buf, len, &onnx__model_proto__descriptor, INT_MAX, "ONNX model", &d), FC_OK);
  fc_diag_init(&d);
  assert_int_equal(fc_onnx_wire_check(buf, len, &onnx__model_proto__descriptor, 64, "ONNX model", &d), FC_ERR_LIMIT);
  assert_non_null(strstr(d.msg, "--max-nesting"));
  free(buf);
  buf = deep_model(20, &len); /* depth 62 */
  fc_diag_init(&d);
  assert_int_equal(fc_onnx_wire_check(buf, len, &onnx__model_proto__descriptor, 62, "ONNX model", &d), FC_OK);
  assert_int_equal(fc_onnx_wire_check(buf, len, &onnx__model_proto__descriptor, 61, "ONNX model", &d), FC_ERR_LIMIT);
  free(buf);
}

static void wire_fails(const uint8_t *b, size_t n, const char *frag) {
  FcDiag d;
  fc_diag_init(&d);
  FcStatus st = fc_onnx_wire_check(b, n, &onnx__model_proto__descriptor, 64, "ONNX model", &d);
  if (st != FC_ERR_INPUT || !strstr(d.msg, frag)) fail_msg("wanted '%s', got %s: %s", frag, fc_status_name(st), d.msg);
}

static void test_malformed_wire(void **state) {
  (void)state;
  const uint8_t unterminated[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
  wire_fails(unterminated, sizeof unterminated, "bad varint");
  const uint8_t too_long[] = {0x3a, 0x05, 0x0a, 0x00};
  wire_fails(too_long, sizeof too_long, "runs past the end");
  const uint8_t inner_too_long[] = {0x3a, 0x02, 0x0a, 0x05}; /* fits the file but not its parent */
  wire_fails(inner_too_long, sizeof inner_too_long, "runs past the end");
  const uint8_t wrong_type[] = {0x0a, 0x01, 0x00}; /* ir_version (varint) as length-delimited */
  wire_fails(wrong_type, sizeof wrong_type, "field 'ir_version' of onnx.ModelProto has wire type 2");
  const uint8_t group[] = {0x0b, 0x0c};
  wire_fails(group, sizeof group, "unsupported wire type 3");
  const uint8_t field0[] = {0x02, 0x00};
  wire_fails(field0, sizeof field0, "bad field tag");
  const uint8_t fixed_short[] = {0x3a, 0x03, 0x25, 0x00, 0x00}; /* unknown fixed32 field in GraphProto, cut */
  wire_fails(fixed_short, sizeof fixed_short, "truncated field");
  /* TensorProto.float_data packed with a partial element. */
  const uint8_t partial[] = {0x3a, 0x07, 0x2a, 0x05, 0x22, 0x03, 0x00, 0x00, 0x00};
  wire_fails(partial, sizeof partial, "partial element");
  const uint8_t ok_unknown[] = {0xf8, 0x07, 0x01}; /* unknown varint field 127: kept aside, fine */
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_onnx_wire_check(ok_unknown, sizeof ok_unknown, &onnx__model_proto__descriptor, 64, "m", &d), FC_OK);
}

/* Every prefix and a flipped byte at every position of a small model: an error or a model, never a
 * crash (the sanitizer builds make this strict). */
static void test_corrupted_models(void **state) {
  (void)state;
  uint8_t *buf;
  size_t len;
  FcDiag d;
  fc_diag_init(&d);
  assert_int_equal(fc_onnx_read_file(mp("tiny.onnx"), 1 << 20, "model", &buf, &len, &d), FC_OK);
  char path[PATH_MAX + 64];
  snprintf(path, sizeof path, "%s/corrupt.onnx", models);
  FcImportOptions o = defaults();
  int failures = 0;
  for (size_t i = 0; i < 2 * len; i++) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    if (i < len) {
      fwrite(buf, 1, i, f);
    } else {
      buf[i - len] ^= 0x5a;
      fwrite(buf, 1, len, f);
      buf[i - len] ^= 0x5a;
    }
    fclose(f);
    fc_diag_init(&d);
    FcModule *m = NULL;
    FcStatus st = fc_onnx_import(path, &o, &m, &d);
    if (st != FC_OK) {
      failures++;
      assert_null(m);
      assert_true(d.msg[0] != '\0');
    }
    fc_module_destroy(m);
  }
  assert_true(failures > (int)len);
  remove(path);
  free(buf);
}

static void test_rank_limit(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  FcModule *m = import_ok("rank16.onnx", &o);
  assert_int_equal(m->graph->n_inputs, 1);
  assert_int_equal(m->graph->inputs[0]->type.rank, 16);
  fc_module_destroy(m);
  import_fails("rank17.onnx", &o, FC_ERR_LIMIT, "input 'x' has rank 17, over the limit of 16", "--max-rank", NULL);
  import_fails("init_rank17.onnx", &o, FC_ERR_LIMIT, "tensor 'w' has rank 17", "--max-rank", NULL);
  tensor_fails("npy/rank17.npy", FC_ERR_LIMIT, "--max-rank");
  o.limits.max_rank = 17;
  m = import_ok("rank17.onnx", &o);
  fc_module_destroy(m);
  m = import_ok("init_rank17.onnx", &o);
  fc_module_destroy(m);
}

/* ---- graph-level import ---------------------------------------------------------------------------- */

static void test_dynamic_and_opsets(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  import_fails("dynamic.onnx", &o, FC_ERR_UNSUPPORTED, "input 'x' has a dynamic dimension 'N'", NULL);
  import_fails("opset22.onnx", &o, FC_ERR_UNSUPPORTED, "opset 22", "1 to 21", NULL);
  fc_module_destroy(import_ok("opset21.onnx", &o));
  fc_module_destroy(import_ok("training_v1.onnx", &o));
  import_fails("training_v2.onnx", &o, FC_ERR_UNSUPPORTED,
               "ai.onnx.preview.training.Momentum x1 ('mom': opset 2 is not supported for this op (flowc implements it "
               "up to opset 1))", NULL);
  fc_module_destroy(import_ok("opset6.onnx", &o));
}

static void test_passthrough(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  FcModule *m = import_ok("passthrough.onnx", &o);
  FcGraph *g = m->graph;
  assert_int_equal(g->n_inputs, 1);
  assert_string_equal(g->inputs[0]->name, "x");
  assert_int_equal(fc_graph_num_outputs(g), 1);
  assert_ptr_equal(fc_graph_output(g, 0), g->inputs[0]);
  assert_string_equal(fc_graph_output_name(g, 0), "x");
  assert_type(&g->inputs[0]->type, "tensor<2x3xf32>");
  fc_module_destroy(m);
}

static void test_old_ir_initializers_as_inputs(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  FcModule *m = import_ok("old_ir.onnx", &o);
  FcGraph *g = m->graph;
  assert_int_equal(g->n_inputs, 1);
  assert_string_equal(g->inputs[0]->name, "x");
  assert_int_equal(g->inputs[0]->index, 0);
  const FcTensor *w = output_const(m, 0);
  assert_type(&w->type, "tensor<2x3xf32>");
  for (int i = 0; i < 6; i++) assert_true(fc_tensor_get_f64(w, i) == 7.0);
  assert_string_equal(fc_op_name(fc_graph_output(g, 0)->def), "w");
  assert_ptr_equal(fc_graph_output(g, 1), g->inputs[0]);
  fc_module_destroy(m);
}

static void test_bad_graphs(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  import_fails("undefined_input.onnx", &o, FC_ERR_INPUT,
               "node 'add' (Add): input 'nothere' is not produced by any earlier node", NULL);
  import_fails("undefined_output.onnx", &o, FC_ERR_INPUT, "graph output 'ghost'", NULL);
  import_fails("string_init.onnx", &o, FC_ERR_UNSUPPORTED, "tensor 's' has data type STRING", NULL);
  import_fails("short_raw.onnx", &o, FC_ERR_INPUT, "tensor 'r': raw_data has 20 bytes, its dims need 24", NULL);
  import_fails("dtypes/wrong_field.onnx", &o, FC_ERR_INPUT, "i64 data stored in float_data", NULL);
}

static void test_unsupported_message(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  import_fails("unsupported.onnx", &o, FC_ERR_UNSUPPORTED,
               "unsupported ops: SequenceErase x3 ('SequenceErase_4', "
               "'loop_a/body/SequenceErase_1', 'loop_b/body/SequenceErase_1'), SequenceLength x3 ('nz', "
               "'inner_nz', 'inner_nz'), StringNormalizer x7 ('nms0', 'nms1', 'nms2', 'nms3', 'nms4', ...), "
               "ai.onnx.ml.LinearClassifier x1 ('lc')",
               NULL);
}

/* ---- tensors: typed fields, raw data, external data ------------------------------------------------ */

static const char *const dtype_names[] = {"f32", "u8", "i8", "u16", "i16", "i32", "i64",
                                          "bool", "f16", "f64", "u32", "u64", "bf16"};

static void check_dtypes(const char *rel) {
  FcImportOptions o = defaults();
  FcModule *m = import_ok(rel, &o);
  int n = (int)(sizeof dtype_names / sizeof dtype_names[0]);
  assert_int_equal(fc_graph_num_outputs(m->graph), n);
  for (int i = 0; i < n; i++) {
    const FcTensor *t = output_const(m, i);
    char exp[64];
    snprintf(exp, sizeof exp, "dtypes/expected_%s.npy", dtype_names[i]);
    FcTensor *want = read_tensor(&m->arena, exp);
    if (strcmp(dtype_names[i], "bf16") == 0) assert_int_equal(t->type.dtype, FC_DT_BF16); /* .npy holds its bits */
    else assert_true(fc_type_equal(&t->type, &want->type));
    assert_int_equal(t->nbytes, want->nbytes);
    if (memcmp(t->data, want->data, (size_t)t->nbytes) != 0) fail_msg("%s: %s differs", rel, dtype_names[i]);
  }
  /* A few values spelled out, independent of NumPy. */
  assert_true(fc_tensor_get_i64(output_const(m, 2), 4) == -128);               /* i8 */
  assert_true(fc_tensor_get_f64(output_const(m, 8), 5) == 65504.0);             /* f16 */
  assert_true(fc_tensor_get_f64(output_const(m, 12), 4) == -4.25);              /* bf16 */
  assert_true((uint64_t)fc_tensor_get_i64(output_const(m, 11), 3) == UINT64_MAX); /* u64 */
  assert_true(fc_tensor_get_i64(output_const(m, 6), 4) == INT64_MIN);           /* i64 */
  assert_true(fc_tensor_get_f64(output_const(m, 9), 5) == 1e300);               /* f64 */
  assert_true(fc_tensor_get_i64(output_const(m, 7), 2) == 1);                   /* bool */
  fc_module_destroy(m);
}

static void test_typed_fields(void **state) {
  (void)state;
  check_dtypes("dtypes/typed.onnx");
}

static void test_raw_data(void **state) {
  (void)state;
  check_dtypes("dtypes/raw.onnx");
}

static void test_external_data(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  FcModule *m = import_ok("ext/ok.onnx", &o);
  for (int k = 0; k < 3; k++) {
    const FcTensor *t = output_const(m, k);
    assert_type(&t->type, "tensor<2x3xf32>");
    for (int i = 0; i < 6; i++) assert_true(fc_tensor_get_f64(t, i) == (k == 1 ? 10.0 * i : i));
  }
  fc_module_destroy(m);
  import_fails("ext/dotdot.onnx", &o, FC_ERR_INPUT, "'../secret.bin' leaves the model's folder", NULL);
  import_fails("ext/dotdot_inner.onnx", &o, FC_ERR_INPUT, "leaves the model's folder", NULL);
  import_fails("ext/absolute.onnx", &o, FC_ERR_INPUT, "is an absolute path", NULL);
  import_fails("ext/symlink.onnx", &o, FC_ERR_INPUT, "'link_out.bin' resolves outside the model's folder", NULL);
  import_fails("ext/offset.onnx", &o, FC_ERR_INPUT, "offset 4096 is beyond the end of 'w.bin' (24 bytes)", NULL);
  import_fails("ext/length.onnx", &o, FC_ERR_INPUT, "offset 8 + length 24 is beyond the end of 'w.bin'", NULL);
  import_fails("ext/size.onnx", &o, FC_ERR_INPUT, "external data has 20 bytes, its dims need 24", NULL);
  import_fails("ext/missing.onnx", &o, FC_ERR_IO, "nope.bin", NULL);
  import_fails("ext/badoffset.onnx", &o, FC_ERR_INPUT, "offset '-4' is not a non-negative integer", NULL);
  m = import_ok("ext/big.onnx", &o);
  fc_module_destroy(m);
  o.limits.max_file_bytes = 65535; /* the model fits, big.bin (65536 bytes) does not */
  assert_true(file_size(mp("ext/big.onnx")) < 65535);
  import_fails("ext/big.onnx", &o, FC_ERR_LIMIT, "external data file 'big.bin' of tensor 'big' is 65536 bytes",
               "--max-file-size", NULL);
}

/* ---- Constant nodes ------------------------------------------------------------------------------- */

static void test_constant_nodes(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  FcModule *m = import_ok("constants.onnx", &o);
  const FcTensor *t = output_const(m, 0);
  assert_type(&t->type, "tensor<2xf32>");
  assert_true(fc_tensor_get_f64(t, 0) == 1.5 && fc_tensor_get_f64(t, 1) == -2.0);
  t = output_const(m, 1);
  assert_type(&t->type, "tensor<f32>");
  assert_true(fc_tensor_get_f64(t, 0) == 0.25);
  t = output_const(m, 2);
  assert_type(&t->type, "tensor<3xf32>");
  assert_true(fc_tensor_get_f64(t, 2) == 3.0);
  t = output_const(m, 3);
  assert_type(&t->type, "tensor<i64>");
  assert_true(fc_tensor_get_i64(t, 0) == -7);
  t = output_const(m, 4);
  assert_type(&t->type, "tensor<2xi64>");
  assert_true(fc_tensor_get_i64(t, 0) == 4 && fc_tensor_get_i64(t, 1) == 5);
  assert_string_equal(fc_op_name(fc_graph_output(m->graph, 3)->def), "c_int");
  fc_module_destroy(m);
  import_fails("constant_string.onnx", &o, FC_ERR_UNSUPPORTED,
               "unsupported ops: Constant x1 ('cs': string constants are not supported)", NULL);
  import_fails("constant_badattr.onnx", &o, FC_ERR_INPUT,
               "node 'cbad' (Constant): attribute 'value_float' must be FLOAT, not INT", NULL);
  import_fails("constant_two.onnx", &o, FC_ERR_INPUT, "node 'ctwo' (Constant): needs exactly one value attribute", NULL);
}

/* ---- tensor files --------------------------------------------------------------------------------- */

static void test_npy_files(void **state) {
  (void)state;
  FcArena a;
  fc_arena_init(&a);
  const char *versions[] = {"npy/v1.npy", "npy/v2.npy", "npy/v3.npy", "npy/t.pb"};
  for (int v = 0; v < 4; v++) {
    FcTensor *t = read_tensor(&a, versions[v]);
    assert_type(&t->type, "tensor<2x3xf32>");
    for (int i = 0; i < 6; i++) assert_true(fc_tensor_get_f64(t, i) == i - 2.5);
  }
  FcTensor *t = read_tensor(&a, "npy/bool.npy");
  assert_type(&t->type, "tensor<3xi1>");
  assert_true(fc_tensor_get_i64(t, 0) == 1 && fc_tensor_get_i64(t, 1) == 0);
  t = read_tensor(&a, "npy/i8.npy");
  assert_type(&t->type, "tensor<3xi8>");
  assert_true(fc_tensor_get_i64(t, 2) == -3);
  t = read_tensor(&a, "npy/u16.npy");
  assert_type(&t->type, "tensor<1x2xui16>");
  assert_true(fc_tensor_get_i64(t, 1) == 65535);
  t = read_tensor(&a, "npy/f16.npy");
  assert_type(&t->type, "tensor<2xf16>");
  assert_true(fc_tensor_get_f64(t, 0) == 0.5);
  t = read_tensor(&a, "npy/u64.npy");
  assert_true((uint64_t)fc_tensor_get_i64(t, 0) == UINT64_MAX);
  t = read_tensor(&a, "npy/scalar.npy");
  assert_type(&t->type, "tensor<f64>");
  assert_true(fc_tensor_get_f64(t, 0) == 4.0);
  t = read_tensor(&a, "npy/empty.npy");
  assert_type(&t->type, "tensor<0x3xi32>");
  assert_int_equal(t->nbytes, 0);
  fc_arena_free(&a);

  tensor_fails("npy/big_endian.npy", FC_ERR_UNSUPPORTED, "big-endian data ('>f4')");
  tensor_fails("npy/fortran.npy", FC_ERR_UNSUPPORTED, "Fortran-order");
  tensor_fails("npy/complex.npy", FC_ERR_UNSUPPORTED, "npy dtype '<c8'");
  tensor_fails("npy/truncated.npy", FC_ERR_INPUT, "truncated .npy data: 20 bytes, the shape needs 24");
  tensor_fails("npy/trailing.npy", FC_ERR_INPUT, "28 bytes of .npy data, the shape needs only 24");
  tensor_fails("npy/lying_header.npy", FC_ERR_INPUT, "header claims 60000 bytes");
  tensor_fails("npy/bad_key.npy", FC_ERR_INPUT, "unknown key");
  tensor_fails("npy/not_npy.bin", FC_ERR_INPUT, "neither a .npy file");
  tensor_fails("npy/garbage.pb", FC_ERR_INPUT, "not a valid TensorProto");
  tensor_fails("npy/missing.npy", FC_ERR_IO, "cannot open");
}

/* ---- bindings ------------------------------------------------------------------------------------- */

static void test_bind_up_front(void **state) {
  (void)state;
  const char *files[] = {"bind/shape.npy", "bind/shape.pb"};
  for (int k = 0; k < 2; k++) {
    FcImportOptions o = defaults();
    FcBinding b = {"s", mp(files[k])};
    o.bindings = &b;
    o.n_bindings = 1;
    FcModule *m = import_ok("bind/passthrough.onnx", &o);
    FcGraph *g = m->graph;
    assert_int_equal(g->n_inputs, 1);
    assert_string_equal(g->inputs[0]->name, "x");
    assert_int_equal(g->inputs[0]->index, 0);
    const FcTensor *t = output_const(m, 0);
    assert_type(&t->type, "tensor<2xi64>");
    assert_true(fc_tensor_get_i64(t, 0) == 3 && fc_tensor_get_i64(t, 1) == 2);
    fc_module_destroy(m);
  }
  FcImportOptions o = defaults();
  FcBinding b = {"zz", mp("bind/shape.npy")};
  o.bindings = &b;
  o.n_bindings = 1;
  import_fails("bind/passthrough.onnx", &o, FC_ERR_INPUT, "--bind zz: the model has no graph input named 'zz'", NULL);
  b = (FcBinding){"s", mp("bind/shape3.npy")};
  import_fails("bind/passthrough.onnx", &o, FC_ERR_INPUT,
               "--bind s: the file holds tensor<3xi64>, but input 's' is declared tensor<2xi64>", NULL);
  b = (FcBinding){"s", mp("bind/shape_f.npy")};
  import_fails("bind/passthrough.onnx", &o, FC_ERR_INPUT, "holds tensor<2xf32>", NULL);
  b = (FcBinding){"s", mp("bind/nothere.npy")};
  import_fails("bind/passthrough.onnx", &o, FC_ERR_IO, "--bind s: cannot open", NULL);
  /* A dynamic dim is fine once the binding supplies it. */
  o = defaults();
  import_fails("bind/dynamic.onnx", &o, FC_ERR_UNSUPPORTED, "input 's' has a dynamic dimension 'N'", NULL);
  b = (FcBinding){"s", mp("bind/shape3.npy")};
  o.bindings = &b;
  o.n_bindings = 1;
  FcModule *m = import_ok("bind/dynamic.onnx", &o);
  assert_type(&output_const(m, 0)->type, "tensor<3xi64>");
  fc_module_destroy(m);
}

typedef struct BindCtx {
  const char *file; /* NULL: answer FC_ERR_UNSUPPORTED */
  int calls;
  int last_index;
  char last_name[64];
} BindCtx;

static FcStatus bind_cb(void *ctx, const char *name, int index, FcArena *arena, FcTensor **out, FcDiag *diag) {
  BindCtx *c = ctx;
  c->calls++;
  c->last_index = index;
  snprintf(c->last_name, sizeof c->last_name, "%s", name);
  if (!c->file) return FC_ERR_UNSUPPORTED;
  FcImportOptions o = defaults();
  return fc_read_tensor_file(mp(c->file), &o.limits, arena, out, diag);
}

static void test_bind_lazily(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  BindCtx ctx = {"bind/shape.npy", 0, -1, ""};
  o.bind_fn = bind_cb;
  o.bind_ctx = &ctx;
  FcModule *m = import_ok("bind/reshape.onnx", &o);
  FcGraph *g = m->graph;
  assert_int_equal(ctx.calls, 1);
  assert_string_equal(ctx.last_name, "shape");
  assert_int_equal(ctx.last_index, 1);
  assert_int_equal(g->n_inputs, 1);
  assert_string_equal(g->inputs[0]->name, "data");
  assert_int_equal(g->inputs[0]->index, 0);
  /* The bound constant comes first, before any user. */
  assert_int_equal(g->first->kind, FC_OP_CONSTANT);
  assert_string_equal(fc_op_name(g->first), "shape");
  assert_type(&fc_graph_output(g, 0)->type, "tensor<3x2xf32>");
  fc_module_destroy(m);

  ctx = (BindCtx){NULL, 0, -1, ""};
  import_fails("bind/reshape.onnx", &o, FC_ERR_UNSUPPORTED,
               "unsupported ops: Reshape x1 ('r': input 1 ('shape') must be a compile-time constant: bind graph "
               "input 'shape' with --bind shape=FILE)",
               NULL);
  assert_int_equal(ctx.calls, 1);
  ctx = (BindCtx){"bind/shape3.npy", 0, -1, ""};
  import_fails("bind/reshape.onnx", &o, FC_ERR_INPUT,
               "node 'r' (Reshape): the value bound to graph input 'shape' is tensor<3xi64>, but the input is "
               "tensor<2xi64>",
               NULL);
  ctx = (BindCtx){"bind/nothere.npy", 0, -1, ""};
  import_fails("bind/reshape.onnx", &o, FC_ERR_IO, "node 'r' (Reshape): binding graph input 'shape'", NULL);
  o = defaults();
  import_fails("bind/reshape.onnx", &o, FC_ERR_UNSUPPORTED, "--bind shape=FILE", NULL);
}

static void test_fold_constant_chain(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  FcModule *m = import_ok("bind/fold.onnx", &o);
  assert_type(&fc_graph_output(m->graph, 0)->type, "tensor<3x2xf32>");
  assert_int_equal(m->graph->n_inputs, 1);
  fc_module_destroy(m);
}

/* ---- legalised models --------------------------------------------------------------------------- */

static void test_tiny_add(void **state) {
  (void)state;
  FcImportOptions o = defaults();
  FcModule *m = import_ok("tiny.onnx", &o);
  FcGraph *g = m->graph;
  assert_int_equal(g->n_inputs, 1);
  FcValue *y = fc_graph_output(g, 0);
  assert_type(&y->type, "tensor<2x3xf32>");
  assert_string_equal(fc_graph_output_name(g, 0), "y");
  assert_int_equal(y->def->kind, FC_OP_ADD);
  assert_string_equal(fc_op_name(y->def), "add");
  assert_int_equal(g->first->kind, FC_OP_CONSTANT);
  assert_string_equal(fc_op_name(g->first), "w");
  fc_module_destroy(m);
}

static void test_onnx_node_test_add(void **state) {
  (void)state;
  const char *p = "/usr/share/libonnx-testdata/data/node/test_add/model.onnx";
  if (!is_file(p)) skip();
  FcDiag d;
  fc_diag_init(&d);
  FcModule *m = NULL;
  FcImportOptions o = defaults();
  if (fc_onnx_import(p, &o, &m, &d) != FC_OK) fail_msg("%s", d.msg);
  assert_int_equal(m->graph->n_inputs, 2);
  assert_type(&fc_graph_output(m->graph, 0)->type, "tensor<3x4x5xf32>");
  assert_string_equal(fc_op_name(fc_graph_output(m->graph, 0)->def), "Add_0"); /* unnamed node */
  fc_module_destroy(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_load_tiny),
      cmocka_unit_test(test_file_size_limit),
      cmocka_unit_test(test_not_a_file),
      cmocka_unit_test(test_nesting_limit),
      cmocka_unit_test(test_deep_nesting_no_recursion),
      cmocka_unit_test(test_malformed_wire),
      cmocka_unit_test(test_corrupted_models),
      cmocka_unit_test(test_rank_limit),
      cmocka_unit_test(test_dynamic_and_opsets),
      cmocka_unit_test(test_passthrough),
      cmocka_unit_test(test_old_ir_initializers_as_inputs),
      cmocka_unit_test(test_bad_graphs),
      cmocka_unit_test(test_unsupported_message),
      cmocka_unit_test(test_typed_fields),
      cmocka_unit_test(test_raw_data),
      cmocka_unit_test(test_external_data),
      cmocka_unit_test(test_constant_nodes),
      cmocka_unit_test(test_npy_files),
      cmocka_unit_test(test_bind_up_front),
      cmocka_unit_test(test_bind_lazily),
      cmocka_unit_test(test_fold_constant_chain),
      cmocka_unit_test(test_tiny_add),
      cmocka_unit_test(test_onnx_node_test_add),
  };
  return cmocka_run_group_tests(tests, setup_models, teardown_models);
}
