/* kernel_conv_few_pixels.c — a convolution with a small output image (ResNet's and MobileNet's 7×7 layers)
 * as the transposed product Y[b]ᵀ (OH·OW × M) = im2col(X[b])ᵀ (OH·OW × C·KH·KW) · Wᵀ (C·KH·KW × M).
 *
 * The plain GEMM orientation (kernel_conv_gemm.c) puts the pixels in the vector lanes: 49 pixels fill three
 * 16-wide panels and one with a single column, which costs half a tile of FMAs for 1/49 of the result, per
 * row of every output channel; and an im2col panel of 16 pixels wraps across output rows, a lane-by-lane
 * gather. Transposed, the pixels are the microkernel's rows (49 = 10 rows of 5, from
 * fc_gemm_arch_for_rows) and the output channels its columns (multiples of 16 in these networks): almost
 * nothing is padding. This is the layout NCHWc kernels use, applied only where it pays: the choice
 * compares the padded tile area of both orientations (fc_conv_few_pixels_applies).
 *
 * im2col(X)ᵀ is the GEMM's A, packed at run time from the NCHW input: for a 1×1 stride-1 convolution a
 * panel's K-row is one contiguous run of pixels of one channel (the row-major B packer serves,
 * fc_gemm_pack_b_rowmajor); otherwise each K-row (c, ky, kx) of a panel gathers its mr pixels' taps, zeros
 * in the padding. A task packs its batch item's A once, for all of K, and keeps it for its following
 * column blocks (one chunk per thread, as kernel_matmul.c does for a run-time A), so the gathers happen
 * once per thread, where the plain orientation repeats them per block of rows. The weights are packed as
 * B at compile time. Each column block is computed into a per-task tile Cᵀ (pixels × block channels), then
 * written to Y transposed, channel by channel, and the bias and fused epilogue applied to each channel's
 * row of Y.
 */
#include <string.h>

#include "cg_epilogue.h"
#include "cg_gemm.h"

enum { MAX_PIXELS = 128 };  /* A of a batch item is packed whole: at most this many rows */

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

