/* kernel_conv_pointwise.c — a 1×1 convolution over a small image (MobileNet's 7×7 layers) as the transposed
 * product Y[b]ᵀ (OH·OW × M) = X[b]ᵀ (OH·OW × C) · Wᵀ (C × M).
 *
 * The plain GEMM orientation (kernel_conv_gemm.c) puts the pixels in the vector lanes: 49 pixels fill three
 * 16-wide panels and one with a single column, which costs half a tile of FMAs for 1/49 of the result, per
 * row of every output channel. Transposed, the pixels are the microkernel's rows (49 = 10 rows of 5, from
 * fc_gemm_arch_for_rows) and the output channels its columns (multiples of 16 in these networks): almost
 * nothing is padding. This is the layout NCHWc kernels use, applied only where it pays: the choice compares
 * the padded tile area of both orientations (fc_conv_pointwise_small_applies).
 *
 * Xᵀ is the GEMM's A, packed at run time straight from the NCHW input (row k of X is column k of Xᵀ, so a
 * panel's K-row is one contiguous run of pixels: the row-major B packer serves, fc_gemm_pack_b_rowmajor).
 * A task packs its batch item's Xᵀ once, for all of C, and keeps it for its following column blocks (one
 * chunk per thread, as kernel_matmul.c does for a run-time A). The weights are packed as B at compile time.
 * Each column block is computed into a per-task tile Cᵀ (pixels × block channels), then written to Y
 * transposed, channel by channel, and the bias and fused epilogue applied to each channel's row of Y.
 */
#include "cg_epilogue.h"
#include "cg_gemm.h"

enum { MAX_PIXELS = 128 };  /* Xᵀ of a batch item is packed whole: at most this many rows */

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

static LLVMValueRef fptr(FcKernel *k, LLVMValueRef base, LLVMValueRef off) {
  return LLVMBuildGEP2(k->b, LLVMFloatTypeInContext(k->ctx), base, &off, 1, "");
}

static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

bool fc_conv_pointwise_small_applies(const FcKernel *k) {
  const FcOp *op = k->op;
  if (op->kind != FC_OP_CONV || op->n_operands < 2 || op->n_results != 1) return false;
  const FcType *xt = &op->operands[0].value->type, *wt = &op->operands[1].value->type, *yt = &op->results[0].type;
  if (xt->dtype != FC_DT_F32 || xt->rank != 4 || wt->rank != 4 || fc_op_attr_int(op, FC_ATTR_GROUP, 1) != 1) return false;
  const FcTensor *cw = fc_value_const(op->operands[1].value);
  if (!cw || !cw->data) return false;
  const int64_t *s, *d, *p;
  if (fc_op_attr_ints(op, FC_ATTR_STRIDES, &s) != 2 || fc_op_attr_ints(op, FC_ATTR_DILATIONS, &d) != 2 ||
      fc_op_attr_ints(op, FC_ATTR_PADS, &p) != 4)
    return false;
  if (wt->dims[2] != 1 || wt->dims[3] != 1 || s[0] != 1 || s[1] != 1 || p[0] || p[1] || p[2] || p[3]) return false;
  int64_t pixels = yt->dims[2] * yt->dims[3], M = wt->dims[0], C = xt->dims[1];
  if (pixels < 1 || pixels > MAX_PIXELS || xt->dims[0] < 1 || C < 1 || M < 1) return false;
  /* Padded tile area of each orientation: pixels in 16-lane panels × M, against pixels in rows of the
   * tile fc_gemm_arch_for_rows picks × M in 16-lane panels; the transposed one must save a tenth. */
  FcGemmArch g;
  fc_gemm_arch_for_rows((FcKernel *)k, pixels, false, &g);
  double plain = (double)round_up(pixels, g.nr) * (double)M;
  double transposed = (double)round_up(pixels, g.mr) * (double)round_up(M, g.nr);
  return transposed < 0.9 * plain;
}

FcStatus fc_conv_pointwise_small(FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *xt = &op->operands[0].value->type, *wt = &op->operands[1].value->type, *yt = &op->results[0].type;
  int64_t Nb = xt->dims[0], C = xt->dims[1], M = wt->dims[0], P = yt->dims[2] * yt->dims[3];
  FcGemmArch g;
  fc_gemm_arch_for_rows(k, P, false, &g);
  int64_t mc, nc;
  fc_gemm_choose_blocks(&g, Nb, P, M, 8, true, 1, &mc, &nc);
  int64_t nblocks = (M + nc - 1) / nc;
  FC_ASSERT(mc >= P); /* P <= MAX_PIXELS: one row block */
  fc_kernel_set_outer(k, Nb * nblocks, 2.0 * (double)P * (double)nc * (double)C);
  FcCgEpilogue *e = NULL;
  FcStatus st = fc_cg_epilogue_init(k, 2, &e);
  if (st != FC_OK) return st;

  const FcTensor *cw = fc_value_const(op->operands[1].value);
  FcGemmBlock t = {.g = &g, .M = P, .N = M, .K = C, .mc = round_up(P, g.mr), .nc = nc, .ldc = nc};
  t.b.packed = fc_kernel_substitute_operand(k, 1, fc_gemm_const_packed(k, &g, false, cw->data, 1, M * C, C, M, 1, C));
  int64_t a_floats = round_up(P, g.mr) * C, c_floats = round_up(P, g.mr) * round_up(nc, g.nr);
  LLVMValueRef scr = fc_kernel_scratch(k, (a_floats + c_floats) * 4 + 64);
  LLVMValueRef cached = fc_kernel_cached_key(k); /* the batch item whose Xᵀ the scratch holds */

  LLVMBuilderRef b = k->b;
  FcLoop lo;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "blk");
  LLVMValueRef nbk = LLVMBuildSRem(b, it, c64(k, nblocks), "");
  LLVMValueRef bi = LLVMBuildSDiv(b, it, c64(k, nblocks), "");
  LLVMValueRef xb = fptr(k, k->in[0], LLVMBuildMul(b, bi, c64(k, C * P), ""));
  /* Xᵀ of this batch item, every panel and all of C, unless this task packed it for its previous block. */
  FcGemmMatrix xm = {.base = xb, .rows = C, .cols = P, .ld = P, .width = g.mr};
  LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntNE, bi, LLVMBuildLoad2(b, fc_cg_i64(k), cached, ""), ""));
  /* a K-row of a panel of Xᵀ is a run of pixels of one channel: the row-major B packer does it */
  fc_gemm_pack_a_block(k, &g, fc_gemm_pack_b_rowmajor, &xm, scr, c64(k, 0), c64(k, P), C);
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
