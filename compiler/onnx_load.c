/* onnx_load.c — reading ONNX models and TensorProtos safely.
 *
 * A model file is read whole (after fstat, within --max-file-size), then its protobuf wire data is
 * walked once, driven by protobuf-c's own message descriptors, before protobuf-c unpacks it: protobuf-c
 * recurses once per nested message and has no depth limit, so a crafted model with a million nested
 * subgraphs would overflow the stack. The walk is iterative (an explicit stack of frames), refuses
 * nesting beyond --max-nesting and any malformed wire data (bad varints, lengths past the end, wire
 * types that contradict the schema), so protobuf-c only ever sees well-formed, shallow input.
 *
 * TensorProto conversion accepts raw_data, every typed field the ONNX spec allows for each dtype, and
 * external data files. External locations are taken relative to the model's folder and refused when
 * absolute, when they contain a ".." component, or when the real path (symlinks resolved) leaves the
 * real model folder; offsets and lengths are checked against the file. Every element count and byte
 * size is overflow-checked and must match the dims exactly.
 */
#include "onnx_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "tensor data is read as little-endian");

/* ---- files ----------------------------------------------------------------------------------------- */

static FcStatus read_fd(int fd, uint8_t *dst, size_t n, int64_t offset, const char *what, FcDiag *diag) {
  size_t done = 0;
  while (done < n) {
    size_t chunk = n - done > ((size_t)1 << 30) ? (size_t)1 << 30 : n - done;
    ssize_t r = pread(fd, dst + done, chunk, (off_t)(offset + (int64_t)done));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return fc_error(diag, FC_ERR_IO, "cannot read %s: %s", what, strerror(errno));
    if (r == 0) return fc_error(diag, FC_ERR_IO, "cannot read %s: the file shrank while reading", what);
    done += (size_t)r;
  }
  return FC_OK;
}

/* O_NONBLOCK: opening a FIFO without a writer would otherwise wait forever before fstat could refuse it.
 * Reads of a regular file ignore the flag. */
FcStatus fc_open_regular(const char *path, const char *what, int *fd_out, int64_t *size_out, FcDiag *diag) {
  *fd_out = -1;
  *size_out = 0;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return fc_error(diag, FC_ERR_IO, "cannot open %s: %s", what, strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return fc_error(diag, FC_ERR_IO, "cannot stat %s: %s", what, strerror(e));
  }
  if (S_ISDIR(st.st_mode)) {
    close(fd);
    return fc_error(diag, FC_ERR_IO, "%s is a directory", what);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return fc_error(diag, FC_ERR_IO, "%s is not a regular file", what);
  }
  *fd_out = fd;
  *size_out = (int64_t)st.st_size;
  return FC_OK;
}

FcStatus fc_onnx_read_file(const char *path, int64_t max_bytes, const char *what, uint8_t **data, size_t *len,
                           FcDiag *diag) {
  *data = NULL;
  *len = 0;
  int fd;
  int64_t size;
  FcStatus st = fc_open_regular(path, what, &fd, &size, diag);
  if (st != FC_OK) return st;
  if (size > max_bytes) {
    close(fd);
    return fc_error(diag, FC_ERR_LIMIT, "%s is %lld bytes, over the limit of %lld bytes (raise it with --max-file-size)",
                    what, (long long)size, (long long)max_bytes);
  }
  if ((uint64_t)size > SIZE_MAX - 1) {
    close(fd);
    return fc_error(diag, FC_ERR_LIMIT, "%s is too large to read", what);
  }
  uint8_t *buf = malloc((size_t)size + 1);
  if (!buf) {
    close(fd);
    return fc_error(diag, FC_ERR_LIMIT, "cannot allocate %lld bytes to read %s", (long long)size, what);
  }
  st = read_fd(fd, buf, (size_t)size, 0, what, diag);
  close(fd);
  if (st != FC_OK) {
    free(buf);
    return st;
  }
  *data = buf;
  *len = (size_t)size;
  return FC_OK;
}

