"""event_time.py - one timed call of a torch function, as the small device
scripts time their torch baselines (bench/table/tf32-device.sh,
tf32-wgmma-device.sh, bench/gpu/p44_gemms.py): warm-up calls, then `n`
calls each between CUDA events with a 256 MiB memset before it (an L2
flush); the median in ms. The suite's interleaved rounds are
bench/gpu/run.py's time_variants."""
import statistics

import torch


def median_ms(fn, n=20, warmup=1):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    ts = []
    for _ in range(n):
        flush.zero_()
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    return statistics.median(ts)
