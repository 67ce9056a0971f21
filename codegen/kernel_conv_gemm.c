/* kernel_conv_gemm.c — 1-D and 2-D f32 convolution (group 1) as a packed GEMM: Y[b] (M × OH·OW) = W (M × C·KH·KW) ·
 * im2col(X[b]) (C·KH·KW × OH·OW), with the im2col matrix never materialised.
 *
 * The weights are packed at compile time as the GEMM's A operand. B is packed per task straight from the
 * NCHW input, one nr-wide panel of output positions at a time: for each row k = (c, ky, kx) of a K-block
 * the panel's lanes read X[c, oy·s + ky·d − pt, ox·s + kx·d − pl]. A panel whose lanes lie in one output row
 * reads one run of s·nr input columns: a plain vector load when it lies inside the image, else a masked
 * load (zeros for the padding), and for stride s > 1 a shuffle keeps every s-th lane; a row above or below
 * the image is zeros. Only panels that wrap across output rows (OW not a multiple of nr) take a masked
 * gather, which x86 compilers scalarise. A 1×1 stride-1 unpadded convolution needs no im2col at
 * all: B is X[b] itself (C × H·W), packed like a matmul operand. The result is written in NCHW directly,
 * so C is Y[b] with leading dimension OH·OW, and the epilogue (bias, residual, activation) runs per output
 * plane row of each finished block.
 */
#include <string.h>

#include "cg_epilogue.h"
#include "cg_gemm.h"

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

typedef struct Im2col {
  LLVMValueRef x;           /* X[b] */
  int64_t C, H, W, KH, KW, OW, OHW;
  int64_t sh, sw, dh, dw, pt, pl;
  int nr;
} Im2col;

static LLVMValueRef vsplat_i32(FcKernel *k, LLVMValueRef s, int n) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), vt = LLVMVectorType(i32, (unsigned)n);
  LLVMValueRef v = LLVMBuildInsertElement(k->b, LLVMGetUndef(vt), s, LLVMConstInt(i32, 0, 0), "");
  return LLVMBuildShuffleVector(k->b, v, LLVMGetUndef(vt), LLVMConstNull(vt), "");
}

static LLVMValueRef vconst_i32(FcKernel *k, int n, int64_t v) {
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMValueRef lanes[64];
  for (int i = 0; i < n; i++) lanes[i] = LLVMConstInt(i32, (unsigned long long)v, 1);
  return LLVMConstVector(lanes, (unsigned)n);
}

