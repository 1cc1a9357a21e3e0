#!/usr/bin/env python3
"""p44.py - KernelBench level 3 problem 44 (44_MiniGPTBlock.py) end to end:
the block compiled ahead of time by llm-fuse (bench/gpu/p44-device.sh builds
WORK/p44_b<B>-ours.so, and -ours_tf32.so when the pass has tf32=true)
against torch eager and torch.compile, each also with TF32 allowed, at
batch 32 and 128, one process, the same seeded inputs and weights.

    python3 bench/gpu/p44.py WORK [--batches "32 128"] [--json OUT.json]

Per variant: the time (host clock around one synchronous call, an L2
flush and a synchronize before it, warm-up first, the median of --iters
calls spread over 3 interleaved rounds; the AOT model runs on its own
stream and synchronizes, so every variant is timed alike), the speed-up
over eager (no TF32), and the error against the same block computed in
float64 by torch on the upcast weights: max |out - ref| and
||out - ref|| / ||ref||. Our output is poisoned with NaN before the
checked run. A variant fails when its relative error is above 1e-3 (5e-3
for TF32 variants) or any element is not finite.

The model is KernelBench's, f32, dropout 0 (its attn_pdrop = resid_pdrop =
0): nn.Linear default initialisation, LayerNorm weight 1 + 0.1 N(0, 1) and
bias 0.1 N(0, 1) (not 1 and 0, so that a dropped affine shows), x N(0, 1).
FACT (the paper) reports 2.79x over eager on an A100, torch.compile 1.86x,
at batch 128.
"""
import argparse
import ctypes
import json
import math
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

C, H, T = 768, 8, 512
FACT_SPEEDUP = 2.79
FLUSH = None


