/* kernel_conv_i8_fixup.c — the dual kernel's exact fix-up for pointwise convs and the direct build of stems
 * (kernel_conv_i8.c): a block of
 * pixels with a few bytes above 0x7f runs on vpmaddubsw anyway, and only the pixels whose input column holds
 * such a byte are recomputed exactly afterwards.
 *
 * vpmaddubsw adds two u8 × s8 products into an i16 that saturates; with activations below 0x80 it cannot
 * (PyTorch's x86 qconfig calibrates 7-bit ranges for this), but ONNX's QuantizeLinear keeps values past the
 * calibrated range up to 255. They are rare, yet most layers have some, and a block with one of them would
 * take the exact 16-bit path (vpmaddwd with a vpaddd beside each: a third more vector instructions), so many
 * pointwise blocks would. A saturating pair only spoils its own pixel's sums, so:
 *   1. count the block's wide pixels: the interleave of its Col as quads marks them as it goes (per 16
 *      pixels the OR of the rows it reads, whose byte sign bits, vpmovmskb, are an i16 mask in the scratch:
 *      kernel_conv_i8.c's interleave_from); the direct build, which has no rows, has them marked from its
 *      Col (per 16 pixels the OR of their quads, a pixel wide where a byte of its own has the top bit), and
 *      only where the block's input rows hold such a byte (an image's outliers: its stem's blocks have none
 *      or a handful); the count is the masks' popcounts;
 *   2. where they are at most 1/32 of the block, run its tiles on that Col and then, per wide pixel, copy its
 *      column's quads out of it and recompute every output channel: per channel the dot of the column with the
 *      channel's row of the s8 packing (64-byte chunks, both widened to i16: vpmaddwd), the correction and the
 *      requantisation (fc_qp_finish), stored over what the block wrote. A fix-up costs about as much
 *      vpmaddubsw work as 4 (K near 1000) to 11 (K = 27..32) of the block's pixels, and the exact 16-bit path a
 *      third more than vpmaddubsw on every pixel, hence the bound; past it the block takes that path (its
 *      Col built again, as u16 pairs).
 * The recomputed values are the exact i32 sums requantised as everywhere else: the outputs stay bit-identical.
 */
#include "cg_conv_i8.h"

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

bool fc_conv_i8_fixup_applies(const FcConvI8 *t) { return (t->pointwise || t->direct) && !t->q.flip; }

void fc_conv_i8_mark_wide_quads(FcKernel *k, const FcConvI8 *t) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef v64 = LLVMVectorType(i8, 64), w16 = LLVMVectorType(i32, 16), i16 = LLVMInt16TypeInContext(k->ctx);
  LLVMValueRef acc = fc_cg_entry_alloca(k, v64, "wide_or");
  FcLoop lj, lg;
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, t->PB / 16), 1, "mark_j");
  LLVMBuildStore(b, LLVMConstNull(v64), acc);
  LLVMValueRef g = fc_cg_loop_begin(k, &lg, c64(k, 0), c64(k, (t->c.K + 3) / 4), 1, "mark_g");
  LLVMValueRef at = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, g, t->PB), fc_cg_imulc(k, j, 16)), 4);
  LLVMValueRef v = LLVMBuildLoad2(b, v64, LLVMBuildGEP2(b, i8, t->cols, &at, 1, ""), "");
  LLVMSetAlignment(v, 16);
  LLVMBuildStore(b, LLVMBuildOr(b, LLVMBuildLoad2(b, v64, acc, ""), v, ""), acc);
  fc_cg_loop_end(k, &lg);
  /* a pixel is wide where any byte of its quads has its top bit */
  LLVMValueRef quads = LLVMBuildBitCast(b, LLVMBuildLoad2(b, v64, acc, ""), w16, "");
  LLVMValueRef top = LLVMBuildAnd(b, quads, fc_cg_splat_const(w16, LLVMConstInt(i32, 0x80808080u, 0)), "");
  LLVMValueRef wide = LLVMBuildICmp(b, LLVMIntNE, top, LLVMConstNull(w16), "");
  LLVMValueRef st = LLVMBuildStore(b, LLVMBuildBitCast(b, wide, i16, ""), LLVMBuildGEP2(b, i16, t->wide_cols, &j, 1, ""));
  LLVMSetAlignment(st, 2);
  fc_cg_loop_end(k, &lj);
}

