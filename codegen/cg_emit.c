/* cg_emit.c — ahead-of-time artefacts: objects, executables and static libraries with their C headers.
 *
 * The flow (fc_emit_artifact): a target machine for the options (portable x86-64-v3 unless --cpu or
 * --target say otherwise), the LLVM module from cg_module.c, the artefact's entry points, LLVM's
 * default<On> pipeline, an object file; then
 *   exe  the object is linked with libflowrt by the system's C compiler driver. `main` is generated
 *        into the object as LLVM IR (it only calls frt_main with the model), so linking needs no C
 *        source. The driver is the compiler that built flowc (it compiled libflowrt), else `cc`,
 *        `clang-19`, `gcc` or `clang` on PATH ($FLOWC_CC first). It runs through posix_spawn with an
 *        argument vector (no shell), libgcc linked statically, so the program needs only libc, libm and
 *        libpthread — unless libflowrt itself was compiled with sanitizers (a -Db_sanitize build): its
 *        objects then call __asan_/__ubsan_ functions, and the same -fsanitize flags are passed so the
 *        sanitizer runtimes come along. A failure quotes the linker's first line.
 *   obj  the object is written to OUT and a header next to it;
 *   lib  the object and every member of libflowrt go into one archive (cg_archive.c), plus a header;
 *   so   the object and every member of libflowrt are linked by the same driver into a shared library
 *        (-shared; the code is position-independent, as is libflowrt), plus the same header: the C ABI of
 *        lib, for programs that load a model at run time (dlopen, Python's ctypes).
 * Intermediate files live in a private mkdtemp folder, removed on every path. Outputs that fail half
 * way are removed (regular files only: -o /dev/null stays).
 *
 * libflowrt is found at run time (fc_runtime_library_path): $FLOWC_RUNTIME_LIB, an installed copy
 * beside this flowc, the build tree's, the configured prefix's (paths from meson, cg_emit_config.h).
 * Before linking, the ELF machine of the model's object is compared with libflowrt's, so building for
 * another --target says what is missing instead of failing inside the linker.
 *
 * Headers are plain C, usable with or without runtime/flowrt.h: the runtime's types appear only as
 * incomplete `struct FrtPool` / `struct FrtModel`, which flowrt.h completes when a program includes it.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <elf.h>
#include <llvm-c/Target.h>

#include "cg_emit.h"
#include "gpu.h"
#include "cg_emit_config.h"

extern char **environ;

#define LINE_CAP 512
#define CAPTURE_CAP 65536 /* bytes of a tool's output kept for the message; the rest is drained */

static char *xstrdup(const char *s) {
  char *d = strdup(s);
  if (!d) fc_die(__FILE__, __LINE__, "out of memory");
  return d;
}

static char *xprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xprintf(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  char *s = NULL;
  int n = vasprintf(&s, fmt, ap);
  va_end(ap);
  if (n < 0) fc_die(__FILE__, __LINE__, "out of memory");
  return s;
}

