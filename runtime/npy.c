/* npy.c — the .npy format (numpy.lib.format), versions 1.0, 2.0 and 3.0.
 *
 * A file is: magic "\x93NUMPY", major and minor version bytes, the header length (u16 for v1, u32 for
 * v2/v3, little-endian), the header — a Python dict literal {'descr': '<f4', 'fortran_order': False,
 * 'shape': (2, 3), } padded with spaces and ended by '\n' — then the array's bytes.
 *
 * The reader parses the dict with a small tokenizer for the literals numpy writes (quoted strings,
 * True/False, tuples of non-negative integers, Python 2's `3L`), keys in any order, and refuses anything
 * it cannot hand to generated code as a dense little-endian C-order buffer: big-endian or structured or
 * object dtypes, Fortran order (except where it coincides with C order), a header longer than the file,
 * data shorter or longer than the shape says. bf16 has no numpy dtype; such files hold '<u2' and read as
 * ui16 — the caller decides what the bits mean.
 *
 * The writer produces the same bytes as numpy.save: v1, keys sorted, shape as Python's repr of a tuple,
 * numpy's 21-digit growth space, spaces to a 64-byte boundary, '\n'.
 */
#include <stdio.h>
#include <string.h>

#include "flowrt_internal.h"

static const char npy_magic[6] = {'\x93', 'N', 'U', 'M', 'P', 'Y'};

typedef struct Descr {
  const char *str; /* numpy's dtype.str */
  FrtDtype dt;
} Descr;

static const Descr descrs[] = {
    {"<f4", FRT_F32}, {"<f8", FRT_F64}, {"<f2", FRT_F16}, {"|i1", FRT_I8},  {"|u1", FRT_U8},
    {"<i2", FRT_I16}, {"<u2", FRT_U16}, {"<i4", FRT_I32}, {"<u4", FRT_U32}, {"<i8", FRT_I64},
    {"<u8", FRT_U64}, {"|b1", FRT_BOOL},
};

/* ---- header tokenizer ------------------------------------------------------------------------------ */

typedef struct Hdr {
  const char *p, *end;
  bool py2_longs; /* v1/v2 headers may come from Python 2 and spell ints as 3L */
} Hdr;

static void skip_ws(Hdr *h) {
  while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
    h->p++;
}

static bool eat(Hdr *h, char c) {
  skip_ws(h);
  if (h->p < h->end && *h->p == c) {
    h->p++;
    return true;
  }
  return false;
}

/* A quoted string without escapes (numpy never writes any for the values it accepts). */
static bool parse_str(Hdr *h, const char **s, size_t *n) {
  skip_ws(h);
  if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
    return false;
  char q = *h->p++;
  const char *start = h->p;
  while (h->p < h->end && *h->p != q) {
    if (*h->p == '\\' || *h->p == '\n')
      return false;
    h->p++;
  }
  if (h->p >= h->end)
    return false;
  *s = start;
  *n = (size_t)(h->p - start);
  h->p++;
  return true;
}

static bool is_word(Hdr *h, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(h->end - h->p) < n || memcmp(h->p, w, n) != 0)
    return false;
  const char *after = h->p + n;
  if (after < h->end && ((*after >= 'a' && *after <= 'z') || (*after >= 'A' && *after <= 'Z') ||
                         (*after >= '0' && *after <= '9') || *after == '_'))
    return false;
  h->p = after;
  return true;
}

/* A decimal int for the shape tuple: '-' and values of 2^63 and above are reported, not parsed. */
typedef enum DimParse { DIM_OK, DIM_SYNTAX, DIM_NEGATIVE, DIM_TOO_BIG } DimParse;

static DimParse parse_dim(Hdr *h, int64_t *v) {
  skip_ws(h);
  bool neg = false;
  if (h->p < h->end && (*h->p == '-' || *h->p == '+')) {
    neg = *h->p == '-';
    h->p++;
    skip_ws(h);
  }
  if (h->p >= h->end || *h->p < '0' || *h->p > '9')
    return DIM_SYNTAX;
  uint64_t x = 0;
  bool big = false;
  while (h->p < h->end && ((*h->p >= '0' && *h->p <= '9') || *h->p == '_')) {
    if (*h->p != '_') {
      unsigned d = (unsigned)(*h->p - '0');
      if (x > (UINT64_MAX - d) / 10)
        big = true;
      else
        x = x * 10 + d;
    }
    h->p++;
  }
  if (h->py2_longs && h->p < h->end && (*h->p == 'L' || *h->p == 'l'))
    h->p++;
  if (neg && (x != 0 || big))
    return DIM_NEGATIVE;
  if (big || x > (uint64_t)INT64_MAX)
    return DIM_TOO_BIG;
  *v = (int64_t)x;
  return DIM_OK;
}

