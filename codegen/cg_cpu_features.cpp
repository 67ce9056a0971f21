// cg_cpu_features.cpp — which instruction-set features a target machine's code may use, for the model's
// FrtModel.cpu_features (checked by the runtime before any generated code runs: runtime/cpu.c).
//
// A named CPU (--cpu skylake-avx512) implies its features inside LLVM; the C API hands back only the
// explicit feature string, so this one function reaches into the C++ side: the target machine's
// MCSubtargetInfo holds the resolved feature bits for the CPU plus --features. Of those, only the
// features runtime/cpu_features.def lists (the ones the runtime can detect) are written.
#include <cstdio>
#include <cstring>
#include <string>

#include <llvm-c/TargetMachine.h>
// LLVM's C++ headers are not clean under this project's warnings (unused parameters, ...).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-parameter"
#include <llvm/MC/MCSubtargetInfo.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Triple.h>
#pragma GCC diagnostic pop

extern "C" void fc_cg_cpu_features(LLVMTargetMachineRef tmr, char *buf, size_t cap);

static const char *const checkable[] = {
#define FRT_CPU_FEATURE(name, leaf, subleaf, reg, bit, state) name,
#include "../runtime/cpu_features.def"
#undef FRT_CPU_FEATURE
};

extern "C" void fc_cg_cpu_features(LLVMTargetMachineRef tmr, char *buf, size_t cap) {
  if (cap) buf[0] = '\0';
  // LLVMTargetMachineRef is a TargetMachine * (llvm/Target/TargetMachine.h's wrap/unwrap).
  const llvm::TargetMachine *tm = reinterpret_cast<const llvm::TargetMachine *>(tmr);
  if (!tm->getTargetTriple().isX86() || !tm->getTargetTriple().isArch64Bit()) return;
  const llvm::MCSubtargetInfo *sti = tm->getMCSubtargetInfo();
  if (!sti) return;
  std::string out;
  for (const char *name : checkable)
    for (const llvm::SubtargetFeatureKV &kv : sti->getAllProcessorFeatures())
      if (std::strcmp(kv.Key, name) == 0 && sti->getFeatureBits().test(kv.Value)) {
        if (!out.empty()) out += ',';
        out += name;
      }
  if (cap) std::snprintf(buf, cap, "%s", out.c_str());
}
