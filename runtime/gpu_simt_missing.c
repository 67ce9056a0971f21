/* gpu_simt_missing.c — TEMPORARY: a weak frt_gpu_simt for the branch that has no gpu_simt.c yet (the SIMT
 * host emulator is written in parallel, on another branch). It only refuses, so --device simt says what is
 * missing instead of failing to link. Drop this file when gpu_simt.c lands: its strong definition replaces
 * this one anyway.
 */
#include "flowrt_internal.h"
#include "gpu_backend.h"

static FrtStatus simt_missing_open(const FrtGpuModel *gm, void **dev, FrtError *err) {
  (void)gm;
  *dev = NULL;
  return frt_errorf(err, FRT_ERR_UNSUPPORTED, "the SIMT emulator is not built");
}

__attribute__((weak)) const FrtGpuBackend frt_gpu_simt = {
    .name = "simt",
    .open = simt_missing_open,
};