char *fc_onnx_path_dir(FcArena *a, const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return fc_arena_strdup(a, ".");
  if (slash == path) return fc_arena_strdup(a, "/");
  return fc_arena_strndup(a, path, (size_t)(slash - path));
}

/* ---- wire-format walk ------------------------------------------------------------------------------ */

enum { WT_VARINT = 0, WT_64BIT = 1, WT_LEN = 2, WT_32BIT = 5 };

/* Reads a varint of at most max_bytes bytes from [*pos, end); false when unterminated. */
static bool read_varint(const uint8_t *d, size_t *pos, size_t end, unsigned max_bytes, uint64_t *out) {
  uint64_t v = 0;
  for (unsigned i = 0; i < max_bytes; i++) {
    if (*pos + i >= end) return false;
    uint8_t byte = d[*pos + i];
    v |= (uint64_t)(byte & 0x7f) << (7 * i);
    if (!(byte & 0x80)) {
      *pos += i + 1;
      *out = v;
      return true;
    }
  }
  return false;
}

static int wire_type_of(ProtobufCType t) {
  switch (t) {
  case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_UINT32:
  case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_UINT64:
  case PROTOBUF_C_TYPE_BOOL: case PROTOBUF_C_TYPE_ENUM:
    return WT_VARINT;
  case PROTOBUF_C_TYPE_SFIXED64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE:
    return WT_64BIT;
  case PROTOBUF_C_TYPE_SFIXED32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_FLOAT:
    return WT_32BIT;
  case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_BYTES: case PROTOBUF_C_TYPE_MESSAGE:
    return WT_LEN;
  }
  return -1;
}

/* A packed repeated scalar: the payload must hold whole elements. */
static bool packed_ok(const uint8_t *d, size_t pos, size_t end, int elem_wt) {
  if (elem_wt == WT_64BIT) return (end - pos) % 8 == 0;
  if (elem_wt == WT_32BIT) return (end - pos) % 4 == 0;
  uint64_t v;
  while (pos < end)
    if (!read_varint(d, &pos, end, 10, &v)) return false;
  return true;
}

typedef struct WireFrame {
  const ProtobufCMessageDescriptor *desc;
  size_t end; /* offset just past this message's payload */
} WireFrame;

