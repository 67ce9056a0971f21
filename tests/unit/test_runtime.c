/* test_runtime.c — libflowrt: tensor files, the thread pool, frt_model_run and frt_main.
 *
 * File tests round-trip every dtype at ranks 0..4 through .npy and .pb, then check compatibility both
 * ways with numpy and onnx (tests/runtime/compat.py, run with Debian's /usr/bin/python3: it checks what
 * libflowrt wrote and writes files — every numpy header version, typed-field TensorProtos, the ONNX
 * backend test data, files to refuse — that this test reads back). Corrupt files (every truncation,
 * lying headers, byte flips) must give a status, never a crash (run under ASan+UBSan). The CLI tests run
 * frt_main on hand-written FrtModels, capturing stdout and stderr in files. frt_once runs its init once
 * however many threads ask at the same time.
 */
#include <fcntl.h>
#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>

#include "flowrt.h"

static char tmpdir[256];

static const char *tmp(const char *name) {
  static char bufs[16][1024];
  static int k;
  char *b = bufs[k++ % 16];
  snprintf(b, sizeof bufs[0], "%s/%s", tmpdir, name);
  return b;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
  return remove(path);
}

static int setup_dir(void **state) {
  snprintf(tmpdir, sizeof tmpdir, "%s/frt_test_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state) {
  if (!getenv("FRT_TEST_KEEP"))
    nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  return 0;
}

static void write_bytes(const char *path, const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

static uint8_t *read_bytes(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  fseek(f, 0, SEEK_END);
  long len = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *b = malloc((size_t)len + 1);
  assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
  fclose(f);
  b[len] = 0;
  *n = (size_t)len;
  return b;
}

static const FrtDtype all_dtypes[] = {FRT_F32, FRT_U8,  FRT_I8,  FRT_U16, FRT_I16, FRT_I32, FRT_I64,
                                      FRT_BOOL, FRT_F16, FRT_F64, FRT_U32, FRT_U64, FRT_BF16};
#define N_DTYPES (sizeof all_dtypes / sizeof all_dtypes[0])

/* Keep in sync with pattern() in tests/runtime/compat.py. */
static void fill_pattern(FrtDtype dt, uint8_t *p, size_t numel) {
  size_t n = numel * frt_dtype_size(dt);
  for (size_t k = 0; k < n; k++)
    p[k] = dt == FRT_BOOL ? (k % 3 == 0) : (uint8_t)((k * 7 + 3) & 0xff);
}

/* A tensor of dtype dt with the given dims, filled with the pattern; free data with free(). */
static FrtTensor make_tensor(FrtDtype dt, int32_t rank, const int64_t *dims) {
  FrtTensor t = {.dtype = dt, .rank = rank};
  size_t numel = 1;
  for (int32_t i = 0; i < rank; i++) {
    t.dims[i] = dims[i];
    numel *= (size_t)dims[i];
  }
  t.nbytes = numel * frt_dtype_size(dt);
  t.data = malloc(t.nbytes + 1);
  fill_pattern(dt, t.data, numel);
  return t;
}

static void assert_same_tensor(const FrtTensor *a, const FrtTensor *b) {
  assert_int_equal(a->dtype, b->dtype);
  assert_int_equal(a->rank, b->rank);
  for (int32_t i = 0; i < a->rank; i++)
    assert_int_equal(a->dims[i], b->dims[i]);
  assert_int_equal(a->nbytes, b->nbytes);
  if (a->nbytes)
    assert_memory_equal(a->data, b->data, a->nbytes);
}

/* ---- dtypes ------------------------------------------------------------------------------------------ */

static void test_dtype_table(void **state) {
  assert_int_equal(frt_dtype_size(FRT_F32), 4);
  assert_int_equal(frt_dtype_size(FRT_BOOL), 1);
  assert_int_equal(frt_dtype_size(FRT_BF16), 2);
  assert_int_equal(frt_dtype_size(FRT_U64), 8);
  assert_int_equal(frt_dtype_size((FrtDtype)8), 0);
  assert_int_equal(frt_dtype_size((FrtDtype)0), 0);
  assert_string_equal(frt_dtype_name(FRT_F32), "f32");
  assert_string_equal(frt_dtype_name(FRT_BOOL), "i1");
  assert_string_equal(frt_dtype_name(FRT_U8), "ui8");
  assert_string_equal(frt_dtype_name((FrtDtype)99), "?");
}

/* ---- round trips ----------------------------------------------------------------------------------- */

static const int64_t shape_dims[] = {3, 1, 4, 2};

static void roundtrip(const FrtTensor *t, const char *name, bool pb) {
  FrtError err = {0};
  const char *path = tmp(name);
  FrtStatus st = pb ? frt_tensor_write_pb(path, t, "x", &err) : frt_tensor_write_npy(path, t, &err);
  assert_int_equal(st, FRT_OK);
  FrtTensor back;
  st = frt_tensor_read(path, &back, &err);
  if (st != FRT_OK)
    fail_msg("%s: %s", name, err.msg);
  FrtTensor want = *t;
  if (!pb && t->dtype == FRT_BF16)
    want.dtype = FRT_U16; /* .npy has no bf16: it reads back as the ui16 bits */
  assert_same_tensor(&want, &back);
  assert_int_equal((uintptr_t)back.data % 64, 0);
  frt_tensor_free(&back);
  assert_null(back.data);
}

static void test_roundtrip_all_dtypes(void **state) {
  for (size_t d = 0; d < N_DTYPES; d++) {
    for (int32_t rank = 0; rank <= 4; rank++) {
      FrtTensor t = make_tensor(all_dtypes[d], rank, shape_dims);
      roundtrip(&t, "rt.npy", false);
      roundtrip(&t, "rt.pb", true);
      free(t.data);
    }
    static const int64_t empty[] = {0, 5}, wide[] = {1000}, deep[16] = {1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3};
    FrtTensor t = make_tensor(all_dtypes[d], 2, empty);
    roundtrip(&t, "rt.npy", false);
    roundtrip(&t, "rt.pb", true);
    free(t.data);
    t = make_tensor(all_dtypes[d], 1, wide);
    roundtrip(&t, "rt.npy", false);
    roundtrip(&t, "rt.pb", true);
    free(t.data);
    t = make_tensor(all_dtypes[d], 16, deep);
    roundtrip(&t, "rt.npy", false);
    roundtrip(&t, "rt.pb", true);
    free(t.data);
  }
}

/* The exact header bytes numpy writes, for shapes whose repr differs: (), (3,), (2, 3). */
static void test_npy_header_bytes(void **state) {
  static const struct {
    FrtDtype dt;
    int32_t rank;
    int64_t dims[2];
    const char *dict;
  } cases[] = {
      {FRT_F64, 0, {0}, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }"},
      {FRT_I8, 1, {3}, "{'descr': '|i1', 'fortran_order': False, 'shape': (3,), }"},
      {FRT_F32, 2, {2, 3}, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }"},
      {FRT_BOOL, 2, {0, 5}, "{'descr': '|b1', 'fortran_order': False, 'shape': (0, 5), }"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    FrtTensor t = make_tensor(cases[i].dt, cases[i].rank, cases[i].dims);
    FrtError err;
    assert_int_equal(frt_tensor_write_npy(tmp("h.npy"), &t, &err), FRT_OK);
    size_t n;
    uint8_t *b = read_bytes(tmp("h.npy"), &n);
    assert_int_equal(n, 128 + t.nbytes);
    assert_memory_equal(b, "\x93NUMPY\x01\x00\x76\x00", 10);
    size_t dl = strlen(cases[i].dict);
    assert_memory_equal(b + 10, cases[i].dict, dl);
    /* numpy's growth space (21 minus the first dim's digits) then padding, all spaces, then '\n'. */
    for (size_t k = 10 + dl; k < 127; k++)
      assert_int_equal(b[k], ' ');
    assert_int_equal(b[127], '\n');
    free(b);
    free(t.data);
  }
}

/* ---- numpy and onnx compatibility -------------------------------------------------------------------- */

static void test_numpy_onnx_compat(void **state) {
  const char *scripts = getenv("FRT_TEST_SCRIPTS");
  if (!scripts || access("/usr/bin/python3", X_OK) != 0) {
    print_message("skipped: FRT_TEST_SCRIPTS unset or no /usr/bin/python3\n");
    skip();
  }
  FILE *man = fopen(tmp("c_manifest.txt"), "w");
  assert_non_null(man);
  /* Beyond ranks 0..4: an empty dim, a 4-digit dim, and rank 16, whose header crosses 128 bytes only
   * with numpy's exact growth space. */
  static const int64_t extra[][16] = {{0, 5}, {1000}, {1, 2, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 3}};
  for (size_t d = 0; d < N_DTYPES; d++) {
    for (int k = 0; k < 8; k++) {
      int32_t rank = k < 5 ? k : k == 5 ? 2 : k == 6 ? 1 : 16;
      const int64_t *dims = k < 5 ? shape_dims : extra[k - 5];
      FrtTensor t = make_tensor(all_dtypes[d], rank, dims);
      for (int pb = 0; pb < 2; pb++) {
        char name[64], tname[64];
        snprintf(name, sizeof name, "c_%d_%d.%s", (int)all_dtypes[d], k, pb ? "pb" : "npy");
        snprintf(tname, sizeof tname, "tensor_%d_%d", (int)all_dtypes[d], k);
        FrtError err;
        FrtStatus st = pb ? frt_tensor_write_pb(tmp(name), &t, tname, &err) : frt_tensor_write_npy(tmp(name), &t, &err);
        assert_int_equal(st, FRT_OK);
        fprintf(man, "%s %d %d", name, (int)all_dtypes[d], (int)rank);
        for (int32_t i = 0; i < rank; i++)
          fprintf(man, " %lld", (long long)dims[i]);
        fprintf(man, "\n");
      }
      free(t.data);
    }
  }
  fclose(man);
  char cmd[1024];
  snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s/compat.py %s", scripts, tmpdir);
  assert_int_equal(system(cmd), 0);

  FILE *f = fopen(tmp("py_manifest.txt"), "r");
  assert_non_null(f);
  char line[1024];
  int n_ok = 0, n_refused = 0, n_onnx = 0;
  while (fgets(line, sizeof line, f)) {
    char name[512], verdict[16];
    int code = 0, rank = 0, used = 0;
    assert_true(sscanf(line, "%511s %15s%n", name, verdict, &used) == 2);
    FrtTensor t;
    FrtError err = {0};
    FrtStatus st = frt_tensor_read(tmp(name), &t, &err);
    if (strcmp(verdict, "refuse") == 0) {
      if (st == FRT_OK)
        fail_msg("%s: read, should have been refused", name);
      assert_true(st == FRT_ERR_INPUT || st == FRT_ERR_UNSUPPORTED);
      assert_non_null(strstr(err.msg, name));
      assert_null(strchr(err.msg, '\n'));
      n_refused++;
      continue;
    }
    if (st != FRT_OK)
      fail_msg("%s: %s", name, err.msg);
    const char *p = line + used;
    int k;
    assert_true(sscanf(p, "%d %d%n", &code, &rank, &k) == 2);
    p += k;
    FrtTensor want = {.dtype = (FrtDtype)code, .rank = rank};
    for (int i = 0; i < rank; i++) {
      long long v;
      assert_true(sscanf(p, "%lld%n", &v, &k) == 1);
      p += k;
      want.dims[i] = v;
    }
    char bin[600];
    snprintf(bin, sizeof bin, "%s.bin", name);
    want.data = read_bytes(tmp(bin), &want.nbytes);
    assert_non_null(want.data);
    assert_same_tensor(&want, &t);
    free(want.data);
    frt_tensor_free(&t);
    n_ok++;
    n_onnx += strncmp(name, "pb_data_", 8) == 0;
  }
  fclose(f);
  print_message("compat: %d files read as numpy/onnx do (%d from the ONNX test data), %d refused\n", n_ok,
                n_onnx, n_refused);
  assert_true(n_ok > 150 && n_refused > 20 && n_onnx > 30);
}

/* ---- corrupt files ------------------------------------------------------------------------------------ */

static void check_every_truncation(const char *name, const uint8_t *b, size_t n) {
  for (size_t len = 0; len < n; len++) {
    write_bytes(tmp(name), b, len);
    FrtTensor t;
    FrtError err = {0};
    FrtStatus st = frt_tensor_read(tmp(name), &t, &err);
    if (st != FRT_ERR_INPUT)
      fail_msg("%s truncated to %zu of %zu bytes: status %d (%s)", name, len, n, st, err.msg);
    assert_non_null(strstr(err.msg, name));
    assert_null(t.data);
  }
}

static void test_truncated_files(void **state) {
  static const int64_t dims[] = {2, 3};
  FrtTensor t = make_tensor(FRT_F32, 2, dims);
  FrtError err;
  assert_int_equal(frt_tensor_write_npy(tmp("full.npy"), &t, &err), FRT_OK);
  assert_int_equal(frt_tensor_write_pb(tmp("full.pb"), &t, "input", &err), FRT_OK);
  free(t.data);
  size_t n;
  uint8_t *b = read_bytes(tmp("full.npy"), &n);
  check_every_truncation("cut.npy", b, n);
  /* Without the .npy name the reader still knows it by its magic. */
  check_every_truncation("cut_npy_as.bin", b, n);
  free(b);
  b = read_bytes(tmp("full.pb"), &n);
  check_every_truncation("cut.pb", b, n);
  free(b);
}

static void expect_npy(const char *header, size_t data_bytes, FrtStatus want, const char *msg) {
  uint8_t file[600] = {0};
  size_t hl = strlen(header);
  memcpy(file, "\x93NUMPY\x01\x00", 8);
  file[8] = (uint8_t)hl;
  file[9] = (uint8_t)(hl >> 8);
  memcpy(file + 10, header, hl);
  write_bytes(tmp("lie.npy"), file, 10 + hl + data_bytes);
  FrtTensor t;
  FrtError err = {0};
  FrtStatus st = frt_tensor_read(tmp("lie.npy"), &t, &err);
  if (st != want || !strstr(err.msg, msg))
    fail_msg("header %s: status %d, message '%s'; wanted %d and '%s'", header, st, err.msg, want, msg);
  if (st == FRT_OK)
    frt_tensor_free(&t);
}

static void test_lying_npy(void **state) {
  const char *ok = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n";
  expect_npy(ok, 24, FRT_OK, "");
  expect_npy(ok, 20, FRT_ERR_INPUT, "the shape needs 24 bytes of data, the file holds 20");
  expect_npy(ok, 28, FRT_ERR_INPUT, "the shape needs 24 bytes of data, the file holds 28");
  expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2**40, 3), }", 24, FRT_ERR_INPUT, "tuple of integers");
  expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 24, FRT_ERR_INPUT,
             "overflows");
  expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 4), }", 24, FRT_ERR_INPUT,
             "too large");
  expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }", 24, FRT_ERR_INPUT, "negative");
  expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6), }", 24, FRT_ERR_INPUT, "tuple of integers");
  expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3], }", 24, FRT_ERR_INPUT, "not a tuple");
  expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1), }", 4,
             FRT_ERR_UNSUPPORTED, "rank above 16");
  expect_npy("{'descr': '<f4', 'fortran_order': False, }", 24, FRT_ERR_INPUT, "lacks 'shape'");
  expect_npy("{'descr': '<f4', 'shape': (6,), }", 24, FRT_ERR_INPUT, "lacks 'fortran_order'");
  expect_npy("{'fortran_order': False, 'shape': (6,), }", 24, FRT_ERR_INPUT, "lacks 'descr'");
  expect_npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (6,), }", 24, FRT_ERR_INPUT, "repeats");
  expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'extra': 1}", 24, FRT_ERR_INPUT,
             "unexpected key 'extra'");
  expect_npy("{'descr': '<f4', 'fortran_order': 0, 'shape': (6,), }", 24, FRT_ERR_INPUT, "True or False");
  expect_npy("{'descr': '<f4', 'fortran_order': Falsey, 'shape': (6,), }", 24, FRT_ERR_INPUT, "True or False");
  expect_npy("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 24, FRT_ERR_UNSUPPORTED, "Fortran");
  expect_npy("{'descr': '>f4', 'fortran_order': False, 'shape': (6,), }", 24, FRT_ERR_UNSUPPORTED, "big-endian");
  expect_npy("{'descr': '|O', 'fortran_order': False, 'shape': (6,), }", 48, FRT_ERR_UNSUPPORTED, "object");
  expect_npy("{'descr': '<c8', 'fortran_order': False, 'shape': (3,), }", 24, FRT_ERR_UNSUPPORTED, "unsupported dtype");
  expect_npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (6,), }", 24, FRT_ERR_UNSUPPORTED,
             "structured");
  expect_npy("{'descr': '<f4\\x', 'fortran_order': False, 'shape': (6,), }", 24, FRT_ERR_INPUT, "not a string");
  expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), } x", 24, FRT_ERR_INPUT, "after the header");
  expect_npy("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), ", 24, FRT_ERR_INPUT, "header dict");
  expect_npy("['descr']", 24, FRT_ERR_INPUT, "not a dict");
  expect_npy("", 24, FRT_ERR_INPUT, "not a dict");

  /* A header length running past the end of the file, v1 and v2; an unknown version. */
  uint8_t file[64] = "\x93NUMPY\x01\x00\xff\x7f{}";
  write_bytes(tmp("hl.npy"), file, 12);
  FrtTensor t;
  FrtError err;
  assert_int_equal(frt_tensor_read(tmp("hl.npy"), &t, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "header length 32767 runs past the end of the file"));
  memcpy(file, "\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14);
  write_bytes(tmp("hl.npy"), file, 14);
  assert_int_equal(frt_tensor_read(tmp("hl.npy"), &t, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "runs past the end"));
  memcpy(file, "\x93NUMPY\x04\x00\x02\x00{}", 12);
  write_bytes(tmp("hl.npy"), file, 12);
  assert_int_equal(frt_tensor_read(tmp("hl.npy"), &t, &err), FRT_ERR_UNSUPPORTED);
  assert_non_null(strstr(err.msg, "version 4.0"));
  write_bytes(tmp("magic.npy"), "PK\x03\x04 not numpy", 15);
  assert_int_equal(frt_tensor_read(tmp("magic.npy"), &t, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "bad magic"));
}