static void pack_im2col(FcKernel *k, void *user, LLVMValueRef dst, LLVMValueRef j0, LLVMValueRef k0, LLVMValueRef kc) {
  Im2col *p = user;
  LLVMBuilderRef b = k->b;
  int nr = p->nr;
  LLVMTypeRef i32 = LLVMInt32TypeInContext(k->ctx), f32 = LLVMFloatTypeInContext(k->ctx);
  LLVMTypeRef vi = LLVMVectorType(i32, (unsigned)nr), vf = LLVMVectorType(f32, (unsigned)nr);
  LLVMTypeRef ptr = LLVMPointerTypeInContext(k->ctx, 0), vp = LLVMVectorType(ptr, (unsigned)nr);
  /* Per lane: the output position, its validity and the input origin of its window. */
  LLVMValueRef iota[64];
  for (int i = 0; i < nr; i++) iota[i] = LLVMConstInt(i32, (unsigned long long)i, 0);
  LLVMValueRef j0_32 = LLVMBuildTrunc(b, j0, i32, "");
  LLVMValueRef n = LLVMBuildAdd(b, vsplat_i32(k, j0_32, nr), LLVMConstVector(iota, (unsigned)nr), "");
  LLVMValueRef valid = LLVMBuildICmp(b, LLVMIntSLT, n, vconst_i32(k, nr, p->OHW), "");
  LLVMValueRef oy = LLVMBuildUDiv(b, n, vconst_i32(k, nr, p->OW), "");
  LLVMValueRef ox = LLVMBuildURem(b, n, vconst_i32(k, nr, p->OW), "");
  LLVMValueRef iyb = LLVMBuildSub(b, LLVMBuildMul(b, oy, vconst_i32(k, nr, p->sh), ""), vconst_i32(k, nr, p->pt), "");
  LLVMValueRef ixb = LLVMBuildSub(b, LLVMBuildMul(b, ox, vconst_i32(k, nr, p->sw), ""), vconst_i32(k, nr, p->pl), "");
  /* The panel is one run of a single output row when its first lane's column leaves room for all lanes. */
  LLVMValueRef ox0 = LLVMBuildURem(b, j0, c64(k, p->OW), "");
  LLVMValueRef one_row = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntSLE, LLVMBuildAdd(b, ox0, c64(k, nr), ""), c64(k, p->OW), ""),
                                      LLVMBuildICmp(b, LLVMIntSLE, LLVMBuildAdd(b, j0, c64(k, nr), ""), c64(k, p->OHW), ""), "");
  /* The run of one row: sw·nr input columns (every sw-th used); wider strides take the gather. */
  int run = (int)p->sw * nr;
  bool row_path = p->sw <= 4 && run <= 64;
  LLVMValueRef iy0 = LLVMBuildExtractElement(b, iyb, LLVMConstInt(i32, 0, 0), "");
  LLVMValueRef ix0 = LLVMBuildExtractElement(b, ixb, LLVMConstInt(i32, 0, 0), "");

  FcLoop lk;
  LLVMValueRef kk = fc_cg_loop_begin(k, &lk, c64(k, 0), kc, 1, "ik");
  LLVMValueRef kidx = LLVMBuildAdd(b, k0, kk, "");
  LLVMValueRef c = LLVMBuildUDiv(b, kidx, c64(k, p->KH * p->KW), "");
  LLVMValueRef rem = LLVMBuildURem(b, kidx, c64(k, p->KH * p->KW), "");
  LLVMValueRef ky = LLVMBuildTrunc(b, LLVMBuildUDiv(b, rem, c64(k, p->KW), ""), i32, "");
  LLVMValueRef kx = LLVMBuildTrunc(b, LLVMBuildURem(b, rem, c64(k, p->KW), ""), i32, "");
  LLVMValueRef dy = LLVMBuildMul(b, ky, LLVMConstInt(i32, (unsigned long long)p->dh, 0), "");
  LLVMValueRef dx = LLVMBuildMul(b, kx, LLVMConstInt(i32, (unsigned long long)p->dw, 0), "");
  LLVMValueRef plane = LLVMBuildGEP2(b, f32, p->x, (LLVMValueRef[]){LLVMBuildMul(b, c, c64(k, p->H * p->W), "")}, 1, "");
  LLVMValueRef dstp = LLVMBuildGEP2(b, f32, dst, (LLVMValueRef[]){LLVMBuildMul(b, kk, c64(k, nr), "")}, 1, "");
  /* Fast path: a panel in one output row. Rows outside the image are zeros; inside, the run starting
   * at column x is loaded (masked where it crosses the left or right border) and strided lanes kept. */
  LLVMValueRef y = LLVMBuildAdd(b, iy0, dy, ""), x = LLVMBuildAdd(b, ix0, dx, "");
  LLVMBasicBlockRef fast = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "im2col_row");
  LLVMBasicBlockRef slow = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "im2col_gather");
  LLVMBasicBlockRef join = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "im2col_done");
  if (row_path) LLVMBuildCondBr(b, one_row, fast, slow);
  else LLVMBuildBr(b, slow);
  LLVMPositionBuilderAtEnd(b, fast);
  if (!row_path) {
    LLVMBuildUnreachable(b);
  } else {
    LLVMTypeRef vr = LLVMVectorType(f32, (unsigned)run);
    LLVMValueRef y_in = LLVMBuildICmp(b, LLVMIntULT, y, LLVMConstInt(i32, (unsigned long long)p->H, 0), "");
    LLVMValueRef yc = LLVMBuildSelect(b, y_in, y, LLVMConstInt(i32, 0, 0), "");
    LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, LLVMBuildSExt(b, yc, fc_cg_i64(k), ""), c64(k, p->W), ""),
                                    LLVMBuildSExt(b, x, fc_cg_i64(k), ""), "");
    LLVMValueRef src = LLVMBuildGEP2(b, f32, plane, &off, 1, ""); /* may precede the plane: masked lanes only */
    LLVMValueRef lanes[64], used[64];
    for (int i = 0; i < run; i++) {
      lanes[i] = LLVMConstInt(i32, (unsigned long long)i, 0);
      used[i] = LLVMConstInt(LLVMInt1TypeInContext(k->ctx), i % p->sw == 0, 0);
    }
    /* a row outside the image: every lane off, by moving the run past the right border */
    LLVMValueRef xm = LLVMBuildSelect(b, y_in, x, LLVMConstInt(i32, (unsigned long long)p->W, 0), "");
    LLVMValueRef xs = LLVMBuildAdd(b, vsplat_i32(k, xm, run), LLVMConstVector(lanes, (unsigned)run), "");
    /* The whole run inside the row (the common case): a plain load; at the borders, a masked one. */
    LLVMValueRef inside = LLVMBuildAnd(b, y_in, LLVMBuildICmp(b, LLVMIntSGE, x, LLVMConstInt(i32, 0, 0), ""), "");
    inside = LLVMBuildAnd(b, inside, LLVMBuildICmp(b, LLVMIntSLE, x, LLVMConstInt(i32, (unsigned long long)(p->W - run), 1), ""), "");
    LLVMBasicBlockRef plain_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "im2col_plain");
    LLVMBasicBlockRef mask_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "im2col_masked");
    LLVMBasicBlockRef got_bb = LLVMAppendBasicBlockInContext(k->ctx, k->fn, "im2col_loaded");
    LLVMBuildCondBr(b, inside, plain_bb, mask_bb);
    LLVMPositionBuilderAtEnd(b, plain_bb);
    LLVMValueRef plain = LLVMBuildLoad2(b, vr, src, "");
    LLVMSetAlignment(plain, 4);
    LLVMBuildBr(b, got_bb);
    LLVMPositionBuilderAtEnd(b, mask_bb);
    LLVMValueRef m = LLVMBuildAnd(b, LLVMBuildICmp(b, LLVMIntULT, xs, vconst_i32(k, run, p->W), ""),
                                  LLVMConstVector(used, (unsigned)run), "");
    LLVMValueRef vm = fc_cg_masked_load(k, vr, src, m, LLVMConstNull(vr));
    LLVMBuildBr(b, got_bb);
    LLVMPositionBuilderAtEnd(b, got_bb);
    LLVMValueRef v = LLVMBuildPhi(b, vr, "");
    LLVMValueRef in_v[2] = {plain, vm};
    LLVMBasicBlockRef in_b[2] = {plain_bb, mask_bb};
    LLVMAddIncoming(v, in_v, in_b, 2);
    if (p->sw > 1) {
      LLVMValueRef pick[64];
      for (int i = 0; i < nr; i++) pick[i] = LLVMConstInt(i32, (unsigned long long)(i * p->sw), 0);
      v = LLVMBuildShuffleVector(b, v, LLVMGetUndef(vr), LLVMConstVector(pick, (unsigned)nr), "");
    }
    LLVMValueRef st = LLVMBuildStore(b, v, dstp);
    LLVMSetAlignment(st, 4);
    LLVMBuildBr(b, join);
  }
  LLVMPositionBuilderAtEnd(b, slow);
  {
    LLVMValueRef iy = LLVMBuildAdd(b, iyb, vsplat_i32(k, dy, nr), "");
    LLVMValueRef ix = LLVMBuildAdd(b, ixb, vsplat_i32(k, dx, nr), "");
    LLVMValueRef ok = LLVMBuildAnd(b, valid, LLVMBuildICmp(b, LLVMIntULT, iy, vconst_i32(k, nr, p->H), ""), "");
    ok = LLVMBuildAnd(b, ok, LLVMBuildICmp(b, LLVMIntULT, ix, vconst_i32(k, nr, p->W), ""), "");
    LLVMValueRef off = LLVMBuildAdd(b, LLVMBuildMul(b, iy, vconst_i32(k, nr, p->W), ""), ix, "");
    off = LLVMBuildSelect(b, ok, off, LLVMConstNull(vi), "");
    LLVMValueRef ptrs = LLVMBuildGEP2(b, f32, plane, &off, 1, "");
    LLVMTypeRef ov[2] = {vf, vp};
    unsigned id = LLVMLookupIntrinsicID("llvm.masked.gather", strlen("llvm.masked.gather"));
    LLVMValueRef fn = LLVMGetIntrinsicDeclaration(k->mod, id, ov, 2);
    LLVMTypeRef fty = LLVMIntrinsicGetType(k->ctx, id, ov, 2);
    LLVMValueRef args[4] = {ptrs, LLVMConstInt(i32, 4, 0), ok, LLVMConstNull(vf)};
    LLVMValueRef v = LLVMBuildCall2(b, fty, fn, args, 4, "");
    LLVMValueRef st = LLVMBuildStore(b, v, dstp);
    LLVMSetAlignment(st, 4);
    LLVMBuildBr(b, join);
  }
  LLVMPositionBuilderAtEnd(b, join);
  fc_cg_loop_end(k, &lk);
}

