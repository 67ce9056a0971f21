/* idx.h — a reader for IDX files (the MNIST / Fashion-MNIST format), gzip-compressed or plain.
 *
 *     IdxArray a;
 *     char err[256];
 *     if (idx_read("t10k-images-idx3-ubyte.gz", 1u << 30, &a, err, sizeof err) != 0)
 *       fprintf(stderr, "%s\n", err);
 *     // a.type == IDX_U8, a.rank == 3, a.dims = {10000, 28, 28}, a.data: 7,840,000 bytes
 *     idx_free(&a);
 *
 * The file is read through zlib's gzread, which passes uncompressed files through unchanged. The header
 * is two zero bytes, a type byte, a rank byte, then rank big-endian u32 dimensions; the data follows
 * in row-major order, big-endian. Multi-byte elements are converted to the host's byte order. A file
 * whose size does not match its header (short or with trailing bytes), an unknown type, rank 0 or a
 * size above the caller's limit is rejected with a one-line message; nothing exits or aborts.
 */
#ifndef FLOWC_IDX_H
#define FLOWC_IDX_H

#include <stddef.h>
#include <stdint.h>

typedef enum IdxType {
  IDX_U8 = 0x08, IDX_I8 = 0x09, IDX_I16 = 0x0B, IDX_I32 = 0x0C, IDX_F32 = 0x0D, IDX_F64 = 0x0E,
} IdxType;

#define IDX_MAX_RANK 8

typedef struct IdxArray {
  IdxType type;
  int rank;
  uint32_t dims[IDX_MAX_RANK];
  size_t count;  /* elements: the product of dims */
  size_t nbytes; /* count * the element size */
  void *data;    /* malloc'd, host byte order; free with idx_free */
} IdxArray;

size_t idx_type_size(IdxType t); /* 0 for a code that is not an IDX type */

/* Reads `path` (at most max_bytes of data) into *out. Returns 0, or -1 with a one-line message in err
 * (naming the file) and *out empty. */
int idx_read(const char *path, size_t max_bytes, IdxArray *out, char *err, size_t err_size);
void idx_free(IdxArray *a);

#endif /* FLOWC_IDX_H */
