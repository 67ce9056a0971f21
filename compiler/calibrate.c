/* calibrate.c — static post-training calibration (`flowc build --quantize int8 --calibrate DIR`): runs the
 * float model on the samples of DIR and records, per observation point, the range quantize_static then
 * quantises with.
 *
 * The module calibrated is the one the -O pipeline has made up to fold_batchnorm (batch norms already in
 * the conv weights). A second copy of it (the caller's loader makes one the same way, so the two have the
 * same ops in the same order) becomes the probe: the values to observe are added to its outputs, the rest
 * of the float pipeline compiles it, and the JIT runs it once per sample (calib_data.c feeds it). The
 * observation points are the activation operand of every conv and matmul by constant weights (what
 * quantize_static quantises) and their results (shown in the report and in the IR). A point is named by
 * position, (ordinal of its op in the graph, result index) or (-1, input index), which is the same in every
 * copy; fc_calib_annotate writes each range as `flow.calib_range = array<f64: lo, hi>` on the op (or graph
 * input) of that position in the module being built.
 *
 * Per point we keep the minimum, the maximum and a histogram of 2048 bins over [-T, T], T the largest |x|
 * seen (as onnxruntime's HistogramCollector: zero sits on a bin edge, so each sign has 1024 bins). When a
 * run exceeds T the counts are moved to the bins of the wider range by their centres (onnxruntime merges the
 * same way); non-finite values are not counted. The methods:
 *   minmax      [min, max] (onnxruntime's default): every value representable, outliers stretch the scale;
 *   percentile  the central p% of the values (one-sided data: [min, p-th percentile]);
 *   entropy     TensorRT's KL-divergence threshold: for each candidate t, the distribution clipped to
 *               [0, t] (|x| folded for two-sided data) against its quantisation to the levels the
 *               activation type has on that side (256 for one-sided u8, 128 per side otherwise), both
 *               smoothed; the t of least divergence wins.
 * Every range is clipped to [min, max] seen.
 *
 * The report (--quantize-report) makes a third copy, annotates it, runs quantize_static on it and adds as
 * outputs the dequantised value of every quantize it inserted at an observation point, so that the rest
 * of the pipeline (fold_qdq's integer ops included) computes them as the int8 model does; then the probe
 * and that copy run side by side on every sample, and each tap and model output is compared with the
 * probe's value of the same point: SNR = 10 log10(sum ref^2 / sum (ref - int8)^2) and the largest error.
 */
#include "cli.h"
#include "codegen.h"
#include "flowrt.h"
#include "passes.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define FC_CALIB_BINS 2048

typedef struct Stats {
  double min, max;           /* of the finite values seen; min > max while none was */
  double T;                  /* histogram range [-T, T]; 0 while only zeros were seen */
  double zeros;              /* values counted while T == 0 (all exactly 0) */
  double bins[FC_CALIB_BINS];
  int64_t nonfinite;
} Stats;

typedef struct Point {
  int op_ordinal;   /* -1: graph input */
  int index;        /* result index, or input index */
  FcOpKind kind;    /* of the op (checked when annotating another copy) */
  int output;       /* probe output that returns it (-1 for a graph input) */
  double lo, hi;    /* the chosen range */
  Stats *st;
} Point;

struct FcCalib {
  FcCalibOptions o;
  FcCalibData *data;
  FcModule *probe;
  FcJit *jit;
  const FrtModel *model;
  FrtPool *pool;
  void **in, **out, *ws;   /* buffers of the probe */
  int n_points;
  Point *points;
  int runs;
  int n_model_outputs;     /* the model's own outputs, the probe's first */
};

const char *fc_calib_method_name(FcCalibMethod m) {
  switch (m) {
  case FC_CALIB_MINMAX: return "minmax";
  case FC_CALIB_PERCENTILE: return "percentile";
  case FC_CALIB_ENTROPY: return "entropy";
  }
  return "?";
}

/* ---- statistics ------------------------------------------------------------------------------------ */

static void stats_init(Stats *s) {
  memset(s, 0, sizeof *s);
  s->min = INFINITY;
  s->max = -INFINITY;
}

