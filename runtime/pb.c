/* pb.c — ONNX TensorProto on the protobuf wire, without protobuf-c (built programs link only libc, libm
 * and libpthread).
 *
 * The reader makes two passes over the message. The first checks every key, varint and length against
 * the end of the buffer, collects dims, data_type and raw_data, and counts the values in each typed field
 * (repeated fields may come packed or one per key, and may be split across several keys). Once the dtype
 * and the element count are known and agree, the second pass decodes the one typed field that ONNX
 * assigns to the dtype: float_data for f32, double_data for f64, int64_data for i64, uint64_data for
 * ui32/ui64, int32_data for everything else (i32, i16, i8, ui16, ui8, bool, and the bit patterns of
 * f16/bf16), truncated to the element width as onnx.numpy_helper does. raw_data is used in place.
 * Unknown fields are skipped; string tensors, segments and external data are refused.
 *
 * The writer emits what onnx.numpy_helper.from_array serialises: dims (one key each), data_type, name,
 * raw_data.
 */
#include <stdlib.h>
#include <string.h>

#include "flowrt_internal.h"

enum {
  PB_DIMS = 1, PB_DATA_TYPE = 2, PB_SEGMENT = 3, PB_FLOAT = 4, PB_INT32 = 5, PB_STRING = 6, PB_INT64 = 7,
  PB_NAME = 8, PB_RAW = 9, PB_DOUBLE = 10, PB_UINT64 = 11, PB_EXTERNAL = 13, PB_LOCATION = 14,
};
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct Rd {
  const uint8_t *p, *end;
} Rd;

static bool rd_varint(Rd *r, uint64_t *v) {
  uint64_t x = 0;
  *v = 0; /* set on failure too: decode() reads keys pass one already validated, without checking */
  for (unsigned shift = 0; shift < 70; shift += 7) {
    if (r->p >= r->end)
      return false;
    uint8_t b = *r->p++;
    /* The tenth byte carries bit 63 only. */
    if (shift == 63 && b > 1)
      return false;
    x |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) {
      *v = x;
      return true;
    }
  }
  return false;
}

static bool rd_len(Rd *r, Rd *sub) {
  uint64_t n;
  if (!rd_varint(r, &n) || n > (uint64_t)(r->end - r->p))
    return false;
  sub->p = r->p;
  sub->end = r->p + n;
  r->p += n;
  return true;
}

/* Number of varints filling a packed payload exactly; SIZE_MAX when one is malformed. */
static size_t count_varints(Rd sub) {
  size_t n = 0;
  uint64_t v;
  while (sub.p < sub.end) {
    if (!rd_varint(&sub, &v))
      return SIZE_MAX;
    n++;
  }
  return n;
}

static const char *field_name(unsigned f) {
  switch (f) {
  case PB_DIMS: return "dims";
  case PB_DATA_TYPE: return "data_type";
  case PB_FLOAT: return "float_data";
  case PB_INT32: return "int32_data";
  case PB_INT64: return "int64_data";
  case PB_NAME: return "name";
  case PB_RAW: return "raw_data";
  case PB_DOUBLE: return "double_data";
  case PB_UINT64: return "uint64_data";
  case PB_LOCATION: return "data_location";
  }
  return "?";
}

/* The typed field ONNX stores a dtype's values in, and that field's element width on the wire (0 for
 * varints). */
static unsigned typed_field(FrtDtype dt, unsigned *fixed) {
  *fixed = 0;
  switch (dt) {
  case FRT_F32: *fixed = 4; return PB_FLOAT;
  case FRT_F64: *fixed = 8; return PB_DOUBLE;
  case FRT_I64: return PB_INT64;
  case FRT_U32: case FRT_U64: return PB_UINT64;
  case FRT_I32: case FRT_I16: case FRT_I8: case FRT_U16: case FRT_U8: case FRT_BOOL: case FRT_F16:
  case FRT_BF16: return PB_INT32;
  }
  return 0;
}