FcStatus fc_onnx_wire_check(const uint8_t *d, size_t len, const ProtobufCMessageDescriptor *desc,
                            int max_nesting, const char *what, FcDiag *diag) {
  if (max_nesting < 1)
    return fc_error(diag, FC_ERR_LIMIT, "%s nesting limit %d is below 1 (--max-nesting)", what, max_nesting);
  size_t cap = 16, sp = 0, pos = 0;
  WireFrame *stack = malloc(cap * sizeof *stack);
  if (!stack) fc_die(__FILE__, __LINE__, "out of memory");
  stack[sp++] = (WireFrame){desc, len};
  FcStatus st = FC_OK;
  while (sp > 0) {
    WireFrame *f = &stack[sp - 1];
    if (pos == f->end) {
      sp--;
      continue;
    }
    size_t field_at = pos;
    uint64_t tag;
    /* Tags are read as protobuf-c reads them: at most 5 bytes, field number >= 1. */
    if (!read_varint(d, &pos, f->end, 5, &tag) || tag > UINT32_MAX || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff) {
      st = fc_error(diag, FC_ERR_INPUT, "not a valid %s: bad field tag at byte %zu", what, field_at);
      break;
    }
    uint32_t field = (uint32_t)(tag >> 3);
    int wt = (int)(tag & 7);
    size_t payload = pos, payload_end;
    uint64_t v;
    switch (wt) {
    case WT_VARINT:
      if (!read_varint(d, &pos, f->end, 10, &v)) {
        st = fc_error(diag, FC_ERR_INPUT, "not a valid %s: bad varint at byte %zu", what, payload);
        goto out;
      }
      payload_end = pos;
      break;
    case WT_64BIT:
    case WT_32BIT: {
      size_t n = wt == WT_64BIT ? 8 : 4;
      if (f->end - pos < n) {
        st = fc_error(diag, FC_ERR_INPUT, "not a valid %s: truncated field at byte %zu", what, field_at);
        goto out;
      }
      pos += n;
      payload_end = pos;
      break;
    }
    case WT_LEN:
      if (!read_varint(d, &pos, f->end, 5, &v)) {
        st = fc_error(diag, FC_ERR_INPUT, "not a valid %s: bad length at byte %zu", what, payload);
        goto out;
      }
      if (v > INT32_MAX || v > f->end - pos) {
        st = fc_error(diag, FC_ERR_INPUT, "not a valid %s: length %llu at byte %zu runs past the end of its message",
                      what, (unsigned long long)v, payload);
        goto out;
      }
      payload = pos;
      payload_end = pos + (size_t)v;
      break;
    default:
      st = fc_error(diag, FC_ERR_INPUT, "not a valid %s: unsupported wire type %d at byte %zu", what, wt, field_at);
      goto out;
    }
    const ProtobufCFieldDescriptor *fd = f->desc ? protobuf_c_message_descriptor_get_field(f->desc, field) : NULL;
    pos = payload_end;
    if (!fd) continue; /* unknown field: protobuf-c keeps it aside, its payload is well-formed */
    int want = wire_type_of(fd->type);
    if (wt != want) {
      bool packed = wt == WT_LEN && fd->label == PROTOBUF_C_LABEL_REPEATED && want != WT_LEN;
      if (!packed) {
        st = fc_error(diag, FC_ERR_INPUT, "not a valid %s: field '%s' of %s has wire type %d at byte %zu, expected %d",
                      what, fd->name, f->desc->name, wt, field_at, want);
        goto out;
      }
      if (!packed_ok(d, payload, payload_end, want)) {
        st = fc_error(diag, FC_ERR_INPUT, "not a valid %s: packed field '%s' of %s at byte %zu holds a partial element",
                      what, fd->name, f->desc->name, field_at);
        goto out;
      }
      continue;
    }
    if (fd->type != PROTOBUF_C_TYPE_MESSAGE) continue;
    /* A nested message: descend into its payload. */
    if (sp + 1 > (size_t)max_nesting) {
      st = fc_error(diag, FC_ERR_LIMIT, "%s nests messages deeper than the limit of %d (at byte %zu, in %s.%s; %s)",
                    what, max_nesting, field_at, f->desc->name, fd->name,
                    max_nesting < FC_MAX_NESTING_CAP ? "raise it with --max-nesting" : "the most --max-nesting allows");
      goto out;
    }
    if (sp == cap) {
      cap *= 2;
      WireFrame *n = realloc(stack, cap * sizeof *stack);
      if (!n) fc_die(__FILE__, __LINE__, "out of memory");
      stack = n;
    }
    stack[sp++] = (WireFrame){(const ProtobufCMessageDescriptor *)fd->descriptor, payload_end};
    pos = payload;
  }
out:
  free(stack);
  return st;
}

/* ---- models ---------------------------------------------------------------------------------------- */

FcStatus fc_onnx_load_model(const char *path, const FcImportLimits *lim, Onnx__ModelProto **out, FcDiag *diag) {
  *out = NULL;
  /* The walk below is iterative, but protobuf-c's unpacker that follows it recurses once per level. */
  if (lim->max_nesting > FC_MAX_NESTING_CAP)
    return fc_error(diag, FC_ERR_LIMIT, "the nesting limit %d is above %d, where protobuf-c's unpacker is still safe",
                    lim->max_nesting, FC_MAX_NESTING_CAP);
  uint8_t *buf;
  size_t len;
  FcStatus st = fc_onnx_read_file(path, lim->max_file_bytes, "the model file", &buf, &len, diag);
  if (st != FC_OK) return st;
  st = fc_onnx_wire_check(buf, len, &onnx__model_proto__descriptor, lim->max_nesting, "ONNX model", diag);
  if (st == FC_OK) {
    *out = onnx__model_proto__unpack(NULL, len, buf);
    if (!*out) st = fc_error(diag, FC_ERR_INPUT, "not a valid ONNX model (protobuf-c could not unpack it)");
  }
  free(buf);
  return st;
}

