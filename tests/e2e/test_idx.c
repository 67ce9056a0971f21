/* test_idx.c — the IDX reader of the main job (tools/idx.c): good files, gzip and plain, every element
 * type's byte order, and each way a file can be bad (short, long, lying, not IDX at all).
 *
 * Each test writes its file into a fresh temporary folder with zlib (or plain stdio) and reads it back.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include <cmocka.h>

#include "idx.h"

static char dir[64];
static char path[128];
static char err[512];

static int setup(void **state) {
  strcpy(dir, "/tmp/test_idx.XXXXXX");
  if (!mkdtemp(dir)) return -1;
  snprintf(path, sizeof path, "%s/file", dir);
  return 0;
}

static int teardown(void **state) {
  unlink(path);
  rmdir(dir);
  return 0;
}

static void write_gz(const void *data, size_t n) {
  gzFile f = gzopen(path, "wb");
  assert_non_null(f);
  if (n) assert_int_equal(gzwrite(f, data, (unsigned)n), (int)n);
  assert_int_equal(gzclose(f), Z_OK);
}

static void write_plain(const void *data, size_t n) {
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, n, f), n);
  assert_int_equal(fclose(f), 0);
}

/* Builds an IDX file image: header for `type` and dims, then `payload` bytes. */
static size_t idx_image(uint8_t *buf, uint8_t type, int rank, const uint32_t *dims, const void *payload, size_t n) {
  uint8_t *p = buf;
  *p++ = 0;
  *p++ = 0;
  *p++ = type;
  *p++ = (uint8_t)rank;
  for (int i = 0; i < rank; i++) {
    *p++ = (uint8_t)(dims[i] >> 24);
    *p++ = (uint8_t)(dims[i] >> 16);
    *p++ = (uint8_t)(dims[i] >> 8);
    *p++ = (uint8_t)dims[i];
  }
  if (n) memcpy(p, payload, n);
  return (size_t)(p - buf) + n;
}

static void expect_error(const char *fragment) {
  IdxArray a;
  assert_int_equal(idx_read(path, 1 << 20, &a, err, sizeof err), -1);
  assert_null(a.data);
  assert_non_null(strstr(err, path));
  if (!strstr(err, fragment)) fail_msg("message '%s' lacks '%s'", err, fragment);
}

static void test_u8_gzip(void **state) {
  uint8_t px[2 * 3 * 2], buf[64];
  for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 20);
  uint32_t dims[] = {2, 3, 2};
  write_gz(buf, idx_image(buf, IDX_U8, 3, dims, px, sizeof px));
  IdxArray a;
  assert_int_equal(idx_read(path, 1 << 20, &a, err, sizeof err), 0);
  assert_int_equal(a.type, IDX_U8);
  assert_int_equal(a.rank, 3);
  assert_int_equal(a.dims[0], 2);
  assert_int_equal(a.dims[1], 3);
  assert_int_equal(a.dims[2], 2);
  assert_int_equal(a.count, 12);
  assert_int_equal(a.nbytes, 12);
  assert_memory_equal(a.data, px, sizeof px);
  idx_free(&a);
  assert_null(a.data);
}

static void test_plain_file(void **state) {
  uint8_t labels[] = {9, 0, 0, 3, 0, 2, 7}, buf[64];
  uint32_t dims[] = {7};
  write_plain(buf, idx_image(buf, IDX_U8, 1, dims, labels, sizeof labels));
  IdxArray a;
  assert_int_equal(idx_read(path, 1 << 20, &a, err, sizeof err), 0);
  assert_int_equal(a.count, 7);
  assert_memory_equal(a.data, labels, sizeof labels);
  idx_free(&a);
}

static void test_big_endian_types(void **state) {
  /* i32 0x01020304 and -2, stored big-endian; f64 1.5 (0x3FF8000000000000); i16 0x0102. */
  uint8_t i32[] = {1, 2, 3, 4, 0xff, 0xff, 0xff, 0xfe}, f64[] = {0x3f, 0xf8, 0, 0, 0, 0, 0, 0}, i16[] = {1, 2};
  uint8_t buf[64];
  IdxArray a;
  uint32_t two[] = {2}, one[] = {1};

  write_gz(buf, idx_image(buf, IDX_I32, 1, two, i32, sizeof i32));
  assert_int_equal(idx_read(path, 1 << 20, &a, err, sizeof err), 0);
  assert_int_equal(((int32_t *)a.data)[0], 0x01020304);
  assert_int_equal(((int32_t *)a.data)[1], -2);
  idx_free(&a);

  write_gz(buf, idx_image(buf, IDX_F64, 1, one, f64, sizeof f64));
  assert_int_equal(idx_read(path, 1 << 20, &a, err, sizeof err), 0);
  assert_true(((double *)a.data)[0] == 1.5);
  idx_free(&a);

  write_gz(buf, idx_image(buf, IDX_I16, 1, one, i16, sizeof i16));
  assert_int_equal(idx_read(path, 1 << 20, &a, err, sizeof err), 0);
  assert_int_equal(((int16_t *)a.data)[0], 0x0102);
  assert_int_equal(a.nbytes, 2);
  idx_free(&a);
}