static const char *unsupported_type_name(uint64_t t) {
  switch (t) {
  case 8: return "string";
  case 14: return "complex64";
  case 15: return "complex128";
  case 17: case 18: case 19: case 20: return "float8";
  case 21: return "uint4";
  case 22: return "int4";
  }
  return NULL;
}

/* Stores value i of a varint-coded typed field, keeping the low bits as numpy's astype does. */
static void store_int(FrtDtype dt, uint8_t *dst, size_t i, uint64_t v) {
  switch (dt) {
  case FRT_BOOL: dst[i] = v != 0; break;
  case FRT_I8: case FRT_U8: dst[i] = (uint8_t)v; break;
  case FRT_I16: case FRT_U16: case FRT_F16: case FRT_BF16: {
    uint16_t x = (uint16_t)v;
    memcpy(dst + 2 * i, &x, 2);
    break;
  }
  case FRT_I32: case FRT_U32: {
    uint32_t x = (uint32_t)v;
    memcpy(dst + 4 * i, &x, 4);
    break;
  }
  case FRT_I64: case FRT_U64: memcpy(dst + 8 * i, &v, 8); break;
  case FRT_F32: case FRT_F64: break;
  }
}

typedef struct Scan {
  int32_t rank;
  int64_t dims[FRT_MAX_RANK];
  uint64_t data_type;
  bool has_type, has_raw;
  Rd raw;
  size_t count[PB_UINT64 + 1]; /* values seen per typed field */
} Scan;

/* Pass one: validates the whole message and fills s. */
static FrtStatus scan(const char *path, Rd r, Scan *s, FrtError *err) {
  while (r.p < r.end) {
    uint64_t key, v = 0;
    if (!rd_varint(&r, &key))
      return frt_errorf(err, FRT_ERR_INPUT, "%s: truncated or malformed protobuf", path);
    uint64_t f = key >> 3;
    unsigned wt = (unsigned)(key & 7);
    if (f == 0 || f > 0x1fffffff)
      return frt_errorf(err, FRT_ERR_INPUT, "%s: malformed protobuf (field number %llu)", path,
                        (unsigned long long)f);
    Rd sub = {0};
    bool ok;
    switch (wt) {
    case WT_VARINT: ok = rd_varint(&r, &v); break;
    case WT_I64: ok = r.end - r.p >= 8; if (ok) r.p += 8; break;
    case WT_LEN: ok = rd_len(&r, &sub); break;
    case WT_I32: ok = r.end - r.p >= 4; if (ok) r.p += 4; break;
    default:
      return frt_errorf(err, FRT_ERR_INPUT, "%s: malformed protobuf (wire type %u)", path, wt);
    }
    if (!ok)
      return frt_errorf(err, FRT_ERR_INPUT, "%s: truncated or malformed protobuf", path);

    bool wt_ok = true;
    switch (f) {
    case PB_DIMS:
      if (wt == WT_VARINT || wt == WT_LEN) {
        Rd vals = sub;
        bool one = wt == WT_VARINT;
        while (one || vals.p < vals.end) {
          if (!one && !rd_varint(&vals, &v))
            return frt_errorf(err, FRT_ERR_INPUT, "%s: malformed packed dims", path);
          one = false;
          if ((int64_t)v < 0)
            return frt_errorf(err, FRT_ERR_INPUT, "%s: dims has a negative dimension", path);
          if (s->rank == FRT_MAX_RANK)
            return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: rank above %d is not supported", path,
                              FRT_MAX_RANK);
          s->dims[s->rank++] = (int64_t)v;
        }
      } else {
        wt_ok = false;
      }
      break;
    case PB_DATA_TYPE:
      wt_ok = wt == WT_VARINT;
      s->data_type = v;
      s->has_type = true;
      break;
    case PB_SEGMENT:
      return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: segmented tensors are not supported", path);
    case PB_STRING:
      return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: string tensors are not supported", path);
    case PB_EXTERNAL:
      return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: external data is not supported", path);
    case PB_LOCATION:
      wt_ok = wt == WT_VARINT;
      if (wt_ok && v != 0)
        return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: external data is not supported", path);
      break;
    case PB_NAME:
      wt_ok = wt == WT_LEN;
      break;
    case PB_RAW:
      wt_ok = wt == WT_LEN;
      s->raw = sub;
      s->has_raw = true;
      break;
    case PB_FLOAT: case PB_DOUBLE: {
      unsigned w = f == PB_FLOAT ? 4 : 8;
      if (wt == (w == 4 ? WT_I32 : WT_I64)) {
        s->count[f]++;
      } else if (wt == WT_LEN) {
        size_t n = (size_t)(sub.end - sub.p);
        if (n % w)
          return frt_errorf(err, FRT_ERR_INPUT, "%s: %s is not a whole number of values", path,
                            field_name((unsigned)f));
        s->count[f] += n / w;
      } else {
        wt_ok = false;
      }
      break;
    }
    case PB_INT32: case PB_INT64: case PB_UINT64:
      if (wt == WT_VARINT) {
        s->count[f]++;
      } else if (wt == WT_LEN) {
        size_t n = count_varints(sub);
        if (n == SIZE_MAX)
          return frt_errorf(err, FRT_ERR_INPUT, "%s: malformed packed %s", path, field_name((unsigned)f));
        s->count[f] += n;
      } else {
        wt_ok = false;
      }
      break;
    default:
      break; /* unknown fields (doc_string, metadata) were skipped above */
    }
    if (!wt_ok)
      return frt_errorf(err, FRT_ERR_INPUT, "%s: field %s has the wrong wire type (%u)", path,
                        field_name((unsigned)f), wt);
  }
  return FRT_OK;
}

