/* idx.c — reads IDX files through zlib (see idx.h for the format).
 *
 * The header is read first and the data size computed from it with overflow checks; the size is
 * compared with the caller's limit before anything is allocated, so a header that lies about its
 * dimensions costs nothing. The data is then read in chunks (gzread takes an unsigned count), and one
 * more byte is requested to make sure the file ends where the header says it does.
 */
#include "idx.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

size_t idx_type_size(IdxType t) {
  switch (t) {
  case IDX_U8: case IDX_I8: return 1;
  case IDX_I16: return 2;
  case IDX_I32: case IDX_F32: return 4;
  case IDX_F64: return 8;
  }
  return 0;
}

static int fail(char *err, size_t err_size, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t err_size, const char *path, const char *fmt, ...) {
  if (err && err_size) {
    int n = snprintf(err, err_size, "%s: ", path);
    if (n >= 0 && (size_t)n < err_size) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(err + n, err_size - (size_t)n, fmt, ap);
      va_end(ap);
    }
  }
  return -1;
}

/* Reads exactly n bytes; returns the count read (short at the end of the data) or -1 on a read error. */
static long long read_full(gzFile f, void *buf, size_t n) {
  size_t done = 0;
  while (done < n) {
    size_t chunk = n - done > (1u << 30) ? (1u << 30) : n - done;
    int got = gzread(f, (char *)buf + done, (unsigned)chunk);
    if (got < 0) return -1;
    if (got == 0) break;
    done += (size_t)got;
  }
  return (long long)done;
}

static const char *gz_message(gzFile f) {
  int code = Z_OK;
  const char *msg = gzerror(f, &code);
  if (code == Z_ERRNO) return strerror(errno);
  return msg && *msg ? msg : "read error";
}

/* Converts big-endian elements of `size` bytes to the host's order in place. */
static void to_host_order(uint8_t *p, size_t count, size_t size) {
  const uint16_t probe = 1;
  if (size == 1 || *(const uint8_t *)&probe == 0) return; /* bytes, or a big-endian host */
  for (size_t i = 0; i < count; i++, p += size)
    for (size_t a = 0, b = size - 1; a < b; a++, b--) {
      uint8_t t = p[a];
      p[a] = p[b];
      p[b] = t;
    }
}

int idx_read(const char *path, size_t max_bytes, IdxArray *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  gzFile f = gzopen(path, "rb");
  if (!f) return fail(err, err_size, path, "cannot open: %s", errno ? strerror(errno) : "out of memory");
  int rc = -1;
  uint8_t head[4], dim_bytes[4 * IDX_MAX_RANK];
  uint8_t *data = NULL;
  long long got = read_full(f, head, sizeof head);
  if (got < 0) {
    fail(err, err_size, path, "cannot read: %s", gz_message(f));
    goto done;
  }
  if (got < (long long)sizeof head) {
    fail(err, err_size, path, "not an IDX file: %lld bytes, shorter than the 4-byte header", got);
    goto done;
  }
  size_t esize = idx_type_size((IdxType)head[2]);
  if (head[0] != 0 || head[1] != 0 || esize == 0) {
    fail(err, err_size, path, "not an IDX file: magic %02x %02x %02x %02x (want 00 00, a type code, a rank)",
         head[0], head[1], head[2], head[3]);
    goto done;
  }
  int rank = head[3];
  if (rank < 1 || rank > IDX_MAX_RANK) {
    fail(err, err_size, path, "IDX rank %d is not in 1..%d", rank, IDX_MAX_RANK);
    goto done;
  }
  got = read_full(f, dim_bytes, 4 * (size_t)rank);
  if (got < 0) {
    fail(err, err_size, path, "cannot read: %s", gz_message(f));
    goto done;
  }
  if (got < 4 * (long long)rank) {
    fail(err, err_size, path, "truncated IDX header: %d dimensions announced, the file ends after %lld bytes of them",
         rank, got);
    goto done;
  }
  size_t count = 1, nbytes;
  for (int i = 0; i < rank; i++) {
    const uint8_t *d = dim_bytes + 4 * i;
    out->dims[i] = (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | d[3];
    if (__builtin_mul_overflow(count, (size_t)out->dims[i], &count)) count = SIZE_MAX;
  }
  if (count == SIZE_MAX || __builtin_mul_overflow(count, esize, &nbytes) || nbytes > max_bytes) {
    fail(err, err_size, path, "the IDX header announces more than the %zu-byte limit of data", max_bytes);
    goto done;
  }
  data = malloc(nbytes ? nbytes : 1);
  if (!data) {
    fail(err, err_size, path, "out of memory for %zu bytes", nbytes);
    goto done;
  }
  got = read_full(f, data, nbytes);
  if (got < 0) {
    fail(err, err_size, path, "cannot read: %s", gz_message(f));
    goto done;
  }
  if ((size_t)got < nbytes) {
    fail(err, err_size, path, "truncated: the header announces %zu bytes of data, the file holds %lld", nbytes, got);
    goto done;
  }
  uint8_t extra;
  got = read_full(f, &extra, 1);
  if (got < 0) {
    fail(err, err_size, path, "cannot read: %s", gz_message(f));
    goto done;
  }
  if (got > 0) {
    fail(err, err_size, path, "trailing bytes after the %zu bytes of data the header announces", nbytes);
    goto done;
  }
  to_host_order(data, count, esize);
  out->type = (IdxType)head[2];
  out->rank = rank;
  out->count = count;
  out->nbytes = nbytes;
  out->data = data;
  data = NULL;
  rc = 0;
done:
  free(data);
  gzclose(f);
  if (rc != 0) memset(out, 0, sizeof *out);
  return rc;
}

void idx_free(IdxArray *a) {
  free(a->data);
  memset(a, 0, sizeof *a);
}