static int bin_of(double v, double T) {
  double w = 2 * T / FC_CALIB_BINS;
  double b = floor((v + T) / w);
  return b < 0 ? 0 : b >= FC_CALIB_BINS ? FC_CALIB_BINS - 1 : (int)b;
}

/* Widens the histogram to [-T2, T2], moving each bin's count to the bin of its centre. */
static void stats_widen(Stats *s, double T2) {
  double old[FC_CALIB_BINS];
  memcpy(old, s->bins, sizeof old);
  memset(s->bins, 0, sizeof s->bins);
  if (s->T == 0) {
    s->bins[FC_CALIB_BINS / 2] += s->zeros; /* [0, w) holds 0 */
    s->zeros = 0;
  } else {
    double w = 2 * s->T / FC_CALIB_BINS;
    for (int b = 0; b < FC_CALIB_BINS; b++)
      if (old[b] != 0) s->bins[bin_of(-s->T + (b + 0.5) * w, T2)] += old[b];
  }
  s->T = T2;
}

static void stats_add(Stats *s, const float *x, int64_t n) {
  double lo = INFINITY, hi = -INFINITY;
  for (int64_t i = 0; i < n; i++) {
    if (!isfinite(x[i])) {
      s->nonfinite++;
      continue;
    }
    if (x[i] < lo) lo = x[i];
    if (x[i] > hi) hi = x[i];
  }
  if (lo > hi) return; /* nothing finite */
  if (lo < s->min) s->min = lo;
  if (hi > s->max) s->max = hi;
  double a = fmax(fabs(lo), fabs(hi));
  if (a > s->T) stats_widen(s, a);
  if (s->T == 0) {
    for (int64_t i = 0; i < n; i++) s->zeros += x[i] == 0;
    return;
  }
  for (int64_t i = 0; i < n; i++)
    if (isfinite(x[i])) s->bins[bin_of(x[i], s->T)] += 1;
}

/* onnxruntime's smooth_distribution: moves eps of mass onto empty bins so that KL is finite. False when p
 * has no mass or too little to give. */
static bool smooth(double *p, int n) {
  int zeros = 0;
  for (int i = 0; i < n; i++) zeros += p[i] == 0;
  int nonzeros = n - zeros;
  if (nonzeros == 0) return false;
  const double eps = 1e-4;
  double eps1 = eps * zeros / nonzeros;
  if (eps1 >= 1.0) return false;
  for (int i = 0; i < n; i++) p[i] = p[i] == 0 ? eps : p[i] - eps1;
  return true;
}

static double kl_divergence(const double *p, const double *q, int n) {
  double sp = 0, sq = 0, kl = 0;
  for (int i = 0; i < n; i++) {
    sp += p[i];
    sq += q[i];
  }
  for (int i = 0; i < n; i++)
    if (p[i] > 0) kl += p[i] / sp * log((p[i] / sp) / (q[i] / sq));
  return kl;
}

/* TensorRT's threshold on a one-sided histogram h[0..n) of bin width w: the t = i * w (levels <= i <= n)
 * whose clipped distribution is closest, in KL divergence, to its quantisation into `levels` bins. */
static double entropy_threshold(const double *h, int n, double w, int levels) {
  if (n <= levels) return n * w;
  double *p = malloc((size_t)n * sizeof *p), *q = malloc((size_t)n * sizeof *q);
  if (!p || !q) fc_die(__FILE__, __LINE__, "out of memory");
  double best_kl = INFINITY, best = n * w;
  double outside = 0;
  for (int i = 0; i < n; i++) outside += h[i];
  for (int i = 0; i < levels; i++) outside -= h[i];
  for (int i = levels; i <= n; i++) {
    if (i > levels) outside -= h[i - 1];
    memcpy(p, h, (size_t)i * sizeof *p);
    p[i - 1] += outside > 0 ? outside : 0;
    int merged = i / levels;
    for (int j = 0; j < levels; j++) {
      int start = j * merged, end = j == levels - 1 ? i : start + merged;
      double total = 0;
      int nonzero = 0;
      for (int b = start; b < end; b++) {
        total += h[b];
        nonzero += p[b] != 0;
      }
      for (int b = start; b < end; b++) q[b] = p[b] != 0 && nonzero ? total / nonzero : 0;
    }
    if (!smooth(p, i) || !smooth(q, i)) continue;
    double kl = kl_divergence(p, q, i);
    if (kl < best_kl) {
      best_kl = kl;
      best = i * w;
    }
  }
  free(p);
  free(q);
  return best;
}

