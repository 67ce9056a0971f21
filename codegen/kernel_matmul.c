/* kernel_matmul.c — f32 matmul through the packed GEMM (cg_gemm.h), with the fused epilogue.
 *
 * C[b] = A[b] · B[b] with NumPy batch broadcasting. A constant operand (the weights of a Linear layer)
 * is packed once at compile time, every batch matrix of it, into the microkernel's panel layout; a
 * run-time operand is packed per task into scratch, one kc × panel sliver at a time. Outer iterations
 * are (batch, m-block, n-block) triples, chosen so that small products still give both threads work;
 * each computes its block of C over all of K and then applies the op's epilogue (bias, residual,
 * activation: cg_epilogue.h) to the block's rows while they are in cache.
 */
#include "cg_epilogue.h"
#include "cg_gemm.h"

static LLVMValueRef c64(FcKernel *k, int64_t v) { return fc_cg_const_i64(k, v); }

/* Batch item `item` (i64, in matrices) of operand i as the GEMM operand o: its compile-time packed copy
 * (`packed`, packed_size floats per matrix) when there is one, else the run-time matrix m, whose base is
 * set here (size floats per matrix). */
static void bind_operand(FcKernel *k, FcGemmOperand *o, FcGemmMatrix *m, LLVMValueRef packed, int64_t packed_size, int i,
                         int64_t size, LLVMValueRef item) {
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  LLVMValueRef off = LLVMBuildMul(k->b, item, c64(k, packed ? packed_size : size), "");
  if (packed) {
    o->packed = LLVMBuildGEP2(k->b, f32, packed, &off, 1, "");
  } else {
    m->base = LLVMBuildGEP2(k->b, f32, k->in[i], &off, 1, "");
    o->user = m;
  }
}

bool fc_matmul_gemm_applies(const FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *rt = &op->results[0].type;
  return rt->dtype == FC_DT_F32 && op->operands[0].value->type.dtype == FC_DT_F32 && rt->rank >= 2 &&
         rt->rank <= FC_DEFAULT_MAX_RANK;
}