static LLVMValueRef fptr(FcKernel *k, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(k->b, LLVMFloatTypeInContext(k->ctx), base, &off, 1, "");
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* The geometry of im2col(X)ᵀ for the A packer. */
typedef struct Im2colT {
  LLVMValueRef x;                   /* X[b] */
  int64_t H, W, KH, KW, OW, P;
  int64_t sh, sw, dh, dw, pt, pl;
  int mr;
} Im2colT;

static LLVMValueRef vec_i32(FcKernel *k, const int32_t *v, int n) {
  LLVMValueRef e[MAX_PIXELS];
  for (int i = 0; i < n; i++) e[i] = LLVMConstInt(LLVMInt32TypeInContext(k->ctx), (unsigned long long)(int64_t)v[i], 1);
  return LLVMConstVector(e, (unsigned)n);
}

static LLVMValueRef splat_i32(FcKernel *k, LLVMValueRef s, int n) {
  LLVMTypeRef vt = LLVMVectorType(LLVMInt32TypeInContext(k->ctx), (unsigned)n);
  LLVMValueRef v = LLVMBuildInsertElement(k->b, LLVMGetUndef(vt), s, LLVMConstInt(LLVMInt32TypeInContext(k->ctx), 0, 0), "");
  return LLVMBuildShuffleVector(k->b, v, LLVMGetUndef(vt), LLVMConstNull(vt), "");
}

/* Panel of pixels [i0, i0 + mr) for K-rows [k0, k0 + kc): dst[kk·mr + i] = X[c, iy, ix] of pixel i0 + i and
 * K-row k0 + kk = (c, ky, kx), 0 in the padding and past the last pixel. The pixels' window origins are
 * vectors computed once per panel; each K-row is one masked gather of mr lanes. */
static void pack_im2col_t(FcKernel *k, void *user, LLVMValueRef dst, LLVMValueRef i0, LLVMValueRef k0, LLVMValueRef kc) {
  const Im2colT *q = user;
  LLVMBuilderRef b = k->b;
  int n = q->mr;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), f32 = LLVMFloatTypeInContext(k->ctx);
  LLVMTypeRef vi = LLVMVectorType(i32, (unsigned)n), vf = LLVMVectorType(f32, (unsigned)n);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(k->ctx, 0), vp = LLVMVectorType(ptr, (unsigned)n);
  int32_t iota[MAX_PIXELS] = {0}, cst[MAX_PIXELS] = {0};
  for (int i = 0; i < n; i++) iota[i] = i;
  LLVMValueRef pix = LLVMBuildAdd(b, splat_i32(k, LLVMBuildTrunc(b, i0, i32, ""), n), vec_i32(k, iota, n), "");
  for (int i = 0; i < n; i++) cst[i] = (int32_t)q->P;
  LLVMValueRef valid = LLVMBuildICmp(b, LLVMIntSLT, pix, vec_i32(k, cst, n), "");
  for (int i = 0; i < n; i++) cst[i] = (int32_t)q->OW;
  LLVMValueRef oy = LLVMBuildUDiv(b, pix, vec_i32(k, cst, n), ""), ox = LLVMBuildURem(b, pix, vec_i32(k, cst, n), "");
  for (int i = 0; i < n; i++) cst[i] = (int32_t)q->sh;
  LLVMValueRef yb = LLVMBuildMul(b, oy, vec_i32(k, cst, n), "");
  for (int i = 0; i < n; i++) cst[i] = (int32_t)q->sw;
  LLVMValueRef xb = LLVMBuildMul(b, ox, vec_i32(k, cst, n), "");
  FcLoop lk;
  LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), kc, 1, "tk");
  LLVMValueRef kidx = LLVMBuildTrunc(b, LLVMBuildAdd(b, k0, kk, ""), i32, "");
  LLVMValueRef taps = LLVMConstInt(i32, (unsigned long long)(q->KH * q->KW), 0);
  LLVMValueRef c = LLVMBuildUDiv(b, kidx, taps, ""), r = LLVMBuildURem(b, kidx, taps, "");
  LLVMValueRef ky = LLVMBuildUDiv(b, r, LLVMConstInt(i32, (unsigned long long)q->KW, 0), "");
  LLVMValueRef kx = LLVMBuildURem(b, r, LLVMConstInt(i32, (unsigned long long)q->KW, 0), "");
  LLVMValueRef dy = LLVMBuildSub(b, LLVMBuildMul(b, ky, LLVMConstInt(i32, (unsigned long long)q->dh, 0), ""),
                                 LLVMConstInt(i32, (unsigned long long)q->pt, 0), "");
  LLVMValueRef dx = LLVMBuildSub(b, LLVMBuildMul(b, kx, LLVMConstInt(i32, (unsigned long long)q->dw, 0), ""),
                                 LLVMConstInt(i32, (unsigned long long)q->pl, 0), "");
  LLVMValueRef iy = LLVMBuildAdd(b, yb, splat_i32(k, dy, n), ""), ix = LLVMBuildAdd(b, xb, splat_i32(k, dx, n), "");
  for (int i = 0; i < n; i++) cst[i] = (int32_t)q->H;
  LLVMValueRef ok = LLVMBuildAnd(b, valid, LLVMBuildICmp(b, LLVMIntULT, iy, vec_i32(k, cst, n), ""), "");
  for (int i = 0; i < n; i++) cst[i] = (int32_t)q->W;
  ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, ix, vec_i32(k, cst, n), ""), "");
  LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, iy, vec_i32(k, cst, n), ""), ix, "");
  off = LLVMBuildSelect(b, ok, off, LLVMConstNull(vi), "");
  LLVMValueRef plane = fptr(k, q->x, LLVMBuildMul(b, LLVMBuildZExt(b, c, fc_cg_i64(k), ""), c64(k, q->H * q->W), ""));
  LLVMValueRef ptrs = LLVMBuildGEP2(b, f32, plane, &off, 1, "");
  unsigned id = LLVMLookupIntrinsicID("llvm.masked.gather", strlen("llvm.masked.gather"));
  LLVMTypeRef ov[2] = {vf, vp};
  LLVMValueRef args[4] = {ptrs, LLVMConstInt(i32, 4, 0), ok, LLVMConstNull(vf)};
  LLVMValueRef v = LLVMBuildCall2(b, LLVMIntrinsicGetType(k->ctx, id, ov, 2), LLVMGetIntrinsicDeclaration(k->mod, id, ov, 2),
                                  args, 4, "");
  LLVMSetAlignment(LLVMBuildStore(b, v, fptr(k, dst, LLVMBuildMul(b, kk, c64(k, n), ""))), 4);
  fc_cg_loop_end(k, &lk);
}

