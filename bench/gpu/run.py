#!/usr/bin/env python3
"""run.py - the GPU benchmark suite (issue 8): our kernels against the
default MLIR lowering, torch eager and torch.compile, on one H200, in one
process, on the same inputs.

    python3 bench/gpu/run.py DIR [--json OUT.json] [--png OUT.png]
                             [--cases a,b,...] [--no-compile] [--no-autotune]
                             [--budget-ms 300] [--seed 1]

DIR is what bench/gpu/prepare.sh staged on the build machine:

  DIR/libllm_fuse_rt.so                  the project's runtime (MLIR GPU ABI)
  DIR/<sg>/plan.json, k<N>.cubin         the default MLIR lowering
                                         (llm-fuse-reference --build)
  DIR/<sg>/candidate/kernel.cubin,       our kernel (llm-fuse-build-kernel)
                     result.json
  DIR/<sg>/candidate-sm90a/              its sm_90a (wgmma) variant, if any
  DIR/<sg>/candidate-alt[2-4]/           tuning variants ("ours alt[2-4]"), if any
  DIR/e2e/swapped.so, default.so         the MiniGPT block compiled ahead of
                                         time (bench/gpu/e2e-device.sh, run
                                         there first), with and without the
                                         llm-fuse pass

The cases (models, torch functions, references, rooflines) are defined in
case_defs() below; a case runs when its subgraphs are staged.

Per case and variant (ours, MLIR default, torch eager, torch.compile, and
torch.compile max-autotune for GEMM cases, as "max-autotune-no-cudagraphs"
so that every variant is one plain launch sequence):

  * the output is checked against a torch reference computed in float64
    on the upcast inputs, with the verifier's rule
    (docs/verification.md): an element fails when
    !(|c - r| <= rtol*|r| + atol), atol = rtol * mean|r| over the finite
    reference, rtol 2e-2 for bf16 and 1e-3 for f32; NaN fails.  Our and
    the MLIR default's outputs are poisoned with NaN before that run.
  * the time: CUDA events around one call, an L2 flush (a 256 MiB memset)
    before each, warm-up first, iterations filling --budget-ms per variant
    spread over 3 interleaved rounds; median, min, max, p25, p75.

Ceilings, measured in the same run: device-to-device copy bandwidth
(bytes read + written) and the bf16 / f32 (no TF32) matrix rate of
torch.matmul on random 8192^3 operands.  Memory-bound cases report bytes
moved (inputs read once + outputs written once) / time / copy bandwidth;
GEMM cases FLOPs / time / matrix rate.

Multi-subgraph cases (the MiniGPT MLP) run our kernels in the outlined
model's order with preallocated intermediates.  The block end to end calls
the AOT-compiled model (ctypes, lf_bench_run_packed of aot_shim.c): it runs
on its own stream and synchronizes, so that case is timed for every
variant by the host clock around a call followed by
torch.cuda.synchronize() (flush and a synchronize before each).

Our kernels and the MLIR default's go through libllm_fuse_rt
(mgpuModuleLoad, mgpuModuleGetFunction, mgpuLaunchKernel on torch's current
stream with the torch tensors' device pointers): the runtime uses the
device's primary context, the one torch uses. A kernel whose result.json
lists tensor-map parameters (role "tensor_map": TMA, the sm_90a GEMMs;
docs/kernel-contract.md "Tensor maps (TMA)") gets, after the pointers, each
map encoded by the runtime's lf_rt_tensor_map_encode on the buffer it views
(launch_built(); bench/tma/gemm_bench.py uses the same). The maps are
encoded once per closure: a case's buffers stay where they are for all of
its launches.
"""
import argparse
import ctypes
import json
import math
import os
import struct
import sys
import time
import traceback

import torch
import torch.nn.functional as F

BF16 = torch.bfloat16
F32 = torch.float32
DT = {"bf16": BF16, "f32": F32, "f16": torch.float16, "f64": torch.float64,
      "i32": torch.int32, "i64": torch.int64}
RTOL = {torch.bfloat16: 2e-2, torch.float16: 1e-2, torch.float32: 1e-3,
        torch.float64: 1e-7}
FLUSH_BYTES = 256 << 20
FLUSH_MODES = ("memset", "clean")  # Timer(flush=...): the L2 flush before a sample


# ------------------------------------------------------------- runtime ---

class Runtime:
    """libllm_fuse_rt through ctypes: load cubins, look up kernels, launch
    with pointer / scalar parameters on a CUDA stream."""

    def __init__(self, path):
        rt = ctypes.CDLL(path)
        rt.mgpuModuleLoad.restype = ctypes.c_void_p
        rt.mgpuModuleLoad.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
        rt.mgpuModuleGetFunction.restype = ctypes.c_void_p
        rt.mgpuModuleGetFunction.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
        ip = ctypes.c_ssize_t
        rt.mgpuLaunchKernel.restype = None
        rt.mgpuLaunchKernel.argtypes = [ctypes.c_void_p, ip, ip, ip, ip, ip, ip,
                                        ctypes.c_int32, ctypes.c_void_p,
                                        ctypes.POINTER(ctypes.c_void_p),
                                        ctypes.c_void_p, ctypes.c_size_t]
        rt.lf_rt_status.restype = ctypes.c_int
        rt.lf_rt_last_error.restype = ctypes.c_char_p
        rt.lf_rt_clear_error.restype = None
        if hasattr(rt, "lf_rt_tensor_map_encode"):   # a runtime of before TMA lacks it
            rt.lf_rt_tensor_map_encode.restype = ctypes.c_int
            rt.lf_rt_tensor_map_encode.argtypes = [
                ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int32, ctypes.c_int32,
                ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32),
                ctypes.c_int32, ctypes.c_int32, ctypes.c_int32]
        self.rt = rt
        self.images = []  # keep the module images alive

    def check(self, what):
        """Raises on the runtime's sticky error, and clears it so that the
        next case runs."""
        if self.rt.lf_rt_status():
            msg = self.rt.lf_rt_last_error()
            text = "%s: %s" % (what, msg.decode() if msg else "?")
            self.rt.lf_rt_clear_error()
            raise RuntimeError(text)

    def function(self, cubin_path, name):
        data = open(cubin_path, "rb").read()
        buf = ctypes.create_string_buffer(data, len(data))
        self.images.append(buf)
        mod = self.rt.mgpuModuleLoad(buf, len(data))
        self.check("mgpuModuleLoad(%s)" % cubin_path)
        fn = self.rt.mgpuModuleGetFunction(mod, name.encode())
        self.check("mgpuModuleGetFunction(%s)" % name)
        return fn

    def tensor_map(self, addr, p, what):
        """One tensor map (a build result's "tensor_map" parameter p) over
        the device buffer at addr, encoded by lf_rt_tensor_map_encode: the
        128 bytes to pass by value."""
        if not hasattr(self.rt, "lf_rt_tensor_map_encode"):
            raise RuntimeError("%s: the kernel takes tensor maps, this libllm_fuse_rt has no "
                               "lf_rt_tensor_map_encode (rebuild it)" % what)
        try:
            dtype = TMAP_DTYPES[p["dtype"]]
            swz, l2 = TMAP_BYTES[p["swizzle"]], TMAP_BYTES[p["l2promo"]]
            oob = {"zero": 0, "nan": 1}[p["oob"]]
        except KeyError as e:
            raise RuntimeError("%s: tensor map over operand %s: unknown %s" % (what, p.get("operand"), e))
        rank = len(p["dims"])
        m = (ctypes.c_ubyte * TMAP_BYTES_PER_MAP)()
        dims = (ctypes.c_uint64 * rank)(*p["dims"])
        box = (ctypes.c_uint32 * rank)(*p["box"])
        if self.rt.lf_rt_tensor_map_encode(ctypes.addressof(m), ctypes.c_void_p(addr), dtype, rank,
                                           dims, box, swz, l2, oob):
            self.check("%s: lf_rt_tensor_map_encode (operand %d, dims %s, box %s)"
                       % (what, p["operand"], p["dims"], p["box"]))
            raise RuntimeError("%s: lf_rt_tensor_map_encode failed" % what)
        return m

    def launch_closure(self, fn, grid, block, smem, args):
        """args: list of ctypes scalars (c_void_p for pointers). Returns a
        function that launches on torch's current stream."""
        keep = list(args)
        params = (ctypes.c_void_p * len(keep))(
            *[ctypes.cast(ctypes.pointer(a), ctypes.c_void_p) for a in keep])
        rt = self.rt
        g, b = [int(v) for v in grid], [int(v) for v in block]

        def launch():
            stream = torch.cuda.current_stream().cuda_stream
            rt.mgpuLaunchKernel(fn, g[0], g[1], g[2], b[0], b[1], b[2],
                                int(smem), stream, params, None, len(keep))
        launch.keep = (keep, params)
        return launch


