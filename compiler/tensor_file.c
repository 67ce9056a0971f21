/* tensor_file.c — tensors from files for --bind: NumPy .npy and ONNX TensorProto .pb.
 *
 * A .pb file (chosen by its extension) goes through the same guarded path as a model: read within
 * --max-file-size, wire data checked against the TensorProto descriptor, unpacked, converted by
 * fc_onnx_tensor_to_fc (external data resolved next to the .pb file). Anything else must start with
 * the .npy magic. The .npy header is a Python dict literal; we parse the small subset NumPy writes
 * ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }) with a hand-written scanner rather than
 * trusting the header length or a format string, and accept only little-endian, C-order numeric data
 * whose byte count matches the shape exactly.
 */
#include "onnx_file.h"

#include <stdlib.h>
#include <string.h>

/* ---- .npy header dictionary ---------------------------------------------------------------------- */

typedef struct NpyScan {
  const char *p, *end;
} NpyScan;

static void npy_skip_ws(NpyScan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\t' || *s->p == '\r')) s->p++;
}

static bool npy_eat(NpyScan *s, char c) {
  npy_skip_ws(s);
  if (s->p < s->end && *s->p == c) {
    s->p++;
    return true;
  }
  return false;
}

/* A quoted Python string without escapes; returns its bounds. */
static bool npy_string(NpyScan *s, const char **str, size_t *n) {
  npy_skip_ws(s);
  if (s->p >= s->end || (*s->p != '\'' && *s->p != '"')) return false;
  char q = *s->p++;
  const char *start = s->p;
  while (s->p < s->end && *s->p != q) {
    if (*s->p == '\\' || *s->p == '\n') return false;
    s->p++;
  }
  if (s->p >= s->end) return false;
  *str = start;
  *n = (size_t)(s->p - start);
  s->p++;
  return true;
}

static bool npy_word(NpyScan *s, const char *w) {
  npy_skip_ws(s);
  size_t n = strlen(w);
  if ((size_t)(s->end - s->p) >= n && memcmp(s->p, w, n) == 0) {
    s->p += n;
    return true;
  }
  return false;
}

typedef struct NpyHeader {
  const char *descr;
  size_t descr_len;
  int fortran; /* -1 missing, 0, 1 */
  int rank;    /* -1 missing */
  int64_t *dims;
  int cap;
} NpyHeader;

/* Parses "(2, 3)", "(3,)", "()"; Python 2 longs ("3L") are accepted. */
static const char *npy_shape(NpyScan *s, NpyHeader *h, int max_rank, FcArena *a, FcStatus *st) {
  *st = FC_ERR_INPUT;
  if (!npy_eat(s, '(')) return "the shape is not a tuple";
  h->rank = 0;
  if (npy_eat(s, ')')) return NULL;
  for (;;) {
    npy_skip_ws(s);
    if (s->p >= s->end || *s->p < '0' || *s->p > '9') return "the shape holds something other than integers";
    int64_t v = 0;
    while (s->p < s->end && *s->p >= '0' && *s->p <= '9') {
      if (!fc_checked_mul(v, 10, &v) || !fc_checked_add(v, *s->p - '0', &v)) return "a dimension overflows int64";
      s->p++;
    }
    if (s->p < s->end && *s->p == 'L') s->p++;
    if (h->rank >= max_rank) {
      *st = FC_ERR_LIMIT;
      return "the shape has more dimensions than the rank limit (raise it with --max-rank)";
    }
    if (h->rank == h->cap) {
      int cap = h->cap ? 2 * h->cap : 8;
      int64_t *d = FC_NEW_ARRAY(a, int64_t, (size_t)cap);
      if (h->rank) memcpy(d, h->dims, (size_t)h->rank * sizeof *d);
      h->dims = d;
      h->cap = cap;
    }
    h->dims[h->rank++] = v;
    bool comma = npy_eat(s, ',');
    if (npy_eat(s, ')')) return NULL;
    if (!comma) return "the shape tuple is malformed";
  }
}