/* The value below which a fraction `f` of the histogram's mass lies (a bin edge). */
static double quantile(const Stats *s, double total, double f, bool upper_edge) {
  double w = 2 * s->T / FC_CALIB_BINS, acc = 0;
  for (int b = 0; b < FC_CALIB_BINS; b++) {
    acc += s->bins[b];
    if (acc >= f * total && acc > 0) return -s->T + (b + (upper_edge ? 1 : 0)) * w;
  }
  return s->T;
}

static void choose_range(const FcCalibOptions *o, const Stats *s, double *lo, double *hi) {
  if (s->min > s->max) { /* nothing finite was seen */
    *lo = *hi = 0;
    return;
  }
  *lo = s->min;
  *hi = s->max;
  if (o->method == FC_CALIB_MINMAX || s->T == 0) return;
  double total = 0;
  for (int b = 0; b < FC_CALIB_BINS; b++) total += s->bins[b];
  bool one_sided = s->min >= 0;
  if (o->method == FC_CALIB_PERCENTILE) {
    double keep = o->percentile / 100;
    if (one_sided) {
      *hi = quantile(s, total, keep, true);
    } else {
      *lo = quantile(s, total, (1 - keep) / 2, false);
      *hi = quantile(s, total, 1 - (1 - keep) / 2, true);
    }
  } else {
    int half = FC_CALIB_BINS / 2;
    double h[FC_CALIB_BINS / 2];
    bool asym = !o->quant || o->quant->activations == FC_QACT_ASYM_U8;
    for (int k = 0; k < half; k++) h[k] = s->bins[half + k] + (one_sided ? 0 : s->bins[half - 1 - k]);
    int levels = one_sided && asym ? 256 : 128;
    double t = entropy_threshold(h, half, 2 * s->T / FC_CALIB_BINS, levels);
    *hi = t;
    if (!one_sided) *lo = -t;
  }
  if (*lo < s->min) *lo = s->min;
  if (*hi > s->max) *hi = s->max;
  if (*lo > *hi) *lo = *hi;
}

/* ---- observation points ---------------------------------------------------------------------------- */

static bool observed_op(const FcOp *op) {
  if ((op->kind != FC_OP_CONV && op->kind != FC_OP_MATMUL) || op->n_operands < 2) return false;
  const FcValue *x = op->operands[0].value, *w = op->operands[1].value;
  return x->type.dtype == FC_DT_F32 && !x->type.quant && w->type.dtype == FC_DT_F32 && !w->type.quant &&
         fc_value_const(w) != NULL;
}

static int op_ordinal(const FcGraph *g, const FcOp *target) {
  int k = 0;
  fc_graph_for_each_op(g, op) {
    if (op == target) return k;
    k++;
  }
  return -1;
}

static void add_point(FcCalib *c, int ordinal, int index, FcOpKind kind) {
  for (int i = 0; i < c->n_points; i++)
    if (c->points[i].op_ordinal == ordinal && c->points[i].index == index) return;
  Point *np = realloc(c->points, (size_t)(c->n_points + 1) * sizeof *np);
  if (!np) fc_die(__FILE__, __LINE__, "out of memory");
  c->points = np;
  c->points[c->n_points++] = (Point){.op_ordinal = ordinal, .index = index, .kind = kind, .output = -1};
}

static void find_points(FcCalib *c, FcGraph *g) {
  fc_graph_for_each_op(g, op) {
    if (!observed_op(op)) continue;
    const FcValue *x = op->operands[0].value;
    if (x->def) add_point(c, op_ordinal(g, x->def), x->index, x->def->kind);
    else add_point(c, -1, x->index, FC_OP_COUNT);
    add_point(c, op_ordinal(g, op), 0, op->kind);
  }
}