FcStatus fc_onnx_unpack_tensor(const char *path, const uint8_t *buf, size_t len, int max_nesting,
                               Onnx__TensorProto **out, FcDiag *diag) {
  *out = NULL;
  FcDiag local;
  fc_diag_init(&local);
  FcStatus st = fc_onnx_wire_check(buf, len, &onnx__tensor_proto__descriptor, max_nesting, "TensorProto", &local);
  if (st != FC_OK) return fc_error(diag, st, "%s: %s", path, local.msg);
  *out = onnx__tensor_proto__unpack(NULL, len, buf);
  return *out ? FC_OK : fc_error(diag, FC_ERR_INPUT, "%s: not a valid TensorProto", path);
}

FcStatus fc_onnx_load_tensor_proto(const char *path, const FcImportLimits *lim, Onnx__TensorProto **out,
                                   FcDiag *diag) {
  *out = NULL;
  char what[64 + PATH_MAX];
  snprintf(what, sizeof what, "tensor file '%s'", path);
  uint8_t *buf;
  size_t len;
  FcStatus st = fc_onnx_read_file(path, lim->max_file_bytes, what, &buf, &len, diag);
  if (st != FC_OK) return st;
  st = fc_onnx_unpack_tensor(path, buf, len, lim->max_nesting, out, diag);
  free(buf);
  return st;
}

void fc_onnx_model_free(Onnx__ModelProto *m) {
  if (m) onnx__model_proto__free_unpacked(m, NULL);
}

/* ---- TensorProto ------------------------------------------------------------------------------------ */

const char *fc_onnx_dtype_name(int code) {
  static const char *const names[] = {
      "UNDEFINED", "FLOAT", "UINT8", "INT8", "UINT16", "INT16", "INT32", "INT64", "STRING", "BOOL", "FLOAT16",
      "DOUBLE", "UINT32", "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16", "FLOAT8E4M3FN", "FLOAT8E4M3FNUZ",
      "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4", "INT4", "FLOAT4E2M1",
  };
  return code >= 0 && (size_t)code < sizeof names / sizeof names[0] ? names[code] : NULL;
}

/* Parses a non-negative decimal int64 ("offset"/"length" values of external data). */
static bool parse_decimal(const char *s, int64_t *out) {
  if (!s || !*s) return false;
  int64_t v = 0;
  for (; *s; s++) {
    if (*s < '0' || *s > '9') return false;
    if (!fc_checked_mul(v, 10, &v) || !fc_checked_add(v, *s - '0', &v)) return false;
  }
  *out = v;
  return true;
}

static bool has_dotdot_component(const char *p) {
  while (*p) {
    const char *e = strchr(p, '/');
    size_t n = e ? (size_t)(e - p) : strlen(p);
    if (n == 2 && p[0] == '.' && p[1] == '.') return true;
    if (!e) break;
    p = e + 1;
  }
  return false;
}

/* Reads external data into a new tensor of type `ty` (nbytes long), allocated only once the file is known
 * to hold exactly that many bytes. */
