#!/usr/bin/env python3
"""Probe: which batches FlashInfer's cuDNN backend declines on this GPU (page size, fp8), each alone.

Seen through attncheck on the H200 (2026-12-01, fourth sitting, `--backend cudnn`): decode at page
size 5 raised cudnnGraphNotSupportedError ("block size needs to be non-zero and a power of 2",
blockSize_k) where pages of 1 and 16 ran; paged prefill with fp8 q and KV raised "sdpa fp8 forward
operation is only supported on Blackwell architecture and newer". The adapter's supports() declines
what this probe shows declined (kernels/flashinfer_support.py), so the matrix records a skip with the
reason instead of an error. Each variant: plan + run of one small batch; "ok" or the raise.

    python3 probe_flashinfer_cudnn_limits.py      # prints one line per variant; exit 0

Only torch and flashinfer; no attncheck code.
"""
import torch

HQ, HKV, D = 8, 2, 128


def paged_cache(kv, page, dtype):
    pages = [(m + page - 1) // page for m in kv]
    kc = torch.randn(sum(pages), page, HKV, D, device="cuda").to(dtype)
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device="cuda")  # noqa: E731
    indptr = i32([sum(pages[:j]) for j in range(len(pages) + 1)])
    last = i32([m - (p - 1) * page for m, p in zip(kv, pages)])
    return (kc, torch.randn_like(kc.float()).to(dtype)), indptr, i32(list(range(sum(pages)))), last


def decode(flashinfer, page, kv=(300, 1031)):
    bf = torch.bfloat16
    cache, indptr, indices, last = paged_cache(kv, page, bf)
    w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(torch.zeros(256 * 2**20, dtype=torch.uint8, device="cuda"),
                                                      "NHD", backend="cudnn")
    w.plan(indptr, indices, last, HQ, HKV, D, page, q_data_type=bf, kv_data_type=bf)
    return w.run(torch.randn(len(kv), HQ, D, device="cuda").to(bf), cache)


def prefill(flashinfer, page, dtype, qo=(4, 17), kv=(50, 300)):
    cache, indptr, indices, last = paged_cache(kv, page, dtype)
    i32 = lambda xs: torch.tensor(xs, dtype=torch.int32, device="cuda")  # noqa: E731
    w = flashinfer.BatchPrefillWithPagedKVCacheWrapper(torch.zeros(256 * 2**20, dtype=torch.uint8, device="cuda"),
                                                       "NHD", backend="cudnn")
    w.plan(i32([0, qo[0], sum(qo)]), indptr, indices, last, HQ, HKV, D, page, causal=True, q_data_type=dtype,
           kv_data_type=dtype, o_data_type=torch.bfloat16)
    return w.run(torch.randn(sum(qo), HQ, D, device="cuda").to(dtype), cache)


def main():
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, cudnn {torch.backends.cudnn.version()}, "
          f"{torch.cuda.get_device_name()}")
    e4m3, bf = torch.float8_e4m3fn, torch.bfloat16
    variants = [(f"decode bf16, page {p}", lambda p=p: decode(flashinfer, p)) for p in (1, 4, 5, 8, 12, 16)]
    variants += [(f"paged prefill bf16, page {p}", lambda p=p: prefill(flashinfer, p, bf)) for p in (1, 5, 16)]
    variants += [("paged prefill fp8 e4m3 q/kv, page 16", lambda: prefill(flashinfer, 16, e4m3))]
    for name, call in variants:
        try:
            call()
            torch.cuda.synchronize()
            print(f"ok       {name}", flush=True)
        except Exception as e:  # noqa: BLE001 - the raise is the observation
            print(f"declined {name}: {type(e).__name__}: {str(e).splitlines()[0][:220]}", flush=True)


if __name__ == "__main__":
    main()