static void test_truncated_data(void **state) {
  uint8_t px[10] = {0}, buf[64];
  uint32_t dims[] = {4, 4};
  write_gz(buf, idx_image(buf, IDX_U8, 2, dims, px, sizeof px)); /* 16 announced, 10 present */
  expect_error("truncated");
}

static void test_trailing_bytes(void **state) {
  uint8_t px[10] = {0}, buf[64];
  uint32_t dims[] = {3, 3};
  write_gz(buf, idx_image(buf, IDX_U8, 2, dims, px, sizeof px));
  expect_error("trailing");
}

static void test_truncated_header(void **state) {
  uint8_t buf[64];
  uint32_t dims[] = {60000, 28, 28};
  size_t n = idx_image(buf, IDX_U8, 3, dims, NULL, 0);
  write_gz(buf, n - 3);
  expect_error("truncated IDX header");
  write_gz(buf, 2);
  expect_error("shorter than the 4-byte header");
  write_gz(buf, 0);
  expect_error("shorter than the 4-byte header");
}

static void test_bad_magic_and_rank(void **state) {
  uint8_t buf[64];
  uint32_t dims[] = {1};
  uint8_t one = 1;
  size_t n = idx_image(buf, IDX_U8, 1, dims, &one, 1);
  buf[0] = 1;
  write_gz(buf, n);
  expect_error("not an IDX file");
  buf[0] = 0;
  buf[2] = 0x07; /* no such type */
  write_gz(buf, n);
  expect_error("not an IDX file");
  write_plain("hello world\n", 12);
  expect_error("not an IDX file");
  n = idx_image(buf, IDX_U8, 0, dims, NULL, 0);
  write_gz(buf, n);
  expect_error("rank 0");
  buf[3] = IDX_MAX_RANK + 1;
  write_gz(buf, n);
  expect_error("rank 9");
}

static void test_header_lies_about_size(void **state) {
  uint8_t buf[64], px = 0;
  /* 2^32-1 cubed overflows size_t; 4096 x 4096 is above the 1 MiB limit; neither may be allocated. */
  uint32_t huge[] = {0xffffffffu, 0xffffffffu, 0xffffffffu}, big[] = {4096, 4096};
  write_gz(buf, idx_image(buf, IDX_F64, 3, huge, &px, 1));
  expect_error("limit");
  write_gz(buf, idx_image(buf, IDX_U8, 2, big, &px, 1));
  expect_error("limit");
}

static void test_corrupt_gzip(void **state) {
  uint8_t px[4000], buf[4100];
  for (size_t i = 0; i < sizeof px; i++) px[i] = (uint8_t)(i * 7919u >> 3);
  uint32_t dims[] = {4000};
  write_gz(buf, idx_image(buf, IDX_U8, 1, dims, px, sizeof px));
  /* Cut the compressed stream in half. */
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  uint8_t gz[8192];
  size_t n = fread(gz, 1, sizeof gz, f);
  fclose(f);
  write_plain(gz, n / 2);
  expect_error("truncated");
}

static void test_missing_file(void **state) {
  IdxArray a;
  assert_int_equal(idx_read("/nonexistent/idx-file.gz", 1 << 20, &a, err, sizeof err), -1);
  assert_non_null(strstr(err, "/nonexistent/idx-file.gz: cannot open"));
  assert_null(a.data);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_u8_gzip, setup, teardown),
    cmocka_unit_test_setup_teardown(test_plain_file, setup, teardown),
    cmocka_unit_test_setup_teardown(test_big_endian_types, setup, teardown),
    cmocka_unit_test_setup_teardown(test_truncated_data, setup, teardown),
    cmocka_unit_test_setup_teardown(test_trailing_bytes, setup, teardown),
    cmocka_unit_test_setup_teardown(test_truncated_header, setup, teardown),
    cmocka_unit_test_setup_teardown(test_bad_magic_and_rank, setup, teardown),
    cmocka_unit_test_setup_teardown(test_header_lies_about_size, setup, teardown),
    cmocka_unit_test_setup_teardown(test_corrupt_gzip, setup, teardown),
    cmocka_unit_test_setup_teardown(test_missing_file, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