LLVMValueRef fc_conv_i8_count_wide_pixels(FcKernel *k, const FcConvI8 *t) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i16 = LLVMInt16TypeInContext(k->ctx), i64 = fc_cg_i64(k);
  LLVMValueRef count = fc_cg_entry_alloca(k, i64, "wide_count");
  LLVMBuildStore(b, c64(k, 0), count);
  FcLoop lj;
  LLVMValueRef j = fc_cg_loop_begin(k, &lj, c64(k, 0), c64(k, t->PB / 16), 1, "wide_j");
  LLVMValueRef m = LLVMBuildLoad2(b, i16, LLVMBuildGEP2(b, i16, t->wide_cols, &j, 1, ""), "");
  LLVMValueRef n = LLVMBuildZExt(b, fc_cg_intrinsic(k, "llvm.ctpop", i16, &m, 1), i64, "");
  LLVMBuildStore(b, LLVMBuildAdd(b, LLVMBuildLoad2(b, i64, count, ""), n, ""), count);
  fc_cg_loop_end(k, &lj);
  return LLVMBuildLoad2(b, i64, count, "wide_pixels");
}

/* The block's pixel p (the image's p0 + p) recomputed: its column copied from the block's Col of quads (t->cols,
 * quad q of pixel p at (q·PB + p)·4; the bytes past K meet zero weights) into col (NH·64 bytes, zero past the
 * last quad), then each output channel's dot, requantisation and store at yb + ml·P + p0 + p. */
static void fix_pixel(FcKernel *k, const FcConvI8 *t, const FcConvI8Fixup *f, LLVMValueRef col, LLVMValueRef p,
                      LLVMValueRef p0) {
  LLVMBuilderRef b = k->b;
  const FcConv2 *c = &t->c;
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx), i32 = LLVMInt32TypeInContext(k->ctx);
  LLVMTypeRef v16 = LLVMVectorType(i8, 16), w16 = LLVMVectorType(LLVMInt16TypeInContext(k->ctx), 16);
  LLVMTypeRef vi = LLVMVectorType(i32, 8);
  FcLoop lq, lm, ln;
  LLVMValueRef q = fc_cg_loop_begin(k, &lq, c64(k, 0), c64(k, (c->K + 3) / 4), 1, "fix_q");
  LLVMValueRef at = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, q, t->PB), p), 4);
  LLVMValueRef quad = LLVMBuildLoad2(b, i32, LLVMBuildGEP2(b, i8, t->cols, &at, 1, ""), "");
  LLVMSetAlignment(quad, 4);
  LLVMValueRef st = LLVMBuildStore(b, quad, LLVMBuildGEP2(b, i8, col, (LLVMValueRef[]){fc_cg_imulc(k, q, 4)}, 1, ""));
  LLVMSetAlignment(st, 4);
  fc_cg_loop_end(k, &lq);
  LLVMValueRef acc = fc_cg_entry_alloca(k, vi, "fix_acc");
  LLVMValueRef ml = fc_cg_loop_begin(k, &lm, c64(k, 0), c64(k, c->Mg), 1, "fix_m");
  /* row ml of the s8 packing: chunk n at (((grp·MT + ml/16)·NH + n)·16 + ml%16)·64 */
  LLVMValueRef tile = fc_cg_iadd(k, fc_cg_imulc(k, f->grp, t->MT), LLVMBuildSDiv(b, ml, c64(k, 16), ""));
  LLVMValueRef row = LLVMBuildSRem(b, ml, c64(k, 16), "");
  LLVMBuildStore(b, LLVMConstNull(vi), acc);
  LLVMValueRef n = fc_cg_loop_begin(k, &ln, c64(k, 0), c64(k, t->NH), 1, "fix_n");
  LLVMValueRef chunk = fc_cg_iadd(k, fc_cg_imulc(k, tile, t->NH), n);
  LLVMValueRef wat = fc_cg_imulc(k, fc_cg_iadd(k, fc_cg_imulc(k, chunk, 16), row), 64);
  LLVMValueRef sum = LLVMBuildLoad2(b, vi, acc, "");
  for (int h = 0; h < 4; h++) { /* the chunk's 16-byte quarters */
    LLVMValueRef wo = fc_cg_iadd(k, wat, c64(k, 16 * h)), xo = fc_cg_iadd(k, fc_cg_imulc(k, n, 64), c64(k, 16 * h));
    LLVMValueRef w = LLVMBuildLoad2(b, v16, LLVMBuildGEP2(b, i8, f->wp, &wo, 1, ""), "");
    LLVMValueRef xv = LLVMBuildLoad2(b, v16, LLVMBuildGEP2(b, i8, col, &xo, 1, ""), "");
    LLVMSetAlignment(w, 1);
    LLVMSetAlignment(xv, 1);
    sum = fc_i8_dot(k, FC_I8DOT_WIDEN, 8, sum, LLVMBuildZExt(b, xv, w16, ""), LLVMBuildSExt(b, w, w16, ""));
  }
  LLVMBuildStore(b, sum, acc);
  fc_cg_loop_end(k, &ln);
  LLVMValueRef sums = LLVMBuildLoad2(b, vi, acc, "");
  LLVMValueRef total = fc_cg_intrinsic(k, "llvm.vector.reduce.add", vi, &sums, 1);
  LLVMValueRef corr, mult;
  fc_conv_i8_channel_scales(k, t, f->wp, f->wbytes, f->grp, ml, 0, 1, &corr, &mult);
  LLVMValueRef y = fc_qp_finish(k, &t->q, total, corr, mult);
  LLVMValueRef yat = fc_cg_iadd(k, fc_cg_imulc(k, ml, c->P), fc_cg_iadd(k, p0, p));
  LLVMBuildStore(b, y, LLVMBuildGEP2(b, f->et, f->yb, &yat, 1, ""));
  fc_cg_loop_end(k, &lm);
}