FcStatus fc_matmul_gemm(FcKernel *k) {
  const FcOp *op = k->op;
  const FcType *at = &op->operands[0].value->type, *bt = &op->operands[1].value->type, *rt = &op->results[0].type;
  int r = rt->rank, nb = r - 2;
  int64_t M = rt->dims[r - 2], N = rt->dims[r - 1], K = at->dims[at->rank - 1], numel;
  if (!fc_type_numel(rt, &numel)) return fc_cg_error(k, FC_ERR_LIMIT, "result is too large");
  int64_t batch = M * N == 0 ? 0 : numel / (M * N);
  /* Batch strides in matrices; broadcast (size-1 or missing) dims have stride 0. */
  int64_t as[FC_DEFAULT_MAX_RANK], bs[FC_DEFAULT_MAX_RANK], sa, sb;
  fc_cg_matmul_batch_strides(at, bt, rt, as, bs, &sa, &sb);
  /* A batch of row blocks times one B (a Linear layer over [batch, seq, features]) is one tall product:
   * fold the batch into M so the microkernel's rows are full even when each batch item has M = 1. */
  if (sb == 1 && sa == batch && batch > 1) {
    M *= batch;
    batch = 1;
    sa = 1;
    nb = 0;
  }
  FcGemmArch g;
  fc_gemm_arch_for_rows(k, M, false, &g);
  /* Fewer rows than the microkernel's (a matrix-vector product): a kernel of exactly M rows, packed at
   * run time, rather than a full tile mostly of zeros. */
  const FcTensor *ca = fc_value_const(op->operands[0].value), *cb = fc_value_const(op->operands[1].value);
  if (!(ca && ca->data) && M >= 1 && M < g.mr) g.mr = (int)M;
  FcGemmBlock t = {.g = &g, .M = M, .N = N, .K = K, .ldc = N};
  int64_t mc, nc;
  bool a_const = ca && ca->data, b_const = cb && cb->data;
  if (!a_const && b_const) fc_gemm_arch_stream_b(&g, M, K, N);
  fc_gemm_choose_blocks(&g, batch, M, N, 8, !a_const && b_const, 1, &mc, &nc);
  t.mc = mc;
  t.nc = nc;
  int64_t mblocks = (M + mc - 1) / mc, nblocks = (N + nc - 1) / nc;
  int64_t outer = batch * mblocks * nblocks;
  fc_kernel_set_outer(k, outer, 2.0 * (double)mc * (double)nc * (double)K);
  if (outer == 0 || K == 0) {
    if (outer == 0) return FC_OK;
  }
  FcCgEpilogue *e = NULL;
  FcStatus st = fc_cg_epilogue_init(k, 1, &e);
  if (st != FC_OK) return st;

  LLVMValueRef a_packed = NULL, b_packed = NULL;
  if (ca && ca->data && K > 0)
    a_packed = fc_kernel_substitute_operand(
        k, 0, fc_gemm_const_packed(k, &g, true, op->operands[0].value, ca->data, sa, M * K, M, K, K, 1));
  if (cb && cb->data && K > 0)
    b_packed = fc_kernel_substitute_operand(
        k, 1, fc_gemm_const_packed(k, &g, false, op->operands[1].value, cb->data, sb, K * N, K, N, N, 1));
  if (!a_packed) t.a.pack = fc_gemm_pack_a_rowmajor;
  if (!b_packed) {
    t.b.pack = fc_gemm_pack_b_rowmajor;
    t.b.direct = true; /* a run-time B is row-major: full panels are read in place */
  }
  t.a.packed = a_packed;
  t.b.packed = b_packed;
  /* A constant B streams its next sliver in while a panel's tiles compute; a single row panel (a matrix-
   * vector product) has no compute to hide it behind and leaves the sequential reads to the hardware. */
  t.b.stream = b_packed && M > g.mr;
  /* A run-time A with a constant B (activations times weights): each task packs its A block once, for
   * all of K, and keeps it while its next blocks (n fastest) share those rows: a thread's chunk of
   * consecutive blocks packs A once per m-block rather than once per block. */
  bool a_cached = !a_packed && b_packed;
  int64_t scratch = a_cached ? (mc * K + 16) * 4 : fc_gemm_block_scratch_bytes(&t);
  LLVMValueRef scr = (a_packed && b_packed) ? NULL : fc_kernel_scratch(k, scratch);
  LLVMValueRef cached_key = a_cached ? fc_kernel_cached_key(k) : NULL;

  LLVMBuilderRef b = k->b;
  FcLoop lo;
  LLVMValueRef it = fc_cg_loop_begin(k, &lo, k->begin, k->end, 1, "blk");
  LLVMValueRef mbk, nbk, bi = fc_gemm_block_of(k, it, mblocks, nblocks, &mbk, &nbk);
  LLVMValueRef idx[FC_DEFAULT_MAX_RANK], aoff = c64(k, 0), boff = c64(k, 0);
  fc_cg_unflatten(k, bi, rt->dims, nb, idx);
  for (int d = 0; d < nb; d++) {
    if (as[d]) aoff = LLVMBuildAdd(b, aoff, LLVMBuildMul(b, idx[d], c64(k, as[d]), ""), "");
    if (bs[d]) boff = LLVMBuildAdd(b, boff, LLVMBuildMul(b, idx[d], c64(k, bs[d]), ""), "");
  }
  FcGemmMatrix pa = {.rows = M, .cols = K, .ld = K, .width = g.mr};
  FcGemmMatrix pb = {.rows = K, .cols = N, .ld = N, .width = g.nr};
  LLVMTypeRef f32 = LLVMFloatTypeInContext(k->ctx);
  bind_operand(k, &t.a, &pa, a_packed, fc_gemm_packed_a_size(&g, M, K), 0, M * K, aoff);
  if (a_cached && K > 0) {
    /* Pack this block's rows of A (every panel, all of K) unless the previous block had the same rows. */
    LLVMValueRef key = LLVMBuildSDiv(b, it, c64(k, nblocks), ""); /* (batch item, M-block) */
    LLVMBasicBlockRef cont = fc_cg_if_begin(k, LLVMBuildICmp(b, LLVMIntNE, key, LLVMBuildLoad2(b, fc_cg_i64(k), cached_key, ""), ""));
    LLVMValueRef m0 = LLVMBuildMul(b, mbk, c64(k, mc), "");
    LLVMValueRef mlen = LLVMBuildSub(b, c64(k, M), m0, "");
    mlen = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, mlen, c64(k, mc), ""), mlen, c64(k, mc), "");
    fc_gemm_pack_a_block(k, &g, fc_gemm_pack_a_rowmajor, &pa, scr, m0, mlen, K);
    LLVMBuildStore(b, key, cached_key);
    fc_cg_if_end(k, cont);
    t.a.packed = scr;
    t.a.block_local = true;
    t.a.pack = NULL;
  }
  bind_operand(k, &t.b, &pb, b_packed, fc_gemm_packed_b_size(&g, K, N), 1, K * N, boff);
  LLVMValueRef coff = LLVMBuildMul(b, bi, c64(k, M * N), "");
  t.c = LLVMBuildGEP2(b, f32, k->out[0], &coff, 1, "");
  t.scratch = scr;
  FcGemmEpilogue fin = {.e = e, .out = k->out[0], .row0 = LLVMBuildMul(b, bi, c64(k, M), "")};
  if (e) fc_gemm_use_epilogue(&t, &fin);
  if (K == 0) {
    /* An empty sum: zeros, then the epilogue. */
    FcLoop lz;
    LLVMValueRef m0 = LLVMBuildMul(b, mbk, c64(k, mc), ""), n0 = LLVMBuildMul(b, nbk, c64(k, nc), "");
    LLVMValueRef mend = LLVMBuildAdd(b, m0, c64(k, mc), "");
    mend = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, mend, c64(k, M), ""), mend, c64(k, M), "");
    LLVMValueRef nend = LLVMBuildAdd(b, n0, c64(k, nc), "");
    nend = LLVMBuildSelect(b, LLVMBuildICmp(b, LLVMIntSLT, nend, c64(k, N), ""), nend, c64(k, N), "");
    LLVMValueRef m = fc_cg_loop_begin(k, &lz, m0, mend, 1, "zm");
    FcLoop lj;
    LLVMValueRef j = fc_cg_loop_begin(k, &lj, n0, nend, 1, "zn");
    fc_cg_store(k, FC_DT_F32, t.c, LLVMBuildAdd(b, LLVMBuildMul(b, m, c64(k, N), ""), j, ""), LLVMConstReal(f32, 0.0));
    fc_cg_loop_end(k, &lj);
    if (e) fc_cg_epilogue_row(k, e, k->out[0], LLVMBuildAdd(b, fin.row0, m, ""), n0, LLVMBuildSub(b, nend, n0, ""));
    fc_cg_loop_end(k, &lz);
  } else {
    fc_gemm_emit_block(k, &t, LLVMBuildMul(b, mbk, c64(k, mc), ""), LLVMBuildMul(b, nbk, c64(k, nc), ""));
  }
  fc_cg_loop_end(k, &lo);
  return FC_OK;
}