/* ---- reader ---------------------------------------------------------------------------------------- */

FrtStatus frt_npy_parse(const char *path, uint8_t *buf, size_t len, FrtTensor *out, FrtError *err) {
  if (len < 10 || memcmp(buf, npy_magic, sizeof npy_magic) != 0)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: not a .npy file (%s)", path,
                      len < 10 && memcmp(buf, npy_magic, len < 6 ? len : 6) == 0 ? "truncated header"
                                                                                    : "bad magic");
  unsigned major = buf[6], minor = buf[7];
  if (major < 1 || major > 3 || minor != 0)
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: unsupported .npy version %u.%u", path, major, minor);
  size_t hlen, hstart;
  if (major == 1) {
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    hstart = 10;
  } else {
    if (len < 12)
      return frt_errorf(err, FRT_ERR_INPUT, "%s: truncated .npy header", path);
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
    hstart = 12;
  }
  if (hlen > len - hstart)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: header length %zu runs past the end of the file (%zu bytes)",
                      path, hlen, len);

  Hdr h = {(const char *)buf + hstart, (const char *)buf + hstart + hlen, major < 3};
  const char *descr = NULL;
  size_t descr_n = 0;
  int fortran = -1;
  int32_t rank = -1;
  int64_t dims[FRT_MAX_RANK];
  if (!eat(&h, '{'))
    return frt_errorf(err, FRT_ERR_INPUT, "%s: header is not a dict", path);
  for (;;) {
    if (eat(&h, '}'))
      break;
    const char *key;
    size_t key_n;
    if (!parse_str(&h, &key, &key_n) || !eat(&h, ':'))
      return frt_errorf(err, FRT_ERR_INPUT, "%s: cannot parse the header dict", path);
    skip_ws(&h);
    if (key_n == 5 && memcmp(key, "descr", 5) == 0) {
      if (descr)
        return frt_errorf(err, FRT_ERR_INPUT, "%s: header repeats 'descr'", path);
      if (h.p < h.end && *h.p == '[')
        return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: structured dtypes are not supported", path);
      if (!parse_str(&h, &descr, &descr_n))
        return frt_errorf(err, FRT_ERR_INPUT, "%s: 'descr' is not a string", path);
    } else if (key_n == 13 && memcmp(key, "fortran_order", 13) == 0) {
      if (fortran >= 0)
        return frt_errorf(err, FRT_ERR_INPUT, "%s: header repeats 'fortran_order'", path);
      if (is_word(&h, "True"))
        fortran = 1;
      else if (is_word(&h, "False"))
        fortran = 0;
      else
        return frt_errorf(err, FRT_ERR_INPUT, "%s: 'fortran_order' is not True or False", path);
    } else if (key_n == 5 && memcmp(key, "shape", 5) == 0) {
      if (rank >= 0)
        return frt_errorf(err, FRT_ERR_INPUT, "%s: header repeats 'shape'", path);
      if (!eat(&h, '('))
        return frt_errorf(err, FRT_ERR_INPUT, "%s: 'shape' is not a tuple", path);
      rank = 0;
      bool comma = true; /* a dim may follow */
      while (!eat(&h, ')')) {
        int64_t v = 0;
        DimParse r = comma ? parse_dim(&h, &v) : DIM_SYNTAX;
        if (r == DIM_SYNTAX)
          return frt_errorf(err, FRT_ERR_INPUT, "%s: 'shape' is not a tuple of integers", path);
        if (r == DIM_NEGATIVE)
          return frt_errorf(err, FRT_ERR_INPUT, "%s: 'shape' has a negative dimension", path);
        if (r == DIM_TOO_BIG)
          return frt_errorf(err, FRT_ERR_INPUT, "%s: 'shape' has a dimension too large", path);
        if (rank == FRT_MAX_RANK)
          return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: rank above %d is not supported", path,
                            FRT_MAX_RANK);
        dims[rank++] = v;
        comma = eat(&h, ',');
      }
      /* Python's (3) is an int, not a tuple. */
      if (rank == 1 && !comma)
        return frt_errorf(err, FRT_ERR_INPUT, "%s: 'shape' is not a tuple of integers", path);
    } else {
      return frt_errorf(err, FRT_ERR_INPUT, "%s: unexpected key '%.*s' in the header", path,
                        (int)(key_n < 40 ? key_n : 40), key);
    }
    if (!eat(&h, ',')) {
      if (eat(&h, '}'))
        break;
      return frt_errorf(err, FRT_ERR_INPUT, "%s: cannot parse the header dict", path);
    }
  }
  skip_ws(&h);
  if (h.p != h.end)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: unexpected text after the header dict", path);
  if (!descr || fortran < 0 || rank < 0)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: header lacks '%s'", path,
                      !descr ? "descr" : fortran < 0 ? "fortran_order" : "shape");

  FrtDtype dt = 0;
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0] && !dt; i++) {
    const char *s = descrs[i].str;
    /* '=' (native) is little-endian here; one-byte types have no byte order, whatever the prefix says. */
    if (descr_n == 3 && memcmp(descr + 1, s + 1, 2) == 0 &&
        (descr[0] == s[0] || descr[0] == '=' || (s[0] == '|' && (descr[0] == '<' || descr[0] == '>'))))
      dt = descrs[i].dt;
  }
  if (!dt && descr_n == 1 && descr[0] == '?')
    dt = FRT_BOOL;
  if (!dt) {
    const char *why = "unsupported dtype";
    if (descr_n >= 2 && descr[0] == '>' && descr[1] != '?')
      why = "big-endian data is not supported";
    else if (descr_n >= 2 && (descr[1] == 'O' || descr[0] == 'O'))
      why = "object arrays are not supported";
    return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: %s (descr '%.*s')", path, why,
                      (int)(descr_n < 40 ? descr_n : 40), descr);
  }
  if (fortran) {
    /* Fortran and C order lay out the same bytes when at most one dim exceeds 1. */
    int big = 0;
    for (int32_t i = 0; i < rank; i++)
      big += dims[i] > 1;
    if (big > 1)
      return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: Fortran-order arrays are not supported", path);
  }

  size_t nbytes;
  if (!frt_dense_nbytes(dt, rank, dims, &nbytes))
    return frt_errorf(err, FRT_ERR_INPUT, "%s: shape's size overflows", path);
  size_t have = len - hstart - hlen;
  if (have != nbytes)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: the shape needs %zu bytes of data, the file holds %zu", path,
                      nbytes, have);

  memmove(buf, buf + hstart + hlen, nbytes);
  if (dt == FRT_BOOL)
    for (size_t i = 0; i < nbytes; i++)
      buf[i] = buf[i] != 0;
  out->dtype = dt;
  out->rank = rank;
  memset(out->dims, 0, sizeof out->dims);
  memcpy(out->dims, dims, sizeof dims[0] * (size_t)rank);
  out->data = buf;
  out->nbytes = nbytes;
  return FRT_OK;
}