static FcStatus read_external(const Onnx__TensorProto *tp, const char *tname, const char *model_dir,
                              const FcImportLimits *lim, FcArena *arena, FcType ty, int64_t nbytes, FcTensor **out,
                              FcDiag *diag) {
  const char *location = NULL;
  int64_t offset = 0, length = -1;
  for (size_t i = 0; i < tp->n_external_data; i++) {
    const Onnx__StringStringEntryProto *e = tp->external_data[i];
    const char *key = e->key ? e->key : "";
    if (strcmp(key, "location") == 0) {
      location = e->value;
    } else if (strcmp(key, "offset") == 0) {
      if (!parse_decimal(e->value, &offset))
        return fc_error(diag, FC_ERR_INPUT, "tensor '%s': external data offset '%s' is not a non-negative integer",
                        tname, e->value ? e->value : "");
    } else if (strcmp(key, "length") == 0) {
      if (!parse_decimal(e->value, &length))
        return fc_error(diag, FC_ERR_INPUT, "tensor '%s': external data length '%s' is not a non-negative integer",
                        tname, e->value ? e->value : "");
    }
  }
  if (!location || !*location)
    return fc_error(diag, FC_ERR_INPUT, "tensor '%s': external data has no location", tname);
  if (location[0] == '/')
    return fc_error(diag, FC_ERR_INPUT, "tensor '%s': external data location '%s' is an absolute path", tname, location);
  if (has_dotdot_component(location))
    return fc_error(diag, FC_ERR_INPUT, "tensor '%s': external data location '%s' leaves the model's folder ('..')",
                    tname, location);
  if (!model_dir)
    return fc_error(diag, FC_ERR_INPUT, "tensor '%s': external data '%s' without a model folder to resolve it in",
                    tname, location);

  size_t dlen = strlen(model_dir), llen = strlen(location);
  char *joined = malloc(dlen + llen + 2);
  if (!joined) fc_die(__FILE__, __LINE__, "out of memory");
  memcpy(joined, model_dir, dlen);
  joined[dlen] = '/';
  memcpy(joined + dlen + 1, location, llen + 1);
  char real_dir[PATH_MAX], real_file[PATH_MAX];
  FcStatus st = FC_OK;
  char what[PATH_MAX + 64];
  snprintf(what, sizeof what, "external data file '%s' of tensor '%s'", location, tname);
  if (!realpath(model_dir, real_dir)) {
    st = fc_error(diag, FC_ERR_IO, "cannot resolve the model folder '%s': %s", model_dir, strerror(errno));
  } else if (!realpath(joined, real_file)) {
    st = fc_error(diag, FC_ERR_IO, "cannot open %s: %s", what, strerror(errno));
  } else {
    /* Symlinks may point anywhere: compare the resolved paths, folder prefix plus a separator. */
    size_t rd = strlen(real_dir);
    bool inside = strcmp(real_dir, "/") == 0 ? real_file[0] == '/'
                                             : strncmp(real_file, real_dir, rd) == 0 && real_file[rd] == '/';
    if (!inside)
      st = fc_error(diag, FC_ERR_INPUT, "tensor '%s': external data location '%s' resolves outside the model's folder",
                    tname, location);
  }
  free(joined);
  if (st != FC_OK) return st;

  int fd;
  int64_t size;
  st = fc_open_regular(real_file, what, &fd, &size, diag);
  if (st != FC_OK) return st;
  if (size > lim->max_file_bytes) {
    close(fd);
    return fc_error(diag, FC_ERR_LIMIT, "%s is %lld bytes, over the limit of %lld bytes (raise it with --max-file-size)",
                    what, (long long)size, (long long)lim->max_file_bytes);
  }
  if (offset > size) {
    close(fd);
    return fc_error(diag, FC_ERR_INPUT, "tensor '%s': external data offset %lld is beyond the end of '%s' (%lld bytes)",
                    tname, (long long)offset, location, (long long)size);
  }
  if (length < 0) length = size - offset;
  int64_t end;
  if (!fc_checked_add(offset, length, &end) || end > size) {
    close(fd);
    return fc_error(diag, FC_ERR_INPUT,
                    "tensor '%s': external data offset %lld + length %lld is beyond the end of '%s' (%lld bytes)", tname,
                    (long long)offset, (long long)length, location, (long long)size);
  }
  if (length != nbytes) {
    close(fd);
    return fc_error(diag, FC_ERR_INPUT, "tensor '%s': external data has %lld bytes, its dims need %lld", tname,
                    (long long)length, (long long)nbytes);
  }
  FcTensor *t = fc_tensor_new(arena, ty);
  st = read_fd(fd, (uint8_t *)t->data, (size_t)nbytes, offset, what, diag);
  close(fd);
  if (st == FC_OK) *out = t;
  return st;
}

