/* sbp_axes.c — signatures of a per-axis SBP plan (sbp.h, "sbp_axes.c"): local shapes and the boxing steps
 * between two per-axis signatures.
 *
 * On a mesh of axes with sizes s0, s1, ... a value has one signature per axis. S(d) on axis k splits the
 * rank's tensor (already cut by the axes before k) into s_k chunks along d and keeps chunk coord_k; when
 * several axes split the same dim, the chunk a rank holds is the row-major index of its coordinates along
 * those axes (coord0 * s1 + coord1 for both axes of a 2-D mesh), the chunk a flat split over all ranks gives.
 * P on an axis: the sum over that axis's group is the value cut as the other axes say.
 *
 * Boxing goes one axis at a time, each step a 1-D collective over that axis's group on the local tensor.
 * A step along axis k that moves dim d (a gather, a slice, an all-to-all) is only right when no later axis
 * splits d at that moment (else the chunks it joins are not adjacent), so fc_sbp_steps first gathers (or
 * reduces) every axis that changes, and every later axis that splits a dim such an axis moves, from the last
 * axis to the first, then splits them again from the first to the last. One changed axis whose move no later
 * axis disturbs is one direct collective (all_to_all S -> S, reduce_scatter P -> S).
 */
#include "sbp.h"

#include <string.h>

int fc_sbp_plan_mesh_axis(const FcSbpPlan *p, int a) { return p->n_axes == 1 ? -1 : a; }

void fc_sbp_local_dims(const FcSbpPlan *p, const FcType *t, const FcSbp *sig, int n, int64_t *dims) {
  if (t->rank > 0) memcpy(dims, t->dims, (size_t)t->rank * sizeof *dims);
  for (int a = 0; a < n; a++)
    if (sig[a].kind == FC_SBP_S && sig[a].dim >= 0 && sig[a].dim < t->rank) dims[sig[a].dim] /= p->axis_group[a];
}

FcType fc_sbp_local_type(const FcSbpPlan *p, const FcType *t, const FcSbp *sig, int n, FcArena *a) {
  FcType l = *t;
  int64_t *d = FC_NEW_ARRAY(a, int64_t, (size_t)(t->rank > 0 ? t->rank : 1));
  fc_sbp_local_dims(p, t, sig, n, d);
  l.dims = d;
  return l;
}

bool fc_sbp_sigs_equal(const FcSbpPlan *p, const FcSbp *a, const FcSbp *b) {
  for (int i = 0; i < p->n_axes; i++)
    if (!fc_sbp_equal(a[i], b[i])) return false;
  return true;
}

/* Whether signature s moves (splits) dim d. */
static bool splits(FcSbp s, int d) { return s.kind == FC_SBP_S && s.dim == d; }

int fc_sbp_steps(const FcSbpPlan *p, const FcSbp *from, const FcSbp *to, FcSbpStep *steps) {
  int n = p->n_axes, changed = 0;
  bool redo[FC_SBP_MAX_AXES];
  for (int k = 0; k < n; k++) {
    redo[k] = !fc_sbp_equal(from[k], to[k]);
    if (redo[k] && to[k].kind == FC_SBP_P) return -1;
  }
  /* A kept split of a later axis over a dim that a redone axis moves is redone too (and may in turn
   * disturb axes after it). */
  for (bool grew = true; grew;) {
    grew = false;
    for (int k = 0; k < n; k++) {
      if (!redo[k]) continue;
      for (int j = k + 1; j < n; j++) {
        if (redo[j] || from[j].kind != FC_SBP_S) continue;
        int d = from[j].dim;
        if (splits(from[k], d) || splits(to[k], d)) redo[j] = grew = true;
      }
    }
  }
  for (int k = 0; k < n; k++) changed += redo[k];
  int m = 0;
  if (changed == 1) {
    for (int k = 0; k < n; k++)
      if (redo[k]) steps[m++] = (FcSbpStep){k, from[k], to[k]};
    return m;
  }
  for (int k = n - 1; k >= 0; k--)
    if (redo[k] && from[k].kind != FC_SBP_B) steps[m++] = (FcSbpStep){k, from[k], FC_SBP_BCAST};
  for (int k = 0; k < n; k++)
    if (redo[k] && to[k].kind != FC_SBP_B) steps[m++] = (FcSbpStep){k, FC_SBP_BCAST, to[k]};
  return m;
}
