// streaming_loads.cpp - a kernel's nontemporal loads of its buffers become
// streaming loads with an L2 evict-first policy (docs/kernel-contract.md,
// "Streaming loads").
//
// LLVM 22's NVPTX back end ignores !nontemporal on loads, and the contract
// refuses inline assembly from a reply, so a kernel had no way to ask for
// what Triton's `eviction_policy='evict_first'` emits. Here the builder
// itself writes that assembly, after LLVM's O3 and before NVPTX code
// generation, for each load that
//   - carries !nontemporal (`vector.load` / `memref.load` with
//     `nontemporal = true`), is simple (not volatile, not atomic) and moves
//     2, 4, 8 or 16 bytes of integers or floats at an alignment of at least
//     its size (so the PTX vector load's alignment rule holds), and
//   - reads through a pointer whose every underlying object is one of the
//     kernel's buffer parameters (global memory by the launch contract; the
//     tensor maps, passed by value, are not buffers).
// Any other load stays as it was. The load keeps the memref's semantics:
// the address is the one LLVM computed from the memref's indices; only the
// cache policy changes:
//   createpolicy.fractional.L2::evict_first.b64 P, 1.0;     (once, at entry)
//   ld.global.L1::evict_first.L2::cache_hint.v4.b32 {...}, [A], P;
// The assembly is marked as having side effects, so it keeps its order
// against stores and barriers (a kernel may read back what it wrote).
#include <cstdint>
#include <vector>

#include "llvm-c/Types.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/Analysis/ValueTracking.h"
#include "llvm/IR/DataLayout.h"
#include "llvm/IR/DerivedTypes.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/IRBuilder.h"
#include "llvm/IR/InlineAsm.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"

using namespace llvm;

namespace {

// Whether every object `ptr` may point into is one of `kernel`'s buffer
// parameters (a pointer argument that is not passed by value).
bool reads_a_buffer(Value *ptr, Function &kernel) {
  SmallVector<const Value *, 4> objects;
  getUnderlyingObjects(ptr, objects, nullptr, 0);
  if (objects.empty())
    return false;
  for (const Value *o : objects) {
    const auto *arg = dyn_cast<Argument>(o);
    if (!arg || arg->getParent() != &kernel ||
        !arg->getType()->isPointerTy() || arg->hasByValAttr())
      return false;
  }
  return true;
}

// Integers, floats, and vectors of them: what a b16/b32/v2.b32/v4.b32
// register set can be bit-cast to.
bool plain_bits(Type *t) {
  if (auto *v = dyn_cast<FixedVectorType>(t))
    t = v->getElementType();
  return t->isIntegerTy() || t->isFloatingPointTy();
}

} // namespace

/* Declared in builder/codegen.c. Rewrites `kernel`'s eligible nontemporal
 * loads (above); returns how many, and in *skipped how many nontemporal
 * loads stayed plain. */
extern "C" unsigned lf_streaming_loads(LLVMModuleRef mod, LLVMValueRef fn,
                                       unsigned *skipped) {
  Module &m = *unwrap(mod);
  Function &kernel = *unwrap<Function>(fn);
  LLVMContext &ctx = m.getContext();
  const DataLayout &dl = m.getDataLayout();
  unsigned nontemporal = LLVMContext::MD_nontemporal;
  std::vector<LoadInst *> loads;
  unsigned left = 0;
  for (BasicBlock &bb : kernel)
    for (Instruction &inst : bb) {
      auto *load = dyn_cast<LoadInst>(&inst);
      if (!load || !load->getMetadata(nontemporal))
        continue;
      Type *t = load->getType();
      unsigned as = load->getPointerAddressSpace();
      uint64_t size = plain_bits(t) ? dl.getTypeStoreSize(t).getFixedValue()
                                    : 0;
      if (load->isSimple() && (as == 0 || as == 1) &&
          (size == 2 || size == 4 || size == 8 || size == 16) &&
          load->getAlign().value() >= size &&
          dl.getTypeSizeInBits(t) == size * 8 &&
          reads_a_buffer(load->getPointerOperand(), kernel))
        loads.push_back(load);
      else
        ++left;
    }
  if (skipped)
    *skipped = left;
  if (loads.empty())
    return 0;

  Type *i16 = Type::getInt16Ty(ctx), *i32 = Type::getInt32Ty(ctx),
       *i64 = Type::getInt64Ty(ctx);
  IRBuilder<> b(&*kernel.getEntryBlock().getFirstInsertionPt());
  InlineAsm *policy_asm = InlineAsm::get(
      FunctionType::get(i64, false),
      "createpolicy.fractional.L2::evict_first.b64 $0, 1.0;", "=l",
      /*hasSideEffects=*/false);
  Value *policy = b.CreateCall(policy_asm, {}, "lf.evict_first");

  for (LoadInst *load : loads) {
    Type *t = load->getType();
    uint64_t size = dl.getTypeStoreSize(t).getFixedValue();
    b.SetInsertPoint(load);
    Value *ptr = load->getPointerOperand();
    if (load->getPointerAddressSpace() == 0)
      ptr = b.CreateAddrSpaceCast(ptr, PointerType::get(ctx, 1));
    Value *addr = b.CreatePtrToInt(ptr, i64);
    const char *text = nullptr, *constraints = nullptr;
    unsigned words = 1;
    Type *ret = i32;
    switch (size) {
    case 2:
      text = "ld.global.L1::evict_first.L2::cache_hint.b16 $0, [$1], $2;";
      constraints = "=h,l,l";
      ret = i16;
      break;
    case 4:
      text = "ld.global.L1::evict_first.L2::cache_hint.b32 $0, [$1], $2;";
      constraints = "=r,l,l";
      break;
    case 8:
      text = "ld.global.L1::evict_first.L2::cache_hint.v2.b32 {$0, $1}, "
             "[$2], $3;";
      constraints = "=r,=r,l,l";
      words = 2;
      break;
    default:
      text = "ld.global.L1::evict_first.L2::cache_hint.v4.b32 "
             "{$0, $1, $2, $3}, [$4], $5;";
      constraints = "=r,=r,=r,=r,l,l";
      words = 4;
      break;
    }
    if (words > 1)
      ret = StructType::get(ctx, SmallVector<Type *, 4>(words, i32));
    InlineAsm *ld = InlineAsm::get(FunctionType::get(ret, {i64, i64}, false),
                                   text, constraints,
                                   /*hasSideEffects=*/true);
    Value *raw = b.CreateCall(ld, {addr, policy});
    Value *bits = raw;
    if (words > 1) {
      Value *vec = PoisonValue::get(FixedVectorType::get(i32, words));
      for (unsigned w = 0; w < words; ++w)
        vec = b.CreateInsertElement(vec, b.CreateExtractValue(raw, w), w);
      bits = vec;
    }
    Value *value = b.CreateBitCast(bits, t);
    value->takeName(load);
    load->replaceAllUsesWith(value);
    load->eraseFromParent();
  }
  return (unsigned)loads.size();
}