static void expect_pb(const uint8_t *msg, size_t n, FrtStatus want, const char *text) {
  write_bytes(tmp("lie.pb"), msg, n);
  FrtTensor t;
  FrtError err = {0};
  FrtStatus st = frt_tensor_read(tmp("lie.pb"), &t, &err);
  if (st != want || !strstr(err.msg, text))
    fail_msg("status %d, message '%s'; wanted %d and '%s'", st, err.msg, want, text);
  if (st == FRT_OK)
    frt_tensor_free(&t);
}

#define PB(...) (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})

static void test_lying_pb(void **state) {
  /* dims 2, data_type f32, raw_data 8 bytes. */
  expect_pb(PB(0x08, 2, 0x10, 1, 0x4a, 8, 0, 0, 0, 0, 0, 0, 0, 0), FRT_OK, "");
  expect_pb(PB(0x08, 2, 0x10, 1, 0x4a, 9, 0, 0, 0, 0, 0, 0, 0, 0), FRT_ERR_INPUT, "truncated");
  expect_pb(PB(0x08, 2, 0x10, 1, 0x4a, 4, 0, 0, 0, 0), FRT_ERR_INPUT, "raw_data holds 4 bytes, tensor<2xf32> needs 8");
  expect_pb(PB(0x08, 2, 0x10, 1, 0x4a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0), FRT_ERR_INPUT, "truncated");
  /* An 11-byte varint and a 10th byte above 1. */
  expect_pb(PB(0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01), FRT_ERR_INPUT, "malformed");
  expect_pb(PB(0x08, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02), FRT_ERR_INPUT, "malformed");
  expect_pb(PB(0x00, 1), FRT_ERR_INPUT, "field number 0");
  expect_pb(PB(0x0f, 1), FRT_ERR_INPUT, "wire type 7");
  expect_pb(PB(0x0d, 1, 0, 0, 0, 0x10, 1), FRT_ERR_INPUT, "field dims has the wrong wire type");
  expect_pb(PB(0x08, 2, 0x12, 1, 1), FRT_ERR_INPUT, "field data_type has the wrong wire type");
  expect_pb(PB(0x08, 2, 0x10, 1, 0x22, 5, 0, 0, 0, 0, 0), FRT_ERR_INPUT, "float_data is not a whole number");
  expect_pb(PB(0x08, 2, 0x10, 6, 0x2a, 2, 0x80, 0x80), FRT_ERR_INPUT, "malformed packed int32_data");
  expect_pb(PB(0x08, 2, 0x10, 1, 0x25, 0, 0, 0x80, 0x3f), FRT_ERR_INPUT, "float_data holds 1 values, tensor<2xf32> needs 2");
  expect_pb(PB(0x08, 2, 0x10, 1), FRT_ERR_INPUT, "float_data holds 0 values");
  expect_pb(PB(0x10, 99, 0x4a, 0), FRT_ERR_INPUT, "unknown data_type 99");
  expect_pb(PB(0x10, 0x8), FRT_ERR_UNSUPPORTED, "string tensors");
  expect_pb(PB(0x08, 1), FRT_ERR_INPUT, "without data_type");
  /* A scalar (no dims) in float_data, unpacked; unknown fields of every wire type skipped. */
  expect_pb(PB(0x10, 1, 0x25, 0, 0, 0x80, 0x3f, 0xf8, 0x06, 5, 0xf9, 0x06, 1, 2, 3, 4, 5, 6, 7, 8, 0xfd, 0x06, 1, 2, 3, 4,
               0x62, 2, 'h', 'i'),
            FRT_OK, "");
  /* An int32_data value that needs all 10 bytes (-1) truncated to i8, as onnx.numpy_helper does. */
  expect_pb(PB(0x08, 1, 0x10, 3, 0x28, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), FRT_OK, "");
  write_bytes(tmp("empty.pb"), "", 0);
  FrtTensor t;
  FrtError err;
  assert_int_equal(frt_tensor_read(tmp("empty.pb"), &t, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "empty file"));
}

