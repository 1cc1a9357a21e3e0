// link_needed.cpp - the one LLVM call the C API lacks: linking a library
// module "only needed" (Linker::Flags::LinkOnlyNeeded), as clang links
// libdevice. With a lazily read library only the functions the kernel
// reaches are read from the bitcode, instead of all ~350 of libdevice.
#include <memory>

#include "llvm-c/Types.h"

#include "llvm/IR/Module.h"
#include "llvm/Linker/Linker.h"

/* Declared in builder/codegen.c. Consumes src; true on failure (the
 * diagnostics go to the context's handler), as LLVMLinkModules2. */
extern "C" bool lf_link_only_needed(LLVMModuleRef dst, LLVMModuleRef src) {
  std::unique_ptr<llvm::Module> lib(llvm::unwrap(src));
  return llvm::Linker::linkModules(*llvm::unwrap(dst), std::move(lib),
                                   llvm::Linker::Flags::LinkOnlyNeeded);
}