/* The value at point p in graph g (NULL when g differs from the graph the point was found in). */
static FcValue *point_value(FcGraph *g, const Point *p) {
  if (p->op_ordinal < 0) return p->index < g->n_inputs ? g->inputs[p->index] : NULL;
  int k = 0;
  fc_graph_for_each_op(g, op) {
    if (k++ != p->op_ordinal) continue;
    if (op->kind != p->kind || p->index >= op->n_results) return NULL;
    FcValue *v = &op->results[p->index];
    return v->type.dtype == FC_DT_F32 && !v->type.quant ? v : NULL;
  }
  return NULL;
}

/* Makes every non-input point an output of the probe (a value returned already is not added twice). */
static FcStatus add_outputs(FcCalib *c, FcGraph *g, FcDiag *diag) {
  FcOp *ret = fc_graph_return(g);
  int n_old = ret->n_operands, n = n_old;
  FcValue **vals = calloc((size_t)(n_old + c->n_points), sizeof *vals);
  const char **names = calloc((size_t)(n_old + c->n_points), sizeof *names);
  if (!vals || !names) fc_die(__FILE__, __LINE__, "out of memory");
  for (int i = 0; i < n_old; i++) {
    vals[i] = ret->operands[i].value;
    names[i] = fc_graph_output_name(g, i);
  }
  FcStatus st = FC_OK;
  for (int p = 0; p < c->n_points; p++) {
    FcValue *v = point_value(g, &c->points[p]);
    if (!v) {
      st = fc_error(diag, FC_ERR_INTERNAL, "calibration: observation point %d is not an f32 value", p);
      break;
    }
    if (!v->def) continue;
    int k = 0;
    while (k < n && vals[k] != v) k++;
    if (k == n) {
      vals[n] = v;
      names[n++] = fc_arena_printf(&g->module->arena, "flowc.calib.%d", p);
    }
    c->points[p].output = k;
  }
  c->n_model_outputs = n_old;
  if (st == FC_OK) {
    fc_op_erase(ret);
    fc_graph_set_outputs(g, vals, names, n);
  }
  free(vals);
  free(names);
  return st;
}

/* ---- running the probe ------------------------------------------------------------------------------ */

static void *alloc_buffer(size_t n) {
  size_t size = (n + 63) / 64 * 64;
  void *p = aligned_alloc(64, size ? size : 64);
  if (!p) fc_die(__FILE__, __LINE__, "out of memory");
  memset(p, 0, size ? size : 64);
  return p;
}

static size_t desc_bytes(const FrtTensorDesc *d) {
  size_t n = frt_dtype_size(d->dtype);
  for (int i = 0; i < d->rank; i++) n = fc_size_mul_or_die(n, (size_t)d->dims[i]);
  return n;
}

static size_t desc_numel(const FrtTensorDesc *d) {
  size_t n = 1;
  for (int i = 0; i < d->rank; i++) n = fc_size_mul_or_die(n, (size_t)d->dims[i]);
  return n;
}

/* Compiles module m for this CPU with the passes `passes` and allocates its buffers. */
FcStatus fc_calib_jit(FcModule *m, const FcCalibOptions *o, const char *passes, FcJit **jit, void ***in, void ***out,
                      void **ws, FcDiag *diag) {
  FcPipelineOptions po;
  fc_pipeline_options_default(&po);
  po.opt_level = o->opt_level;
  po.passes = passes ? passes : "";
  po.quant = o->quant;
  FcCodegenOptions co = {.cpu = "native", .opt_level = o->opt_level};
  FcStatus st = fc_compile_jit(m, &po, &co, jit, diag);
  if (st != FC_OK) return st;
  const FrtModel *model = fc_jit_model(*jit);
  *in = calloc((size_t)model->n_inputs + 1, sizeof **in);
  *out = calloc((size_t)model->n_outputs + 1, sizeof **out);
  if (!*in || !*out) fc_die(__FILE__, __LINE__, "out of memory");
  for (int i = 0; i < model->n_inputs; i++) (*in)[i] = alloc_buffer(desc_bytes(&model->inputs[i]));
  for (int i = 0; i < model->n_outputs; i++) (*out)[i] = alloc_buffer(desc_bytes(&model->outputs[i]));
  *ws = alloc_buffer(frt_model_workspace_size(model));
  return FC_OK;
}