/* Every byte flipped a few ways: a status, never a crash, and a consistent tensor when accepted. */
static void flip_all(const char *name, const uint8_t *b, size_t n) {
  static const uint8_t masks[] = {0x01, 0x80, 0xff};
  uint8_t *c = malloc(n);
  int accepted = 0;
  for (size_t i = 0; i < n; i++) {
    for (size_t m = 0; m < sizeof masks; m++) {
      memcpy(c, b, n);
      c[i] ^= masks[m];
      write_bytes(tmp(name), c, n);
      FrtTensor t;
      FrtError err = {0};
      FrtStatus st = frt_tensor_read(tmp(name), &t, &err);
      if (st == FRT_OK) {
        size_t numel = 1;
        for (int32_t k = 0; k < t.rank; k++)
          numel *= (size_t)t.dims[k];
        assert_int_equal(t.nbytes, numel * frt_dtype_size(t.dtype));
        if (t.nbytes) {
          volatile uint8_t last = ((const uint8_t *)t.data)[t.nbytes - 1]; /* ASan checks the size */
          (void)last;
        }
        frt_tensor_free(&t);
        accepted++;
      } else {
        assert_true(err.msg[0] != 0);
      }
    }
  }
  free(c);
  assert_true(accepted > 0); /* flips inside the data are harmless */
}

static void test_byte_flips(void **state) {
  static const int64_t dims[] = {2, 2};
  FrtTensor t = make_tensor(FRT_I16, 2, dims);
  FrtError err;
  assert_int_equal(frt_tensor_write_npy(tmp("flip_src.npy"), &t, &err), FRT_OK);
  assert_int_equal(frt_tensor_write_pb(tmp("flip_src.pb"), &t, "in", &err), FRT_OK);
  free(t.data);
  size_t n;
  uint8_t *b = read_bytes(tmp("flip_src.npy"), &n);
  flip_all("flip.npy", b, n);
  free(b);
  b = read_bytes(tmp("flip_src.pb"), &n);
  flip_all("flip.pb", b, n);
  free(b);
}

