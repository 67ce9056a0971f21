/* io.c — tensor files: reading a whole file, choosing the format by content, writing .npy and .pb.
 *
 * A file is read into one FRT_ALIGN-aligned buffer; the format parsers then move the tensor's bytes to
 * the buffer's front, so the common case (.npy, raw_data .pb) costs one allocation and no second copy,
 * and the data handed to generated code is aligned. Anything starting with numpy's magic is .npy, a file
 * named *.npy without it is a broken .npy, anything else is parsed as a TensorProto.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "flowrt_internal.h"

/* Reads a whole file, at most max_bytes of it. A regular file's size is known up front, so a larger one is
 * refused without being read; a pipe, FIFO or device (/dev/zero, an endless writer) is read until its
 * end or until max_bytes + 1 bytes show it is too large, the buffer growing by doubling up to that bound.
 * The open does not wait for a FIFO's writer (O_NONBLOCK, cleared again for the reads): a FIFO that has
 * none reads as empty. One spare byte shows end of file without a second allocation. */
static FrtStatus read_file(const char *path, size_t max_bytes, uint8_t **out, size_t *out_len, FrtError *err) {
  if (max_bytes > SIZE_MAX / 2 - FRT_ALIGN)
    max_bytes = SIZE_MAX / 2 - FRT_ALIGN;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return frt_errorf(err, FRT_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return frt_errorf(err, FRT_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return frt_errorf(err, FRT_ERR_IO, "%s: is a directory", path);
  }
  bool regular = S_ISREG(st.st_mode);
  if (regular && st.st_size >= 0 && (uint64_t)st.st_size > max_bytes) {
    close(fd);
    return frt_errorf(err, FRT_ERR_INPUT, "%s: the file is %lld bytes, more than the %zu bytes any encoding of the "
                      "tensor needs", path, (long long)st.st_size, max_bytes);
  }
  if (!regular)
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  size_t cap = regular && st.st_size >= 0 ? (size_t)st.st_size + 1 : (size_t)1 << 16;
  if (cap > max_bytes + 1)
    cap = max_bytes + 1;
  uint8_t *buf = frt_alloc_aligned(cap);
  size_t len = 0;
  FrtStatus status = FRT_OK;
  while (buf) {
    ssize_t r = read(fd, buf + len, cap - len);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      status = frt_errorf(err, FRT_ERR_IO, "%s: read error: %s", path, strerror(errno));
      break;
    }
    if (r == 0)
      break;
    len += (size_t)r;
    if (len < cap)
      continue;
    if (len > max_bytes) {
      status = frt_errorf(err, FRT_ERR_INPUT, "%s: more than the %zu bytes any encoding of the tensor needs", path,
                          max_bytes);
      break;
    }
    size_t bigger_cap = cap * 2 < max_bytes + 1 ? cap * 2 : max_bytes + 1;
    uint8_t *bigger = frt_alloc_aligned(bigger_cap);
    if (bigger)
      memcpy(bigger, buf, len);
    free(buf);
    buf = bigger;
    cap = bigger_cap;
  }
  close(fd);
  if (!buf)
    return frt_errorf(err, FRT_ERR_RESOURCE, "%s: out of memory reading the file", path);
  if (status != FRT_OK) {
    free(buf);
    return status;
  }
  *out = buf;
  *out_len = len;
  return FRT_OK;
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

size_t frt_tensor_file_max_bytes(const FrtTensorDesc *d) {
  /* The widest encoding of an element is an unpacked varint with its key in a .pb typed field: 11 bytes
   * (raw data takes at most 8). 1 MiB more holds the .npy header or the TensorProto's dims, name and
   * other fields. */
  size_t n = 1, total;
  for (int32_t i = 0; i < d->rank; i++)
    if (d->dims[i] < 0 || frt_mul_overflows(n, (size_t)d->dims[i], &n))
      return SIZE_MAX;
  if (frt_mul_overflows(n, 11, &total) || frt_add_overflows(total, (size_t)1 << 20, &total))
    return SIZE_MAX;
  return total;
}

FrtStatus frt_tensor_read(const char *path, FrtTensor *out, FrtError *err) {
  return frt_tensor_read_max(path, SIZE_MAX, out, err);
}

FrtStatus frt_tensor_read_max(const char *path, size_t max_bytes, FrtTensor *out, FrtError *err) {
  if (!path || !out)
    return frt_errorf(err, FRT_ERR_INPUT, "frt_tensor_read: NULL %s", path ? "tensor" : "path");
  memset(out, 0, sizeof *out);
  uint8_t *buf = NULL;
  size_t len = 0;
  FrtStatus st = read_file(path, max_bytes, &buf, &len, err);
  if (st != FRT_OK)
    return st;
  if (len == 0) {
    free(buf);
    return frt_errorf(err, FRT_ERR_INPUT, "%s: empty file", path);
  }
  if ((len >= 6 && memcmp(buf, "\x93NUMPY", 6) == 0) || ends_with(path, ".npy"))
    st = frt_npy_parse(path, buf, len, out, err);
  else
    st = frt_pb_parse(path, buf, len, out, err);
  if (st != FRT_OK) {
    free(buf);
    memset(out, 0, sizeof *out);
    return st;
  }
  if (out->data != buf)
    free(buf);
  return FRT_OK;
}

void frt_tensor_free(FrtTensor *t) {
  if (!t)
    return;
  free(t->data);
  t->data = NULL;
  t->nbytes = 0;
}

FrtStatus frt_tensor_check(const char *path, const FrtTensor *t, FrtError *err) {
  if (!t)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: NULL tensor", path);
  if (frt_dtype_size(t->dtype) == 0)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: unknown dtype code %d", path, (int)t->dtype);
  if (t->rank < 0 || t->rank > FRT_MAX_RANK)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: rank %d is outside 0..%d", path, (int)t->rank, FRT_MAX_RANK);
  size_t nbytes;
  if (!frt_dense_nbytes(t->dtype, t->rank, t->dims, &nbytes))
    return frt_errorf(err, FRT_ERR_INPUT, "%s: negative or overflowing dims", path);
  if (nbytes != t->nbytes)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: tensor has nbytes %zu, its shape needs %zu", path, t->nbytes,
                      nbytes);
  if (nbytes && !t->data)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: tensor has no data", path);
  return FRT_OK;
}

