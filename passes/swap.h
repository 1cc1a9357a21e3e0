/* swap.h - putting a verified kernel in place of an outlined subgraph.
 *
 * The outlined function keeps its name, signature and attributes; its body
 * becomes a launch of the kernel, embedded in the module as a gpu.binary:
 * a fatbin of the cubin and the PTX (the driver can JIT the PTX for a newer
 * GPU) when the toolkit's fatbinary is found, else the cubin, else the PTX:
 *
 *   func.func private @sg_X(%a: tensor<...>, ...) -> tensor<...> {
 *     %m = bufferization.to_buffer %a read_only : ... to memref<...>
 *     %p = memref.extract_aligned_pointer_as_index %m ... ; as i64
 *     %o = memref.alloc() {alignment = 256} : memref<...>   (per result)
 *     gpu.launch_func @sg_X_kernel::@<kernel> blocks in (...) threads in
 *         (...) dynamic_shared_memory_size %s args(%p : i64, ...)
 *     %r = bufferization.to_tensor %o restrict writable : ...
 *     return %r
 *   }
 *   gpu.binary @sg_X_kernel [#gpu.object<#nvvm.target<chip = ...>, ...>]
 *
 * Kernels take one 64-bit pointer per operand (the contract's ABI), so the
 * launch passes raw aligned pointers: it does not depend on how the rest of
 * the module's kernels receive memrefs. Where the buffers live is the
 * pipeline's business: llm-fuse-compile puts every host buffer in device
 * memory. The module gets the gpu.container_module attribute.
 *
 * A kernel that takes tensor maps (builder.h, lf_tensor_map_spec_t) gets,
 * before the launch, one call per map of libllm_fuse_rt's
 *   %st = func.call @lf_rt_tensor_map_encode(%map, %base, dtype, rank,
 *            %dims, %box, swizzle, l2promo, oob) : (...) -> i32
 * on the viewed operand's pointer (the spec's arrays and the 64-byte aligned
 * !llvm.array<16 x i64> %map on the stack), and passes
 * `llvm.load %map : !llvm.array<16 x i64>` by value to gpu.launch_func, so
 * that args[i] points at the 128 bytes (docs/aot.md, "Tensor maps"). The
 * module gets the encoder's declaration once.
 */
#ifndef LF_PASSES_SWAP_H
#define LF_PASSES_SWAP_H

#include "base/status.h"
#include "builder/builder.h"
#include "mlir-c/IR.h"

#ifdef __cplusplus
extern "C" {
#endif

/// Attribute naming the swapped-in kernel on the outlined function.
#define LF_ATTR_KERNEL "llm_fuse.kernel"

/// Replaces the body of outlined function `func` (in `module`) with a
/// launch of the kernel `build` describes (a successful build with its
/// parameter list). On failure nothing has changed and the status says why
/// (for example a kernel parameter the launch cannot pass).
lf_status_t lf_swap_in(MlirOperation module, MlirOperation func,
                       const lf_build_result_t *build);

#ifdef __cplusplus
}
#endif

#endif /* LF_PASSES_SWAP_H */