/* frt_tensor_read_max refuses a regular file above the bound by its size, and stops reading a device or a
 * FIFO after the bound; a FIFO without a writer reads as empty instead of blocking the open. The bound
 * for a description covers the widest encoding (11 bytes an element) and 1 MiB of headers. */
static void test_read_bounded(void **state) {
  (void)state;
  static const int64_t dims[] = {2, 3};
  FrtTensor w = make_tensor(FRT_F32, 2, dims), t;
  FrtError err = {0};
  assert_int_equal(frt_tensor_write_npy(tmp("bounded.npy"), &w, &err), FRT_OK);
  struct stat st;
  assert_int_equal(stat(tmp("bounded.npy"), &st), 0);
  assert_int_equal(frt_tensor_read_max(tmp("bounded.npy"), (size_t)st.st_size, &t, &err), FRT_OK);
  frt_tensor_free(&t);
  assert_int_equal(frt_tensor_read_max(tmp("bounded.npy"), (size_t)st.st_size - 1, &t, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "bounded.npy: the file is"));
  assert_int_equal(frt_tensor_read_max("/dev/zero", 100000, &t, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "/dev/zero: more than the 100000 bytes"));
  assert_int_equal(mkfifo(tmp("bounded.fifo"), 0600), 0);
  assert_int_equal(frt_tensor_read_max(tmp("bounded.fifo"), 100000, &t, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "empty file"));
  FrtTensorDesc d = {"x", FRT_F32, 2, dims};
  assert_int_equal(frt_tensor_file_max_bytes(&d), 6 * 11 + ((size_t)1 << 20));
  static const int64_t huge[] = {INT64_MAX, 2};
  FrtTensorDesc h = {"x", FRT_F32, 2, huge};
  assert_int_equal(frt_tensor_file_max_bytes(&h), SIZE_MAX);
  free(w.data);
}

static void test_io_errors(void **state) {
  FrtTensor t;
  FrtError err = {0};
  assert_int_equal(frt_tensor_read(tmp("does_not_exist.npy"), &t, &err), FRT_ERR_IO);
  assert_non_null(strstr(err.msg, "does_not_exist.npy: cannot open: No such file"));
  assert_int_equal(frt_tensor_read(tmpdir, &t, &err), FRT_ERR_IO);
  assert_non_null(strstr(err.msg, "is a directory"));
  assert_int_equal(frt_tensor_read(NULL, &t, &err), FRT_ERR_INPUT);

  static const int64_t dims[] = {2, 3};
  FrtTensor w = make_tensor(FRT_F32, 2, dims);
  assert_int_equal(frt_tensor_write_npy(tmp("no/such/dir.npy"), &w, &err), FRT_ERR_IO);
  assert_non_null(strstr(err.msg, "cannot create"));
  FrtTensor bad = w;
  bad.nbytes = 20;
  assert_int_equal(frt_tensor_write_npy(tmp("bad.npy"), &bad, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "nbytes 20, its shape needs 24"));
  bad = w;
  bad.rank = 17;
  assert_int_equal(frt_tensor_write_pb(tmp("bad.pb"), &bad, "x", &err), FRT_ERR_INPUT);
  bad = w;
  bad.dtype = (FrtDtype)8;
  assert_int_equal(frt_tensor_write_npy(tmp("bad.npy"), &bad, &err), FRT_ERR_UNSUPPORTED);
  bad = w;
  bad.dims[0] = -2;
  assert_int_equal(frt_tensor_write_npy(tmp("bad.npy"), &bad, &err), FRT_ERR_INPUT);
  bad = w;
  bad.data = NULL;
  assert_int_equal(frt_tensor_write_npy(tmp("bad.npy"), &bad, &err), FRT_ERR_INPUT);
  assert_int_equal(frt_tensor_write_npy(tmp("bad.npy"), NULL, &err), FRT_ERR_INPUT);
  /* A NULL error is allowed everywhere. */
  assert_int_equal(frt_tensor_write_npy(tmp("bad.npy"), NULL, NULL), FRT_ERR_INPUT);
  free(w.data);
  frt_tensor_free(NULL);
}

/* ---- thread pool ------------------------------------------------------------------------------------- */

typedef struct Cover {
  atomic_int *hits;
  int64_t n;
  atomic_int calls;
  FrtPool *pool; /* for nested calls */
  atomic_int nested;
  atomic_int bad; /* tasks run on worker threads, where cmocka's asserts cannot longjmp */
} Cover;

static void cover_task(void *ctx, int64_t begin, int64_t end) {
  Cover *c = ctx;
  if (!(0 <= begin && begin < end && end <= c->n))
    atomic_fetch_add(&c->bad, 1);
  atomic_fetch_add(&c->calls, 1);
  for (int64_t i = begin; i < end; i++)
    atomic_fetch_add(&c->hits[i], 1);
}

static void test_parallel_for_covers_once(void **state) {
  static const int64_t sizes[] = {0, 1, 2, 3, 7, 1000};
  atomic_int *hits = calloc(1000, sizeof *hits);
  for (int threads = 1; threads <= 4; threads++) {
    FrtError err = {0};
    FrtPool *pool = frt_pool_create(threads, &err);
    assert_non_null(pool);
    assert_int_equal(frt_pool_threads(pool), threads);
    for (int rep = 0; rep < 50; rep++) {
      for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
        Cover c = {.hits = hits, .n = sizes[s]};
        for (int64_t i = 0; i < sizes[s]; i++)
          atomic_store(&hits[i], 0);
        frt_parallel_for(pool, sizes[s], cover_task, &c);
        for (int64_t i = 0; i < sizes[s]; i++)
          assert_int_equal(atomic_load(&hits[i]), 1);
        /* one inline call on 1 thread; else min(n, 4 chunks a thread) */
        int64_t chunks = threads == 1 ? 1 : 4 * threads;
        int64_t want_calls = sizes[s] < chunks ? sizes[s] : chunks;
        assert_int_equal(atomic_load(&c.calls), want_calls);
        assert_int_equal(atomic_load(&c.bad), 0);
      }
    }
    frt_pool_destroy(pool);
  }
  /* No pool: inline. */
  Cover c = {.hits = hits, .n = 7};
  for (int64_t i = 0; i < 7; i++)
    atomic_store(&hits[i], 0);
  frt_parallel_for(NULL, 7, cover_task, &c);
  for (int64_t i = 0; i < 7; i++)
    assert_int_equal(atomic_load(&hits[i]), 1);
  assert_int_equal(atomic_load(&c.calls), 1);
  assert_int_equal(frt_pool_threads(NULL), 1);
  free(hits);
}

/* Chunk boundaries depend only on (n, threads): 10 over 2 threads is 8 chunks, [0,2) [2,4) [4,5) ...
 * [9,10); with at most 3 chunks (frt_parallel_for_max) [0,4) [4,7) [7,10). Each chunk's frt_task_index
 * is its index. */
typedef struct Bounds {
  pthread_mutex_t mu;
  int64_t begins[16], ends[16];
  int slots[16];
  int n;
} Bounds;

static void bounds_task(void *ctx, int64_t begin, int64_t end) {
  Bounds *b = ctx;
  pthread_mutex_lock(&b->mu);
  int k = b->n++;
  b->begins[k] = begin;
  b->ends[k] = end;
  b->slots[k] = frt_task_index();
  pthread_mutex_unlock(&b->mu);
}

static void check_bounds(const Bounds *b, const int64_t *want_begin, const int64_t *want_end, int chunks) {
  assert_int_equal(b->n, chunks);
  int seen[16] = {0};
  for (int k = 0; k < chunks; k++) {
    int idx = -1;
    for (int i = 0; i < chunks; i++)
      if (b->begins[k] == want_begin[i]) idx = i;
    assert_true(idx >= 0);
    assert_int_equal(b->ends[k], want_end[idx]);
    assert_int_equal(b->slots[k], idx);
    seen[idx]++;
  }
  for (int k = 0; k < chunks; k++)
    assert_int_equal(seen[k], 1);
}