/* Which typed field ONNX stores each dtype in (raw_data aside). */
typedef enum TypedField { TF_FLOAT, TF_INT32, TF_INT64, TF_DOUBLE, TF_UINT64 } TypedField;

static TypedField typed_field_of(FcDtype dt) {
  switch (dt) {
  case FC_DT_F32: return TF_FLOAT;
  case FC_DT_I64: return TF_INT64;
  case FC_DT_F64: return TF_DOUBLE;
  case FC_DT_U32: case FC_DT_U64: return TF_UINT64;
  default: return TF_INT32; /* i32, i16, i8, u16, u8, bool, f16, bf16 */
  }
}

static const char *typed_field_name(TypedField f) {
  static const char *const n[] = {"float_data", "int32_data", "int64_data", "double_data", "uint64_data"};
  return n[f];
}

/* Copies the typed field into a new tensor of type `ty`, allocated only once the field is known to hold
 * exactly numel values. */
static FcStatus copy_typed(const Onnx__TensorProto *tp, const char *tname, FcArena *arena, FcType ty, int64_t numel,
                           FcTensor **out, FcDiag *diag) {
  const struct { size_t n; TypedField f; } fields[] = {
      {tp->n_float_data, TF_FLOAT},   {tp->n_int32_data, TF_INT32}, {tp->n_int64_data, TF_INT64},
      {tp->n_double_data, TF_DOUBLE}, {tp->n_uint64_data, TF_UINT64},
  };
  TypedField want = typed_field_of(ty.dtype);
  size_t have = 0;
  for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
    if (!fields[i].n) continue;
    if (fields[i].f != want)
      return fc_error(diag, FC_ERR_INPUT, "tensor '%s': %s data stored in %s (ONNX keeps it in %s)", tname,
                      fc_dtype_name(ty.dtype), typed_field_name(fields[i].f), typed_field_name(want));
    have = fields[i].n;
  }
  if (have == 0 && numel != 0) return fc_error(diag, FC_ERR_INPUT, "tensor '%s' has no data", tname);
  if ((uint64_t)have != (uint64_t)numel)
    return fc_error(diag, FC_ERR_INPUT, "tensor '%s': %s has %zu elements, its dims need %lld", tname,
                    typed_field_name(want), have, (long long)numel);
  FcTensor *t = fc_tensor_new(arena, ty);
  *out = t;
  if (numel == 0) return FC_OK;
  uint8_t *p = (uint8_t *)t->data;
  size_t n = (size_t)numel;
  switch (t->type.dtype) {
  case FC_DT_F32: memcpy(p, tp->float_data, n * 4); break;
  case FC_DT_F64: memcpy(p, tp->double_data, n * 8); break;
  case FC_DT_I64: memcpy(p, tp->int64_data, n * 8); break;
  case FC_DT_I32: memcpy(p, tp->int32_data, n * 4); break;
  case FC_DT_U64: memcpy(p, tp->uint64_data, n * 8); break;
  case FC_DT_U32:
    for (size_t i = 0; i < n; i++) {
      uint32_t v = (uint32_t)tp->uint64_data[i];
      memcpy(p + 4 * i, &v, 4);
    }
    break;
  /* Narrow types sit in int32_data, one element per int32 (f16/bf16 as their bit patterns); like ONNX's
   * reference reader we keep the low bits. */
  case FC_DT_I16: case FC_DT_U16: case FC_DT_F16: case FC_DT_BF16:
    for (size_t i = 0; i < n; i++) {
      uint16_t v = (uint16_t)(uint32_t)tp->int32_data[i];
      memcpy(p + 2 * i, &v, 2);
    }
    break;
  case FC_DT_I8: case FC_DT_U8:
    for (size_t i = 0; i < n; i++) p[i] = (uint8_t)(uint32_t)tp->int32_data[i];
    break;
  case FC_DT_BOOL:
    for (size_t i = 0; i < n; i++) p[i] = tp->int32_data[i] != 0;
    break;
  case FC_DT_COUNT: FC_UNREACHABLE();
  }
  return FC_OK;
}

