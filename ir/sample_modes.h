/* sample_modes.h — the string modes of resize, grid_sample and roi_align (ir/sample_modes.def), as enums
 * with one lookup: the importer checks and canonicalises ONNX's spellings with it, shape inference
 * refuses unknown modes with the list of known ones, and the evaluator and the kernels switch on the
 * enum. A mode added to the .def row is known to all of them at once. */
#ifndef FLOWC_SAMPLE_MODES_H
#define FLOWC_SAMPLE_MODES_H

#include "ir.h"

typedef enum FcModeList {
#define FC_MODE_LIST(L, A) FC_ML_##L,
#define FC_MODE(L, E, s)
#include "sample_modes.def"
#undef FC_MODE_LIST
#undef FC_MODE
  FC_ML_COUNT
} FcModeList;

/* Every mode of every list has its own value; a list's values are consecutive, first the default. */
typedef enum FcMode {
#define FC_MODE_LIST(L, A)
#define FC_MODE(L, E, s) FC_##L##_##E,
#include "sample_modes.def"
#undef FC_MODE_LIST
#undef FC_MODE
  FC_MODE_COUNT
} FcMode;

/* The mode that `s` spells in list l; false when l has none. fc_mode_parse_onnx also accepts the
 * importer's aliases (FC_MODE_ALIAS rows). */
bool fc_mode_parse(FcModeList l, const char *s, FcMode *out);
bool fc_mode_parse_onnx(FcModeList l, const char *s, FcMode *out);
/* The canonical spelling of m. */
const char *fc_mode_name(FcMode m);
/* The attribute that holds list l's mode. */
FcAttrName fc_mode_attr(FcModeList l);
/* "a|b|c": list l's canonical spellings, into buf (always NUL-terminated). */
const char *fc_mode_list_str(FcModeList l, char *buf, size_t cap);
/* Op's mode of list l (its attribute, or the list's default when absent); false on an unknown string,
 * with *bad the string. */
bool fc_op_mode(const FcOp *op, FcModeList l, FcMode *out, const char **bad);

#endif