static void test_parallel_for_chunks(void **state) {
  FrtPool *pool = frt_pool_create(2, NULL);
  assert_non_null(pool);
  Bounds b = {.mu = PTHREAD_MUTEX_INITIALIZER};
  frt_parallel_for(pool, 10, bounds_task, &b);
  static const int64_t begin8[] = {0, 2, 4, 5, 6, 7, 8, 9}, end8[] = {2, 4, 5, 6, 7, 8, 9, 10};
  check_bounds(&b, begin8, end8, 8);
  Bounds c = {.mu = PTHREAD_MUTEX_INITIALIZER};
  frt_parallel_for_max(pool, 10, 3, bounds_task, &c);
  static const int64_t begin3[] = {0, 4, 7}, end3[] = {4, 7, 10};
  check_bounds(&c, begin3, end3, 3);
  assert_int_equal(frt_task_index(), 0); /* outside any task */
  frt_pool_destroy(pool);
}

/* Each thread owns a contiguous run of the chunks and steals from the back of the others' only when its
 * own is done: 8 chunks over 2 threads, the caller owns 0..3 and the worker 4..7. The caller's first chunk
 * blocks until the worker ran all the others, and the worker's chunks wait until the caller is inside
 * its first one, so the order is fixed: the caller runs 0, the worker 4 5 6 7 (its own, from the front),
 * then 3 2 1 (stolen, from the back). */
typedef struct Owned {
  pthread_t caller;
  atomic_int caller_in;
  atomic_int others; /* chunks run by the worker */
  int order[8];      /* the worker's chunks, in the order it ran them */
  int caller_chunks, caller_first;
  atomic_int bad;
} Owned;

/* Polls until *v == want; false after 10 s. */
static bool wait_until(atomic_int *v, int want) {
  double t0 = frt_now_seconds();
  while (atomic_load(v) != want)
    if (frt_now_seconds() - t0 > 10)
      return false;
  return true;
}

static void owned_task(void *ctx, int64_t begin, int64_t end) {
  Owned *o = ctx;
  if (end != begin + 1)
    atomic_fetch_add(&o->bad, 1);
  if (pthread_equal(pthread_self(), o->caller)) {
    if (o->caller_chunks++ == 0) {
      o->caller_first = (int)begin;
      atomic_store(&o->caller_in, 1);
      if (!wait_until(&o->others, 7))
        atomic_fetch_add(&o->bad, 1);
    }
    return;
  }
  if (!wait_until(&o->caller_in, 1))
    atomic_fetch_add(&o->bad, 1);
  int k = atomic_load(&o->others);
  if (k < 8)
    o->order[k] = (int)begin;
  atomic_store(&o->others, k + 1);
}

static void test_parallel_for_owned_runs(void **state) {
  FrtPool *pool = frt_pool_create(2, NULL);
  assert_non_null(pool);
  for (int rep = 0; rep < 20; rep++) {
    Owned o = {.caller = pthread_self()};
    frt_parallel_for(pool, 8, owned_task, &o);
    assert_int_equal(atomic_load(&o.bad), 0);
    assert_int_equal(o.caller_chunks, 1);
    assert_int_equal(o.caller_first, 0);
    assert_int_equal(atomic_load(&o.others), 7);
    static const int want[7] = {4, 5, 6, 7, 3, 2, 1};
    for (int k = 0; k < 7; k++)
      assert_int_equal(o.order[k], want[k]);
  }
  frt_pool_destroy(pool);
}

static void nested_task(void *ctx, int64_t begin, int64_t end) {
  Cover *c = ctx;
  for (int64_t i = begin; i < end; i++) {
    Cover inner = {.hits = c->hits + i * 10, .n = 10};
    frt_parallel_for(c->pool, 10, cover_task, &inner);
    /* Nested calls run inline, in one chunk. */
    if (atomic_load(&inner.calls) != 1 || atomic_load(&inner.bad))
      atomic_fetch_add(&c->bad, 1);
    atomic_fetch_add(&c->nested, 1);
  }
}

static void test_parallel_for_nested(void **state) {
  FrtPool *pool = frt_pool_create(3, NULL);
  atomic_int *hits = calloc(100, sizeof *hits);
  Cover c = {.hits = hits, .n = 10, .pool = pool};
  frt_parallel_for(pool, 10, nested_task, &c);
  assert_int_equal(atomic_load(&c.nested), 10);
  assert_int_equal(atomic_load(&c.bad), 0);
  for (int i = 0; i < 100; i++)
    assert_int_equal(atomic_load(&hits[i]), 1);
  free(hits);
  frt_pool_destroy(pool);
}

typedef struct Caller {
  FrtPool *pool;
  atomic_int hits[64];
} Caller;

static void caller_task(void *ctx, int64_t begin, int64_t end) {
  Caller *c = ctx;
  for (int64_t i = begin; i < end; i++)
    atomic_fetch_add(&c->hits[i], 1);
}

static void *caller_thread(void *arg) {
  Caller *c = arg;
  for (int rep = 0; rep < 300; rep++)
    frt_parallel_for(c->pool, 64, caller_task, c);
  return NULL;
}

/* Two threads share one pool: each call either gets the pool or runs inline; none is lost. */
static void test_parallel_for_concurrent_callers(void **state) {
  FrtPool *pool = frt_pool_create(2, NULL);
  Caller a = {.pool = pool}, b = {.pool = pool};
  pthread_t ta, tb;
  assert_int_equal(pthread_create(&ta, NULL, caller_thread, &a), 0);
  assert_int_equal(pthread_create(&tb, NULL, caller_thread, &b), 0);
  pthread_join(ta, NULL);
  pthread_join(tb, NULL);
  for (int i = 0; i < 64; i++) {
    assert_int_equal(atomic_load(&a.hits[i]), 300);
    assert_int_equal(atomic_load(&b.hits[i]), 300);
  }
  frt_pool_destroy(pool);
}

/* frt_once (16-bit weights' expansion): eight threads start together and ask for the same word; init runs
 * exactly once, and every thread returns only after it finished (each checks that `done` is set). The
 * init sleeps, so the others do arrive while it runs. A second word gets its own call. */
static atomic_int once_calls;
static atomic_int once_done;
static int32_t once_word, once_word2;

static void once_init(void) {
  atomic_fetch_add(&once_calls, 1);
  usleep(20000);
  atomic_store(&once_done, 1);
}

static void once_init2(void) { atomic_fetch_add(&once_calls, 100); }

static void *once_thread(void *arg) {
  pthread_barrier_t *start = arg;
  pthread_barrier_wait(start);
  frt_once(&once_word, once_init);
  return (void *)(intptr_t)atomic_load(&once_done);
}

static void test_once(void **state) {
  enum { N = 8 };
  pthread_barrier_t start;
  assert_int_equal(pthread_barrier_init(&start, NULL, N), 0);
  pthread_t t[N];
  for (int i = 0; i < N; i++) assert_int_equal(pthread_create(&t[i], NULL, once_thread, &start), 0);
  for (int i = 0; i < N; i++) {
    void *saw_done = NULL;
    pthread_join(t[i], &saw_done);
    assert_int_equal((intptr_t)saw_done, 1);
  }
  pthread_barrier_destroy(&start);
  assert_int_equal(atomic_load(&once_calls), 1);
  assert_int_equal(once_word, 1);
  frt_once(&once_word, once_init); /* done: returns at once */
  frt_once(&once_word2, once_init2);
  frt_once(&once_word2, once_init2);
  assert_int_equal(atomic_load(&once_calls), 101);
}

static void test_pool_create(void **state) {
  FrtError err = {0};
  assert_null(frt_pool_create(-1, &err));
  assert_int_equal(err.status, FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "thread count -1"));
  FrtPool *p = frt_pool_create(0, &err);
  assert_non_null(p);
  assert_true(frt_pool_threads(p) >= 1);
  frt_pool_destroy(p);
  frt_pool_destroy(NULL);
  /* Created and destroyed without ever running a job. */
  p = frt_pool_create(4, &err);
  frt_pool_destroy(p);
  double t0 = frt_now_seconds(), t1 = frt_now_seconds();
  assert_true(t0 > 0 && t1 >= t0);
}

/* FLOWC_SPIN_US sets how long idle threads poll: 0 sends them to sleep at once, so every job goes
 * through the condition variables; a bad value is refused when the pool is created. */
