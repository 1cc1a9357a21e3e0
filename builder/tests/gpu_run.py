"""gpu_run.py - runs kernels built by llm-fuse-build-kernel on a GPU and
checks their outputs against NumPy references.

A manual smoke test of the kernel contract's launch ABI (bare pointers in
subgraph order, scalars by value, block/grid/dynamic shared memory from
result.json), not a verifier. Needs CuPy and a GPU.

usage: python3 gpu_run.py DIR
DIR holds one folder per case (named after the case), each with the
result.json and kernel.cubin / kernel.ptx that `llm-fuse-build-kernel
--out-dir` wrote; see builder/tests/gpu_build.sh.
"""
import json
import os
import sys

import cupy as cp
import numpy as np

rng = np.random.default_rng(1234)


def bf16_to_f32(u16):
    return (u16.astype(np.uint32) << 16).view(np.float32)


def f32_to_bf16(f32):
    u = f32.astype(np.float32).view(np.uint32)
    rounding = ((u >> 16) & 1) + 0x7FFF
    return ((u + rounding) >> 16).astype(np.uint16)


def launch(case_dir, args, image="kernel.cubin"):
    with open(os.path.join(case_dir, "result.json")) as f:
        result = json.load(f)
    assert result["ok"], result
    module = cp.RawModule(path=os.path.join(case_dir, image))
    kernel = module.get_function(result["kernel"])
    kernel(tuple(result["grid"]), tuple(result["block"]), args,
           shared_mem=result["dynamic_shared_memory"])
    cp.cuda.Device().synchronize()
    return result


def poisoned(shape, dtype):
    out = cp.empty(shape, dtype=dtype)
    out.view(cp.uint8).fill(0xFF)  # NaN for floats: every element must be written
    return out


def case_add_relu(d, image="kernel.cubin"):
    x0 = rng.uniform(-1, 1, 1024).astype(np.float32)
    x1 = rng.uniform(-1, 1, 1024).astype(np.float32)
    y = poisoned(1024, cp.float32)
    launch(d, (cp.asarray(x0), cp.asarray(x1), y), image)
    return np.array_equal(y.get(), np.maximum(x0 + x1, 0))


def case_add_relu_ptx(d):
    return case_add_relu(d, "kernel.ptx")


def case_scale_bf16(d):
    x = f32_to_bf16(rng.uniform(-4, 4, 4096).astype(np.float32))
    y = poisoned(4096, cp.uint16)
    launch(d, (cp.asarray(x), y))
    return np.array_equal(y.get(), f32_to_bf16(bf16_to_f32(x) * 2))


def case_row_sum(d):
    x = rng.uniform(-1, 1, (64, 32)).astype(np.float32)
    y = poisoned(64, cp.float32)
    launch(d, (cp.asarray(x), y))
    return np.allclose(y.get(), x.sum(axis=1), rtol=1e-5, atol=1e-5)


def case_mma(d):
    a = rng.integers(-2, 3, (16, 16)).astype(np.float16)
    b = rng.integers(-2, 3, (16, 8)).astype(np.float16)
    c = poisoned((16, 8), cp.float32)
    launch(d, (cp.asarray(a), cp.asarray(b), c))
    return np.array_equal(c.get(), a.astype(np.float32) @ b.astype(np.float32))


def case_rmsnorm(d):
    rows, cols = 16384, 4096
    x = f32_to_bf16(rng.standard_normal((rows, cols), dtype=np.float32))
    w = f32_to_bf16(rng.uniform(0.5, 1.5, cols).astype(np.float32))
    y = poisoned((rows, cols), cp.uint16)
    launch(d, (cp.asarray(x), cp.asarray(w), y))
    xf, wf = bf16_to_f32(x), bf16_to_f32(w)
    r = 1.0 / np.sqrt((xf * xf).sum(axis=1, dtype=np.float64) / cols + 1e-6)
    ref = (xf * r[:, None].astype(np.float32)) * wf
    got = bf16_to_f32(y.get())
    return np.allclose(got, ref, rtol=2e-2, atol=2e-2)


def case_features(d):
    x = rng.uniform(-1, 1, 1024).astype(np.float32)
    y = poisoned(1024, cp.float32)
    result = launch(d, (cp.asarray(x), y))
    assert result["dynamic_shared_memory"] == 1024
    ref = 24.0 * np.tanh(np.exp(x.astype(np.float64))) + x
    return np.allclose(y.get(), ref, rtol=1e-5, atol=1e-5)


def case_axpy(d):
    x = rng.uniform(-1, 1, 4).astype(np.float32)
    y = poisoned(4, cp.float32)
    launch(d, (cp.asarray(x), np.float32(3.0), np.uint64(4), y))
    return np.array_equal(y.get(), x * np.float32(3.0))


def case_wgmma(d):
    x = rng.uniform(-1, 1, 1024).astype(np.float32)
    y = poisoned(1024, cp.float32)
    launch(d, (cp.asarray(x), y))
    return np.array_equal(y.get(), x)


# ---- Tensor maps (docs/kernel-contract.md, "Tensor maps") -------------------
# Kernels with tensor maps are launched through the driver API (ctypes), the
# way a launcher must: each "tensor_map" entry of params is encoded with
# cuTensorMapEncodeTiled for the viewed buffer, and args[i] points at its 128
# bytes.