static const char *npy_parse_header(const char *text, size_t n, NpyHeader *h, int max_rank, FcArena *a,
                                    FcStatus *st) {
  NpyScan s = {text, text + n};
  h->descr = NULL;
  h->dims = NULL;
  h->cap = 0;
  h->fortran = -1;
  h->rank = -1;
  *st = FC_ERR_INPUT;
  if (!npy_eat(&s, '{')) return "the header is not a dict";
  for (;;) {
    if (npy_eat(&s, '}')) break;
    const char *key;
    size_t klen;
    if (!npy_string(&s, &key, &klen)) return "the header dict has a key that is not a string";
    if (!npy_eat(&s, ':')) return "the header dict is malformed";
    if (klen == 5 && memcmp(key, "descr", 5) == 0) {
      if (h->descr) return "the header repeats 'descr'";
      npy_skip_ws(&s);
      if (s.p < s.end && *s.p == '[') {
        *st = FC_ERR_UNSUPPORTED;
        return "structured dtypes are not supported";
      }
      if (!npy_string(&s, &h->descr, &h->descr_len)) return "'descr' is not a string";
    } else if (klen == 13 && memcmp(key, "fortran_order", 13) == 0) {
      if (h->fortran != -1) return "the header repeats 'fortran_order'";
      if (npy_word(&s, "True")) h->fortran = 1;
      else if (npy_word(&s, "False")) h->fortran = 0;
      else return "'fortran_order' is not True or False";
    } else if (klen == 5 && memcmp(key, "shape", 5) == 0) {
      if (h->rank != -1) return "the header repeats 'shape'";
      const char *err = npy_shape(&s, h, max_rank, a, st);
      if (err) return err;
    } else {
      return "the header has an unknown key";
    }
    if (npy_eat(&s, ',')) continue;
    if (npy_eat(&s, '}')) break;
    return "the header dict is malformed";
  }
  npy_skip_ws(&s);
  if (s.p != s.end) return "the header has text after its dict";
  if (!h->descr || h->fortran == -1 || h->rank == -1) return "the header lacks 'descr', 'fortran_order' or 'shape'";
  return NULL;
}

/* '<f4', '|b1', '<i8', '|u1', ... → dtype. */
static FcStatus npy_dtype(const char *path, const char *d, size_t n, FcDtype *out, FcDiag *diag) {
  static const struct { char kind, size; FcDtype dt; } map[] = {
      {'b', '1', FC_DT_BOOL}, {'i', '1', FC_DT_I8},  {'i', '2', FC_DT_I16}, {'i', '4', FC_DT_I32},
      {'i', '8', FC_DT_I64},  {'u', '1', FC_DT_U8},  {'u', '2', FC_DT_U16}, {'u', '4', FC_DT_U32},
      {'u', '8', FC_DT_U64},  {'f', '2', FC_DT_F16}, {'f', '4', FC_DT_F32}, {'f', '8', FC_DT_F64},
  };
  if (n == 3 && (d[0] == '<' || d[0] == '|' || d[0] == '=' || d[0] == '>')) {
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
      if (map[i].kind == d[1] && map[i].size == d[2]) {
        if (d[0] == '>' && d[2] != '1')
          return fc_error(diag, FC_ERR_UNSUPPORTED, "%s: big-endian data ('%.*s') is not supported", path, (int)n, d);
        *out = map[i].dt;
        return FC_OK;
      }
  }
  return fc_error(diag, FC_ERR_UNSUPPORTED, "%s: npy dtype '%.*s' is not supported", path, (int)(n > 32 ? 32 : n), d);
}