class NewGELU(nn.Module):
    def forward(self, x):
        return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head, max_seqlen):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.register_buffer("bias", torch.tril(torch.ones(max_seqlen, max_seqlen))
                             .view(1, 1, max_seqlen, max_seqlen))
        self.n_head, self.n_embd = n_head, n_embd

    def forward(self, x):
        B, T_, C_ = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        k = k.view(B, T_, self.n_head, C_ // self.n_head).transpose(1, 2)
        q = q.view(B, T_, self.n_head, C_ // self.n_head).transpose(1, 2)
        v = v.view(B, T_, self.n_head, C_ // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T_, :T_] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T_, C_)
        return self.c_proj(y)


class Model(nn.Module):
    """KernelBench's Model (the MiniGPT block), dropout 0."""

    def __init__(self, n_embd=C, n_head=H, max_seqlen=T):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head, max_seqlen)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.ModuleDict(dict(c_fc=nn.Linear(n_embd, 4 * n_embd),
                                      c_proj=nn.Linear(4 * n_embd, n_embd), act=NewGELU()))
        m = self.mlp
        self.mlpf = lambda x: m.c_proj(m.act(m.c_fc(x)))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlpf(self.ln_2(x))


def params(m):
    """The AOT entry's weight arguments, in gen_p44.py's order."""
    return [m.ln_1.weight, m.ln_1.bias, m.attn.c_attn.weight, m.attn.c_attn.bias,
            m.attn.c_proj.weight, m.attn.c_proj.bias, m.ln_2.weight, m.ln_2.bias,
            m.mlp.c_fc.weight, m.mlp.c_fc.bias, m.mlp.c_proj.weight, m.mlp.c_proj.bias]


def set_tf32(on):
    torch.backends.cuda.matmul.allow_tf32 = on
    torch.backends.cudnn.allow_tf32 = on


def aot(so_path, ins, out):
    lib = ctypes.CDLL(so_path)
    lib.lf_bench_run_packed.restype = ctypes.c_int
    lib.lf_bench_run_packed.argtypes = [ctypes.POINTER(ctypes.c_void_p)]
    lib.lf_bench_num_args.restype = ctypes.c_int
    n = lib.lf_bench_num_args()
    if n != len(ins) + 1:
        raise RuntimeError("%s takes %d buffers, not %d" % (so_path, n, len(ins) + 1))
    args = (ctypes.c_void_p * n)(*[t.data_ptr() for t in ins + [out]])
    rt = ctypes.CDLL("libllm_fuse_rt.so")
    rt.lf_rt_last_error.restype = ctypes.c_char_p

    def run():
        torch.cuda.synchronize()  # torch's writes (the poison) before the model's stream
        if lib.lf_bench_run_packed(args):
            raise RuntimeError("%s: %s" % (os.path.basename(so_path),
                                           rt.lf_rt_last_error().decode(errors="replace")))
        return out
    run.keep = (lib, args)
    return run


def time_variants(variants, iters, rounds=3):
    """name -> list of ms; host clock around one synchronous call."""
    times = {k: [] for k in variants}
    for _ in range(rounds):
        for k, (fn, tf32) in variants.items():
            set_tf32(tf32)
            for _ in range(max(1, iters // rounds)):
                FLUSH.zero_()
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                times[k].append((time.perf_counter() - t0) * 1e3)
    set_tf32(False)
    return times


def one_batch(work, b, iters, seed):
    torch.manual_seed(seed)
    set_tf32(False)
    model = Model().cuda().eval().requires_grad_(False)
    with torch.no_grad():
        for ln in (model.ln_1, model.ln_2):
            ln.weight.copy_(1 + 0.1 * torch.randn(C, device="cuda"))
            ln.bias.copy_(0.1 * torch.randn(C, device="cuda"))
    x = torch.randn(b, T, C, device="cuda")
    with torch.no_grad():
        ref = Model().cuda().double().eval()
        ref.load_state_dict({k: v.double() for k, v in model.state_dict().items()})
        y64 = ref(x.double())
        del ref
    torch.cuda.empty_cache()
    ins = [x] + [p.detach().contiguous() for p in params(model)]
    variants = {}
    for v in ("ours", "ours_tf32"):
        so = os.path.join(work, "p44_b%d-%s.so" % (b, v))
        if os.path.exists(so):
            out = torch.empty(b, T, C, device="cuda")
            variants[v] = (aot(so, ins, out), v == "ours_tf32")
    compiled = {tf: torch.compile(model) for tf in (False, True)}
    for tf in (False, True):
        sfx = "_tf32" if tf else ""
        variants["eager" + sfx] = (lambda: model(x), tf)
        variants["compile" + sfx] = (lambda tf=tf: compiled[tf](x), tf)
    res = {}
    with torch.no_grad():
        for k, (fn, tf) in variants.items():
            set_tf32(tf)
            for _ in range(3):  # warm-up (compiles the torch.compile variants)
                fn()
            torch.cuda.synchronize()
            if k.startswith("ours"):
                out = torch.full((b, T, C), float("nan"), device="cuda")
                fn2 = aot(os.path.join(work, "p44_b%d-%s.so" % (b, k)), ins, out)
                y = fn2()
            else:
                y = fn()
            torch.cuda.synchronize()
            d = y.double() - y64
            res[k] = dict(max_abs=float(d.abs().max()),
                          rel=float(d.norm() / y64.norm()),
                          finite=bool(torch.isfinite(y).all()), tf32=tf)
        set_tf32(False)
        times = time_variants(variants, iters)
    base = statistics.median(times["eager"])
    for k, ts in times.items():
        r = res[k]
        r["ms"] = statistics.median(ts)
        r["min_ms"], r["max_ms"] = min(ts), max(ts)
        r["speedup_vs_eager"] = base / r["ms"]
        tol = 5e-3 if r["tf32"] else 1e-3
        r["ok"] = r["finite"] and r["rel"] <= tol
    return res


def main():
    global FLUSH
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("work")
    ap.add_argument("--batches", default="32 128")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json")
    a = ap.parse_args()
    torch.cuda.init()
    FLUSH = torch.empty(256 << 20, dtype=torch.uint8, device="cuda")
    allres = {}
    for b in [int(s) for s in a.batches.split()]:
        allres[b] = one_batch(a.work, b, a.iters, a.seed + b)
        torch.cuda.empty_cache()
    if a.json:
        json.dump({"device": torch.cuda.get_device_name(), "torch": torch.__version__,
                   "fact_speedup_b128_a100": FACT_SPEEDUP, "results": allres},
                  open(a.json, "w"), indent=1)
    print()
    print("KernelBench L3 P44 (MiniGPT block, f32, T=%d, C=%d, %d heads of %d) on %s"
          % (T, C, H, C // H, torch.cuda.get_device_name()))
    print("%-6s %-12s %9s %9s %12s %10s %s" % ("batch", "variant", "ms", "x eager",
                                              "max|err|", "rel err", "check"))
    fails = 0
    for b, res in allres.items():
        for k, r in res.items():
            note = "" if r["ok"] else "FAIL"
            fails += not r["ok"]
            print("%-6d %-12s %9.3f %8.2fx %12.3e %10.2e %s"
                  % (b, k, r["ms"], r["speedup_vs_eager"], r["max_abs"], r["rel"], note or "ok"))
        best = {p: min((r["ms"] for k, r in res.items() if k.startswith("compile") and r["tf32"] == p),
                       default=None) for p in (False, True)}
        for v, p in (("ours", False), ("ours_tf32", True)):
            if v in res and best[p]:
                print("%-6d %s vs torch.compile (%s): %.2fx" % (b, v, "TF32" if p else "no TF32",
                                                                best[p] / res[v]["ms"]))
    print("FACT (paper, A100, batch 128): %.2fx over eager; torch.compile 1.86x" % FACT_SPEEDUP)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
