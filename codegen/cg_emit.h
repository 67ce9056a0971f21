/* cg_emit.h — ahead-of-time artefacts: `flowc build --emit exe|obj|lib|so` (codegen/cg_emit.c).
 *
 * codegen.h declares the three building blocks (fc_emit_object, fc_link_executable, fc_write_library);
 * this header adds the whole flow the command line runs — target machine, LLVM module, entry points,
 * LLVM's pipeline, object, then link or archive — and the naming rules for the symbols and files it
 * writes, so the CLI stays a thin caller; and the ar reader/writer behind --emit lib (cg_archive.c).
 *
 * Symbols of an artefact, for a model name NAME (a C identifier; FcCodegenOptions.model_name):
 *   NAME_model            const FrtModel, the model's description (runtime/flowrt.h);
 *   NAME_run              int (const void *const *in, void *const *out, void *workspace, FrtPool *pool);
 *   NAME_workspace_size   size_t (void): bytes of workspace NAME_run needs, a multiple of 64 (obj, lib, so);
 *   NAME_check_cpu        int (char *msg, size_t cap): 0, or -1 and a message when this CPU lacks a
 *                         feature the code needs; NAME_run then returns -1 without running (obj, lib, so);
 *   main                  calls frt_main(argc, argv, &NAME_model) (exe only; NAME is "flowc" there).
 */
#ifndef FLOWC_CG_EMIT_H
#define FLOWC_CG_EMIT_H

#include "codegen.h"

typedef enum FcEmitKind {
  FC_EMIT_EXE, /* a standalone program: the model + libflowrt + a main calling frt_main */
  FC_EMIT_OBJ, /* an object file OUT and a C header next to it */
  FC_EMIT_LIB, /* a static library (the model's object and libflowrt's members) and a C header */
  FC_EMIT_SO,  /* a shared library (the model and all of libflowrt) and the same C header */
} FcEmitKind;

/* The model name (symbol prefix) for output path `out`: its file name without directories, without a
 * leading "lib" for a library (static or shared), and without the extension, with every character that cannot be in a C
 * identifier replaced by '_' ("libmnist.a" -> "mnist", "my-net.o" -> "my_net"); "m_" goes in front of
 * anything but a letter ("3x.o" -> "m_3x"). False (with a message) when nothing usable is left or the
 * symbols would fall in libflowrt's namespace ("frt" or "frt_..."). */
bool fc_emit_model_name(const char *out, FcEmitKind kind, char *buf, size_t cap, FcDiag *diag);

/* Where the C header of an artefact goes: for obj, OUT with a trailing ".o" replaced by ".h" (".h"
 * appended otherwise); for lib and so, NAME.h in the library's folder. Malloc'd. */
char *fc_emit_header_path(const char *out, FcEmitKind kind, const char *name);

/* Writes the C header for a model compiled under `name`: self-contained C (with or without flowrt.h),
 * declaring NAME_run, NAME_workspace_size and NAME_model, and documenting each input and output (name,
 * dtype, shape, bytes) with NAME_INPUT_<i>_BYTES / NAME_OUTPUT_<i>_BYTES macros, and how to link
 * `artefact` (the object or library it describes). `m` is the module as compiled (after the pass
 * pipeline). FC_ERR_IO if the file cannot be written. */
FcStatus fc_write_model_header(const char *path, const char *name, FcModule *m, FcEmitKind kind, const char *artefact,
                               FcDiag *diag);

/* Adds the artefact's entry points to a module from fc_codegen_module built with model name `name`:
 * `main` for an executable, `NAME_workspace_size` for an object or library. */
FcStatus fc_emit_add_entry_points(LLVMModuleRef mod, const char *name, FcEmitKind kind, FcDiag *diag);

/* cg_cpu_guard.c: the CPU-feature check of an artefact, after fc_emit_add_entry_points: NAME_run becomes
 * a wrapper that refuses (-1) on a CPU lacking the model's cpu_features, NAME_check_cpu says why (obj,
 * lib); the wrapper and `main` (exe) are compiled for the architecture's baseline. */
FcStatus fc_emit_cpu_guard(LLVMModuleRef mod, const FcTarget *t, const char *name, FcEmitKind kind,
                           FcDiag *diag);

/* The whole ahead-of-time flow for a module that verified and went through the pass pipeline for
 * `target` (the description the pipeline ran with; o->model_name must be set for obj, lib and so): code
 * generation for its target machine, entry points, LLVM's default<O{o->opt_level}> pipeline, then the
 * object and the link (exe), the header (obj), the archive and header (lib), or the shared library and
 * header (so). Temporary files live in a private mkdtemp folder that is removed on every path; on failure
 * no partial output is left behind. FC_ERR_IO for failures about the output (cannot
 * write, the linker or runtime library failed), other statuses for the model. */
FcStatus fc_emit_artifact(FcModule *m, const FcCodegenOptions *o, const FcTarget *target, FcEmitKind kind,
                          const char *out, FcDiag *diag);

/* The second half of fc_emit_artifact, for a module that is ready (entry points, CPU guard, optimised),
 * when st is FC_OK: the object for tm, then the link, header or archive as for fc_emit_artifact, with
 * the n_extra objects extra_objs (a multiversioned model's other CPU variants; not for obj, which is one
 * object) linked or archived beside it. Disposes of mod (may be NULL) and ctx whatever st is; returns st
 * when it is not FC_OK. `progress` is told of each phase. */
FcStatus fc_emit_finish(FcStatus st, LLVMModuleRef mod, LLVMContextRef ctx, LLVMTargetMachineRef tm, FcModule *m,
                        FcEmitKind kind, const char *name, const char *out, const char *const *extra_objs,
                        int n_extra, const FcProgress *progress, FcDiag *diag);

