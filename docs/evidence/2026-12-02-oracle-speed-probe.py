"""Where the oracle's time goes on the H200 (issue 20 item 3), kept as it ran.

    PYTHONPATH=$PWD python3 docs/evidence/2026-12-02-oracle-speed-probe.py $OUT

1. The old oracle (.probe/reference_orig.py, commit 0057c98, if carried), the new one, SDPA math
   and SDPA efficient on issue 20's shape (32/8 heads, q 4096, kv 8192, d 128, fp32, TF32 off).
2. fp32 GEMM ceilings: 8192^3, and SDPA math's two batched matmuls on that shape.
3. One chunk's steps at several chunk shapes (CUDA events, median of 10), scaled to the whole shape.
4. Old against new oracle on every shape of benchmarks/oracle_bench.py.
"""
import importlib.util
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.getcwd())
sys.path.insert(0, os.path.join(os.getcwd(), "benchmarks"))
torch.backends.cuda.matmul.allow_tf32 = False
torch.backends.cudnn.allow_tf32 = False
torch.set_float32_matmul_precision("highest")

from oracle_bench import SHAPES, attended_flops, sdpa  # noqa: E402
from torch.nn.attention import SDPBackend  # noqa: E402

from oracle.reference import attention  # noqa: E402
from scenarios.tensors import materialize  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
SMOKE = bool(os.environ.get("PROBE_SMOKE"))  # a dry run of the code paths on the CPU, tiny sizes
DEV = "cpu" if SMOKE else "cuda"
if SMOKE:
    torch.cuda.synchronize = lambda: None
    torch.cuda.get_device_name = lambda: "cpu"
res: dict = {"env": {"torch": torch.__version__, "device": torch.cuda.get_device_name(),
                     "tf32": torch.backends.cuda.matmul.allow_tf32}}
old = None
if os.path.exists(".probe/reference_orig.py"):
    spec = importlib.util.spec_from_file_location("reference_orig", ".probe/reference_orig.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules["reference_orig"] = mod
    spec.loader.exec_module(mod)
    old = mod.attention


def wall(fn, reps=3):
    best = float("inf")
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - t0)
    return best


def events(fn, reps=10):
    if SMOKE:
        return wall(fn, 1) * 1e6
    for _ in range(3):
        fn()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) * 1e3)  # us
    return statistics.median(ts)


# 1. the whole shape
big = SHAPES["prefill q512 kv4096 h32/8 causal" if SMOKE else "q4096 kv8192 h32/8"]
inp = materialize(big, 0, DEV)
flops = attended_flops(big)
sides = {"new": lambda: attention(inp), "sdpa_math": lambda: sdpa(inp, SDPBackend.MATH),
         "sdpa_eff": lambda: sdpa(inp, SDPBackend.MATH if SMOKE else SDPBackend.EFFICIENT_ATTENTION)}
if old is not None:
    sides["old"] = lambda: old(inp)
whole = {}
for k, f in sides.items():
    f()
    whole[k] = wall(f)
ref = attention(inp)
whole["diff_new_vs_math"] = float((ref.out - sdpa(inp)).abs().max())
res["whole"] = whole
print("whole:", {k: (round(v * 1e3, 2), round(flops / v / 1e12, 1)) if k != "diff_new_vs_math" else v
                 for k, v in whole.items()}, flush=True)
del inp, ref

# 2. ceilings
N = 512 if SMOKE else 8192
a = torch.randn(N, N, device=DEV)
res["sgemm_8192_tflops"] = 2 * N**3 / events(lambda: a @ a, 5) / 1e6
del a
B = 1 if SMOKE else 32
q = torch.randn(B, 4096, 128, device=DEV)
kt = torch.randn(B, 128, 8192, device=DEV)
s = torch.empty(B, 4096, 8192, device=DEV)
v = torch.randn(B, 8192, 128, device=DEV)
t1 = events(lambda: torch.bmm(q, kt, out=s), 5)
t2 = events(lambda: torch.bmm(s, v), 5)
res["sdpa_like_bmm_us"] = {"qk": t1, "pv": t2, "qk_tflops": 2 * 32 * 4096 * 8192 * 128 / t1 / 1e6,
                           "pv_tflops": 2 * 32 * 4096 * 8192 * 128 / t2 / 1e6}
res["softmax_whole_us"] = events(lambda: torch.softmax(s, -1), 3)
del q, kt, s, v
print("ceilings:", res["sgemm_8192_tflops"], res["sdpa_like_bmm_us"], res["softmax_whole_us"], flush=True)

# 3. one chunk's steps; total = per-chunk time * chunks needed for 32 heads x 4096 rows x 8192 keys
KV, D = (512 if SMOKE else 8192), 128
chunks = {}
for n, m in ((1, 2048), (8, 256), (1, 512), (2, 1024), (1, 4096)):
    q = torch.randn(n, m, D, device=DEV)
    kst = torch.randn(KV, n, D, device=DEV)  # as stored: [keys, kv heads, D]
    s = torch.empty(n, m, KV, device=DEV)
    p = torch.rand(n, m, KV, device=DEV)
    mx = p.amax(-1, keepdim=True)
    step = {
        "qk_baddbmm_alpha": events(lambda: s.baddbmm_(q, kst.permute(1, 2, 0), beta=0.0, alpha=0.1)),
        "qk_bmm_out": events(lambda: torch.bmm(q, kst.permute(1, 2, 0), out=s)),
        "mul_": events(lambda: s.mul_(1.0)),
        "amax": events(lambda: p.amax(-1, keepdim=True)),
        "sub_": events(lambda: s.sub_(mx)),
        "exp_": events(lambda: s.exp_()),
        "sum": events(lambda: p.sum(-1, keepdim=True)),
        "div_": events(lambda: s.div_(mx)),
        "softmax": events(lambda: torch.softmax(p, -1)),
        "pv_strided_v": events(lambda: torch.bmm(p, kst.transpose(0, 1))),
        "pv_contig_v": events(lambda: torch.bmm(p, kst.transpose(0, 1).contiguous())),
    }
    count = (32 * 4096) // (n * m)  # a chunk covers n KV heads x m (group x rows) = n * m (head, row) pairs
    step = {k: round(v, 1) for k, v in step.items()}
    step["chunks"] = count
    step["gemm_ms"] = round((step["qk_baddbmm_alpha"] + step["pv_strided_v"]) * count / 1e3, 2)
    step["ew6_ms"] = round((step["amax"] + step["sub_"] + step["exp_"] + step["sum"]) * count / 1e3, 2)
    step["div_ms"] = round(step["div_"] * count / 1e3, 2)
    chunks[f"n{n}_m{m}"] = step
    print(f"chunk n{n} m{m}:", step, flush=True)
    del q, kst, s, p
res["chunks"] = chunks

# 4. old and new oracle on every bench shape
shapes = {}
for name, case in SHAPES.items():
    if SMOKE and "prefill" not in name:
        continue
    inp = materialize(case, 0, DEV)
    fs = {"new": lambda: attention(inp)}
    if old is not None:
        fs["old"] = lambda: old(inp)
    row = {}
    for k, f in fs.items():
        f()
        row[k + "_ms"] = round(wall(f) * 1e3, 2)
    row["sdpa_math_ms"] = round(wall(lambda: sdpa(inp)) * 1e3, 2)
    shapes[name] = row
    print(f"{name:30s}", row, flush=True)
    del inp
res["shapes"] = shapes
with open(os.path.join(OUT, "probe.json"), "w") as f:
    json.dump(res, f, indent=1)