FcStatus fc_onnx_tensor_to_fc(const Onnx__TensorProto *tp, const char *model_dir, const FcImportLimits *lim,
                              FcArena *arena, FcTensor **out, FcDiag *diag) {
  *out = NULL;
  const char *tname = tp->name && *tp->name ? tp->name : "<unnamed>";
  if (!tp->has_data_type || tp->data_type == ONNX__TENSOR_PROTO__DATA_TYPE__UNDEFINED)
    return fc_error(diag, FC_ERR_INPUT, "tensor '%s' has no data type", tname);
  FcDtype dt;
  if (!fc_dtype_from_onnx(tp->data_type, &dt)) {
    const char *n = fc_onnx_dtype_name(tp->data_type);
    if (!n) return fc_error(diag, FC_ERR_INPUT, "tensor '%s' has an invalid data type %d", tname, tp->data_type);
    return fc_error(diag, FC_ERR_UNSUPPORTED, "tensor '%s' has data type %s, which flowc does not support", tname, n);
  }
  if (tp->segment)
    return fc_error(diag, FC_ERR_UNSUPPORTED, "tensor '%s' is segmented, which flowc does not support", tname);
  if (tp->n_dims > (size_t)lim->max_rank)
    return fc_error(diag, FC_ERR_LIMIT, "tensor '%s' has rank %zu, over the limit of %d (raise it with --max-rank)", tname,
                    tp->n_dims, lim->max_rank);
  for (size_t i = 0; i < tp->n_dims; i++)
    if (tp->dims[i] < 0)
      return fc_error(diag, FC_ERR_INPUT, "tensor '%s' has a negative dimension %lld", tname, (long long)tp->dims[i]);
  FcType ty = {dt, (int)tp->n_dims, tp->dims};
  int64_t numel, nbytes;
  if (!fc_type_numel(&ty, &numel) || !fc_type_nbytes(&ty, &nbytes) || nbytes > FC_DEFAULT_MAX_TENSOR_BYTES)
    return fc_error(diag, FC_ERR_LIMIT, "tensor '%s' is larger than the limit of %lld bytes", tname,
                    (long long)FC_DEFAULT_MAX_TENSOR_BYTES);
  /* The dims are only a claim: each path compares it with the bytes present before allocating, so a tiny
   * file claiming gigabytes is refused without touching that much memory. */
  FcTensor *t = NULL;
  FcStatus st = FC_OK;
  if (tp->has_data_location && tp->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
    st = read_external(tp, tname, model_dir, lim, arena, ty, nbytes, &t, diag);
  } else if (tp->has_raw_data) {
    if ((uint64_t)tp->raw_data.len != (uint64_t)nbytes)
      return fc_error(diag, FC_ERR_INPUT, "tensor '%s': raw_data has %zu bytes, its dims need %lld", tname,
                      tp->raw_data.len, (long long)nbytes);
    t = fc_tensor_new(arena, ty);
    if (nbytes) memcpy((void *)t->data, tp->raw_data.data, (size_t)nbytes);
  } else {
    st = copy_typed(tp, tname, arena, ty, numel, &t, diag);
  }
  if (st != FC_OK) return st;
  if (dt == FC_DT_BOOL) { /* raw and external bools are bytes that must read as 0/1 */
    uint8_t *p = (uint8_t *)t->data;
    for (int64_t i = 0; i < numel; i++) p[i] = p[i] != 0;
  }
  *out = t;
  return FC_OK;
}