static void test_pool_spin_setting(void **state) {
  static const char *const bad[] = {"abc", "-1", "1e7", "5us", "nan"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    FrtError err = {0};
    setenv("FLOWC_SPIN_US", bad[i], 1);
    assert_null(frt_pool_create(2, &err));
    assert_int_equal(err.status, FRT_ERR_INPUT);
    assert_non_null(strstr(err.msg, "FLOWC_SPIN_US"));
  }
  static const char *const good[] = {"0", "5", ""};
  atomic_int *hits = calloc(1000, sizeof *hits);
  for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
    setenv("FLOWC_SPIN_US", good[i], 1);
    FrtError err = {0};
    FrtPool *pool = frt_pool_create(3, &err);
    assert_non_null(pool);
    for (int rep = 0; rep < 200; rep++) {
      Cover c = {.hits = hits, .n = 1000};
      frt_parallel_for(pool, 1000, cover_task, &c);
      assert_int_equal(atomic_load(&c.calls), 12);
      assert_int_equal(atomic_load(&c.bad), 0);
    }
    for (int64_t k = 0; k < 1000; k++)
      assert_int_equal(atomic_load(&hits[k]), 200 * (int)(i + 1));
    frt_pool_destroy(pool);
  }
  unsetenv("FLOWC_SPIN_US");
  free(hits);
}

/* Profile ticks: each adds the time since the previous tick to its kernel's slot; -1 and out-of-range
 * indices only restart the clock; without a profile (or pool) a tick changes nothing. */
static void test_profile_ticks(void **state) {
  FrtPool *pool = frt_pool_create(1, NULL);
  double acc[3] = {0};
  frt_profile_tick(pool, 0); /* no profile yet */
  frt_profile_tick(NULL, 0);
  frt_pool_set_profile(pool, acc, 2);
  frt_profile_tick(pool, -1);
  double t0 = frt_now_seconds();
  while (frt_now_seconds() - t0 < 2e-3) {
  }
  frt_profile_tick(pool, 0);
  frt_profile_tick(pool, 1);
  frt_profile_tick(pool, 2); /* beyond n: ignored */
  frt_pool_set_profile(pool, NULL, 0);
  frt_profile_tick(pool, 0);
  assert_true(acc[0] >= 2e-3 && acc[0] < 1.0);
  assert_true(acc[1] >= 0 && acc[1] < acc[0]);
  assert_true(acc[2] == 0);
  frt_pool_destroy(pool);
}

/* ---- models ---------------------------------------------------------------------------------------- */

/* The test model: y = x + 1 (f32 2x3, in parallel), scores[r][c] = c, except 10 at c = (r + 1 + n[0]) % 4
 * (f32 2x4), total = sum(n) (i64 scalar). */
static const int64_t x_dims[] = {2, 3}, n_dims[] = {3}, s_dims[] = {2, 4};
static const FrtTensorDesc add_inputs[] = {{"x", FRT_F32, 2, x_dims}, {"n", FRT_I64, 1, n_dims}};
static const FrtTensorDesc add_outputs[] = {{"y", FRT_F32, 2, x_dims}, {"scores", FRT_F32, 2, s_dims},
                                            {"total", FRT_I64, 0, NULL}};
static atomic_int add_runs;

typedef struct AddCtx {
  const float *x;
  float *y;
} AddCtx;

static void add_task(void *ctx, int64_t begin, int64_t end) {
  AddCtx *a = ctx;
  for (int64_t i = begin; i < end; i++)
    a->y[i] = a->x[i] + 1.0f;
}

static int add_run(const void *const *inputs, void *const *outputs, void *workspace, FrtPool *pool) {
  if ((uintptr_t)workspace % 64)
    return 7;
  memset(workspace, 0xab, 100); /* ASan checks the workspace is as large as promised */
  AddCtx a = {inputs[0], outputs[0]};
  frt_parallel_for(pool, 6, add_task, &a);
  const int64_t *n = inputs[1];
  float *s = outputs[1];
  for (int r = 0; r < 2; r++)
    for (int c = 0; c < 4; c++)
      s[r * 4 + c] = c == (r + 1 + n[0]) % 4 ? 10.0f : (float)c;
  int64_t total = n[0] + n[1] + n[2];
  memcpy(outputs[2], &total, 8);
  atomic_fetch_add(&add_runs, 1);
  return 0;
}

static const char *const add_kernels[] = {"node 'add' (add)", "node 'scores' (gather)", "node 'sum' (reduce_sum)"};
static const FrtModel add_model = {FRT_ABI_VERSION, "add1", 2, 3, add_inputs, add_outputs, 100, add_run, 3, add_kernels, NULL, NULL, NULL};

static const int64_t c_dims[] = {4};
static const FrtTensorDesc const_outputs[] = {{"c", FRT_I32, 1, c_dims}};

static int const_run(const void *const *inputs, void *const *outputs, void *workspace, FrtPool *pool) {
  int32_t *c = outputs[0];
  for (int i = 0; i < 4; i++)
    c[i] = i * i;
  return 0;
}

static const FrtModel const_model = {FRT_ABI_VERSION, "squares", 0, 1, NULL, const_outputs, 0, const_run, 0, NULL, NULL, NULL, NULL};

/* Kernel 1 (0-based) finds bad data. */
static const int64_t h_dims[] = {3};
static const FrtTensorDesc bf_io[] = {{"h", FRT_BF16, 1, h_dims}};

static int copy_run(const void *const *inputs, void *const *outputs, void *workspace, FrtPool *pool) {
  memcpy(outputs[0], inputs[0], 6);
  return 0;
}

static const FrtModel bf16_model = {FRT_ABI_VERSION, "copy", 1, 1, bf_io, bf_io, 0, copy_run, 0, NULL, NULL, NULL, NULL};

static int fail_run(const void *const *inputs, void *const *outputs, void *workspace, FrtPool *pool) { return 2; }

/* Kernel 1 is a collective that fails (an axis no mesh has), as a generated SBP program's would. */
static int coll_fail_run(const void *const *inputs, void *const *outputs, void *workspace, FrtPool *pool) {
  float v = 0;
  return frt_coll_all_reduce(-5, &v, 1, FRT_F32, FRT_REDUCE_SUM) != 0 ? 2 : 0;
}

static void test_model_run_checks(void **state) {
  float x[6] = {0}, y[6], s[8];
  int64_t n[3] = {1, 2, 3}, total;
  const void *ins[] = {x, n};
  void *outs[] = {y, s, &total};
  void *ws = aligned_alloc(64, 128);
  FrtError err = {0};
  assert_int_equal(frt_model_workspace_size(&add_model), 100);
  assert_int_equal(frt_model_workspace_size(NULL), 0);
  assert_int_equal(frt_model_run(&add_model, ins, outs, ws, NULL, &err), FRT_OK);
  assert_true(y[0] == 1.0f && total == 6 && s[2] == 10.0f);

  FrtModel m = add_model;
  m.abi_version = 99;
  assert_int_equal(frt_model_run(&m, ins, outs, ws, NULL, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "ABI 99"));
  assert_int_equal(frt_model_run(NULL, ins, outs, ws, NULL, &err), FRT_ERR_INPUT);
  assert_int_equal(frt_model_run(&add_model, NULL, outs, ws, NULL, &err), FRT_ERR_INPUT);
  const void *ins_null[] = {x, NULL};
  assert_int_equal(frt_model_run(&add_model, ins_null, outs, ws, NULL, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "input 1 ('n') is NULL"));
  void *outs_null[] = {y, NULL, &total};
  assert_int_equal(frt_model_run(&add_model, ins, outs_null, ws, NULL, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "output 1 ('scores')"));
  assert_int_equal(frt_model_run(&add_model, ins, outs, NULL, NULL, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "workspace of 100 bytes"));
  assert_int_equal(frt_model_run(&add_model, ins, outs, (char *)ws + 8, NULL, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "aligned"));
  m = add_model;
  m.run = fail_run;
  assert_int_equal(frt_model_run(&m, ins, outs, ws, NULL, &err), FRT_ERR_INPUT);
  assert_string_equal(err.msg, "model 'add1': node 'scores' (gather): bad data at run time (an index out of range, ...)");
  /* A failed collective: its message after the kernel's name; the next run's failure is its own again. */
  m.run = coll_fail_run;
  assert_int_equal(frt_model_run(&m, ins, outs, ws, NULL, &err), FRT_ERR_RESOURCE);
  assert_string_equal(err.msg, "model 'add1': node 'scores' (gather): all_reduce: mesh axis -5 does not exist");
  m.run = fail_run;
  assert_int_equal(frt_model_run(&m, ins, outs, ws, NULL, &err), FRT_ERR_INPUT);
  assert_non_null(strstr(err.msg, "bad data at run time"));
  m.n_kernels = 0; /* no names: the index alone */
  assert_int_equal(frt_model_run(&m, ins, outs, ws, NULL, &err), FRT_ERR_INPUT);
  assert_string_equal(err.msg, "model 'add1': run failed in kernel 1");
  m.run = NULL;
  assert_int_equal(frt_model_run(&m, ins, outs, ws, NULL, &err), FRT_ERR_INPUT);
  free(ws);
  /* No inputs, no workspace. */
  int32_t c[4];
  void *couts[] = {c};
  assert_int_equal(frt_model_run(&const_model, NULL, couts, NULL, NULL, &err), FRT_OK);
  assert_int_equal(c[3], 9);
}