bool fc_conv_gemm_applies(const FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *xt = &op->operands[0].value->type, *yt = &op->results[0].type;
  if (xt->dtype != FC_DT_F32 || (xt->rank != 3 && xt->rank != 4) || fc_op_attr_int(op, FC_ATTR_GROUP, 1) != 1)
    return false;
  int64_t xn, yn;
  /* Lane offsets are i32: a batch item of the input must stay below 2^31 elements. */
  if (!fc_type_numel(xt, &xn) || !fc_type_numel(yt, &yn)) return false;
  return xt->dims[0] > 0 && xt->dims[1] > 0 && xn / xt->dims[0] < INT32_MAX && yn > 0;
}

FcStatus fc_conv_gemm(FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *xt = &op->operands[0].value->type, *wt = &op->operands[1].value->type, *yt = &op->results[0].type;
  const int64_t *sa, *da, *pa;
  int sp = xt->rank - 2;
  if (fc_op_attr_ints(op, FC_ATTR_STRIDES, &sa) != sp || fc_op_attr_ints(op, FC_ATTR_DILATIONS, &da) != sp ||
      fc_op_attr_ints(op, FC_ATTR_PADS, &pa) != 2 * sp)
    return fc_cg_error(k, FC_ERR_INTERNAL, "strides, dilations or pads do not match %d spatial dims", sp);
  /* A 1-D convolution (text and audio front ends) is the 2-D one with a single row: H = KH = OH = 1.
   * Every panel of output positions then lies in that row, so im2col is all plain (or, at the borders,
   * masked) vector loads, and the product is one GEMM over [C·KW] × OW. */
  int64_t s[2] = {1, 1}, d[2] = {1, 1}, pads[4] = {0, 0, 0, 0};
  for (int i = 0; i < sp; i++) {
    s[2 - sp + i] = sa[i];
    d[2 - sp + i] = da[i];
    pads[2 - sp + i] = pa[i];      /* begins */
    pads[4 - sp + i] = pa[sp + i]; /* ends */
  }
  int64_t Nb = xt->dims[0], C = xt->dims[1], H = sp == 2 ? xt->dims[2] : 1, W = xt->dims[sp + 1];
  int64_t M = wt->dims[0], KH = sp == 2 ? wt->dims[2] : 1, KW = wt->dims[sp + 1];
  int64_t OH = sp == 2 ? yt->dims[2] : 1, OW = yt->dims[sp + 1];
  int64_t K = C * KH * KW, OHW = OH * OW;
  bool pointwise = KH == 1 && KW == 1 && s[0] == 1 && s[1] == 1 && pads[0] == 0 && pads[1] == 0 && pads[2] == 0 &&
                   pads[3] == 0 && OH == H && OW == W;
  FcGemmArch g;
  fc_gemm_arch_for_rows(k, M, !pointwise, &g);
  int64_t mc, nc;
  /* B read in place (1×1) costs one streamed read per M-block; im2col packs it per M-block, with
   * shuffles or gathers per element, so its element weighs 16 reads (a measured model parameter):
   * splitting M then pays only for a much larger A. */
  fc_gemm_choose_blocks(&g, Nb, M, OHW, 8, false, pointwise ? 1 : 16, &mc, &nc);
  int64_t mblocks = (M + mc - 1) / mc, nblocks = (OHW + nc - 1) / nc;
  fc_kernel_set_outer(k, Nb * mblocks * nblocks, 2.0 * (double)mc * (double)nc * (double)K);
  FcCgEpilogue *e = NULL;
  FcStatus st = fc_cg_epilogue_init(k, sp, &e);
  if (st != FC_OK) return st;

  FcGemmBlock t = {.g = &g, .M = M, .N = OHW, .K = K, .mc = mc, .nc = nc, .ldc = OHW};
  const FcTensor *cw = fc_value_const(op->operands[1].value);
  if (cw && cw->data) {
    t.a.packed = fc_kernel_substitute_operand(
        k, 1, fc_gemm_const_packed(k, &g, true, op->operands[1].value, cw->data, 1, M * K, M, K, K, 1));
  } else {
    t.a.pack = fc_gemm_pack_a_rowmajor;
  }
  if (pointwise) {
    /* X itself is the C × OH·OW matrix B: full panels are read in place, only the last is packed. */
    t.b.pack = fc_gemm_pack_b_rowmajor;
    t.b.direct = true;
  }
  else t.b.pack = pack_im2col;
  LLVMValueRef scr = fc_kernel_scratch(k, fc_gemm_block_scratch_bytes(&t));

  LLVMBuilderRef b = k->b;
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  FcLoop lo;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "blk");
  LLVMValueRef mbk, nbk, bi = fc_gemm_block_of(k, it, mblocks, nblocks, &mbk, &nbk);
  LLVMValueRef xoff = LLVMBuildMul(b, bi, c64(k, C * H * W), "");
  LLVMValueRef xb = LLVMBuildGEP2(b, f32, k->in[0], &xoff, 1, "");
  FcGemmMatrix wa = {.base = k->in[1], .rows = M, .cols = K, .ld = K, .width = g.mr};
  FcGemmMatrix xm = {.base = xb, .rows = C, .cols = OHW, .ld = OHW, .width = g.nr};
  Im2col ic = {.x = xb, .C = C, .H = H, .W = W, .KH = KH, .KW = KW, .OW = OW, .OHW = OHW, .sh = s[0], .sw = s[1],
               .dh = d[0], .dw = d[1], .pt = pads[0], .pl = pads[1], .nr = g.nr};
  if (!t.a.packed) t.a.user = &wa;
  t.b.user = pointwise ? (void *)&xm : (void *)&ic;
  LLVMValueRef coff = LLVMBuildMul(b, bi, c64(k, M * OHW), "");
  t.c = LLVMBuildGEP2(b, f32, k->out[0], &coff, 1, "");
  t.scratch = scr;
  FcGemmEpilogue fin = {.e = e, .out = k->out[0], .row0 = LLVMBuildMul(b, bi, c64(k, M), "")};
  if (e) fc_gemm_use_epilogue(&t, &fin);
  fc_gemm_emit_block(k, &t, LLVMBuildMul(b, mbk, c64(k, mc), ""), LLVMBuildMul(b, nbk, c64(k, nc), ""));
  fc_cg_loop_end(k, &lo);
  return FC_OK;
}