/* The conv's attributes when it is a 2-D group-1 f32 convolution with constant weights and at most
 * MAX_PIXELS output pixels; whether it is 1×1 stride 1 unpadded (pointwise). */
static bool few_pixels_geometry(const FcKernel *k, const int64_t **s, const int64_t **d, const int64_t **p, bool *pointwise) {
  const FcOp *op = k->op;
  if (op->kind != FC_OP_CONV || op->n_operands < 2 || op->n_results != 1) return false;
  const FcType *xt = &op->operands[0].value->type, *wt = &op->operands[1].value->type, *yt = &op->results[0].type;
  if (xt->dtype != FC_DT_F32 || xt->rank != 4 || wt->rank != 4 || fc_op_attr_int(op, FC_ATTR_GROUP, 1) != 1) return false;
  const FcTensor *cw = fc_value_const(op->operands[1].value);
  if (!cw || !cw->data) return false;
  if (fc_op_attr_ints(op, FC_ATTR_STRIDES, s) != 2 || fc_op_attr_ints(op, FC_ATTR_DILATIONS, d) != 2 ||
      fc_op_attr_ints(op, FC_ATTR_PADS, p) != 4)
    return false;
  int64_t xn, pixels = yt->dims[2] * yt->dims[3];
  /* Lane offsets are i32: an input batch item must stay below 2^31 elements. */
  if (!fc_type_numel(xt, &xn) || xt->dims[0] < 1 || xn / xt->dims[0] >= INT32_MAX) return false;
  if (pixels < 1 || pixels > MAX_PIXELS || xt->dims[1] < 1 || wt->dims[0] < 1) return false;
  const int64_t *pp = *p;
  *pointwise = wt->dims[2] == 1 && wt->dims[3] == 1 && (*s)[0] == 1 && (*s)[1] == 1 && !pp[0] && !pp[1] && !pp[2] && !pp[3];
  return true;
}

bool fc_conv_few_pixels_applies(const FcKernel *k) {
  const int64_t *s, *d, *p;
  bool pointwise;
  if (!few_pixels_geometry(k, &s, &d, &p, &pointwise)) return false;
  const FcType *wt = &k->op->operands[1].value->type, *yt = &k->op->results[0].type;
  int64_t pixels = yt->dims[2] * yt->dims[3], M = wt->dims[0];
  /* Padded tile area of each orientation: pixels in 16-lane panels × M, against pixels in rows of the
   * tile fc_gemm_arch_for_rows picks × M in 16-lane panels; the transposed one must save a tenth. */
  FcGemmArch g;
  fc_gemm_arch_for_rows(k, pixels, false, &g);
  double plain = (double)round_up(pixels, g.nr) * (double)M;
  double transposed = (double)round_up(pixels, g.mr) * (double)round_up(M, g.nr);
  return transposed < 0.9 * plain;
}