static FcStatus read_npy(const char *path, const uint8_t *buf, size_t len, const FcImportLimits *lim, FcArena *arena,
                         FcTensor **out, FcDiag *diag) {
  if (len < 10) return fc_error(diag, FC_ERR_INPUT, "%s: truncated .npy header", path);
  int major = buf[6];
  size_t start, hlen;
  if (major == 1) {
    start = 10;
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
  } else if (major == 2 || major == 3) {
    if (len < 12) return fc_error(diag, FC_ERR_INPUT, "%s: truncated .npy header", path);
    start = 12;
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
  } else {
    return fc_error(diag, FC_ERR_UNSUPPORTED, "%s: .npy format version %d.%d is not supported", path, major, buf[7]);
  }
  if (hlen > len - start)
    return fc_error(diag, FC_ERR_INPUT, "%s: the .npy header claims %zu bytes but the file has only %zu after it",
                    path, hlen, len - start);
  NpyHeader h;
  FcStatus st;
  const char *err = npy_parse_header((const char *)buf + start, hlen, &h, lim->max_rank, arena, &st);
  if (err) return fc_error(diag, st, "%s: bad .npy header: %s", path, err);
  FcDtype dt = FC_DT_F32;
  st = npy_dtype(path, h.descr, h.descr_len, &dt, diag);
  if (st != FC_OK) return st;
  if (h.fortran) return fc_error(diag, FC_ERR_UNSUPPORTED, "%s: Fortran-order .npy data is not supported", path);
  FcType ty = {dt, h.rank, h.dims};
  int64_t nbytes;
  if (!fc_type_nbytes(&ty, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_error(diag, FC_ERR_LIMIT, "%s: the tensor is larger than the limit of %lld bytes", path,
                    (long long)FC_DEFAULT_MAX_TENSOR_BYTES);
  size_t have = len - start - hlen;
  if ((uint64_t)have < (uint64_t)nbytes)
    return fc_error(diag, FC_ERR_INPUT, "%s: truncated .npy data: %zu bytes, the shape needs %lld", path, have,
                    (long long)nbytes);
  if ((uint64_t)have > (uint64_t)nbytes)
    return fc_error(diag, FC_ERR_INPUT, "%s: %zu bytes of .npy data, the shape needs only %lld", path, have,
                    (long long)nbytes);
  FcTensor *t = fc_tensor_new(arena, ty);
  if (nbytes) memcpy((void *)t->data, buf + start + hlen, (size_t)nbytes);
  if (dt == FC_DT_BOOL)
    for (int64_t i = 0; i < nbytes; i++) ((uint8_t *)t->data)[i] = ((uint8_t *)t->data)[i] != 0;
  *out = t;
  return FC_OK;
}

/* ---- TensorProto .pb -------------------------------------------------------------------------------- */

static FcStatus read_pb(const char *path, const uint8_t *buf, size_t len, const FcImportLimits *lim, FcArena *arena,
                        FcTensor **out, FcDiag *diag) {
  Onnx__TensorProto *tp;
  FcStatus st = fc_onnx_unpack_tensor(path, buf, len, lim->max_nesting, &tp, diag);
  if (st != FC_OK) return st;
  FcDiag local;
  fc_diag_init(&local);
  st = fc_onnx_tensor_to_fc(tp, fc_onnx_path_dir(arena, path), lim, arena, out, &local);
  onnx__tensor_proto__free_unpacked(tp, NULL);
  if (st != FC_OK) return fc_error(diag, st, "%s: %s", path, local.msg);
  return FC_OK;
}

FcStatus fc_read_tensor_file(const char *path, const FcImportLimits *lim, FcArena *arena, FcTensor **out,
                             FcDiag *diag) {
  *out = NULL;
  size_t plen = strlen(path);
  bool is_pb = plen >= 3 && strcmp(path + plen - 3, ".pb") == 0;
  char what[64 + 4096];
  snprintf(what, sizeof what, "tensor file '%s'", path);
  uint8_t *buf;
  size_t len;
  FcStatus st = fc_onnx_read_file(path, lim->max_file_bytes, what, &buf, &len, diag);
  if (st != FC_OK) return st;
  if (is_pb) st = read_pb(path, buf, len, lim, arena, out, diag);
  else if (len >= 6 && memcmp(buf, "\x93NUMPY", 6) == 0) st = read_npy(path, buf, len, lim, arena, out, diag);
  else st = fc_error(diag, FC_ERR_INPUT, "%s: neither a .npy file (no \\x93NUMPY magic) nor a TensorProto .pb", path);
  free(buf);
  return st;
}