/* ---- writer ---------------------------------------------------------------------------------------- */

size_t frt_npy_header(const FrtTensor *t, char *buf, size_t cap) {
  const char *descr = NULL;
  for (size_t i = 0; i < sizeof descrs / sizeof descrs[0]; i++)
    if (descrs[i].dt == t->dtype)
      descr = descrs[i].str;
  if (t->dtype == FRT_BF16)
    descr = "<u2";
  if (!descr)
    return 0;

  /* The dict as numpy's _write_array_header spells it (keys sorted, repr of the shape tuple). */
  char dict[1024];
  size_t n = 0;
  int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
  n = (size_t)k;
  for (int32_t i = 0; i < t->rank; i++) {
    k = snprintf(dict + n, sizeof dict - n, i ? ", %lld" : "%lld", (long long)t->dims[i]);
    n += (size_t)k;
  }
  k = snprintf(dict + n, sizeof dict - n, "%s), }", t->rank == 1 ? "," : "");
  n += (size_t)k;
  if (t->rank > 0) {
    /* numpy's GROWTH_AXIS_MAX_DIGITS room for the first dim to grow in place. */
    char first[24];
    int fl = snprintf(first, sizeof first, "%lld", (long long)t->dims[0]);
    for (int i = fl; i < 21; i++)
      dict[n++] = ' ';
  }
  /* magic(6) + version(2) + length(2) + dict + padding + '\n' is a multiple of 64; numpy pads a full 64
   * when the unpadded length is already a multiple. */
  size_t hlen = n + 1;
  size_t pad = 64 - (10 + hlen) % 64;
  size_t total = 10 + hlen + pad;
  if (total > cap || hlen + pad > 0xffff)
    return 0;
  memcpy(buf, npy_magic, 6);
  buf[6] = 1;
  buf[7] = 0;
  buf[8] = (char)((hlen + pad) & 0xff);
  buf[9] = (char)((hlen + pad) >> 8);
  memcpy(buf + 10, dict, n);
  memset(buf + 10 + n, ' ', pad);
  buf[total - 1] = '\n';
  return total;
}