/* A private folder for intermediate files ($TMPDIR or /tmp, mkdtemp): *path is malloc'd; FC_ERR_IO if it
 * cannot be made. fc_emit_tmpdir_remove deletes the files in it, the folder and *path (NULL: nothing). */
FcStatus fc_emit_tmpdir_make(char **path, FcDiag *diag);
void fc_emit_tmpdir_remove(char **path);

/* cg_dispatch.c: a multiversioned artefact, one model compiled for several CPUs (x86-64 only) and the
 * best variant this CPU supports chosen when it first runs (frt_model_variant); the symbols and the
 * header are those of a single-variant artefact, NAME_workspace_size the largest variant's.
 * fc_emit_order_variants orders the resolved targets best first (more checked features first, ties in
 * the given order) and refuses other architectures, more than 8 CPUs and two CPUs with the same checked
 * features. Then fc_multi_begin (with the number of variants), fc_multi_add for each target in that
 * order with a module that went through the pass pipeline for it (the module may be freed after the
 * call; the variants but the last compile on worker threads meanwhile), fc_multi_finish to write
 * `out` as fc_emit_artifact would (`m`: any variant's module, for the header); fc_multi_finish frees the
 * build whatever happens, fc_multi_abort frees one that is not finished. A rank-specialised SBP program
 * adds one module per CPU and rank (CPU-major, each with its flow.rank), at most FC_MULTI_MAX_VARIANTS; a
 * single target may be one CPU then, of any architecture. */
#define FC_MULTI_MAX_CPUS 8
#define FC_MULTI_MAX_VARIANTS 64 /* CPUs x ranks */
typedef struct FcMultiBuild FcMultiBuild;
FcStatus fc_emit_order_variants(FcTarget **targets, int n, FcDiag *diag);
FcStatus fc_multi_begin(const FcCodegenOptions *o, FcEmitKind kind, int n_variants, FcMultiBuild **out,
                        FcDiag *diag);
FcStatus fc_multi_add(FcMultiBuild *mb, FcModule *m, const FcTarget *t, FcDiag *diag);
FcStatus fc_multi_finish(FcMultiBuild *mb, FcModule *m, const char *out, FcDiag *diag);
void fc_multi_abort(FcMultiBuild *mb);

/* The libflowrt archive artefacts link against: $FLOWC_RUNTIME_LIB, else the one installed beside this
 * flowc (<prefix>/<libdir>/libflowrt.a, found from /proc/self/exe), else the build tree's, else the
 * configured install prefix's. Malloc'd path; FC_ERR_IO naming the places looked at if none exists. */
FcStatus fc_runtime_library_path(char **out, FcDiag *diag);

/* Finishes a file written through stdio: checks that every write reached it (fflush, ferror, fclose; a
 * full disk often shows only there) and on failure removes it (when it is a regular file) and returns
 * FC_ERR_IO "cannot write<what>: <reason>" (what: "" or " the header 'x.h'"). */
FcStatus fc_emit_close_file(FILE *f, const char *path, const char *what, FcDiag *diag);

/* Whether two paths name the same file: the same string, or existing files with the same device and
 * inode (a link, or another spelling of the path). */
bool fc_emit_same_file(const char *a, const char *b);

/* The full path of program `name` (searched on PATH unless it contains '/'), malloc'd; NULL if there is no
 * such executable. */
char *fc_emit_find_program(const char *name);
/* Runs argv[0] (a path) with stdin from /dev/null and stdout and stderr captured: *exit_code is its exit
 * status, *signal the signal that ended it (0 if none), `line` the line of its output worth quoting (the
 * first error). FC_ERR_IO when it cannot be started. */
FcStatus fc_emit_run_tool(char *const *argv, int *exit_code, int *signal, char *line, size_t cap, FcDiag *diag);

/* ---- cg_archive.c: static archives ---------------------------------------------------------------- */

typedef struct FcArchiveMember {
  const char *name;          /* file name, without folders */
  const unsigned char *data; /* the member's bytes (mapped; valid until the archive is closed) */
  size_t size;
} FcArchiveMember;

typedef struct FcArchive FcArchive;
/* Opens an ar archive (GNU, BSD or thin) and lists its members, indexes left out. FC_ERR_IO with a
 * message for a file that is missing or not a well-formed archive. */
FcStatus fc_archive_open(const char *path, FcArchive **out, FcDiag *diag);
/* An archive-to-be holding one file (mapped) as member `member_name`. */
FcStatus fc_archive_of_file(const char *path, const char *member_name, FcArchive **out, FcDiag *diag);
int fc_archive_count(const FcArchive *a);
const FcArchiveMember *fc_archive_member(const FcArchive *a, int i);
void fc_archive_close(FcArchive *a);

/* Writes a GNU archive with a symbol index of the members, which must be ELF objects, to `path`. */
FcStatus fc_archive_write(const char *path, const FcArchiveMember *members, int n, FcDiag *diag);

/* The sanitizer runtimes an archive's ELF members call into (they reference __asan_*, __ubsan_* or
 * __tsan_* symbols): a program linking them must be linked with the same -fsanitize flags. */
enum { FC_SANITIZE_ADDRESS = 1, FC_SANITIZE_UNDEFINED = 2, FC_SANITIZE_THREAD = 4 };
unsigned fc_archive_sanitizers(const FcArchive *a);

/* The e_machine of an ELF file (EM_X86_64, EM_AARCH64, ...), or -1 if `data` is not ELF. */
int fc_elf_machine(const unsigned char *data, size_t size);

#endif /* FLOWC_CG_EMIT_H */