LLVMValueRef fc_conv_i8_wide_loop_begin(FcKernel *k, const FcConvI8 *t, FcWideLoop *w) {
  LLVMBuilderRef b = k->b;
  LLVMTypeRef i16 = LLVMInt16TypeInContext(k->ctx), i64 = fc_cg_i64(k);
  LLVMValueRef left = fc_cg_entry_alloca(k, i64, "wide_bits");
  LLVMValueRef j = fc_cg_loop_begin(k, &w->lj, c64(k, 0), c64(k, t->PB / 16), 1, "wide_j");
  LLVMValueRef m = LLVMBuildZExt(b, LLVMBuildLoad2(b, i16, LLVMBuildGEP2(b, i16, t->wide_cols, &j, 1, ""), ""), i64, "");
  LLVMBuildStore(b, m, left);
  fc_cg_loop_begin(k, &w->lp, c64(k, 0), fc_cg_intrinsic(k, "llvm.ctpop", i64, &m, 1), 1, "wide_p");
  LLVMValueRef bits = LLVMBuildLoad2(b, i64, left, "");
  LLVMValueRef tz[2] = {bits, LLVMConstInt(LLVMInt1TypeInContext(k->ctx), 1, 0)}; /* bits != 0: defined */
  LLVMValueRef bit = fc_cg_intrinsic(k, "llvm.cttz", i64, tz, 2);
  LLVMBuildStore(b, LLVMBuildAnd(b, bits, LLVMBuildSub(b, bits, LLVMConstInt(i64, 1, 0), ""), ""), left);
  return fc_cg_iadd(k, fc_cg_imulc(k, j, 16), bit);
}

void fc_conv_i8_wide_loop_end(FcKernel *k, FcWideLoop *w) {
  fc_cg_loop_end(k, &w->lp);
  fc_cg_loop_end(k, &w->lj);
}

void fc_conv_i8_fix_wide_pixels(FcKernel *k, const FcConvI8 *t, const FcConvI8Fixup *f, LLVMValueRef p0) {
  LLVMTypeRef i8 = LLVMInt8TypeInContext(k->ctx);
  LLVMValueRef col = fc_cg_entry_alloca(k, LLVMArrayType(i8, (unsigned)(t->NH * 64)), "fix_col");
  LLVMBuildMemSet(k->b, col, LLVMConstInt(i8, 0, 0), c64(k, t->NH * 64), 16); /* past the last quad: 0 */
  FcWideLoop w;
  LLVMValueRef p = fc_conv_i8_wide_loop_begin(k, t, &w);
  fix_pixel(k, t, f, col, p, p0);
  fc_conv_i8_wide_loop_end(k, &w);
}
