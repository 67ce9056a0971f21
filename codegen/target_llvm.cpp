/* target_llvm.cpp — the one question LLVM's C API cannot answer: which features a target machine's CPU has.
 *
 * LLVMGetTargetMachineFeatureString returns only the explicit "+x,-y" string a machine was created with,
 * not what its CPU name implies ("skylake-avx512" → avx512f, ...). The machine's MCSubtargetInfo holds the
 * resolved feature bits; this reads them by LLVM's own feature table, so flowc keeps no list of CPU names.
 * Every name comes from that table, so no lookup can hit LLVM's fatal "not a recognized feature".
 */
#include <cstdlib>
#include <cstring>
#include <string>

#include <llvm-c/TargetMachine.h>
/* LLVM's C++ headers are not written for -Wextra: keep their warnings out of flowc's build. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>
#pragma GCC diagnostic pop

extern "C" char *fc_llvm_tm_features(LLVMTargetMachineRef tm);

/* The enabled features, comma-separated ("avx,avx2,fma,"), malloc'd; NULL when out of memory. */
extern "C" char *fc_llvm_tm_features(LLVMTargetMachineRef tm) {
  const llvm::MCSubtargetInfo *sti = reinterpret_cast<llvm::TargetMachine *>(tm)->getMCSubtargetInfo();
  std::string s;
  for (const llvm::SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
    if (sti->getFeatureBits().test(kv.Value)) {
      s += kv.Key;
      s += ',';
    }
  char *out = static_cast<char *>(std::malloc(s.size() + 1));
  if (out) std::memcpy(out, s.c_str(), s.size() + 1);
  return out;
}