/* ---- frt_main --------------------------------------------------------------------------------------- */

typedef struct Run {
  int rc;
  char *out, *err;
} Run;

/* Runs frt_main with stdout and stderr captured in files. */
static Run run_main(const FrtModel *m, const char *const *args) {
  char *argv[32];
  int argc = 0;
  argv[argc++] = "/some/where/model";
  for (; args[argc - 1]; argc++)
    argv[argc] = (char *)args[argc - 1];
  argv[argc] = NULL;
  fflush(stdout);
  fflush(stderr);
  int so = dup(1), se = dup(2);
  int fo = open(tmp("stdout.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  int fe = open(tmp("stderr.txt"), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fo, 1);
  dup2(fe, 2);
  Run r = {0};
  r.rc = frt_main(argc, argv, m);
  fflush(stdout);
  fflush(stderr);
  dup2(so, 1);
  dup2(se, 2);
  close(so);
  close(se);
  close(fo);
  close(fe);
  size_t n;
  r.out = (char *)read_bytes(tmp("stdout.txt"), &n);
  r.err = (char *)read_bytes(tmp("stderr.txt"), &n);
  return r;
}

static void free_run(Run *r) {
  free(r->out);
  free(r->err);
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})

static void expect_fail(const FrtModel *m, const char *const *args, int rc, const char *line) {
  Run r = run_main(m, args);
  if (r.rc != rc || strcmp(r.err, line) != 0)
    fail_msg("exit %d, stderr '%s'; wanted %d and '%s'", r.rc, r.err, rc, line);
  free_run(&r);
}

static void write_inputs(void) {
  float x[6] = {0, 1, 2, 3, 4, 5.5f};
  int64_t n[3] = {1, 2, 3};
  FrtTensor tx = {.dtype = FRT_F32, .rank = 2, .dims = {2, 3}, .data = x, .nbytes = sizeof x};
  FrtTensor tn = {.dtype = FRT_I64, .rank = 1, .dims = {3}, .data = n, .nbytes = sizeof n};
  FrtError err;
  assert_int_equal(frt_tensor_write_npy(tmp("x.npy"), &tx, &err), FRT_OK);
  assert_int_equal(frt_tensor_write_pb(tmp("n.pb"), &tn, "n", &err), FRT_OK);
  FrtTensor tt = tx;
  tt.dims[0] = 3;
  tt.dims[1] = 2;
  assert_int_equal(frt_tensor_write_npy(tmp("x_t.npy"), &tt, &err), FRT_OK);
  tt = tn;
  tt.dtype = FRT_I32;
  tt.dims[0] = 6;
  assert_int_equal(frt_tensor_write_npy(tmp("n_i32.npy"), &tt, &err), FRT_OK);
  write_bytes(tmp("corrupt.npy"), "\x93NUMPY\x01\x00\x40\x00{'descr':", 20);
}

static void check_outputs(const char *dir, const char *ext) {
  char path[600];
  FrtTensor t;
  FrtError err;
  snprintf(path, sizeof path, "%s/output_0.%s", dir, ext);
  assert_int_equal(frt_tensor_read(path, &t, &err), FRT_OK);
  assert_int_equal(t.dtype, FRT_F32);
  assert_int_equal(t.rank, 2);
  static const float want[6] = {1, 2, 3, 4, 5, 6.5f};
  assert_memory_equal(t.data, want, sizeof want);
  frt_tensor_free(&t);
  snprintf(path, sizeof path, "%s/output_2.%s", dir, ext);
  assert_int_equal(frt_tensor_read(path, &t, &err), FRT_OK);
  assert_int_equal(t.dtype, FRT_I64);
  assert_int_equal(t.rank, 0);
  assert_int_equal(*(int64_t *)t.data, 6);
  frt_tensor_free(&t);
}

static void test_main_runs(void **state) {
  write_inputs();
  char dir[512], inx[600], inn[600];
  snprintf(dir, sizeof dir, "%s/out/a/b", tmpdir);
  snprintf(inx, sizeof inx, "x=%s", tmp("x.npy"));
  snprintf(inn, sizeof inn, "--input=n=%s", tmp("n.pb"));

  /* Positional files; the nested output dir is created. */
  Run r = run_main(&add_model, ARGS(tmp("x.npy"), tmp("n.pb"), "--output-dir", dir));
  assert_int_equal(r.rc, 0);
  assert_string_equal(r.err, "");
  assert_string_equal(r.out, "");
  free_run(&r);
  check_outputs(dir, "npy");

  /* --input in both spellings, pb outputs, 2 threads. */
  r = run_main(&add_model, ARGS("--input", inx, inn, "--output-dir", dir, "--output-format", "pb", "--threads", "2"));
  assert_int_equal(r.rc, 0);
  free_run(&r);
  check_outputs(dir, "pb");

  /* numpy and onnx read the outputs. */
  if (access("/usr/bin/python3", X_OK) == 0) {
    char cmd[2048];
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 -c \"import numpy as np, onnx, sys; from onnx import numpy_helper as h\n"
             "d = sys.argv[1]\n"
             "assert (np.load(d + '/output_0.npy') == np.array([[1, 2, 3], [4, 5, 6.5]], np.float32)).all()\n"
             "s = np.load(d + '/output_1.npy'); assert s.shape == (2, 4) and s.dtype == np.float32\n"
             "assert np.load(d + '/output_2.npy') == 6 and np.load(d + '/output_2.npy').shape == ()\n"
             "t = onnx.TensorProto(); t.ParseFromString(open(d + '/output_1.pb', 'rb').read())\n"
             "assert t.name == 'scores' and (h.to_array(t) == s).all()\n"
             "\" %s",
             dir);
    assert_int_equal(system(cmd), 0);
  }

  /* --print (also the default with no --output-dir); argmax per row of the batch. */
  r = run_main(&add_model, ARGS(tmp("x.npy"), tmp("n.pb")));
  assert_int_equal(r.rc, 0);
  assert_string_equal(r.out, "output 0 'y': tensor<2x3xf32>\n"
                             "  values: [1, 2, 3, 4, 5, 6.5]\n"
                             "  argmax[0]: 2 (3)\n"
                             "  argmax[1]: 2 (6.5)\n"
                             "output 1 'scores': tensor<2x4xf32>\n"
                             "  values: [0, 1, 10, 3, 0, 1, 2, 10]\n"
                             "  argmax[0]: 2 (10)\n"
                             "  argmax[1]: 3 (10)\n"
                             "output 2 'total': tensor<i64>\n"
                             "  values: [6]\n");
  free_run(&r);

  /* --bench: one warm-up plus N runs, min and median printed; --print explicit alongside. */
  atomic_store(&add_runs, 0);
  r = run_main(&add_model, ARGS(tmp("x.npy"), tmp("n.pb"), "--bench", "5", "--threads", "1"));
  assert_int_equal(r.rc, 0);
  assert_int_equal(atomic_load(&add_runs), 6);
  assert_non_null(strstr(r.out, "latency: min "));
  assert_non_null(strstr(r.out, " ms, median "));
  assert_non_null(strstr(r.out, "(5 runs after 1 warm-up, 1 thread)"));
  assert_null(strstr(r.out, "output 0"));
  free_run(&r);
  r = run_main(&add_model, ARGS(tmp("x.npy"), tmp("n.pb"), "--bench=2", "--print"));
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "output 0 'y'"));
  assert_non_null(strstr(r.out, "(2 runs after 1 warm-up"));
  free_run(&r);

  /* A model without inputs. */
  r = run_main(&const_model, ARGS("--print"));
  assert_int_equal(r.rc, 0);
  assert_string_equal(r.out, "output 0 'c': tensor<4xi32>\n  values: [0, 1, 4, 9]\n  argmax: 3 (9)\n");
  free_run(&r);

  /* bf16 travels through .npy as ui16 bits, in and out. */
  uint16_t h[3] = {0x3f80, 0xc000, 0x7fc0};
  FrtTensor th = {.dtype = FRT_U16, .rank = 1, .dims = {3}, .data = h, .nbytes = sizeof h};
  FrtError err;
  assert_int_equal(frt_tensor_write_npy(tmp("h.npy"), &th, &err), FRT_OK);
  r = run_main(&bf16_model, ARGS(tmp("h.npy"), "--print", "--output-dir", dir));
  assert_int_equal(r.rc, 0);
  assert_string_equal(r.out, "output 0 'h': tensor<3xbf16>\n  values: [1, -2, nan]\n  argmax: 2 (nan)\n");
  free_run(&r);
  char path[600];
  snprintf(path, sizeof path, "%s/output_0.npy", dir);
  FrtTensor back;
  assert_int_equal(frt_tensor_read(path, &back, &err), FRT_OK);
  assert_int_equal(back.dtype, FRT_U16);
  assert_memory_equal(back.data, h, sizeof h);
  frt_tensor_free(&back);

  r = run_main(&add_model, ARGS("--help"));
  assert_int_equal(r.rc, 0);
  assert_non_null(strstr(r.out, "usage: model [FILE ...] [--input NAME=FILE ...]"));
  assert_non_null(strstr(r.out, "  0 'x': tensor<2x3xf32>\n  1 'n': tensor<3xi64>\n"));
  assert_non_null(strstr(r.out, "  2 'total': tensor<i64>\n"));
  free_run(&r);
}