static bool is_regular(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Removes a half-written output, leaving devices, folders and missing files alone. */
static void remove_regular(const char *p) {
  struct stat st;
  if (lstat(p, &st) == 0 && S_ISREG(st.st_mode)) remove(p);
}

FcStatus fc_emit_close_file(FILE *f, const char *path, const char *what, FcDiag *diag) {
  bool ok = fflush(f) == 0 && !ferror(f);
  int e = errno;
  if (fclose(f) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (ok) return FC_OK;
  remove_regular(path);
  return fc_error(diag, FC_ERR_IO, "cannot write%s: %s", what, strerror(e ? e : EIO));
}

bool fc_emit_same_file(const char *a, const char *b) {
  if (strcmp(a, b) == 0) return true;
  struct stat sa, sb;
  return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* ---- names ------------------------------------------------------------------------------------------ */

bool fc_emit_model_name(const char *out, FcEmitKind kind, char *buf, size_t cap, FcDiag *diag) {
  const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
  size_t n = strlen(base);
  const char *dot = strrchr(base, '.');
  if (dot && dot != base) n = (size_t)(dot - base);
  if ((kind == FC_EMIT_LIB || kind == FC_EMIT_SO) && n > 3 && strncmp(base, "lib", 3) == 0) {
    base += 3;
    n -= 3;
  }
  size_t k = 0;
  /* A leading digit is not an identifier, and a leading '_' would make the header's macros reserved ones. */
  bool letter = n && ((base[0] >= 'a' && base[0] <= 'z') || (base[0] >= 'A' && base[0] <= 'Z'));
  if (n == 0 || n + 3 > cap) {
    fc_error(diag, FC_ERR_INPUT, "cannot make a C symbol prefix from the output name '%s'%s", out,
             n ? " (too long)" : "");
    return false;
  }
  if (!letter) {
    buf[k++] = 'm';
    buf[k++] = '_';
  }
  for (size_t i = 0; i < n; i++) {
    char c = base[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    buf[k++] = ok ? c : '_';
  }
  buf[k] = '\0';
  /* NAME_model_run and friends would collide with libflowrt's own frt_ functions. */
  if (strcmp(buf, "frt") == 0 || strncmp(buf, "frt_", 4) == 0) {
    fc_error(diag, FC_ERR_INPUT, "output name '%s' gives the model symbols in libflowrt's frt_ namespace; choose another name",
             out);
    return false;
  }
  return true;
}

char *fc_emit_header_path(const char *out, FcEmitKind kind, const char *name) {
  if (kind == FC_EMIT_LIB || kind == FC_EMIT_SO) {
    const char *slash = strrchr(out, '/');
    return xprintf("%.*s%s.h", slash ? (int)(slash - out + 1) : 0, out, name);
  }
  size_t n = strlen(out);
  if (n > 2 && strcmp(out + n - 2, ".o") == 0) return xprintf("%.*s.h", (int)(n - 2), out);
  return xprintf("%s.h", out);
}

/* ---- the C header ------------------------------------------------------------------------------------- */

/* Text from the model (tensor names, file names) inside a comment: printable ASCII only, and never a
 * sequence that ends the comment or, under -Wcomment, starts another one ("* /" and "/ *" instead). */
static void put_comment_text(FILE *f, const char *s) {
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    if ((c == '*' && s[1] == '/') || (c == '/' && s[1] == '*')) {
      fputc(c, f);
      fputc(' ', f);
      continue;
    }
    fputc(c >= 0x20 && c < 0x7f ? c : '?', f);
  }
}

static const char *c_type_of(FcDtype dt) {
  switch (dt) {
  case FC_DT_F32: return "float";
  case FC_DT_F64: return "double";
  case FC_DT_I8: return "int8_t";
  case FC_DT_I16: return "int16_t";
  case FC_DT_I32: return "int32_t";
  case FC_DT_I64: return "int64_t";
  case FC_DT_U8: return "uint8_t";
  case FC_DT_U16: return "uint16_t";
  case FC_DT_U32: return "uint32_t";
  case FC_DT_U64: return "uint64_t";
  case FC_DT_BOOL: return "uint8_t, 0 or 1";
  case FC_DT_F16: return "uint16_t, IEEE half bits";
  case FC_DT_BF16: return "uint16_t, bfloat16 bits";
  default: return "?";
  }
}

static void put_upper(FILE *f, const char *s) {
  for (; *s; s++) fputc(*s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s, f);
}

/* One documentation line per tensor: index, name, element type, shape, bytes. */
static void put_tensor_lines(FILE *f, const char *what, int n, FcValue *const *vals, const char *const *names) {
  fprintf(f, " *\n * %s, in this order:\n", what);
  if (n == 0) fputs(" *   (none)\n", f);
  for (int i = 0; i < n; i++) {
    const FcType *t = &vals[i]->type;
    fprintf(f, " *   %d  \"", i);
    put_comment_text(f, names[i] && *names[i] ? names[i] : "?");
    fprintf(f, "\"  %s (%s)  [", c_type_of(t->dtype), fc_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++) {
      if (t->dims[d] < 0) fprintf(f, "%s?", d ? ", " : "");
      else fprintf(f, "%s%lld", d ? ", " : "", (long long)t->dims[d]);
    }
    int64_t nbytes;
    if (fc_type_nbytes(t, &nbytes)) fprintf(f, "]  %lld bytes\n", (long long)nbytes);
    else fputs("]\n", f);
  }
}

static void put_size_macros(FILE *f, const char *name, const char *what, int n, FcValue *const *vals) {
  for (int i = 0; i < n; i++) {
    int64_t nbytes;
    if (!fc_type_nbytes(&vals[i]->type, &nbytes)) continue;
    fputs("#define ", f);
    put_upper(f, name);
    fprintf(f, "_%s_%d_BYTES ((size_t)%lldu)\n", what, i, (long long)nbytes);
  }
}

FcStatus fc_write_model_header(const char *path, const char *name, FcModule *m, FcEmitKind kind, const char *artefact,
                               FcDiag *diag) {
  FcGraph *g = m->graph;
  int n_in = g->n_inputs, n_out = fc_graph_num_outputs(g);
  FcValue **outs = malloc((size_t)(n_out ? n_out : 1) * sizeof *outs);
  const char **out_names = malloc((size_t)(n_out ? n_out : 1) * sizeof *out_names);
  const char **in_names = malloc((size_t)(n_in ? n_in : 1) * sizeof *in_names);
  if (!outs || !out_names || !in_names) fc_die(__FILE__, __LINE__, "out of memory");
  for (int i = 0; i < n_out; i++) {
    outs[i] = fc_graph_output(g, i);
    out_names[i] = fc_graph_output_name(g, i);
  }
  for (int i = 0; i < n_in; i++) in_names[i] = g->inputs[i]->name;

  FILE *f = fopen(path, "w");
  if (!f) {
    int e = errno;
    free(outs);
    free(out_names);
    free(in_names);
    return fc_error(diag, FC_ERR_IO, "cannot write the header '%s': %s", path, strerror(e));
  }
  const char *hbase = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  const char *src = m->source ? m->source : "model";
  const char *sbase = strrchr(src, '/') ? strrchr(src, '/') + 1 : src;
  fputs("/* ", f);
  put_comment_text(f, hbase);
  fputs(" — the model ", f);
  put_comment_text(f, sbase);
  fprintf(f, " as a C function, generated by flowc %s (do not edit).\n *\n", FLOWC_EMIT_VERSION);
  const char *abase = strrchr(artefact, '/') ? strrchr(artefact, '/') + 1 : artefact;
  if (kind == FC_EMIT_LIB) {
    fputs(" * The static library next to this header holds the model and the runtime (libflowrt); link it\n"
          " * with libm and libpthread:\n *   cc app.c ",
          f);
    put_comment_text(f, abase);
    fputs(" -lm -lpthread\n", f);
  } else if (kind == FC_EMIT_SO) {
    fputs(" * The shared library next to this header holds the model and the runtime (libflowrt) and needs only\n"
          " * libc, libm and libpthread; link with it, or load it at run time (dlopen, Python's ctypes):\n"
          " *   cc app.c ./",
          f);
    put_comment_text(f, abase);
    fputs("\n", f);
  } else {
    fputs(" * Link the object next to this header with flowc's runtime library and libm and libpthread:\n *   cc app.c ", f);
    put_comment_text(f, abase);
    fputs(" libflowrt.a -lm -lpthread\n", f);
  }
  fprintf(f,
          " *\n"
          " *   void *ws = aligned_alloc(64, %s_workspace_size());\n"
          " *   const void *inputs[] = {...};   // one buffer per input, as listed below\n"
          " *   void *outputs[] = {...};        // one buffer per output\n"
          " *   int rc = %s_run(inputs, outputs, ws, NULL);   // 0: the outputs are written\n"
          " *\n",
          name, name);
  fprintf(f,
          " * %s_run never allocates, prints or exits. It reads the inputs and the model's constants and writes\n"
          " * only the outputs and the workspace, so runs with different workspaces may go on at the same time.\n"
          " * The workspace needs no initialisation but must be 64-byte aligned and hold %s_workspace_size()\n"
          " * bytes. pool: NULL runs everything on the calling thread; a pool from frt_pool_create (flowrt.h)\n"
          " * spreads the work over its threads. The result is 0, or 1 + the index of the kernel that found bad\n"
          " * data (an index out of range, ...); %s_model.kernel_names[rc - 1] (flowrt.h) names its node.\n"
          " * It is -1, before anything runs, on a CPU that lacks an instruction-set feature the code was\n"
          " * compiled for (--cpu); %s_check_cpu(msg, sizeof msg) gives 0, or -1 and a one-line message\n"
          " * naming the missing features.\n"
          " *\n"
          " * Buffers are dense and row-major, in the machine's byte order.\n",
          name, name, name, name);
  put_tensor_lines(f, "Inputs", n_in, g->inputs, in_names);
  put_tensor_lines(f, "Outputs", n_out, outs, out_names);
  fputs(" */\n#ifndef FLOWC_MODEL_", f);
  put_upper(f, name);
  fputs("_H\n#define FLOWC_MODEL_", f);
  put_upper(f, name);
  fputs("_H\n\n#include <stddef.h>\n\n#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n", f);
  fputs("#define ", f);
  put_upper(f, name);
  fprintf(f, "_NUM_INPUTS %d\n#define ", n_in);
  put_upper(f, name);
  fprintf(f, "_NUM_OUTPUTS %d\n", n_out);
  put_size_macros(f, name, "INPUT", n_in, g->inputs);
  put_size_macros(f, name, "OUTPUT", n_out, outs);
  fprintf(f,
          "\nstruct FrtPool;\n"
          "struct FrtModel;\n"
          "\n"
          "/* Bytes of workspace %s_run needs, a multiple of 64. */\n"
          "size_t %s_workspace_size(void);\n"
          "\n"
          "/* Runs the model once (see the top of this file). */\n"
          "int %s_run(const void *const *inputs, void *const *outputs, void *workspace, struct FrtPool *pool);\n"
          "\n"
          "/* 0 when this CPU has every feature the code needs; else -1 and one line in msg (cap bytes). */\n"
          "int %s_check_cpu(char *msg, size_t cap);\n"
          "\n"
          "/* The model's description for libflowrt's frt_model_run and frt_main (complete with flowrt.h). */\n"
          "extern const struct FrtModel %s_model;\n"
          "\n"
          "#ifdef __cplusplus\n"
          "}\n"
          "#endif\n"
          "\n"
          "#endif\n",
          name, name, name, name, name);
  free(outs);
  free(out_names);
  free(in_names);
  char what[64 + PATH_MAX];
  snprintf(what, sizeof what, " the header '%s'", path);
  return fc_emit_close_file(f, path, what, diag);
}

/* ---- entry points ----------------------------------------------------------------------------------------- */

/* FrtModel's field holding workspace_size (runtime/flowrt.h): abi_version, name, n_inputs, n_outputs,
 * inputs, outputs, workspace_size. */
#define MODEL_FIELD_WORKSPACE 6

FcStatus fc_emit_add_entry_points(LLVMModuleRef mod, const char *name, FcEmitKind kind, FcDiag *diag) {
  char *sym = xprintf("%s_model", name);
  LLVMValueRef model = LLVMGetNamedGlobal(mod, sym);
  free(sym);
  if (!model || !LLVMGetInitializer(model))
    return fc_error(diag, FC_ERR_INTERNAL, "the generated module has no model descriptor '%s_model'", name);
  LLVMContextRef ctx = LLVMGetModuleContext(mod);
  LLVMTypeRef i32 = LLVMInt32TypeInContext(ctx), ptr = LLVMPointerTypeInContext(ctx, 0);
  LLVMBuilderRef b = LLVMCreateBuilderInContext(ctx);
  FcStatus st = FC_OK;
  if (kind == FC_EMIT_EXE) {
    if (LLVMGetNamedFunction(mod, "main")) {
      st = fc_error(diag, FC_ERR_INTERNAL, "the generated module already defines 'main'");
    } else {
      LLVMTypeRef main_params[2] = {i32, ptr};
      LLVMValueRef fn = LLVMAddFunction(mod, "main", LLVMFunctionType(i32, main_params, 2, 0));
      LLVMTypeRef frt_params[3] = {i32, ptr, ptr};
      LLVMTypeRef frt_ty = LLVMFunctionType(i32, frt_params, 3, 0);
      LLVMValueRef frt = LLVMGetNamedFunction(mod, "frt_main");
      if (!frt) frt = LLVMAddFunction(mod, "frt_main", frt_ty);
      LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
      LLVMValueRef args[3] = {LLVMGetParam(fn, 0), LLVMGetParam(fn, 1), model};
      LLVMBuildRet(b, LLVMBuildCall2(b, frt_ty, frt, args, 3, "rc"));
    }
  } else {
    LLVMValueRef init = LLVMGetInitializer(model);
    LLVMValueRef ws = LLVMGetNumOperands(init) > MODEL_FIELD_WORKSPACE ? LLVMGetOperand(init, MODEL_FIELD_WORKSPACE) : NULL;
    if (!ws || !LLVMIsAConstantInt(ws)) {
      st = fc_error(diag, FC_ERR_INTERNAL, "the model descriptor '%s_model' has no constant workspace size", name);
    } else {
      uint64_t bytes = LLVMConstIntGetZExtValue(ws);
      if (bytes > UINT64_MAX - 63) {
        st = fc_error(diag, FC_ERR_LIMIT, "the workspace size overflows");
      } else {
        bytes = (bytes + 63) & ~(uint64_t)63;
        LLVMTypeRef size_ty = LLVMIntPtrTypeInContext(ctx, LLVMGetModuleDataLayout(mod));
        char *fname = xprintf("%s_workspace_size", name);
        if (LLVMGetNamedFunction(mod, fname)) {
          st = fc_error(diag, FC_ERR_INTERNAL, "the generated module already defines '%s'", fname);
        } else {
          LLVMValueRef fn = LLVMAddFunction(mod, fname, LLVMFunctionType(size_ty, NULL, 0, 0));
          LLVMPositionBuilderAtEnd(b, LLVMAppendBasicBlockInContext(ctx, fn, "entry"));
          LLVMBuildRet(b, LLVMConstInt(size_ty, bytes, 0));
        }
        free(fname);
      }
    }
  }
  LLVMDisposeBuilder(b);
  return st;
}

/* ---- objects ---------------------------------------------------------------------------------------------- */

/* The object goes to memory first and then to the file through stdio: LLVM's file streams report a failed
 * write or close (a full disk, /dev/full) through its fatal-error handler, which prints "LLVM ERROR" and
 * exits instead of returning. */
FcStatus fc_emit_object(LLVMModuleRef mod, LLVMTargetMachineRef tm, const char *path, FcDiag *diag) {
  char *err = NULL;
  LLVMMemoryBufferRef buf = NULL;
  if (LLVMTargetMachineEmitToMemoryBuffer(tm, mod, LLVMObjectFile, &err, &buf)) {
    const char *msg = err && *err ? err : "unknown error";
    FcStatus st = fc_error(diag, FC_ERR_INTERNAL, "LLVM cannot emit the object: %.*s", (int)strcspn(msg, "\r\n"),
                           msg);
    if (err) LLVMDisposeMessage(err);
    return st;
  }
  if (err) LLVMDisposeMessage(err);
  FcStatus st;
  FILE *f = fopen(path, "wb");
  if (!f) {
    st = fc_error(diag, FC_ERR_IO, "cannot write the object: %s", strerror(errno));
  } else {
    size_t n = LLVMGetBufferSize(buf);
    if (n) fwrite(LLVMGetBufferStart(buf), 1, n, f);
    st = fc_emit_close_file(f, path, " the object", diag);
  }
  LLVMDisposeMemoryBuffer(buf);
  return st;
}

/* ---- the runtime library ------------------------------------------------------------------------------------ */

FcStatus fc_runtime_library_path(char **out, FcDiag *diag) {
  *out = NULL;
  const char *env = getenv("FLOWC_RUNTIME_LIB");
  if (env && *env) {
    if (!is_regular(env)) return fc_error(diag, FC_ERR_IO, "FLOWC_RUNTIME_LIB=%s: no such file", env);
    *out = xstrdup(env);
    return FC_OK;
  }
  char *cands[3] = {NULL, NULL, NULL};
  int n = 0;
  /* Installed: <prefix>/<bindir>/flowc beside <prefix>/<libdir>/libflowrt.a. */
  char exe[PATH_MAX];
  ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
  const char *bindir = FLOWC_INSTALL_BINDIR, *libdir = FLOWC_INSTALL_LIBDIR;
  if (len > 0 && bindir[0] != '/' && libdir[0] != '/') {
    exe[len] = '\0';
    char *slash = strrchr(exe, '/');
    size_t nb = strlen(bindir);
    if (slash) {
      *slash = '\0';
      size_t ne = strlen(exe);
      if (ne > nb && strcmp(exe + ne - nb, bindir) == 0 && exe[ne - nb - 1] == '/') {
        exe[ne - nb - 1] = '\0';
        cands[n++] = xprintf("%s/%s/libflowrt.a", exe, libdir);
      }
    }
  }
  cands[n++] = xstrdup(FLOWC_RUNTIME_LIB_BUILD);
  cands[n++] = libdir[0] == '/' ? xprintf("%s/libflowrt.a", libdir)
                                : xprintf("%s/%s/libflowrt.a", FLOWC_INSTALL_PREFIX, libdir);
  FcStatus st = FC_OK;
  for (int i = 0; i < n && !*out; i++)
    if (is_regular(cands[i])) *out = xstrdup(cands[i]);
  if (!*out)
    st = fc_error(diag, FC_ERR_IO, "cannot find libflowrt.a (looked for %s%s%s%s%s); set FLOWC_RUNTIME_LIB to its path",
                  cands[0], n > 1 ? ", " : "", n > 1 ? cands[1] : "", n > 2 ? ", " : "", n > 2 ? cands[2] : "");
  for (int i = 0; i < n; i++) free(cands[i]);
  return st;
}

static const char *machine_name(int em) {
  switch (em) {
  case EM_X86_64: return "x86-64";
  case EM_AARCH64: return "aarch64";
  case EM_386: return "i386";
  case EM_ARM: return "arm";
  case EM_RISCV: return "riscv";
  default: return "another architecture";
  }
}

/* The model's object and libflowrt must be for the same machine; says which is which if not. */
static FcStatus check_machines(const FcArchiveMember *obj, const FcArchive *rt, const char *rt_path, FcDiag *diag) {
  int want = fc_elf_machine(obj->data, obj->size);
  for (int i = 0; i < fc_archive_count(rt); i++) {
    const FcArchiveMember *mb = fc_archive_member(rt, i);
    int have = fc_elf_machine(mb->data, mb->size);
    if (have < 0 || want < 0 || have == want) continue;
    return fc_error(diag, FC_ERR_IO,
                    "libflowrt (%s) is built for %s but the model for %s; point FLOWC_RUNTIME_LIB at a libflowrt "
                    "built for the target (and FLOWC_CC at its C compiler)",
                    rt_path, machine_name(have), machine_name(want));
  }
  return FC_OK;
}

/* Maps the model's object (through an archive holding only it) and libflowrt, and checks they match. */
static FcStatus open_inputs(const char *obj, const char *member_name, const char *rt_path, FcArchive **objs,
                            FcArchive **rt, FcDiag *diag) {
  *objs = *rt = NULL;
  FcStatus st = fc_archive_open(rt_path, rt, diag);
  if (st == FC_OK) st = fc_archive_of_file(obj, member_name, objs, diag);
  if (st == FC_OK) st = check_machines(fc_archive_member(*objs, 0), *rt, rt_path, diag);
  if (st != FC_OK) {
    fc_archive_close(*objs);
    fc_archive_close(*rt);
    *objs = *rt = NULL;
  }
  return st;
}

/* ---- running a tool ------------------------------------------------------------------------------------------ */

/* The full path of `name` (on PATH unless it contains '/'); NULL if there is no such executable. */
char *fc_emit_find_program(const char *name) {
  if (!*name) return NULL;
  if (strchr(name, '/')) return is_regular(name) && access(name, X_OK) == 0 ? xstrdup(name) : NULL;
  const char *path = getenv("PATH");
  if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
  for (const char *p = path;;) {
    const char *colon = strchr(p, ':');
    size_t n = colon ? (size_t)(colon - p) : strlen(p);
    char *cand = n ? xprintf("%.*s/%s", (int)n, p, name) : xprintf("./%s", name);
    if (is_regular(cand) && access(cand, X_OK) == 0) return cand;
    free(cand);
    if (!colon) return NULL;
    p = colon + 1;
  }
}

static FcStatus find_linker_driver(char **out, FcDiag *diag) {
  const char *env = getenv("FLOWC_CC");
  if (env && *env) {
    *out = fc_emit_find_program(env);
    return *out ? FC_OK : fc_error(diag, FC_ERR_IO, "FLOWC_CC=%s: no such program", env);
  }
  static const char *const cands[] = {FLOWC_LINK_CC, "cc", "clang-19", "gcc", "clang"};
  for (size_t i = 0; i < sizeof cands / sizeof cands[0]; i++)
    if ((*out = fc_emit_find_program(cands[i]))) return FC_OK;
  return fc_error(diag, FC_ERR_IO,
                  "no C compiler to link with (looked for %s, cc, clang-19, gcc and clang on PATH; set FLOWC_CC); "
                  "--emit obj and --emit lib need none",
                  FLOWC_LINK_CC);
}

/* The line of a tool's output worth quoting: the first non-empty one that is not just context (such as
 * "ld: model.o: in function `main':"), else the first non-empty one. */
static void pick_line(const char *buf, size_t n, char *out, size_t cap) {
  const char *first = NULL;
  size_t first_len = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && buf[j] != '\n') j++;
    size_t len = j - i;
    while (len && (buf[i + len - 1] == '\r' || buf[i + len - 1] == ' ')) len--;
    if (len) {
      if (!first) {
        first = buf + i;
        first_len = len;
      }
      if (buf[i + len - 1] != ':') {
        first = buf + i;
        first_len = len;
        break;
      }
    }
    i = j + 1;
  }
  if (!first) first = "", first_len = 0;
  if (first_len >= cap) first_len = cap - 1;
  for (size_t i = 0; i < first_len; i++) {
    unsigned char c = (unsigned char)first[i];
    out[i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
  }
  out[first_len] = '\0';
}

/* Runs argv[0] (a path) with stdin from /dev/null and stdout and stderr captured. *exit_code is its
 * exit status and *signal the signal that ended it (0 if none); `line` gets the line of its output to
 * quote. */
FcStatus fc_emit_run_tool(char *const *argv, int *exit_code, int *signal, char *line, size_t cap, FcDiag *diag) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return fc_error(diag, FC_ERR_IO, "cannot create a pipe: %s", strerror(errno));
  posix_spawn_file_actions_t fa;
  int rc = posix_spawn_file_actions_init(&fa);
  if (rc == 0) rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  if (rc == 0) rc = posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
  pid_t pid = -1;
  if (rc == 0) rc = posix_spawn(&pid, argv[0], &fa, NULL, argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(fds[1]);
  if (rc != 0) {
    close(fds[0]);
    return fc_error(diag, FC_ERR_IO, "cannot run %s: %s", argv[0], strerror(rc));
  }
  char *buf = malloc(CAPTURE_CAP);
  if (!buf) fc_die(__FILE__, __LINE__, "out of memory");
  size_t have = 0;
  char drain[4096];
  for (;;) {
    ssize_t r = have < CAPTURE_CAP ? read(fds[0], buf + have, CAPTURE_CAP - have) : read(fds[0], drain, sizeof drain);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    if (have < CAPTURE_CAP) have += (size_t)r;
  }
  close(fds[0]);
  int status;
  pid_t w;
  while ((w = waitpid(pid, &status, 0)) < 0 && errno == EINTR) {}
  pick_line(buf, have, line, cap);
  free(buf);
  if (w < 0) return fc_error(diag, FC_ERR_IO, "cannot wait for %s: %s", argv[0], strerror(errno));
  *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  *signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  return FC_OK;
}

/* ---- executables and shared libraries --------------------------------------------------------------------------- */

/* Links the model's object with libflowrt into an executable, or (shared) into a shared library holding
 * every member of libflowrt, so its frt_ functions (frt_pool_create, frt_model_run, ...) are there for the
 * caller as in a --emit lib archive. */
static FcStatus link_with_runtime(const char *const *objs_in, int n_objs, const char *out, bool shared,
                                  FcDiag *diag) {
  char *rt = NULL, *cc = NULL;
  FcArchive *objs = NULL, *rta = NULL;
  FcStatus st = fc_runtime_library_path(&rt, diag);
  if (st == FC_OK) st = open_inputs(objs_in[0], "model.o", rt, &objs, &rta, diag);
  /* A libflowrt compiled with sanitizers (a -Db_sanitize build's) needs their runtimes at link time. */
  unsigned san = rta ? fc_archive_sanitizers(rta) : 0;
  fc_archive_close(objs);
  fc_archive_close(rta);
  if (st == FC_OK) st = find_linker_driver(&cc, diag);
  if (st != FC_OK) {
    free(rt);
    free(cc);
    return st;
  }
  static const struct {
    unsigned bit;
    const char *name;
  } sanitizers[] = {{FC_SANITIZE_ADDRESS, "address"}, {FC_SANITIZE_UNDEFINED, "undefined"}, {FC_SANITIZE_THREAD, "thread"}};
  char sanitize[64] = "-fsanitize=";
  for (size_t i = 0, n = 0; i < sizeof sanitizers / sizeof sanitizers[0]; i++)
    if (san & sanitizers[i].bit) {
      if (n++) strcat(sanitize, ",");
      strcat(sanitize, sanitizers[i].name);
    }
  char **argv = malloc(((size_t)n_objs + 16) * sizeof *argv);
  if (!argv) fc_die(__FILE__, __LINE__, "out of memory");
  int argc = 0;
  argv[argc++] = cc;
  argv[argc++] = "-o";
  argv[argc++] = (char *)out;
  for (int i = 0; i < n_objs; i++) argv[argc++] = (char *)objs_in[i];
  if (shared) {
    /* -Bsymbolic: the model's calls into its runtime stay inside the library, even when another library
     * loaded into the process (another model) exports the same frt_ names. --no-undefined: everything
     * resolves now, against libc, libm and libpthread, not when a caller loads the library. */
    argv[argc++] = "-shared";
    argv[argc++] = "-Wl,-Bsymbolic,--no-undefined";
    argv[argc++] = "-Wl,--whole-archive";
    argv[argc++] = rt;
    argv[argc++] = "-Wl,--no-whole-archive";
  } else {
    argv[argc++] = rt;
  }
  if (san) argv[argc++] = sanitize;
  argv[argc++] = "-static-libgcc";
  argv[argc++] = "-lm";
  argv[argc++] = "-lpthread";
  argv[argc] = NULL;
  int code = 0, sig = 0;
  char line[LINE_CAP];
  st = fc_emit_run_tool(argv, &code, &sig, line, sizeof line, diag);
  if (st == FC_OK && (code != 0 || sig != 0)) {
    remove_regular(out); /* what a failed link (a full disk) may leave */
    if (line[0]) st = fc_error(diag, FC_ERR_IO, "linking with %s failed: %s", cc, line);
    else if (sig) st = fc_error(diag, FC_ERR_IO, "linking with %s failed: killed by signal %d", cc, sig);
    else st = fc_error(diag, FC_ERR_IO, "linking with %s failed with exit status %d (and no message)", cc, code);
  }
  free(argv);
  free(rt);
  free(cc);
  return st;
}

FcStatus fc_link_executable(const char *const *objs, int n_objs, const char *out, FcDiag *diag) {
  return link_with_runtime(objs, n_objs, out, false, diag);
}

FcStatus fc_link_shared_library(const char *const *objs, int n_objs, const char *out, FcDiag *diag) {
  return link_with_runtime(objs, n_objs, out, true, diag);
}

/* ---- libraries ------------------------------------------------------------------------------------------------- */

FcStatus fc_write_library(const char *const *objs_in, int n_objs, const char *out_archive, const char *header,
                          const char *name, FcModule *m, FcDiag *diag) {
  char *rt = NULL;
  FcArchive *rta = NULL;
  /* Members NAME.o, then NAME.1.o, NAME.2.o, ... for the other CPU variants' objects. */
  FcArchive **objs = calloc((size_t)n_objs, sizeof *objs);
  if (!objs) fc_die(__FILE__, __LINE__, "out of memory");
  char *member = xprintf("%s.o", name);
  FcStatus st = fc_runtime_library_path(&rt, diag);
  if (st == FC_OK) st = open_inputs(objs_in[0], member, rt, &objs[0], &rta, diag);
  for (int i = 1; st == FC_OK && i < n_objs; i++) {
    char *variant = xprintf("%s.%d.o", name, i);
    st = fc_archive_of_file(objs_in[i], variant, &objs[i], diag);
    free(variant);
  }
  if (st == FC_OK) {
    int n = n_objs + fc_archive_count(rta);
    FcArchiveMember *all = malloc((size_t)n * sizeof *all);
    if (!all) fc_die(__FILE__, __LINE__, "out of memory");
    for (int i = 0; i < n_objs; i++) all[i] = *fc_archive_member(objs[i], 0);
    for (int i = n_objs; i < n; i++) all[i] = *fc_archive_member(rta, i - n_objs);
    st = fc_archive_write(out_archive, all, n, diag);
    free(all);
    if (st != FC_OK) remove_regular(out_archive);
  }
  if (st == FC_OK && header) {
    st = fc_write_model_header(header, name, m, FC_EMIT_LIB, out_archive, diag);
    if (st != FC_OK) remove_regular(out_archive);
  }
  for (int i = 0; i < n_objs; i++) fc_archive_close(objs[i]);
  free(objs);
  fc_archive_close(rta);
  free(member);
  free(rt);
  return st;
}

/* ---- the whole flow --------------------------------------------------------------------------------------------- */

FcStatus fc_emit_tmpdir_make(char **path, FcDiag *diag) {
  const char *base = getenv("TMPDIR");
  if (!base || !*base) base = "/tmp";
  *path = xprintf("%s/flowc-XXXXXX", base);
  if (!mkdtemp(*path)) {
    int e = errno;
    free(*path);
    *path = NULL;
    return fc_error(diag, FC_ERR_IO, "cannot create a temporary folder in %s: %s", base, strerror(e));
  }
  return FC_OK;
}

/* The folder holds only files flowc wrote (never subfolders). */
void fc_emit_tmpdir_remove(char **path) {
  if (!*path) return;
  DIR *d = opendir(*path);
  if (d) {
    struct dirent *e;
    while ((e = readdir(d))) {
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
      char *p = xprintf("%s/%s", *path, e->d_name);
      unlink(p);
      free(p);
    }
    closedir(d);
  }
  rmdir(*path);
  free(*path);
  *path = NULL;
}

FcStatus fc_emit_artifact(FcModule *m, const FcCodegenOptions *o, const FcTarget *target, FcEmitKind kind,
                          const char *out, FcDiag *diag) {
  FcCodegenOptions co = *o;
  if (!co.model_name) {
    if (kind != FC_EMIT_EXE) return fc_error(diag, FC_ERR_INTERNAL, "--emit obj/lib without a model name");
    co.model_name = "flowc";
  }
  const char *name = co.model_name;
  LLVMTargetMachineRef tm = fc_target_tm(target);
  LLVMContextRef ctx = LLVMContextCreate();
  LLVMModuleRef mod = NULL;
  FcStatus st = fc_codegen_module(m, &co, ctx, target, &mod, diag);
  if (st == FC_OK) st = fc_emit_add_entry_points(mod, name, kind, diag);
  if (st == FC_OK) st = fc_emit_cpu_guard(mod, target, name, kind, diag);
  if (st == FC_OK) fc_progress(&co.progress, "LLVM optimisation", NULL, 0, 0);
  if (st == FC_OK) st = fc_codegen_optimize(mod, tm, co.opt_level, diag);
  if (st == FC_OK && co.gpu_plan)
    st = fc_gpu_add_descriptor(mod, co.gpu_plan, co.gpu_ptx, co.gpu_target, co.gpu_symbol, diag);
  return fc_emit_finish(st, mod, ctx, tm, m, kind, name, out, NULL, 0, &co.progress, diag);
}

FcStatus fc_emit_finish(FcStatus st, LLVMModuleRef mod, LLVMContextRef ctx, LLVMTargetMachineRef tm, FcModule *m,
                        FcEmitKind kind, const char *name, const char *out, const char *const *extra_objs,
                        int n_extra, const FcProgress *progress, FcDiag *diag) {
  char *tmp = NULL, *header = NULL;
  const char **objs = calloc((size_t)n_extra + 1, sizeof *objs);
  if (!objs) fc_die(__FILE__, __LINE__, "out of memory");
  if (st == FC_OK && kind == FC_EMIT_OBJ && n_extra)
    st = fc_error(diag, FC_ERR_INTERNAL, "--emit obj writes one object, not %d", n_extra + 1);
  if (st == FC_OK && kind != FC_EMIT_OBJ) {
    st = fc_emit_tmpdir_make(&tmp, diag);
    if (st == FC_OK) objs[0] = xprintf("%s/%s.o", tmp, name);
  }
  for (int i = 0; i < n_extra; i++) objs[i + 1] = extra_objs[i];
  if (st == FC_OK) {
    fc_progress(progress, "object emission", NULL, 0, 0);
    st = fc_emit_object(mod, tm, kind == FC_EMIT_OBJ ? out : objs[0], diag);
    if (st != FC_OK && kind == FC_EMIT_OBJ) remove_regular(out);
  }
  /* The module and its constants are no longer needed: free them before linking. */
  if (mod) LLVMDisposeModule(mod);
  LLVMContextDispose(ctx);
  if (st == FC_OK && kind != FC_EMIT_OBJ)
    fc_progress(progress, kind == FC_EMIT_LIB ? "archive" : "link", NULL, 0, 0);
  if (st == FC_OK) {
    switch (kind) {
    case FC_EMIT_EXE: st = fc_link_executable(objs, n_extra + 1, out, diag); break;
    case FC_EMIT_OBJ:
      header = fc_emit_header_path(out, kind, name);
      st = fc_write_model_header(header, name, m, kind, out, diag);
      if (st != FC_OK) remove_regular(out);
      break;
    case FC_EMIT_LIB:
      header = fc_emit_header_path(out, kind, name);
      st = fc_write_library(objs, n_extra + 1, out, header, name, m, diag);
      break;
    case FC_EMIT_SO:
      header = fc_emit_header_path(out, kind, name);
      st = fc_link_shared_library(objs, n_extra + 1, out, diag);
      if (st == FC_OK) st = fc_write_model_header(header, name, m, kind, out, diag);
      if (st != FC_OK) remove_regular(out);
      break;
    }
  }
  fc_emit_tmpdir_remove(&tmp);
  free((char *)objs[0]);
  free(objs);
  free(header);
  return st;
}