FcStatus fc_conv_few_pixels(FcKernel *k) {
  const FcOp *op = k->op;
  const int64_t *s, *d, *p;
  bool pointwise;
  if (!few_pixels_geometry(k, &s, &d, &p, &pointwise))
    return fc_cg_error(k, FC_ERR_INTERNAL, "the few-pixel conv kernel does not apply to this conv");
  const FcType *xt = &op->operands[0].value->type, *wt = &op->operands[1].value->type, *yt = &op->results[0].type;
  int64_t Nb = xt->dims[0], H = xt->dims[2], W = xt->dims[3], M = wt->dims[0], P = yt->dims[2] * yt->dims[3];
  int64_t K = xt->dims[1] * wt->dims[2] * wt->dims[3]; /* C·KH·KW */
  FcGemmArch g;
  fc_gemm_arch_for_rows(k, P, false, &g);
  /* Column blocks only: a task computes every pixel (its row blocks, when the arch's mc is smaller than
   * P, run inside the block as row slices, emit_kblock). */
  int64_t mc_unused, nc;
  fc_gemm_choose_blocks(&g, Nb, P, M, 8, true, 1, &mc_unused, &nc);
  int64_t nblocks = (M + nc - 1) / nc;
  fc_kernel_set_outer(k, Nb * nblocks, 2.0 * (double)P * (double)nc * (double)K);
  FcCgEpilogue *e = NULL;
  FcStatus st = fc_cg_epilogue_init(k, 2, &e);
  if (st != FC_OK) return st;

  const FcTensor *cw = fc_value_const(op->operands[1].value);
  FcGemmBlock t = {.g = &g, .M = P, .N = M, .K = K, .mc = round_up(P, g.mr), .nc = nc, .ldc = nc};
  t.b.packed = fc_kernel_substitute_operand(
      k, 1, fc_gemm_const_packed(k, &g, false, op->operands[1].value, cw->data, 1, M * K, K, M, 1, K));
  int64_t a_floats = round_up(P, g.mr) * K, c_floats = round_up(P, g.mr) * round_up(nc, g.nr);
  LLVMValueRef scr = fc_kernel_scratch(k, (a_floats + c_floats) * 4 + 64);
  LLVMValueRef cached = fc_kernel_cached_key(k); /* the batch item whose A the scratch holds */

  LLVMBuilderRef b = k->b;
  FcLoop lo;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "blk");
  LLVMValueRef nbk, bi = fc_gemm_block_of(k, it, 1, nblocks, NULL, &nbk);
  LLVMValueRef xb = fptr(k, k->in[0], LLVMBuildMul(b, bi, c64(k, xt->dims[1] * H * W), ""));
  /* A of this batch item, every panel and all of K, unless this task packed it for its previous block. */
  FcGemmMatrix xm = {.base = xb, .rows = K, .cols = P, .ld = P, .width = g.mr};
  Im2colT ic = {.x = xb, .H = H, .W = W, .KH = wt->dims[2], .KW = wt->dims[3], .OW = yt->dims[3], .P = P,
                .sh = s[0], .sw = s[1], .dh = d[0], .dw = d[1], .pt = p[0], .pl = p[1], .mr = g.mr};
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntNE, bi, LLVMBuildLoad2(b, fc_cg_i64(k), cached, ""), ""));
  /* 1×1: a K-row of a panel is a run of pixels of one channel, which the row-major B packer copies */
  if (pointwise) fc_gemm_pack_a_block(k, &g, fc_gemm_pack_b_rowmajor, &xm, scr, c64(k, 0), c64(k, P), K);
  else fc_gemm_pack_a_block(k, &g, pack_im2col_t, &ic, scr, c64(k, 0), c64(k, P), K);
  LLVMBuildStore(b, bi, cached);
  fc_cg_if_end(k, cont);

  /* Cᵀ for the block's channels [n0, n0 + nc): column n0 + j at tile column j. */
  LLVMValueRef n0 = LLVMBuildMul(b, nbk, c64(k, nc), "");
  LLVMValueRef tile = fptr(k, scr, c64(k, a_floats));
  t.a.packed = scr;
  t.a.block_local = true;
  t.c = fptr(k, tile, LLVMBuildNeg(b, n0, ""));
  fc_gemm_emit_block(k, &t, c64(k, 0), n0);

  /* Y[b, n0 + j, :] = column j of Cᵀ, then the bias and epilogue over that row of Y. */
  LLVMValueRef n1 = LLVMBuildAdd(b, n0, c64(k, nc), "");
  n1 = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, n1, c64(k, M), ""), n1, c64(k, M), "");
  FcLoop lj, li;
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, n0, n1, 1, "ch");
  LLVMValueRef row = LLVMBuildAdd(b, LLVMBuildMul(b, bi, c64(k, M), ""), j, "");
  LLVMValueRef yrow = LLVMBuildMul(b, row, c64(k, P), "");
  LLVMValueRef jt = LLVMBuildSub(b, j, n0, "");
  LLVMValueRef i = fc_cg_loop_begin(k, &li, c64(k, 0), c64(k, P), 1, "px");
  LLVMValueRef v = fc_cg_load(k, FC_DT_F32, tile, LLVMBuildAdd(b, LLVMBuildMul(b, i, c64(k, nc), ""), jt, ""));
  fc_cg_store(k, FC_DT_F32, k->out[0], LLVMBuildAdd(b, yrow, i, ""), v);
  fc_cg_loop_end(k, &li);
  if (e) fc_cg_epilogue_row(k, e, k->out[0], row, c64(k, 0), c64(k, P));
  fc_cg_loop_end(k, &lj);
  fc_cg_loop_end(k, &lo);
  return FC_OK;
}