_cuda = None
# CUtensorMapDataType, CUtensorMapSwizzle, CUtensorMapL2promotion
TMA_DTYPE = {"u8": 0, "i8": 0, "i32": 3, "f16": 6, "f32": 7, "bf16": 9}
TMA_BYTES = {"i8": 1, "i32": 4, "f16": 2, "f32": 4, "bf16": 2}
TMA_SWIZZLE = {"none": 0, "32b": 1, "64b": 2, "128b": 3}
TMA_L2 = {"none": 0, "64b": 1, "128b": 2, "256b": 3}


def cuda():
    global _cuda
    if _cuda is None:
        import ctypes
        _cuda = ctypes.CDLL("libcuda.so.1")
    return _cuda


def check(result, what):
    if result != 0:
        raise RuntimeError("%s failed: CUresult %d" % (what, result))


def encode_tensor_map(param, dev_ptr):
    """The 128-byte CUtensorMap for a "tensor_map" params entry over the
    buffer at dev_ptr: dims and box reversed to innermost first, strides in
    bytes of every dimension but the innermost."""
    import ctypes
    dims = list(reversed(param["dims"]))
    box = list(reversed(param["box"]))
    rank = len(dims)
    esize = TMA_BYTES[param["dtype"]]
    strides, s = [], esize
    for d in dims[:-1]:
        s *= d
        strides.append(s)
    tmap = (ctypes.c_uint8 * 128)()
    u64s = ctypes.c_uint64 * 5
    u32s = ctypes.c_uint32 * 5
    check(cuda().cuTensorMapEncodeTiled(
        ctypes.byref(tmap), TMA_DTYPE[param["dtype"]], ctypes.c_uint32(rank),
        ctypes.c_void_p(dev_ptr), u64s(*dims), u64s(*strides), u32s(*box),
        u32s(*([1] * rank)), 0, TMA_SWIZZLE[param["swizzle"]],
        TMA_L2[param["l2promo"]], 1 if param["oob"] == "nan" else 0),
        "cuTensorMapEncodeTiled")
    return tmap


def launch_driver(case_dir, buffers, image="kernel.cubin"):
    """Launches with cuLaunchKernel: `buffers` are the ordinary arguments
    (CuPy arrays), tensor maps are made from result.json."""
    import ctypes
    with open(os.path.join(case_dir, "result.json")) as f:
        result = json.load(f)
    assert result["ok"], result
    with open(os.path.join(case_dir, image), "rb") as f:
        data = f.read() + (b"\0" if image.endswith(".ptx") else b"")
    cp.cuda.Device().synchronize()  # the primary context is current
    module, func = ctypes.c_void_p(), ctypes.c_void_p()
    check(cuda().cuModuleLoadData(ctypes.byref(module), data), "cuModuleLoadData")
    check(cuda().cuModuleGetFunction(ctypes.byref(func), module,
                                     result["kernel"].encode()),
          "cuModuleGetFunction")
    keep = []
    for p in result["params"]:
        if p["role"] == "tensor_map":
            keep.append(encode_tensor_map(p, buffers[p["operand"]].data.ptr))
        else:
            keep.append(ctypes.c_uint64(buffers[len(keep)].data.ptr))
    args = (ctypes.c_void_p * len(keep))(
        *[ctypes.cast(ctypes.byref(k), ctypes.c_void_p) for k in keep])
    g, b = result["grid"], result["block"]
    check(cuda().cuLaunchKernel(func, g[0], g[1], g[2], b[0], b[1], b[2],
                                result["dynamic_shared_memory"], None, args,
                                None), "cuLaunchKernel")
    check(cuda().cuCtxSynchronize(), "cuCtxSynchronize")
    check(cuda().cuModuleUnload(module), "cuModuleUnload")
    return result


def case_tma_copy(d, image="kernel.cubin"):
    """Inputs/ok-tma-copy.mlir: 64x64 TMA tiles, no swizzle, [col, row]."""
    x = rng.integers(0, 1 << 16, (256, 256), dtype=np.uint16)
    y = poisoned((256, 256), cp.uint16)
    launch_driver(d, (cp.asarray(x), y), image)
    return np.array_equal(y.get(), x)


def case_tma_copy_ptx(d):
    return case_tma_copy(d, "kernel.ptx")


def case_tma_row_sum(d):
    """The prompt's example (llm_client/prompts/tma.v1.md): swizzle_128b."""
    x = f32_to_bf16(rng.uniform(-1, 1, (1024, 64)))
    y = poisoned(1024, cp.float32)
    launch_driver(d, (cp.asarray(x), y))
    return np.allclose(y.get(), bf16_to_f32(x).sum(axis=1), rtol=1e-5,
                       atol=1e-5)


CASES = {
    "add_relu": case_add_relu,
    "add_relu_ptx": case_add_relu_ptx,
    "scale_bf16": case_scale_bf16,
    "row_sum": case_row_sum,
    "mma": case_mma,
    "rmsnorm": case_rmsnorm,
    "features": case_features,
    "axpy": case_axpy,
    "wgmma": case_wgmma,
    "tma_copy": case_tma_copy,
    "tma_copy_ptx": case_tma_copy_ptx,
    "tma_row_sum": case_tma_row_sum,
}


def main():
    root = sys.argv[1]
    print("device:", cp.cuda.runtime.getDeviceProperties(0)["name"].decode())
    failed = 0
    for name, fn in CASES.items():
        d = os.path.join(root, name)
        if not os.path.isdir(d):
            print("SKIP", name)
            continue
        try:
            ok = bool(fn(d))
        except Exception as e:  # report and go on with the other cases
            print("ERROR", name, repr(e))
            ok = False
        print("PASS" if ok else "FAIL", name)
        failed += not ok
    print("%d failed" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