def scalar_arg(a):
    t = a["type"]
    if a["kind"] == "int":
        return ctypes.c_int32(int(a["value"])) if t == "i32" else ctypes.c_int64(int(a["value"]))
    bits = int(a["bits"], 16)
    if t == "f64":
        return ctypes.c_double(struct.unpack("<d", struct.pack("<Q", bits))[0])
    return ctypes.c_float(struct.unpack("<f", struct.pack("<I", bits))[0])


def ptr(t):
    return ctypes.c_void_p(t.data_ptr())


# lf_rt_tensor_map_encode's element type codes and byte counts
# (runtime/mgpu/llm_fuse_rt.h), by the build result's names.
TMAP_DTYPES = {"f32": 0, "f16": 1, "bf16": 2, "f64": 3, "i8": 4, "i16": 5, "i32": 6, "i64": 7}
TMAP_BYTES = {"none": 0, "32b": 32, "64b": 64, "128b": 128, "256b": 256}
TMAP_BYTES_PER_MAP = 128


def kernel_args(rt, res, bufs, what):
    """The launch arguments of a built kernel (its result.json, res) over
    the case's tensors bufs (inputs, then outputs): one pointer each, then
    each tensor-map parameter encoded on the buffer it views (its
    "operand": the index into bufs), which must be contiguous and of the
    map's dims."""
    params = res.get("params") or []
    plain = [p for p in params if p.get("role") != "tensor_map"]
    maps = [p for p in params if p.get("role") == "tensor_map"]
    if plain and len(plain) != len(bufs):
        raise RuntimeError("%s: %d buffer parameters, the case has %d" % (what, len(plain), len(bufs)))
    args = [ptr(t) for t in bufs]
    for p in maps:
        i = p["operand"]
        if not 0 <= i < len(bufs):
            raise RuntimeError("%s: a tensor map over operand %d of %d" % (what, i, len(bufs)))
        t = bufs[i]
        if list(t.shape) != list(p["dims"]) or not t.is_contiguous():
            raise RuntimeError("%s: a tensor map over %s, operand %d is %s%s" % (
                what, p["dims"], i, list(t.shape), "" if t.is_contiguous() else " (not contiguous)"))
        args.append(rt.tensor_map(t.data_ptr(), p, what))
    return args


def launch_built(rt, d, ins, outs):
    """One kernel built by llm-fuse-build-kernel (d: kernel.cubin +
    result.json) over the case's tensors: a closure launching it on torch's
    current stream (run.info: how many maps, grid, shared memory)."""
    res = json.load(open(os.path.join(d, "result.json")))
    fn = rt.function(os.path.join(d, "kernel.cubin"), res["kernel"])
    args = kernel_args(rt, res, ins + outs, d)
    run = rt.launch_closure(fn, res["grid"], res["block"], res.get("dynamic_shared_memory", 0), args)
    run.info = {"maps": len(args) - len(ins) - len(outs), "grid": res["grid"],
                "smem": res.get("dynamic_shared_memory", 0)}
    return run


# Tuning variants staged by prepare.sh beside the manifest's kernel: the
# folder under DIR/<sg>/ and the column it is timed as.
ALTS = [("ours_alt", "candidate-alt"), ("ours_alt2", "candidate-alt2"),
        ("ours_alt3", "candidate-alt3"), ("ours_alt4", "candidate-alt4")]


def ours_part(rt, d, ins, outs, sub="candidate"):
    """Our kernel for one subgraph: one pointer per input, then per output,
    then its tensor maps, if any (launch_built)."""
    return launch_built(rt, os.path.join(d, sub), ins, outs)