static FrtStatus write_file(const char *path, const void *head, size_t head_n, const void *data, size_t n,
                            FrtError *err) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return frt_errorf(err, FRT_ERR_IO, "%s: cannot create: %s", path, strerror(errno));
  bool ok = fwrite(head, 1, head_n, f) == head_n && (n == 0 || fwrite(data, 1, n, f) == n);
  int saved = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    saved = errno;
  }
  if (!ok)
    return frt_errorf(err, FRT_ERR_IO, "%s: write error: %s", path, strerror(saved));
  return FRT_OK;
}

FrtStatus frt_tensor_write_npy(const char *path, const FrtTensor *t, FrtError *err) {
  if (!path)
    return frt_errorf(err, FRT_ERR_INPUT, "frt_tensor_write_npy: NULL path");
  FrtStatus st = frt_tensor_check(path, t, err);
  if (st != FRT_OK)
    return st;
  char head[1024];
  size_t n = frt_npy_header(t, head, sizeof head);
  if (n == 0)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: cannot write a .npy header for this tensor", path);
  return write_file(path, head, n, t->data, t->nbytes, err);
}

FrtStatus frt_tensor_write_pb(const char *path, const FrtTensor *t, const char *name, FrtError *err) {
  if (!path)
    return frt_errorf(err, FRT_ERR_INPUT, "frt_tensor_write_pb: NULL path");
  FrtStatus st = frt_tensor_check(path, t, err);
  if (st != FRT_OK)
    return st;
  size_t cap = 256 + (name ? strlen(name) : 0);
  uint8_t *head = malloc(cap);
  if (!head)
    return frt_errorf(err, FRT_ERR_RESOURCE, "%s: out of memory", path);
  size_t n = frt_pb_header(t, name, head, cap);
  st = n ? write_file(path, head, n, t->data, t->nbytes, err)
         : frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: cannot write a TensorProto header", path);
  free(head);
  return st;
}