static void test_main_errors(void **state) {
  write_inputs();
  char line[1024], inx[600];
  snprintf(inx, sizeof inx, "x=%s", tmp("x.npy"));

  snprintf(line, sizeof line,
           "model: error: input 'x': file %s holds tensor<3x2xf32>, the model needs tensor<2x3xf32>\n",
           tmp("x_t.npy"));
  expect_fail(&add_model, ARGS(tmp("x_t.npy"), tmp("n.pb")), 1, line);
  snprintf(line, sizeof line,
           "model: error: input 'n': file %s holds tensor<6xi32>, the model needs tensor<3xi64>\n", tmp("n_i32.npy"));
  expect_fail(&add_model, ARGS(tmp("x.npy"), tmp("n_i32.npy")), 1, line);
  expect_fail(&add_model, ARGS(tmp("x.npy")), 1,
              "model: error: input 'n' is not bound: give it as FILE or --input NAME=FILE\n");
  expect_fail(&add_model, ARGS("--print"), 1,
              "model: error: inputs 'x', 'n' are not bound: give them as FILE or --input NAME=FILE\n");
  snprintf(line, sizeof line, "model: error: input 'x': %s: header length 64 runs past the end of the file (20 bytes)\n",
           tmp("corrupt.npy"));
  expect_fail(&add_model, ARGS(tmp("corrupt.npy"), tmp("n.pb")), 1, line);
  snprintf(line, sizeof line, "model: error: input 'n': %s: cannot open: No such file or directory\n", tmp("nope.pb"));
  expect_fail(&add_model, ARGS(tmp("x.npy"), tmp("nope.pb")), 1, line);
  snprintf(line, sizeof line, "model: error: too many input files: the model takes 2 inputs, '%s' is one more\n",
           tmp("x.npy"));
  expect_fail(&add_model, ARGS(tmp("x.npy"), tmp("n.pb"), tmp("x.npy")), 1, line);
  snprintf(line, sizeof line, "model: error: input 'x' is bound twice ('%s' and '%s')\n", tmp("x.npy"), tmp("x.npy"));
  expect_fail(&add_model, ARGS(tmp("x.npy"), "--input", inx), 1, line);
  expect_fail(&add_model, ARGS("--input", "zz=a.npy"), 1, "model: error: the model has no input named 'zz'\n");
  snprintf(line, sizeof line, "model: error: cannot create the output directory %s: not a directory\n", tmp("x.npy"));
  expect_fail(&add_model, ARGS(tmp("x.npy"), tmp("n.pb"), "--output-dir", tmp("x.npy")), 1, line);

  /* Bad usage: exit 2. */
  expect_fail(&add_model, ARGS("--frobnicate"), 2, "model: error: unknown option '--frobnicate' (see --help)\n");
  expect_fail(&add_model, ARGS("--threads"), 2, "model: error: option --threads needs a value (see --help)\n");
  expect_fail(&add_model, ARGS("--threads", "two"), 2,
              "model: error: --threads wants a count from 0 to 1024, got 'two'\n");
  expect_fail(&add_model, ARGS("--bench", "0"), 2, "model: error: --bench wants a positive count, got '0'\n");
  expect_fail(&add_model, ARGS("--bench", "5x"), 2, "model: error: --bench wants a positive count, got '5x'\n");
  expect_fail(&add_model, ARGS("--output-format", "csv"), 2,
              "model: error: --output-format wants npy or pb, got 'csv'\n");
  expect_fail(&add_model, ARGS("--input", "x"), 2, "model: error: --input wants NAME=FILE, got 'x'\n");
  expect_fail(&add_model, ARGS("--input", "=f.npy"), 2, "model: error: --input wants NAME=FILE, got '=f.npy'\n");
  expect_fail(&add_model, ARGS("--printx"), 2, "model: error: unknown option '--printx' (see --help)\n");

  /* The model's own run fails; a malformed description; an ABI mismatch. */
  FrtModel m = add_model;
  m.run = fail_run;
  expect_fail(&m, ARGS(tmp("x.npy"), tmp("n.pb")), 1,
              "model: error: model 'add1': node 'scores' (gather): bad data at run time (an index out of range, ...)\n");
  m = add_model;
  m.abi_version = 1;
  expect_fail(&m, ARGS(tmp("x.npy"), tmp("n.pb")), 1,
              "model: error: the model was built for runtime ABI 1, this runtime is ABI 8\n");
  static const int64_t neg[] = {-1};
  static const FrtTensorDesc bad_out[] = {{"o", FRT_F32, 1, neg}};
  m = const_model;
  m.outputs = bad_out;
  expect_fail(&m, ARGS("--print"), 1, "model: error: malformed model description of output 0\n");
  Run r = run_main(NULL, ARGS("--print"));
  assert_int_equal(r.rc, 1);
  free_run(&r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtype_table),
      cmocka_unit_test(test_roundtrip_all_dtypes),
      cmocka_unit_test(test_npy_header_bytes),
      cmocka_unit_test(test_numpy_onnx_compat),
      cmocka_unit_test(test_truncated_files),
      cmocka_unit_test(test_lying_npy),
      cmocka_unit_test(test_lying_pb),
      cmocka_unit_test(test_byte_flips),
      cmocka_unit_test(test_io_errors),
      cmocka_unit_test(test_read_bounded),
      cmocka_unit_test(test_parallel_for_covers_once),
      cmocka_unit_test(test_parallel_for_chunks),
      cmocka_unit_test(test_parallel_for_owned_runs),
      cmocka_unit_test(test_parallel_for_nested),
      cmocka_unit_test(test_once),
      cmocka_unit_test(test_parallel_for_concurrent_callers),
      cmocka_unit_test(test_pool_create),
      cmocka_unit_test(test_pool_spin_setting),
      cmocka_unit_test(test_profile_ticks),
      cmocka_unit_test(test_model_run_checks),
      cmocka_unit_test(test_main_runs),
      cmocka_unit_test(test_main_errors),
  };
  return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