void fc_calib_buffers_free(const FrtModel *model, void **in, void **out, void *ws) {
  for (int i = 0; in && model && i < model->n_inputs; i++) free(in[i]);
  for (int i = 0; out && model && i < model->n_outputs; i++) free(out[i]);
  free(in);
  free(out);
  free(ws);
}

FcStatus fc_calib_run_model(const FrtModel *model, void *const *in, void *const *out, void *ws, FrtPool *pool,
                            FcDiag *diag) {
  FrtError err = {0};
  if (frt_model_run(model, (const void *const *)in, out, ws, pool, &err) != FRT_OK)
    return fc_error(diag, FC_ERR_INPUT, "calibration run: %s", err.msg);
  return FC_OK;
}

FcStatus fc_calib_collect(const FcCalibOptions *o, FcCalibLoadFn load, void *ctx, FcCalib **out, FcDiag *diag) {
  *out = NULL;
  FcCalib *c = calloc(1, sizeof *c);
  if (!c) fc_die(__FILE__, __LINE__, "out of memory");
  c->o = *o;
  FcStatus st = load(ctx, &c->probe, diag);
  if (st == FC_OK) st = fc_calib_data_open(o->dir, c->probe->graph, o->max_file_bytes, &c->data, diag);
  if (st == FC_OK) {
    find_points(c, c->probe->graph);
    if (c->n_points == 0)
      st = fc_error(diag, FC_ERR_UNSUPPORTED, "nothing to quantise: the model has no conv or matmul by constant f32 weights");
  }
  if (st == FC_OK) st = add_outputs(c, c->probe->graph, diag);
  if (st == FC_OK) st = fc_calib_jit(c->probe, o, o->rest_passes, &c->jit, &c->in, &c->out, &c->ws, diag);
  if (st == FC_OK) {
    c->model = fc_jit_model(c->jit);
    FrtError err = {0};
    c->pool = frt_pool_create(o->threads, &err);
    if (!c->pool) st = fc_error(diag, FC_ERR_INTERNAL, "calibration: %s", err.msg);
    if (c->model->n_inputs != c->probe->graph->n_inputs)
      st = fc_error(diag, FC_ERR_INTERNAL, "calibration: the compiled probe has %d inputs, the graph %d",
                    c->model->n_inputs, c->probe->graph->n_inputs);
  }
  for (int p = 0; st == FC_OK && p < c->n_points; p++) {
    c->points[p].st = malloc(sizeof(Stats));
    if (!c->points[p].st) fc_die(__FILE__, __LINE__, "out of memory");
    stats_init(c->points[p].st);
  }
  int n = st == FC_OK ? fc_calib_data_count(c->data) : 0;
  for (int k = 0; st == FC_OK && k < n; k++) {
    st = fc_calib_data_fill(c->data, k, c->in, diag);
    if (st == FC_OK) st = fc_calib_run_model(c->model, c->in, c->out, c->ws, c->pool, diag);
    for (int p = 0; st == FC_OK && p < c->n_points; p++) {
      const Point *pt = &c->points[p];
      const FrtTensorDesc *d = pt->op_ordinal < 0 ? &c->model->inputs[pt->index] : &c->model->outputs[pt->output];
      const void *buf = pt->op_ordinal < 0 ? c->in[pt->index] : c->out[pt->output];
      FC_ASSERT(d->dtype == FRT_F32);
      stats_add(pt->st, buf, (int64_t)desc_numel(d));
    }
  }
  c->runs = n;
  for (int p = 0; st == FC_OK && p < c->n_points; p++) choose_range(o, c->points[p].st, &c->points[p].lo, &c->points[p].hi);
  if (st != FC_OK) {
    fc_calib_free(c);
    return st;
  }
  *out = c;
  return FC_OK;
}

FcStatus fc_calib_annotate(const FcCalib *c, FcModule *m, FcDiag *diag) {
  FcGraph *g = m->graph;
  for (int p = 0; p < c->n_points; p++) {
    const Point *pt = &c->points[p];
    FcValue *v = point_value(g, pt);
    if (!v)
      return fc_error(diag, FC_ERR_INTERNAL, "calibration: observation point %d is not in the module being built", p);
    double r[2] = {pt->lo, pt->hi};
    FcAnnotValue av = {.kind = FC_AV_DENSE, .dtype = FC_DT_F64, .floats = {r, 2}};
    if (!v->def) fc_input_set_annot(g, v, "flow.calib_range", &av);
    else if (v->index == 0) fc_op_set_annot(v->def, "flow.calib_range", &av);
  }
  return FC_OK;
}

