/* resize_map.h — resize's per-axis tap tables, shared by the reference evaluator (ir/eval_sample.c) and
 * the resize kernel (codegen/kernel_sample.c), which precomputes the same tables at compile time.
 *
 * Each axis of a resize is a 1-D resampling: output coordinate o reads the taps [tap0[o], tap0[o+1]) of
 * (idx, w). The maps follow ONNX's numpy reference in double precision (see ir/eval_sample.c). */
#ifndef FLOWC_RESIZE_MAP_H
#define FLOWC_RESIZE_MAP_H

#include "sample_modes.h"

typedef struct FcResizeParams {
  FcMode ctm;     /* FC_RESIZE_CTM_* */
  FcMode mode;    /* FC_RESIZE_MODE_* */
  FcMode nearest; /* FC_RESIZE_NEAREST_* */
  double cubic_a;
  bool exclude_outside;
} FcResizeParams;

/* One axis: output o reads taps [tap0[o], tap0[o+1]) of (idx, w) (input indices, weights). An output
 * whose coordinate lands outside the input under tf_crop_and_resize has no taps and extrap[o] set; an
 * output can also have no taps because all its weights are exactly zero (extrap[o] clear). */
typedef struct FcResizeAxis {
  int64_t in, out; /* set by the caller */
  int64_t *tap0, *idx;
  double *w;
  bool *extrap;
  bool identity; /* every output reads its own input with weight 1 */
} FcResizeAxis;

/* Reads the resize attributes of `op` into *p; false on an unknown string attribute, with *attr its
 * name and *value the string. */
bool fc_resize_params(const FcOp *op, FcResizeParams *p, const char **attr, const char **value);
/* x_original of output coordinate x of an axis of `in` inputs and `out` outputs at `scale`, in the
 * reference's operation order; false when tf_crop_and_resize (roi [r0, r1]) lands outside the input. */
bool fc_resize_coord(const FcResizeParams *p, double x, double scale, int64_t in, int64_t out, float r0, float r1,
                     double *xo);
/* The resize only copies input elements (nearest, no tf_crop_and_resize extrapolation): it commutes with
 * any element-wise map, a quantisation included. */
bool fc_resize_moves_data(const FcOp *op);
/* Taps per output of a mode: 1 (nearest), 2 (linear), 4 (cubic). */
int fc_resize_taps_per(FcMode mode);
/* Fills m's tables (from arena a) for an axis of m->in inputs and m->out outputs at `scale`, with
 * roi [r0, r1] for tf_crop_and_resize. */
void fc_resize_axis_map(const FcResizeParams *p, double scale, float r0, float r1, FcResizeAxis *m, FcArena *a);

#endif