/* Pass two: decodes the values of typed field tf into dst. */
static void decode(Rd r, FrtDtype dt, unsigned tf, uint8_t *dst) {
  size_t i = 0;
  while (r.p < r.end) {
    uint64_t key, v = 0;
    rd_varint(&r, &key);
    unsigned f = (unsigned)(key >> 3), wt = (unsigned)(key & 7);
    Rd sub = {r.p, r.p};
    switch (wt) {
    case WT_VARINT: rd_varint(&r, &v); break;
    case WT_I64: sub.end = r.p + 8; r.p += 8; break;
    case WT_LEN: rd_len(&r, &sub); break;
    case WT_I32: sub.end = r.p + 4; r.p += 4; break;
    }
    if (f != tf)
      continue;
    if (tf == PB_FLOAT || tf == PB_DOUBLE) {
      size_t n = (size_t)(sub.end - sub.p);
      memcpy(dst + i * (tf == PB_FLOAT ? 4 : 8), sub.p, n);
      i += n / (tf == PB_FLOAT ? 4 : 8);
    } else if (wt == WT_VARINT) {
      store_int(dt, dst, i++, v);
    } else {
      while (sub.p < sub.end) {
        rd_varint(&sub, &v);
        store_int(dt, dst, i++, v);
      }
    }
  }
}