def plan_part(rt, d, ins, outs, keep):
    """The default MLIR lowering of one subgraph: its plan's temporaries
    (allocated here, kept in `keep`) and steps, launched in order."""
    plan = json.load(open(os.path.join(d, "plan.json")))
    temps = []
    for t in plan["temps"]:
        buf = torch.empty(t["bytes"], dtype=torch.uint8, device="cuda")
        if "init_hex" in t and t["init_hex"]:
            init = bytes.fromhex(t["init_hex"])
            reps = -(-t["bytes"] // len(init))
            host = torch.frombuffer(bytearray(init * reps), dtype=torch.uint8)[: t["bytes"]]
            buf.copy_(host)
        temps.append(buf)
    keep.extend(temps)
    funcs = {k: rt.function(os.path.join(d, k + ".cubin"), k) for k in plan["kernels"]}

    def buffer(a):
        k = a["kind"]
        return ins[a["index"]] if k == "input" else outs[a["index"]] if k == "output" else temps[a["index"]]

    steps = []
    for st in plan["steps"]:
        if st["op"] == "copy":
            src, dst = [buffer(a).view(-1).view(torch.uint8) for a in st["args"][:2]]
            n = min(src.numel(), dst.numel())
            steps.append(lambda s=src, t=dst, n=n: t[:n].copy_(s[:n]))
            continue
        args = [ptr(buffer(a)) if a["kind"] in ("input", "output", "temp") else scalar_arg(a)
                for a in st["args"]]
        steps.append(rt.launch_closure(funcs[st["kernel"]], st["grid"], st["block"], 0, args))

    def run():
        for s in steps:
            s()
    return run


def aot_part(rt, so_path, ins, outs):
    """A model compiled by llm-fuse-compile and linked with aot_shim.c:
    one synchronous call over the torch tensors' device pointers."""
    lib = ctypes.CDLL(so_path)
    lib.lf_bench_run_packed.restype = ctypes.c_int
    lib.lf_bench_run_packed.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.lf_bench_num_args.restype = ctypes.c_int
    n = lib.lf_bench_num_args()
    if n != len(ins) + len(outs):
        raise RuntimeError("%s takes %d buffers, the case has %d" % (so_path, n, len(ins) + len(outs)))
    args = (ctypes.c_void_p * n)(*[t.data_ptr() for t in ins + outs])

    def run():
        torch.cuda.synchronize()  # torch's writes (the poison) before the model's stream
        if lib.lf_bench_run_packed(args):
            rt.check("%s: lf_bench_run_packed" % os.path.basename(so_path))
    run.keep = (lib, args)
    return run


# ------------------------------------------------------------ the cases ---

def rnd(shape, dtype, gen, scale=1.0):
    t = torch.randn(shape, generator=gen, device="cuda", dtype=F32)
    if scale != 1.0:
        t.mul_(scale)
    return t.to(dtype)


def gelu_tanh64(v):
    return 0.5 * v * (1.0 + torch.tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)))


def case_defs():
    """Each case: the model's inputs (shape, dtype, scale), its torch
    function (eager; compiled as is), its reference (float64, or f32
    accumulation for bf16 GEMMs), the roofline (bytes or FLOPs) and the
    subgraphs that make it in the outlined model (parts: subgraph, which
    model inputs, which model outputs)."""
    C = []

    def add(**k):
        C.append(k)

    eps6, eps5 = 1e-6, 1e-5
    add(name="rmsnorm_bf16", title="RMSNorm bf16 16384x4096", kind="mem",
        inputs=[((16384, 4096), BF16, 1.0), ((4096,), BF16, 1.0)],
        outputs=[((16384, 4096), BF16)],
        parts=[("sg_07f0dc6cb70576f3", [0, 1], [0])],
        torch=lambda x, w: F.rms_norm(x, (4096,), w, eps6),
        ref=lambda x, w: (x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps6) * w,))
    add(name="add_rmsnorm_bf16", title="residual add + RMSNorm bf16 16384x4096", kind="mem",
        inputs=[((16384, 4096), BF16, 1.0), ((16384, 4096), BF16, 1.0), ((4096,), BF16, 1.0)],
        outputs=[((16384, 4096), BF16), ((16384, 4096), BF16)],
        # One subgraph since the partitioner fuses the residual sum in as a
        # result (issue 8): its results are h, y, the case's y, h.
        parts=[("sg_a4aae1dccd0231c2", [0, 1, 2], [1, 0])],
        torch=lambda x, r, w: (lambda h: (F.rms_norm(h, (4096,), w, eps6), h))(x + r),
        ref=lambda x, r, w: (lambda h: (
            h * torch.rsqrt((h * h).mean(-1, keepdim=True) + eps6) * w, h))(
                (x + r).to(BF16).double()))
    add(name="layernorm_bf16", title="LayerNorm bf16 16384x4096", kind="mem",
        inputs=[((16384, 4096), BF16, 1.0), ((4096,), BF16, 1.0), ((4096,), BF16, 1.0)],
        outputs=[((16384, 4096), BF16)],
        parts=[("sg_ed978a54a6ae6b04", [0, 1, 2], [0])],
        torch=lambda x, g, b: F.layer_norm(x, (4096,), g, b, eps5),
        ref=lambda x, g, b: (F.layer_norm(x, (4096,), g, b, eps5),))
    add(name="layernorm_f32", title="LayerNorm f32 4096x16384", kind="mem",
        inputs=[((4096, 16384), F32, 1.0), ((16384,), F32, 1.0), ((16384,), F32, 1.0)],
        outputs=[((4096, 16384), F32)],
        parts=[("sg_e2da8c8a3c5cd5d1", [0, 1, 2], [0])],
        torch=lambda x, g, b: F.layer_norm(x, (16384,), g, b, eps5),
        ref=lambda x, g, b: (F.layer_norm(x, (16384,), g, b, eps5),))
    add(name="softmax_bf16", title="softmax bf16 16384x8192", kind="mem",
        inputs=[((16384, 8192), BF16, 1.0)],
        outputs=[((16384, 8192), BF16)],
        parts=[("sg_36479e4312f16cf5", [0], [0])],
        torch=lambda x: torch.softmax(x, -1),
        ref=lambda x: (torch.softmax(x, -1),))
    add(name="softmax_f32", title="softmax f32 4096x16384 (TOSA)", kind="mem",
        inputs=[((4096, 16384), F32, 1.0)],
        outputs=[((4096, 16384), F32)],
        parts=[("sg_ff8348df2653ec41", [0], [0])],
        torch=lambda x: torch.softmax(x, -1),
        ref=lambda x: (torch.softmax(x, -1),))
    add(name="rowsum_f32", title="row sum f32 16384x8192", kind="mem",
        inputs=[((16384, 8192), F32, 1.0)],
        outputs=[((16384,), F32)],
        parts=[("sg_df3765b7ed777da2", [0], [0])],
        torch=lambda x: x.sum(-1),
        ref=lambda x: (x.sum(-1),))
    add(name="rowmax_f32", title="row max f32 16384x8192", kind="mem",
        inputs=[((16384, 8192), F32, 1.0)],
        outputs=[((16384,), F32)],
        parts=[("sg_21610200b192c108", [0], [0])],
        torch=lambda x: x.amax(-1),
        ref=lambda x: (x.amax(-1),))
    add(name="bias_gelu_bf16", title="bias + GELU-tanh bf16 16384x8192", kind="mem",
        inputs=[((16384, 8192), BF16, 1.0), ((8192,), BF16, 1.0)],
        outputs=[((16384, 8192), BF16)],
        parts=[("sg_d9d3a926eb8e438b", [0, 1], [0])],
        torch=lambda x, b: F.gelu(x + b, approximate="tanh"),
        ref=lambda x, b: (gelu_tanh64(x + b),))
    add(name="swiglu_bf16", title="SwiGLU bf16 8192x14336 (K 4096)", kind="gemm", rate="bf16",
        flops=2 * 2 * 8192 * 14336 * 4096,
        inputs=[((8192, 4096), BF16, 1.0), ((4096, 14336), BF16, 1 / 64.0),
                ((4096, 14336), BF16, 1 / 64.0)],
        outputs=[((8192, 14336), BF16)],
        parts=[("sg_74ede17e00bf0352", [0, 1, 2], [0])],
        torch=lambda x, wg, wu: F.silu(x @ wg) * (x @ wu),
        ref=lambda x, wg, wu: (lambda g, u: (g / (1 + torch.exp(-g)) * u,))(x @ wg, x @ wu))
    add(name="gemm_bias_gelu_bf16", title="GEMM+bias+GELU bf16 16384x16384 (K 4096)",
        kind="gemm", rate="bf16", flops=2 * 16384 * 16384 * 4096,
        inputs=[((16384, 4096), BF16, 1.0), ((4096, 16384), BF16, 1 / 64.0), ((16384,), BF16, 1.0)],
        outputs=[((16384, 16384), BF16)],
        parts=[("sg_89b05da5eb3c1a6b", [0, 1, 2], [0])],
        torch=lambda x, w, b: F.gelu(x @ w + b, approximate="tanh"),
        ref=lambda x, w, b: (gelu_tanh64(x @ w + b),))
    add(name="gemm_relu_f32", title="GEMM-0.5,x2,ReLU f32 1024x8192x8192 (no TF32)", kind="gemm",
        rate="f32", flops=2 * 1024 * 8192 * 8192,
        inputs=[((1024, 8192), F32, 1.0), ((8192, 8192), F32, 1 / 90.5)],
        outputs=[((1024, 8192), F32)],
        parts=[("sg_5beaf48efb3a6ac0", [0, 1], [0])],
        torch=lambda x, w: torch.relu((x @ w - 0.5) * 2.0),
        ref=lambda x, w: (torch.relu((x @ w - 0.5) * 2.0),))
    # The MiniGPT MLP at 65536 tokens (examples/bench/minigpt_mlp.mlir):
    # three subgraphs in the outlined model's order, "t<i>" = intermediates.
    T, D, H = 65536, 768, 3072
    add(name="minigpt_mlp_f32", title="MiniGPT MLP f32 65536x768 (hidden 3072), no TF32",
        kind="gemm", rate="f32", vs=("eager", "compile"),
        flops=2 * T * D * H * 2,
        inputs=[((T, D), F32, 1.0), ((D,), F32, 1.0), ((D,), F32, 1.0),
                ((D, H), F32, D ** -0.5), ((H,), F32, 1.0),
                ((H, D), F32, H ** -0.5), ((D,), F32, 1.0)],
        outputs=[((T, D), F32)],
        temps=[((T, D), F32), ((T, H), F32)],
        parts=[("sg_390ba1a6df9c30f8", [0, 1, 2], ["t0"]),
               ("sg_ab992c66808cc4c2", ["t0", 3, 4], ["t1"]),
               ("sg_606c0e1c9184d8b4", ["t1", 5, 6, 0], [0])],
        module=lambda *a: MiniGptMlp(*a),
        ref=lambda x, g, b, wf, bf, wp, bp: (
            x + gelu_tanh64(F.layer_norm(x, (768,), g, b, 1e-5) @ wf + bf) @ wp + bp,))
    # The MiniGPT block end to end (examples/minigpt_block.mlir, seq 1024):
    # the AOT-compiled model against the same block in torch.
    S = 1024
    add(name="minigpt_block_e2e", title="MiniGPT block f32 1024x768 end to end (AOT), no TF32",
        kind="gemm", rate="f32", vs=("compile",), timing="host", aot="e2e",
        # QKV, QK^T and PV over the causal half, out-proj, MLP up and down
        flops=2 * S * D * 3 * D + 2 * 12 * S * S * 64 + 2 * S * D * D + 2 * 2 * S * D * H,
        inputs=[((S, D), F32, 1.0), ((D,), F32, 1.0), ((D,), F32, 1.0),
                ((D, 3 * D), F32, D ** -0.5), ((3 * D,), F32, 1.0),
                ((D, D), F32, D ** -0.5), ((D,), F32, 1.0),
                ((D,), F32, 1.0), ((D,), F32, 1.0),
                ((D, H), F32, D ** -0.5), ((H,), F32, 1.0),
                ((H, D), F32, H ** -0.5), ((D,), F32, 1.0)],
        outputs=[((S, D), F32)],
        parts=[],
        module=lambda *a: MiniGptBlock(*a),
        ref=lambda *a: (block_ref64(*a),))
    return C