int fc_calib_runs(const FcCalib *c) { return c->runs; }

void fc_calib_free(FcCalib *c) {
  if (!c) return;
  fc_calib_buffers_free(c->model, c->in, c->out, c->ws);
  if (c->pool) frt_pool_destroy(c->pool);
  fc_jit_destroy(c->jit);
  fc_calib_data_free(c->data); /* before the probe, whose graph it points at */
  fc_module_destroy(c->probe);
  for (int p = 0; p < c->n_points; p++) free(c->points[p].st);
  free(c->points);
  free(c);
}

/* ---- --quantize-report ------------------------------------------------------------------------------- */

typedef struct Row {
  char label[160];
  const Point *pt;       /* NULL: a model output */
  int ref_output;        /* model output index (pt NULL) */
  int q_output;          /* output of the quantised copy */
  double scale;          /* of the activation (0: a model output) */
  int64_t zero_point;
  double ref2, err2, max_err;
} Row;

static void point_label(const FcValue *v, char *buf, size_t cap) {
  if (!v->def) snprintf(buf, cap, "input '%s'", v->name ? v->name : "?");
  else snprintf(buf, cap, "node '%s' (%s)", fc_op_name(v->def), fc_op_info(v->def->kind)->name);
}

/* The quantize op that quantize_static put on v, or NULL. */
static FcOp *quantize_user(const FcValue *v) {
  for (const FcUse *u = v->first_use; u; u = u->next_use)
    if (u->user->kind == FC_OP_QUANTIZE) return u->user;
  return NULL;
}

/* The matmuls quantize_static left to dynamic quantisation (no calibrated range: loop bodies), named on one
 * line of the report: their activations are quantised per run, so they have no row of their own. */
typedef struct DynamicList {
  char *text;
  size_t len;
  int n;
} DynamicList;

static FcStatus list_dynamic(FcGraph *g, void *ctx) {
  DynamicList *d = ctx;
  fc_graph_for_each_op(g, op) {
    if (op->kind != FC_OP_MATMUL || op->n_operands < 2) continue;
    const FcType *a = &op->operands[0].value->type, *b = &op->operands[1].value->type;
    if (a->quant || b->quant || a->dtype != FC_DT_U8 || b->dtype != FC_DT_I8) continue;
    const char *name = fc_op_name(op);
    size_t add = strlen(name) + 12;
    char *t = realloc(d->text, d->len + add + 1);
    if (!t) fc_die(__FILE__, __LINE__, "out of memory");
    d->text = t;
    d->len += (size_t)snprintf(t + d->len, add + 1, "%snode '%s'", d->n++ ? ", " : "", name);
  }
  return FC_OK;
}