FrtStatus frt_pb_parse(const char *path, uint8_t *buf, size_t len, FrtTensor *out, FrtError *err) {
  Rd all = {buf, buf + len};
  Scan s;
  memset(&s, 0, sizeof s);
  FrtStatus st = scan(path, all, &s, err);
  if (st != FRT_OK)
    return st;
  if (!s.has_type || s.data_type == 0)
    return frt_errorf(err, FRT_ERR_INPUT, "%s: not a tensor (TensorProto without data_type)", path);
  FrtDtype dt = s.data_type <= 0x7fffffff ? (FrtDtype)s.data_type : 0;
  if (frt_dtype_size(dt) == 0) {
    const char *n = unsupported_type_name(s.data_type);
    if (n)
      return frt_errorf(err, FRT_ERR_UNSUPPORTED, "%s: %s tensors are not supported", path, n);
    return frt_errorf(err, FRT_ERR_INPUT, "%s: unknown data_type %llu", path,
                      (unsigned long long)s.data_type);
  }
  size_t nbytes;
  if (!frt_dense_nbytes(dt, s.rank, s.dims, &nbytes))
    return frt_errorf(err, FRT_ERR_INPUT, "%s: dims' size overflows", path);
  size_t numel = nbytes / frt_dtype_size(dt);
  unsigned fixed, tf = typed_field(dt, &fixed);
  for (unsigned f = PB_FLOAT; f <= PB_UINT64; f++) {
    if (s.count[f] == 0 || f == tf)
      continue;
    return frt_errorf(err, FRT_ERR_INPUT, "%s: a %s tensor with values in %s", path, frt_dtype_name(dt),
                      field_name(f));
  }

  char ty[96];
  frt_format_type(ty, sizeof ty, dt, s.rank, s.dims);
  uint8_t *data;
  if (s.has_raw) {
    size_t have = (size_t)(s.raw.end - s.raw.p);
    if (s.count[tf])
      return frt_errorf(err, FRT_ERR_INPUT, "%s: values in both raw_data and %s", path, field_name(tf));
    if (have != nbytes)
      return frt_errorf(err, FRT_ERR_INPUT, "%s: raw_data holds %zu bytes, %s needs %zu", path, have, ty,
                        nbytes);
    memmove(buf, s.raw.p, nbytes);
    if (dt == FRT_BOOL)
      for (size_t i = 0; i < nbytes; i++)
        buf[i] = buf[i] != 0;
    data = buf;
  } else {
    if (s.count[tf] != numel)
      return frt_errorf(err, FRT_ERR_INPUT, "%s: %s holds %zu values, %s needs %zu", path, field_name(tf),
                        s.count[tf], ty, numel);
    data = frt_alloc_aligned(nbytes);
    if (!data)
      return frt_errorf(err, FRT_ERR_RESOURCE, "%s: out of memory for %zu bytes", path, nbytes);
    decode(all, dt, tf, data);
  }
  out->dtype = dt;
  out->rank = s.rank;
  memset(out->dims, 0, sizeof out->dims);
  memcpy(out->dims, s.dims, sizeof s.dims[0] * (size_t)s.rank);
  out->data = data;
  out->nbytes = nbytes;
  return FRT_OK;
}

/* ---- writer ---------------------------------------------------------------------------------------- */

static size_t put_varint(uint8_t *p, uint64_t v) {
  size_t n = 0;
  while (v >= 0x80) {
    p[n++] = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  p[n++] = (uint8_t)v;
  return n;
}

size_t frt_pb_header(const FrtTensor *t, const char *name, uint8_t *buf, size_t cap) {
  size_t name_n = name ? strlen(name) : 0;
  /* Keys and varints take at most 11 bytes each: 16 dims, data_type, name's and raw_data's lengths. */
  if (cap < 20 * 11 + name_n)
    return 0;
  size_t n = 0;
  for (int32_t i = 0; i < t->rank; i++) {
    buf[n++] = PB_DIMS << 3 | WT_VARINT;
    n += put_varint(buf + n, (uint64_t)t->dims[i]);
  }
  buf[n++] = PB_DATA_TYPE << 3 | WT_VARINT;
  n += put_varint(buf + n, (uint64_t)t->dtype);
  if (name_n) {
    buf[n++] = PB_NAME << 3 | WT_LEN;
    n += put_varint(buf + n, name_n);
    memcpy(buf + n, name, name_n);
    n += name_n;
  }
  buf[n++] = PB_RAW << 3 | WT_LEN;
  n += put_varint(buf + n, t->nbytes);
  return n;
}