class MiniGptMlp(torch.nn.Module):
    """The PyTorch module of the MiniGPT (GPT-2) MLP with a pre-LayerNorm
    and the residual: x + c_proj(gelu_tanh(c_fc(ln_2(x)))); weights copied
    from the case's inputs (the IR's W is [in, out], nn.Linear's [out, in])."""

    def __init__(self, x, g, b, wf, bf, wp, bp):
        super().__init__()
        d, h = wf.shape
        self.ln_2 = torch.nn.LayerNorm(d, eps=1e-5, device="cuda")
        self.c_fc = torch.nn.Linear(d, h, device="cuda")
        self.c_proj = torch.nn.Linear(h, d, device="cuda")
        with torch.no_grad():
            self.ln_2.weight.copy_(g)
            self.ln_2.bias.copy_(b)
            self.c_fc.weight.copy_(wf.t())
            self.c_fc.bias.copy_(bf)
            self.c_proj.weight.copy_(wp.t())
            self.c_proj.bias.copy_(bp)
        self.requires_grad_(False)

    def forward(self, x):
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class MiniGptBlock(torch.nn.Module):
    """The PyTorch form of examples/minigpt_block.mlir: a pre-LN GPT-2
    block (12 heads of 64, causal scaled_dot_product_attention, scale 1/8),
    weights copied from the case's inputs."""

    def __init__(self, x, g1, b1, wqkv, bqkv, wo, bo, g2, b2, wf, bf, wp, bp):
        super().__init__()
        d = x.shape[1]
        self.n_head = 12
        self.ln_1 = torch.nn.LayerNorm(d, eps=1e-5, device="cuda")
        self.c_attn = torch.nn.Linear(d, 3 * d, device="cuda")
        self.attn_proj = torch.nn.Linear(d, d, device="cuda")
        self.mlp = MiniGptMlp(x, g2, b2, wf, bf, wp, bp)
        with torch.no_grad():
            self.ln_1.weight.copy_(g1)
            self.ln_1.bias.copy_(b1)
            self.c_attn.weight.copy_(wqkv.t())
            self.c_attn.bias.copy_(bqkv)
            self.attn_proj.weight.copy_(wo.t())
            self.attn_proj.bias.copy_(bo)
        self.requires_grad_(False)

    def forward(self, x):
        s, d = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=1)
        q, k, v = [t.view(s, self.n_head, d // self.n_head).transpose(0, 1) for t in (q, k, v)]
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = x + self.attn_proj(o.transpose(0, 1).reshape(s, d))
        return self.mlp(a)


def block_ref64(x, g1, b1, wqkv, bqkv, wo, bo, g2, b2, wf, bf, wp, bp):
    """The block's math in float64, as the IR writes it (mask after the
    0.125 scale, softmax as max, exp, sum, divide)."""
    s, d = x.shape
    h = F.layer_norm(x, (d,), g1, b1, 1e-5)
    qkv = h @ wqkv + bqkv
    q, k, v = [qkv[:, i * d:(i + 1) * d].reshape(s, 12, 64).transpose(0, 1) for i in range(3)]
    sc = (q @ k.transpose(1, 2)) * 0.125
    mask = torch.ones(s, s, dtype=torch.bool, device=x.device).triu(1)
    sc = sc.masked_fill(mask, float("-inf"))
    p = torch.softmax(sc, -1)
    o = (p @ v).transpose(0, 1).reshape(s, d)
    a = x + o @ wo + bo
    hn = F.layer_norm(a, (d,), g2, b2, 1e-5)
    return a + gelu_tanh64(hn @ wf + bf) @ wp + bp


# ------------------------------------------------------------- helpers ---

def compare(out, ref):
    """The verifier's rule; returns (ok, worst err/tolerance, bad count)."""
    rtol = RTOL[out.dtype]
    r = ref.double()
    c = out.double()
    fin = torch.isfinite(r)
    atol = rtol * (r[fin].abs().mean().item() if fin.any() else 0.0)
    bound = rtol * r.abs() + atol
    diff = (c - r).abs()
    same = (c == r)  # equal infinities (and equal finite values)
    both_nan = torch.isnan(c) & torch.isnan(r)
    good = (diff <= bound) | same | both_nan
    ratio = torch.where(same | both_nan, torch.zeros_like(diff), diff / bound)
    worst = ratio.nan_to_num(nan=float("inf")).max().item() if ratio.numel() else 0.0
    bad = int((~good).sum().item())
    return bad == 0, worst, bad


class Timer:
    """flush="memset" (the default): a 256 MiB memset before each call,
    which leaves the L2 full of dirty lines (up to its size) whose
    write-back the timed call's misses pay; "clean": the same memset, then
    a read-only sweep of another 256 MiB buffer (a sum into a scalar), so
    that those lines are written back during the flush and the call starts
    on an L2 of clean lines (FLUSH_MODES; bench/NOTES.md, "Session 29: a
    clean L2 flush")."""

    def __init__(self, flush="memset"):
        if flush not in FLUSH_MODES:
            raise ValueError("flush %r: one of %s" % (flush, ", ".join(FLUSH_MODES)))
        self.flush = torch.empty(FLUSH_BYTES, dtype=torch.uint8, device="cuda")
        self.flush_mode = flush
        if flush == "clean":
            self.sweep = torch.ones(FLUSH_BYTES // 4, device="cuda")
            self.sink = torch.empty((), device="cuda")

    def clean(self):
        """After the memset: the clean flush's read-only sweep."""
        if self.flush_mode == "clean":
            torch.sum(self.sweep, dim=0, out=self.sink)

    def once(self, fn):
        """One call between events after an L2 flush; ms."""
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        self.flush.zero_()
        self.clean()
        a.record()
        fn()
        b.record()
        b.synchronize()
        return a.elapsed_time(b)

    def series(self, fn, n):
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(n)]
        for a, b in ev:
            self.before()
            self.flush.zero_()
            self.clean()
            a.record()
            fn()
            b.record()
        torch.cuda.synchronize()
        return [a.elapsed_time(b) for a, b in ev]

    def before(self):
        """What a sample does before its flush (nothing here; PadTimer)."""


class PadTimer(Timer):
    """Timer with the GPU held busy (torch.cuda._sleep, pad_us) before each
    sample's flush, so that the host has queued the events and the call
    before the GPU reaches them: the event interval is the GPU's time alone.
    A call whose host cost outlasts the 256 MiB memset (torch.compile's
    guards and launcher, 20-35 us; session 25) otherwise leaves the GPU idle
    between the first event and its kernel, and that idle time is counted."""

    def __init__(self, pad_us, flush="memset"):
        super().__init__(flush)
        self.cycles = int(pad_us * 2000)  # ~2 GHz SM clock

    def once(self, fn):
        self.before()
        return super().once(fn)

    def before(self):
        torch.cuda._sleep(self.cycles)


class HostTimer(Timer):
    """For calls that run on a stream of their own and synchronize (the
    AOT model): the host clock around the call and a device synchronize,
    after an L2 flush and a synchronize; ms."""

    def once(self, fn):
        return self.series(fn, 1)[0]

    def series(self, fn, n):
        out = []
        for _ in range(n):
            self.flush.zero_()
            self.clean()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            fn()
            torch.cuda.synchronize()
            out.append((time.perf_counter() - t0) * 1e3)
        return out


def stats(ts):
    s = sorted(ts)
    n = len(s)

    def q(p):
        if n == 1:
            return s[0]
        x = p * (n - 1)
        i = int(math.floor(x))
        j = min(i + 1, n - 1)
        return s[i] + (s[j] - s[i]) * (x - i)
    return {"n": n, "median": q(0.5), "min": s[0], "max": s[-1], "p25": q(0.25), "p75": q(0.75)}


def time_variants(timer, variants, budget_ms, rounds=3):
    """variants: name -> fn. Warm-up, then iterations filling budget_ms per
    variant, split into `rounds` rounds that visit every variant in turn
    (rotating the order) so that clock drift favours none."""
    est = {}
    for name, fn in variants.items():
        fn()
        torch.cuda.synchronize()
        est[name] = max(timer.once(fn), 1e-3)
    n_total = {k: int(min(200, max(3, budget_ms / v))) for k, v in est.items()}
    times = {k: [] for k in variants}
    names = list(variants)
    for r in range(rounds):
        order = names[r % len(names):] + names[:r % len(names)]
        for name in order:
            k = n_total[name] // rounds + (1 if r < n_total[name] % rounds else 0)
            if k:
                times[name] += timer.series(variants[name], k)
    return {k: stats(v) for k, v in times.items()}


def ceilings(timer):
    """Copy bandwidth (bytes read + written) and matrix rates, measured
    here: medians."""
    out = {}
    n = 1 << 30
    src = torch.empty(n, dtype=torch.uint8, device="cuda").random_()
    dst = torch.empty_like(src)
    ts = time_variants(timer, {"copy": lambda: dst.copy_(src)}, 200)["copy"]
    out["copy_bytes"] = 2 * n
    out["copy_ms"] = ts
    out["copy_GBps"] = 2 * n / (ts["median"] * 1e-3) / 1e9
    del src, dst
    g = torch.Generator(device="cuda").manual_seed(7)
    for tag, dt, size in (("bf16", BF16, 8192), ("f32", F32, 8192)):
        a = rnd((size, size), dt, g)
        b = rnd((size, size), dt, g)
        ts = time_variants(timer, {tag: lambda: torch.matmul(a, b)}, 300)[tag]
        out["%s_mm_ms" % tag] = ts
        out["%s_TFLOPs" % tag] = 2 * size ** 3 / (ts["median"] * 1e-3) / 1e12
        del a, b
    torch.cuda.empty_cache()
    return out


# ----------------------------------------------------------------- main ---

def compile_variants(fn_t, inputs, modes, variants, res, log):
    """torch.compile of `fn_t` per (tag, mode), each warmed up once and
    added to `variants`; a failure is recorded in res["errors"], not fatal.
    Returns tag -> compiled function."""
    compiled = {}
    for tag, mode in modes:
        t0 = time.time()
        try:
            cf = torch.compile(fn_t, mode=mode) if mode else torch.compile(fn_t)
            with torch.no_grad():
                cf(*inputs)
            torch.cuda.synchronize()
            compiled[tag] = cf
            variants[tag] = (lambda cf=cf: cf(*inputs))
            res.setdefault("compile_s", {})[tag] = round(time.time() - t0, 1)
            log("  %s: compiled in %.1f s" % (tag, time.time() - t0))
        except Exception as e:
            res["errors"][tag] = "%s: %s" % (type(e).__name__, str(e)[:400])
            log("  %s failed: %s" % (tag, res["errors"][tag]))
    return compiled


def check_variants(variants, outs_for, refs, rt, res, log):
    """Runs each variant once and compares its outputs with `refs` into
    res["checks"]; ours (tags in outs_for: preallocated outputs) are
    poisoned with NaN first. A variant whose check cannot run is dropped."""
    with torch.no_grad():
        for tag in list(variants):
            try:
                if tag in outs_for:
                    for o in outs_for[tag]:
                        o.fill_(float("nan"))
                    variants[tag]()
                    torch.cuda.synchronize()
                    rt.check(tag)
                    outs = outs_for[tag]
                else:
                    o = variants[tag]()
                    torch.cuda.synchronize()
                    outs = list(o) if isinstance(o, (tuple, list)) else [o]
                chk = []
                for o, r in zip(outs, refs):
                    ok, worst, bad = compare(o, r)
                    chk.append({"ok": ok, "worst": worst, "bad": bad})
                res["checks"][tag] = {"ok": all(x["ok"] for x in chk), "outputs": chk}
                if not res["checks"][tag]["ok"]:
                    log("  %s: WRONG %s" % (tag, chk))
                del outs
            except Exception as e:
                res["errors"][tag] = "%s: %s" % (type(e).__name__, str(e)[:400])
                log("  %s check failed to run: %s" % (tag, res["errors"][tag]))
                variants.pop(tag, None)


def run_case(c, root, rt, timer, ceil, args, log):
    res = {"name": c["name"], "title": c["title"], "kind": c["kind"], "variants": {},
           "checks": {}, "errors": {}}
    gen = torch.Generator(device="cuda").manual_seed(args.seed)
    ins = [rnd(shape, dt, gen, scale) for shape, dt, scale in c["inputs"]]
    bytes_moved = sum(t.numel() * t.element_size() for t in ins) + \
        sum(math.prod(s) * torch.tensor([], dtype=dt).element_size() for s, dt in c["outputs"])
    res["bytes"] = bytes_moved
    if c["kind"] == "gemm":
        res["flops"] = c["flops"]

    # Reference, computed once.
    t0 = time.time()
    with torch.no_grad():
        refs = list(c["ref"](*[t.double() for t in ins]))
    torch.cuda.synchronize()
    res["reference_s"] = time.time() - t0
    res["reference"] = "float64 on the upcast inputs"

    def new_outs():
        return [torch.full(s, float("nan"), dtype=dt, device="cuda") for s, dt in c["outputs"]]

    variants = {}
    keep = []
    outs_for = {}
    # Ours and the MLIR default: preallocated outputs, one launch set per part.
    makers = [("ours", lambda d, i, o: ours_part(rt, d, i, o)),
              ("mlir_default", lambda d, i, o: plan_part(rt, d, i, o, keep))]
    # ours sm_90a: the sm_90a kernel where a part has one, else its sm_90 kernel
    # (what the replay set gives a model compiled for sm_90a)
    if c["parts"] and any(os.path.isdir(os.path.join(root, sg, "candidate-sm90a"))
                          for sg, _, _ in c["parts"]):
        makers.insert(1, ("ours_sm90a", lambda d, i, o: ours_part(
            rt, d, i, o, "candidate-sm90a" if os.path.isdir(os.path.join(d, "candidate-sm90a")) else "candidate")))
    # Tuning variants: candidate-alt[N] where a part has one, else candidate.
    for n, (tag, sub) in enumerate(ALTS):
        if any(os.path.isdir(os.path.join(root, sg, sub)) for sg, _, _ in c["parts"]):
            makers.insert(1 + n, (tag, lambda d, i, o, sub=sub: ours_part(
                rt, d, i, o, sub if os.path.isdir(os.path.join(d, sub)) else "candidate")))
    if c.get("aot"):
        makers = [(tag, None) for tag, so in (("ours", "swapped.so"), ("mlir_default", "default.so"))
                  if os.path.exists(os.path.join(root, c["aot"], so))]
    for tag, make in makers:
        try:
            outs = new_outs()
            fns = []
            if c.get("aot"):
                so = os.path.join(root, c["aot"], "swapped.so" if tag == "ours" else "default.so")
                fns.append(aot_part(rt, so, ins, outs))
            temps = [torch.empty(s, dtype=dt, device="cuda") for s, dt in c.get("temps", [])]
            keep.extend(temps)

            def pick(ix, outer):
                return temps[int(ix[1:])] if isinstance(ix, str) else outer[ix]
            for sg, ii, oo in c["parts"]:
                d = os.path.join(root, sg)
                fns.append(make(d, [pick(i, ins) for i in ii], [pick(o, outs) for o in oo]))

            def run(fns=fns):
                for f in fns:
                    f()
            outs_for[tag] = outs
            variants[tag] = run
        except Exception as e:  # missing kernel or plan: recorded, not fatal
            res["errors"][tag] = "%s: %s" % (type(e).__name__, e)
            log("  %s: %s" % (tag, res["errors"][tag]))

    fn_t = c["module"](*ins) if "module" in c else c["torch"]
    model_in = ins[:1] if "module" in c else ins
    variants["eager"] = lambda: fn_t(*model_in)
    compiled = {}
    if not args.no_compile:
        modes = [("compile", None)]
        if c["kind"] == "gemm" and not args.no_autotune:
            modes.append(("compile_max_autotune", "max-autotune-no-cudagraphs"))
        compiled = compile_variants(fn_t, model_in, modes, variants, res, log)

    # Check every variant's output (ours / default: poisoned first).
    check_variants(variants, outs_for, refs, rt, res, log)
    del refs
    torch.cuda.empty_cache()

    with torch.no_grad():
        res["timing"] = c.get("timing", "events")
        host = c.get("timing") == "host"
        res["variants"] = time_variants(HostTimer(timer.flush_mode) if host else timer,
                                        variants, args.budget_ms)
    rt.check("timing")
    for tag, st in res["variants"].items():
        t = st["median"] * 1e-3
        if c["kind"] == "mem":
            st["fraction"] = bytes_moved / t / (ceil["copy_GBps"] * 1e9)
            st["GBps"] = bytes_moved / t / 1e9
        else:
            st["fraction"] = c["flops"] / t / (ceil["%s_TFLOPs" % c["rate"]] * 1e12)
            st["TFLOPs"] = c["flops"] / t / 1e12
    if args.profile:
        res["profile"] = {}
        for tag in ("ours", "compile", "eager"):
            if tag in variants:
                res["profile"][tag] = profile_variant(variants[tag], log, "  profile %s" % tag)
    res["target"] = judge(c, res)
    del ins, keep, outs_for, variants, compiled
    torch.cuda.empty_cache()
    return res


def profile_variant(fn, log, head, calls=10):
    """Where a variant's time goes: torch.profiler (CUPTI) over `calls`
    calls sees every kernel and memcpy in the process, the ones our runtime
    launches through the driver API included. Per call: GPU time of each
    kernel name, their sum, and the host-clock time of the calls, so the gap
    (launch latency, synchronizations, host work) shows."""
    from torch.profiler import profile, ProfilerActivity
    with torch.no_grad():
        fn()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            t0 = time.perf_counter()
            for _ in range(calls):
                fn()
                torch.cuda.synchronize()
            wall = (time.perf_counter() - t0) * 1e3 / calls
    rows = []
    for e in prof.key_averages():
        dev = getattr(e, "device_time_total", None)
        if dev is None:
            dev = getattr(e, "cuda_time_total", 0)
        if dev <= 0 or e.key.startswith("cuda") or e.key.startswith("aten::") or \
                e.key.startswith("Torch-Compiled") or e.key.startswith("CompiledFunction"):
            continue
        self_dev = getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", dev))
        rows.append({"name": e.key[:90], "calls_per_call": e.count / calls,
                     "us_per_call": self_dev / calls})
    rows.sort(key=lambda r: -r["us_per_call"])
    gpu = sum(r["us_per_call"] for r in rows)
    log("%s: %.1f us of GPU work per call in %d kernel/copy names, %.1f us host clock per call"
        % (head, gpu, len(rows), wall * 1e3))
    for r in rows[:14]:
        log("    %8.1f us  x%-4g %s" % (r["us_per_call"], r["calls_per_call"], r["name"]))
    return {"gpu_us_per_call": gpu, "host_us_per_call": wall * 1e3, "kernels": rows}


def judge(c, res):
    """Issue 8, point 3: memory-bound >= 90% of copy bandwidth and not
    slower than torch.compile (within spread: our median <= compile's p75);
    bf16 GEMM+epilogue >= 85% of the bf16 matrix rate and not slower than
    torch.compile; f32 GEMM not slower than torch (eager)."""
    v = res["variants"]
    mine = [k for k in v if k.startswith("ours") and res["checks"].get(k, {}).get("ok")]
    if not mine:
        return {"met": False, "why": "no correct kernel of ours"}
    best = min(mine, key=lambda k: v[k]["median"])
    o = v[best]
    notes, met = [], True
    best_torch = min((v[k]["median"], k) for k in v if k not in OURS)
    if c["kind"] == "mem" or c.get("rate") == "bf16":
        need = 0.90 if c["kind"] == "mem" else 0.85
        if o["fraction"] < need:
            met = False
            notes.append("%.1f%% of the ceiling, target %d%%" % (100 * o["fraction"], 100 * need))
        comp = [k for k in v if k.startswith("compile")]
        for k in comp:
            if o["median"] > v[k]["p75"]:
                met = False
                notes.append("%.2fx the time of %s" % (o["median"] / v[k]["median"], k))
    else:  # f32 GEMM cases: not slower than the torch variants named (eager by default)
        for k in c.get("vs", ("eager",)):
            if k in v and o["median"] > v[k]["p75"]:
                met = False
                notes.append("%.2fx the time of torch %s" % (o["median"] / v[k]["median"], k))
    return {"met": met, "why": "; ".join(notes), "ours": best, "best_torch": best_torch[1],
            "vs_best_torch": o["median"] / best_torch[0]}


OURS = ("ours",) + tuple(t for t, _ in ALTS) + ("ours_sm90a", "mlir_default", "ours_tf32")
COLS = [("ours", "ours")] + [(t, t.replace("ours_", "ours ")) for t, _ in ALTS] + [
        ("ours_sm90a", "ours sm_90a"),
        ("mlir_default", "MLIR default"),
        ("eager", "eager"),
        ("compile", "compile"), ("compile_max_autotune", "max-autotune"),
        ("ours_tf32", "ours TF32"), ("eager_tf32", "eager TF32"), ("compile_tf32", "compile TF32")]


def p44_cases(path):
    """KernelBench L3 P44 (bench/gpu/p44.py's JSON, written by
    bench/gpu/p44-device.sh in the same device job) as suite cases: one per
    batch, its variants side by side from that one run, exact and TF32
    (labelled). Target: ours ahead of torch.compile in each precision mode
    that both have."""
    d = json.load(open(path))
    cases = []
    for b, res in sorted(d.get("results", {}).items(), key=lambda kv: int(kv[0])):
        variants, checks = {}, {}
        for k, r in res.items():
            if "ms" not in r:
                continue
            variants[k] = {"n": r.get("n", 0), "median": r["ms"], "min": r.get("min_ms", r["ms"]),
                           "max": r.get("max_ms", r["ms"]), "x_eager": r.get("speedup_vs_eager")}
            checks[k] = {"ok": bool(r.get("ok")), "rel_err_vs_float64": r.get("rel"),
                         "max_abs_vs_float64": r.get("max_abs"), "tf32": r.get("tf32")}
        why = []
        for o, t in (("ours", "compile"), ("ours_tf32", "compile_tf32")):
            if o in variants and t in variants:
                ratio = variants[o]["median"] / variants[t]["median"]
                if not (ratio < 1 and checks[o]["ok"]):
                    why.append("%s %.2fx %s" % (o, ratio, t))
        cases.append({"name": "p44_b%s" % b, "kind": "e2e",
                      "title": "KernelBench L3 P44 MiniGPT block f32 B=%s T=512 (AOT)" % b,
                      "variants": variants, "checks": checks, "errors": {},
                      "reference": "float64 torch on the same weights",
                      "fact_speedup_b128_a100": d.get("fact_speedup_b128_a100"),
                      "target": {"met": not why and "ours" in variants, "why": "; ".join(why),
                                 "ours": "ours"}})
    return cases


def table(results, ceil):
    lines = []
    lines.append("ceilings: copy %.0f GB/s (read+write), bf16 matmul %.0f TFLOP/s, "
                 "f32 matmul (no TF32) %.1f TFLOP/s"
                 % (ceil["copy_GBps"], ceil["bf16_TFLOPs"], ceil["f32_TFLOPs"]))
    hdr = "| case | " + " | ".join("%s ms" % n for _, n in COLS) + \
        " | ours of ceiling | best torch of ceiling | ours spread (min-max) | checks | target |"
    lines.append(hdr)
    lines.append("|" + "---|" * (hdr.count("|") - 1))
    for r in results:
        v = r["variants"]
        cells = []
        for k, _ in COLS:
            if k in v:
                ok = r["checks"].get(k, {}).get("ok")
                cells.append("%.3f%s" % (v[k]["median"], "" if ok else " (WRONG)"))
            else:
                cells.append("-" if k not in r["errors"] else "err")
        torch_keys = [k for k in v if k not in OURS]
        bt = min(torch_keys, key=lambda k: v[k]["median"]) if torch_keys else None
        o = v.get(r.get("target", {}).get("ours") or "ours")
        frac_o = "%.1f%%" % (100 * o["fraction"]) if o and "fraction" in o else "-"
        frac_t = "%.1f%% (%s)" % (100 * v[bt]["fraction"], bt) if bt and "fraction" in v[bt] \
            else "-"
        spread = "%.3f-%.3f" % (o["min"], o["max"]) if o else "-"
        checks = "all ok" if all(x.get("ok") for x in r["checks"].values()) else \
            "FAIL: " + ",".join(k for k, x in r["checks"].items() if not x.get("ok"))
        tg = r.get("target", {})
        target = "met" if tg.get("met") else "missed: " + tg.get("why", "")
        lines.append("| %s | %s | %s | %s | %s | %s | %s |"
                     % (r["title"], " | ".join(cells), frac_o, frac_t, spread, checks, target))
    return "\n".join(lines)


def chart(results, path, meta=None):
    """The PNG: bench/gpu/chart.py (also runnable on a results JSON alone)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import chart as chart_mod
    return chart_mod.draw(results, path, meta)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--json")
    ap.add_argument("--png")
    ap.add_argument("--cases", default="", metavar="NAME[,NAME]",
                    help="run only these cases (case_defs() names), e.g. "
                         "add_rmsnorm_bf16,rmsnorm_bf16")
    ap.add_argument("--no-compile", action="store_true")
    ap.add_argument("--no-autotune", action="store_true")
    ap.add_argument("--p44", metavar="JSON",
                    help="bench/gpu/p44.py's results of this device job: KernelBench L3 P44 "
                         "joins the table, the JSON and the PNG as cases p44_b<B>")
    ap.add_argument("--budget-ms", type=float, default=300.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--flush", choices=FLUSH_MODES, default="memset",
                    help="the L2 flush before each sample: memset (256 MiB, leaves dirty "
                         "lines) or clean (the memset, then a 256 MiB read-only sweep)")
    ap.add_argument("--profile", action="store_true",
                    help="also profile ours, compile and eager (torch.profiler): GPU time per "
                         "kernel per call against the host clock")
    args = ap.parse_args()

    def log(msg):
        print(msg, flush=True)

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    root = args.dir
    rt = Runtime(os.path.join(root, "libllm_fuse_rt.so"))
    staged = set(os.listdir(root))
    prop = torch.cuda.get_device_properties(0)
    meta = {"device": prop.name, "sms": prop.multi_processor_count,
            "torch": torch.__version__, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "argv": sys.argv[1:], "allow_tf32": torch.backends.cuda.matmul.allow_tf32}
    try:
        import triton
        meta["triton"] = triton.__version__
    except Exception:
        pass
    log("device %s, torch %s" % (prop.name, torch.__version__))
    timer = Timer(args.flush)
    if args.flush != "memset":
        meta["flush"] = args.flush
    ceil = ceilings(timer)
    log("ceilings: copy %.0f GB/s, bf16 %.0f TFLOP/s, f32 %.1f TFLOP/s"
        % (ceil["copy_GBps"], ceil["bf16_TFLOPs"], ceil["f32_TFLOPs"]))
    want = [s for s in args.cases.split(",") if s]
    unknown = sorted(set(want) - {c["name"] for c in case_defs()})
    if unknown:
        ap.error("unknown case(s): %s" % ", ".join(unknown))
    results = []
    out = {"schema": "llm-fuse-gpu-bench/0", "meta": meta, "ceilings": ceil, "cases": results}

    def save():
        if args.json:
            with open(args.json, "w") as f:
                json.dump(out, f, indent=1)

    for c in case_defs():
        if want and c["name"] not in want:
            continue
        if not (any(sg in staged for sg, _, _ in c["parts"]) or
                (c.get("aot") and os.path.exists(os.path.join(root, c["aot"], "swapped.so")))):
            log("%s: not staged, skipped" % c["name"])
            continue
        log("%s" % c["title"])
        t0 = time.time()
        try:
            r = run_case(c, root, rt, timer, ceil, args, log)
        except Exception as e:
            traceback.print_exc()
            r = {"name": c["name"], "title": c["title"], "kind": c["kind"], "variants": {},
                 "checks": {}, "errors": {"case": "%s: %s" % (type(e).__name__, e)}}
            torch.cuda.empty_cache()
        r["wall_s"] = round(time.time() - t0, 1)
        results.append(r)
        v = r["variants"]
        log("  " + ", ".join("%s %.3f ms" % (k, s["median"]) for k, s in v.items()) +
            "  [%.0f s]" % r["wall_s"])
        save()
    if args.p44:
        if os.path.exists(args.p44):
            results.extend(p44_cases(args.p44))
        else:
            log("p44: %s not found (bench/gpu/p44-device.sh did not finish?)" % args.p44)
    text = table(results, ceil)
    out["table"] = text
    if args.png:
        log(chart(results, args.png, meta))
    save()
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