static void print_report(FILE *out, const FcCalib *c, const Row *rows, int n, const DynamicList *dynamic) {
  const FcQuantOptions *q = c->o.quant;
  /* The ranges follow the CPU whose integer dot quantize_static obeyed (a multiversioned artefact's most
   * portable variant), not necessarily the one this report ran on: name it and what it reduced. */
  const FcTarget *t = q && q->int8_target ? q->int8_target : c->o.target;
  bool reduce_acts;
  int weight_qmax;
  fc_quant_reduced_ranges(q, t, &reduce_acts, &weight_qmax);
  bool reduce_w = weight_qmax < 127, saturates = reduce_acts || reduce_w;
  bool sym = q && q->activations == FC_QACT_SYM_I8;
  fprintf(out, "quantisation report: %d run%s of %s, %s ranges, activations %s%s, weights i8 %s%s, as quantised for %s%s\n",
          c->runs, c->runs == 1 ? "" : "s", c->o.dir, fc_calib_method_name(c->o.method),
          sym ? "i8 symmetric" : "u8 asymmetric", reduce_acts ? " (7-bit)" : "",
          q && q->per_tensor_weights ? "per tensor" : "per channel", reduce_w ? " within +-64" : "",
          t && t->cpu ? t->cpu : "this CPU", saturates ? " (no VNNI: vpmaddubsw could saturate)" : "");
  int w = 6;
  for (int i = 0; i < n; i++)
    if ((int)strlen(rows[i].label) > w) w = (int)strlen(rows[i].label);
  fprintf(out, "  %-*s  %-25s %-12s %5s %8s %11s\n", w, "tensor", "range", "scale", "zero", "SNR dB", "max error");
  for (int i = 0; i < n; i++) {
    const Row *r = &rows[i];
    char range[64] = "-", scale[32] = "-", zp[16] = "-", snr[16];
    if (r->pt) {
      snprintf(range, sizeof range, "[%.6g, %.6g]", r->pt->lo, r->pt->hi);
      snprintf(scale, sizeof scale, "%.6g", r->scale);
      snprintf(zp, sizeof zp, "%lld", (long long)r->zero_point);
    }
    if (r->err2 == 0) snprintf(snr, sizeof snr, "exact");
    else snprintf(snr, sizeof snr, "%.1f", r->ref2 > 0 ? 10 * log10(r->ref2 / r->err2) : -INFINITY);
    fprintf(out, "  %-*s  %-25s %-12s %5s %8s %11.4g\n", w, r->label, range, scale, zp, snr, r->max_err);
  }
  if (dynamic->n)
    fprintf(out, "  quantised per run (no calibrated range: loop bodies), %d matmul%s: %s\n", dynamic->n,
            dynamic->n == 1 ? "" : "s", dynamic->text);
}

static void compare(Row *r, const float *ref, const float *got, size_t n) {
  for (size_t i = 0; i < n; i++) {
    double e = (double)got[i] - (double)ref[i];
    if (!isfinite(e)) e = INFINITY;
    r->ref2 += (double)ref[i] * ref[i];
    r->err2 += e * e;
    if (fabs(e) > r->max_err) r->max_err = fabs(e);
  }
}

/* The quantised copy: loaded, annotated, quantize_static, taps, and rows describing them; *dynamic lists the
 * matmuls quantised per run. */
static FcStatus build_quantised(FcCalib *c, FcModule *q, Row **rows_out, int *n_rows, DynamicList *dynamic,
                                FcDiag *diag) {
  FcGraph *g = q->graph;
  FcStatus st = fc_calib_annotate(c, q, diag);
  if (st != FC_OK) return st;
  FcValue **vals = calloc((size_t)c->n_points + 1, sizeof *vals);
  Row *rows = calloc((size_t)(c->n_points + fc_graph_num_outputs(g)) + 1, sizeof *rows);
  if (!vals || !rows) fc_die(__FILE__, __LINE__, "out of memory");
  for (int p = 0; p < c->n_points; p++) vals[p] = point_value(g, &c->points[p]);
  FcCodegenOptions co = {.cpu = "native", .opt_level = c->o.opt_level};
  FcTarget *target = NULL;
  FcPipelineOptions po;
  fc_pipeline_options_default(&po);
  po.opt_level = c->o.opt_level;
  po.passes = "quantize_static";
  po.quant = c->o.quant;
  st = c->o.target ? FC_OK : fc_target_resolve(&co, &target, diag);
  po.target = c->o.target ? c->o.target : target;
  if (st == FC_OK) st = fc_pipeline_run(q, &po, diag);
  fc_target_free(target);
  if (st == FC_OK) st = fc_graph_walk(g, list_dynamic, dynamic);
  int n = 0, n_out = fc_graph_num_outputs(g);
  FcValue **outs = calloc((size_t)(n_out + c->n_points) + 1, sizeof *outs);
  const char **names = calloc((size_t)(n_out + c->n_points) + 1, sizeof *names);
  if (!outs || !names) fc_die(__FILE__, __LINE__, "out of memory");
  for (int i = 0; i < n_out; i++) {
    outs[i] = fc_graph_output(g, i);
    names[i] = fc_graph_output_name(g, i);
  }
  int k = n_out;
  for (int p = 0; st == FC_OK && p < c->n_points; p++) {
    FcOp *qop = vals[p] ? quantize_user(vals[p]) : NULL;
    if (!qop) continue;
    FcBuilder b;
    fc_builder_init(&b, g, diag);
    b.before = qop->next;
    b.loc = qop->loc;
    FcValue *tap = fc_b_dequantize(&b, &qop->results[0]);
    if ((st = fc_b_status(&b)) != FC_OK) break;
    Row *r = &rows[n++];
    point_label(vals[p], r->label, sizeof r->label);
    r->pt = &c->points[p];
    r->q_output = k;
    r->scale = qop->results[0].type.quant->scales[0];
    r->zero_point = qop->results[0].type.quant->zero_points[0];
    outs[k] = tap;
    names[k++] = fc_arena_printf(&q->arena, "flowc.report.%d", p);
  }
  for (int i = 0; st == FC_OK && i < n_out; i++) {
    if (outs[i]->type.dtype != FC_DT_F32 || outs[i]->type.quant) continue;
    Row *r = &rows[n++];
    snprintf(r->label, sizeof r->label, "output '%s'", names[i] ? names[i] : "?");
    r->ref_output = i;
    r->q_output = i;
  }
  if (st == FC_OK) {
    fc_op_erase(fc_graph_return(g));
    fc_graph_set_outputs(g, outs, names, k);
  }
  free(outs);
  free(names);
  free(vals);
  if (st != FC_OK) {
    free(rows);
    return st;
  }
  *rows_out = rows;
  *n_rows = n;
  return FC_OK;
}

