//===- llm-fuse-opt.cpp - the llm-fuse opt driver --------------------------===//
//
// mlir-opt with llm-fuse built in: every upstream dialect, extension and
// pass, the GPU-to-LLVM-IR translations (for gpu-module-to-binary), and
// llm-fuse's passes as plain flags (`llm-fuse-opt --llm-fuse model.mlir`).
//
//===----------------------------------------------------------------------===//

#include "mlir/IR/DialectRegistry.h"
#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Target/LLVMIR/Dialect/All.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

extern "C" {
#include "dialect_bridge/bridge.h"
}

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  lf_register_passes();
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::registerAllGPUToLLVMIRTranslations(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv,
      "llm-fuse-opt: MLIR optimizer driver with the llm-fuse passes\n",
      registry));
}
