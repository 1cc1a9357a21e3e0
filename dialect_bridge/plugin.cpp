//===- plugin.cpp - entry point of libLLMFusePlugin.so ---------------------===//
//
// `mlir-opt-22 --load-pass-plugin=libLLMFusePlugin.so` calls
// mlirGetPassPluginInfo(), which registers llm-fuse's passes. The stock
// mlir-opt parses its flags before plugins load, so plugin passes are only
// reachable inside --pass-pipeline='builtin.module(llm-fuse{...})'.
//
//===----------------------------------------------------------------------===//

#include "mlir/Tools/Plugins/PassPlugin.h"
#include "llvm/Config/llvm-config.h"
#include "llvm/Support/Compiler.h"

extern "C" {
#include "dialect_bridge/bridge.h"
}

extern "C" LLVM_ATTRIBUTE_WEAK ::mlir::PassPluginLibraryInfo
mlirGetPassPluginInfo() {
  return {MLIR_PLUGIN_API_VERSION, "LLMFusePlugin", LLVM_VERSION_STRING,
          [] { lf_register_passes(); }};
}
