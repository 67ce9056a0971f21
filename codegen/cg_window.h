/* cg_window.h — the row machinery the vectorised sliding-window kernels share (depthwise convolution,
 * kernel_dwconv.c; pools, kernel_pool.c): an output row is computed vl columns at a time, each tap
 * (kernel column kw) reading one input vector. Positions whose every tap load lies inside the row are
 * "full" (plain vector loads in a loop); the others are edges, emitted straight-line with masked loads
 * whose masked-off lanes read a fill value (0 for convolution, NaN or 0 for pools; bytes, which have no
 * masked load on AVX2, load the vector moved inside the row and shuffle the fill in). Stride 2 loads 2·vl
 * columns and keeps every other one with one shuffle, in the lane order of fc_win_even_lane; larger
 * strides build the vector lane by lane. The blocked-layout kernels (kernel_dwconv_blocked.c,
 * kernel_pool_blocked.c, kernel_conv_blocked.c) share its row-block split, interior range and pool
 * counts.
 */
#ifndef FLOWC_CG_WINDOW_H
#define FLOWC_CG_WINDOW_H

#include "codegen.h"

#define FC_WIN_MAX_VL 16

/* The horizontal geometry of a window op's rows. */
typedef struct FcWinRow {
  int64_t W, OW;   /* input and output row widths */
  int64_t KW;      /* kernel columns */
  int64_t sw, dw;  /* stride and dilation along the row */
  int64_t pw;      /* padding before the row */
  int vl;          /* lanes per vector (fc_win_lanes) */
} FcWinRow;

/* How a window op's output rows are cut (fc_win_plan). */
typedef struct FcWinPlan {
  int64_t nv;         /* vector positions per output row: ceil(OW / vl) */
  int64_t v_lo, v_hi; /* the full positions [v_lo, v_hi); the rest are edges */
  int64_t rb, nrb;    /* output rows per block, blocks per plane */
} FcWinPlan;

/* The vector positions of r's output rows, and planes cut into blocks of rows until planes × blocks
 * reaches min_tasks (rows per block a multiple of row_multiple when above 1). False when more than
 * max_edges positions are edges (each is emitted straight-line). */
bool fc_win_plan(const FcWinRow *r, int64_t planes, int64_t OH, int64_t max_edges, int64_t min_tasks, int64_t row_multiple,
                 FcWinPlan *p);

/* How evenly `tasks` outer iterations spread over 2 and over 4 threads (the mean of the two; 1 = evenly):
 * each thread's share of the total cost against the busiest thread's, in the pool's schedule (flowrt.h:
 * FRT_CHUNKS_PER_THREAD chunks a thread, each thread's own run first, then stolen ones). cost(ctx, t) is
 * task t's cost. A split whose task count does not divide by the thread count leaves threads idle at the
 * tail: 7 equal tasks keep 2 threads 7/8 busy. */
double fc_win_balance(int64_t tasks, double (*cost)(const void *ctx, int64_t t), const void *ctx);

/* How `planes` independent output planes of OH rows each are cut into row blocks for the thread pool:
 * into blocks until planes × blocks reaches min_tasks (at most OH), smaller still where a block would
 * exceed max_rows rows (0: no limit), rows per block rounded up to a multiple of row_multiple (when
 * above 1). Sets *rb (rows per block) and *nrb (blocks per plane). planes > 0. */
void fc_win_row_blocks(int64_t planes, int64_t OH, int64_t min_tasks, int64_t max_rows, int64_t row_multiple,
                       int64_t *rb, int64_t *nrb);
/* The output columns [*lo, *hi) of a row (OW outputs, stride sw, begin pad pw, dilated kernel span
 * (KW - 1)·dw) whose every tap lies inside an input row of W: ow·sw - pw >= 0 and
 * ow·sw - pw + span <= W - 1; an empty range sits at *lo. */
void fc_win_interior(int64_t W, int64_t OW, int64_t sw, int64_t pw, int64_t span, int64_t *lo, int64_t *hi);
/* Whether some output row of a window op (OH rows, stride sh, begin pad ph, dilated kernel span
 * (KH - 1)·dh over H input rows) has a tap on a padding row above or below the input. */
bool fc_win_reads_pad_rows(int64_t H, int64_t OH, int64_t sh, int64_t ph, int64_t span);

/* f32 lanes per vector for the target, whole 128-bit lanes (the stride-2 shuffle works lane by lane),
 * between 4 and FC_WIN_MAX_VL. */
int fc_win_lanes(const FcKernel *k);
/* The input column read by output column ox through tap kw. */
int64_t fc_win_in_col(const FcWinRow *r, int64_t ox, int64_t kw);
/* The first column and the width of the load tap kw makes for the vector at output column ox0 (stride 2:
 * from an even offset; the tap takes lanes phase, phase + 2, ...). */
void fc_win_load_span(const FcWinRow *r, int64_t ox0, int64_t kw, int64_t *first, int64_t *width, int *phase);
/* Whether vector position v (columns v·vl ..) is full: all its lanes are output columns and every tap's
 * load lies inside [0, W). */
bool fc_win_position_full(const FcWinRow *r, int64_t v);
/* Whether the vl columns from ox0 (any column, not only a multiple of vl) are all output columns whose every
 * tap's load lies inside [0, W). */
bool fc_win_columns_full(const FcWinRow *r, int64_t ox0);
/* The right edge positions of plan p as one full vector ending at the row's end: its first column, which
 * overlaps the full positions before it (their outputs are recomputed identically), or -1 where that vector
 * would read outside the row or not reach back to the edges. Plain loads where the edges would take masked
 * or shifted ones. */
int64_t fc_win_right_tail(const FcWinRow *r, const FcWinPlan *p);
/* Stride 2: lane p of the even pick of a 2·vl-wide load, as shufps takes it within each 128-bit lane. */
int fc_win_even_lane(int vl, int p);
/* The n lanes idx[0..n) of v, as a vector (n > 1) or a scalar (n == 1). */
LLVMValueRef fc_win_shuffle(FcKernel *k, LLVMValueRef v, const int *idx, int n);
/* The input vector of tap (input row pointer rp, column kw) for outputs ox0 .. ox0 + vl: lanes in natural
 * order, or for stride 2 in fc_win_even_lane's order. Full positions pass ox0v (run-time); edges pass NULL
 * and the constant ox0, and lanes whose input lies outside the row read `fill` (a constant whose type is the
 * row's element type: f32, or an 8-bit integer for max_pool). NULL when no lane of the tap reads the row. */
LLVMValueRef fc_win_tap_vector(FcKernel *k, const FcWinRow *r, LLVMValueRef fill, LLVMValueRef rp, LLVMValueRef ox0v,
                               int64_t ox0, int64_t kw);

/* A pool window's taps along one dim at output o (stride s, dilation d, begin pad `pad`, end pad
 * pad_end, input size D): those inside the input, or with include_pad (count_include_pad) those inside
 * the padded input (a ceil-mode window may run past the end padding). The count avg_pool divides by,
 * the same as kernel_nn.c's generic pool. */
int64_t fc_win_tap_count(int64_t o, int64_t K, int64_t s, int64_t d, int64_t pad, int64_t pad_end, int64_t D,
                         bool include_pad);

/* avg_pool's per-output-row tap counts (fc_win_tap_count over the rows), as a constant f32 table of OH
 * entries named `name`. */
LLVMValueRef fc_win_row_count_table(FcKernel *k, int64_t OH, int64_t KH, int64_t sh, int64_t dh, int64_t ph,
                                    int64_t pe_h, int64_t H, bool include_pad, const char *name);

#endif /* FLOWC_CG_WINDOW_H */