FcStatus fc_calib_report(FcCalib *c, FcCalibLoadFn load, void *ctx, FILE *out, FcDiag *diag) {
  FcModule *q = NULL;
  Row *rows = NULL;
  int n_rows = 0;
  DynamicList dynamic = {0};
  FcJit *jit = NULL;
  void **in = NULL, **qout = NULL, *ws = NULL;
  FcStatus st = load(ctx, &q, diag);
  if (st == FC_OK) st = build_quantised(c, q, &rows, &n_rows, &dynamic, diag);
  /* The rest of the quantised pipeline: what follows quantize_static. */
  const char *rest = strchr(c->o.quant_passes, ',');
  if (st == FC_OK) st = fc_calib_jit(q, &c->o, rest ? rest + 1 : "", &jit, &in, &qout, &ws, diag);
  const FrtModel *qm = jit ? fc_jit_model(jit) : NULL;
  if (st == FC_OK && qm->n_inputs != c->model->n_inputs)
    st = fc_error(diag, FC_ERR_INTERNAL, "calibration report: the quantised model has other inputs");
  int n = st == FC_OK ? fc_calib_data_count(c->data) : 0;
  for (int k = 0; st == FC_OK && k < n; k++) {
    st = fc_calib_data_fill(c->data, k, c->in, diag);
    for (int i = 0; st == FC_OK && i < qm->n_inputs; i++) memcpy(in[i], c->in[i], desc_bytes(&qm->inputs[i]));
    if (st == FC_OK) st = fc_calib_run_model(c->model, c->in, c->out, c->ws, c->pool, diag);
    if (st == FC_OK) st = fc_calib_run_model(qm, in, qout, ws, c->pool, diag);
    for (int r = 0; st == FC_OK && r < n_rows; r++) {
      Row *row = &rows[r];
      const Point *pt = row->pt;
      const FrtTensorDesc *d = !pt ? &c->model->outputs[row->ref_output]
                               : pt->op_ordinal < 0 ? &c->model->inputs[pt->index] : &c->model->outputs[pt->output];
      const void *ref = !pt ? c->out[row->ref_output] : pt->op_ordinal < 0 ? c->in[pt->index] : c->out[pt->output];
      FC_ASSERT(d->dtype == FRT_F32 && qm->outputs[row->q_output].dtype == FRT_F32 &&
                desc_numel(d) == desc_numel(&qm->outputs[row->q_output]));
      compare(row, ref, qout[row->q_output], desc_numel(d));
    }
  }
  if (st == FC_OK) {
    print_report(out, c, rows, n_rows, &dynamic);
    if (fflush(out) != 0 || ferror(out)) st = fc_error(diag, FC_ERR_IO, "cannot write the quantisation report");
  }
  fc_calib_buffers_free(qm, in, qout, ws);
  fc_jit_destroy(jit);
  fc_module_destroy(q);
  free(rows);
  free(dynamic.text);
  return st;
}
