#!/usr/bin/env python3
"""Probe: an UNMASKED plan on a CUDA-graph prefill wrapper constructed with custom_mask_buf/mask_indptr_buf.

Predicted from the source (docs/flashinfer-adapter.md, "Graph wrappers as engines allocate them"), for
flashinfer-python 0.7.2.post1 and 0.7.4 alike: in CUDA-graph mode plan() writes the mask buffers only when
a mask is given and never clears them (0.7.2 prefill.py:3509 paged, :5267 ragged; 0.7.4 :4068, :6099 --
the eager branches set them to None, 0.7.2 :3543-3545), while run() picks MaskMode.CUSTOM whenever
`_custom_mask_buf is not None` (0.7.2 :4382 paged, :6405 ragged; 0.7.4 :5112, :7423). So an unmasked
plan on such a wrapper runs the custom-mask kernel over whatever the buffer holds: all zeros on a
wrapper that never saw a mask (every key masked out), the previous plan's bits after a masked plan.
SGLang says the same in a comment and refuses it (python/sglang/srt/layers/attention/
flashinfer_backend.py of 0.5.23, lines 1175-1179 and 2332-2345).

Per API (paged, ragged), fa2, bf16, head dim 128, 3 requests, causal (bottom-right):
  control           graph wrapper WITHOUT mask buffers, unmasked plan            (expected: correct)
  unmasked first    graph wrapper WITH mask buffers (zeroed), unmasked plan       (prediction: wrong)
  masked            the same wrapper, a masked plan                               (expected: correct)
  then unmasked     the same wrapper, the unmasked plan again                     (prediction: wrong)
Each run is warmed up, captured in a torch.cuda.CUDAGraph and replayed (as a serving engine does), and
its output compared with an fp32 reference computed here and with an eager (non-graph) wrapper given
the same plan.

    python3 probe_flashinfer_graph_mask_buffers_unmasked.py
    # exit 1: an unmasked plan on a mask-buffer wrapper is wrong (the defect shows)
    # exit 0: every run matches the reference
    # exit 2: the control or a masked run is wrong (the probe itself is in doubt)

Only torch and flashinfer; no attncheck code. About 1-2 minutes on an H200 with a cold JIT cache (the fa2
bf16-128 modules, with and without the custom mask), seconds when they are built.
"""
import sys

import torch

HQ, HKV, D, PAGE = 8, 2, 128, 16
QO, KV = [7, 12, 5], [40, 12, 33]
TOL = 3e-2  # bf16 output against fp32; a masked-out row is off by O(0.1-1)
DEV, BF = "cuda", torch.bfloat16
MASK_BYTES = 1 << 16


def i32(xs):
    return torch.tensor(xs, dtype=torch.int32, device=DEV)


def indptr(lens):
    out = [0]
    for n in lens:
        out.append(out[-1] + n)
    return out


def reference(q, k, v, mask):
    """fp32 attention per request: bottom-right causal, AND the custom mask where given."""
    qi, ki = indptr(QO), indptr(KV)
    outs = []
    for b, (qo, kv) in enumerate(zip(QO, KV)):
        qb = q[qi[b]:qi[b + 1]].float()
        kb = k[ki[b]:ki[b + 1]].float().repeat_interleave(HQ // HKV, 1)
        vb = v[ki[b]:ki[b + 1]].float().repeat_interleave(HQ // HKV, 1)
        s = torch.einsum("qhd,khd->hqk", qb, kb) / D**0.5
        keep = torch.arange(kv, device=DEV).view(1, -1) <= torch.arange(qo, device=DEV).view(-1, 1) + (kv - qo)
        if mask is not None:
            keep = keep & mask[b]
        s = s.masked_fill(~keep, float("-inf"))
        outs.append(torch.einsum("hqk,khd->qhd", torch.softmax(s, -1).nan_to_num(0.0), vb))
    return torch.cat(outs)


def graph_run(w, args):
    """Warm-up on a side stream, capture, replay; returns the output the replay wrote."""
    out = torch.empty(sum(QO), HQ, D, device=DEV, dtype=BF)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        w.run(*args, out=out)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        w.run(*args, out=out)
    out.fill_(float("nan"))
    g.replay()
    torch.cuda.synchronize()
    return out.clone()


class Api:
    """One prefill API: constructor arguments, plan() arguments and run() inputs of the same batch."""

    def __init__(self, name, flashinfer):
        self.name, self.fi = name, flashinfer
        self.q = torch.randn(sum(QO), HQ, D, device=DEV, dtype=BF)
        self.k = torch.randn(sum(KV), HKV, D, device=DEV, dtype=BF)
        self.v = torch.randn(sum(KV), HKV, D, device=DEV, dtype=BF)
        self.pages = [(n + PAGE - 1) // PAGE for n in KV]
        perm = torch.randperm(sum(self.pages) + 4, device=DEV)[: sum(self.pages)].to(torch.int32)
        self.page_indices = perm
        self.last = [n - (p - 1) * PAGE for n, p in zip(KV, self.pages)]
        cache = torch.zeros(sum(self.pages) + 4, PAGE, HKV, D, device=DEV, dtype=BF)
        self.k_cache, self.v_cache = cache.clone(), cache.clone()
        ki = indptr(KV)
        for b, p in enumerate(indptr(self.pages)[:-1]):
            for j in range(self.pages[b]):
                t0, t1 = ki[b] + j * PAGE, min(ki[b] + (j + 1) * PAGE, ki[b + 1])
                self.k_cache[perm[p + j], : t1 - t0] = self.k[t0:t1]
                self.v_cache[perm[p + j], : t1 - t0] = self.v[t0:t1]

    def make(self, graph, mask_buffers):
        ws = torch.zeros(128 * 2**20, dtype=torch.uint8, device=DEV)
        b = len(QO)
        kw = dict(backend="fa2")
        if graph:
            kw.update(use_cuda_graph=True, qo_indptr_buf=torch.zeros(b + 1, dtype=torch.int32, device=DEV))
            if mask_buffers:
                kw.update(
                    custom_mask_buf=torch.zeros(MASK_BYTES, dtype=torch.uint8, device=DEV),
                    mask_indptr_buf=torch.zeros(b + 1, dtype=torch.int32, device=DEV),
                )
            if self.name == "paged":
                kw.update(
                    paged_kv_indptr_buf=torch.zeros(b + 1, dtype=torch.int32, device=DEV),
                    paged_kv_indices_buf=torch.zeros(1024, dtype=torch.int32, device=DEV),
                    paged_kv_last_page_len_buf=torch.zeros(b, dtype=torch.int32, device=DEV),
                )
            else:
                kw.update(kv_indptr_buf=torch.zeros(b + 1, dtype=torch.int32, device=DEV))
        cls = (
            self.fi.BatchPrefillWithPagedKVCacheWrapper if self.name == "paged"
            else self.fi.BatchPrefillWithRaggedKVCacheWrapper
        )
        return cls(ws, "NHD", **kw)

    def plan(self, w, mask):
        flat = torch.cat([m.reshape(-1) for m in mask]) if mask is not None else None
        common = dict(causal=True, q_data_type=BF, kv_data_type=BF, custom_mask=flat)
        if self.name == "paged":
            w.plan(i32(indptr(QO)), i32(indptr(self.pages)), self.page_indices, i32(self.last),
                   HQ, HKV, D, PAGE, **common)
        else:
            w.plan(i32(indptr(QO)), i32(indptr(KV)), HQ, HKV, D, **common)

    def run_args(self):
        return (self.q, (self.k_cache, self.v_cache)) if self.name == "paged" else (self.q, self.k, self.v)

    def eager_out(self, mask):
        w = self.make(graph=False, mask_buffers=False)
        self.plan(w, mask)
        out = w.run(*self.run_args())
        torch.cuda.synchronize()
        return out


def main():
    import flashinfer

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    torch.manual_seed(0)
    defect, doubt = [], []
    for name in ("paged", "ragged"):
        api = Api(name, flashinfer)
        # A random mask that keeps each row's diagonal key (so no row is fully masked), ANDed with causal.
        mask = []
        for qo, kv in zip(QO, KV):
            m = torch.rand(qo, kv, device=DEV) < 0.5
            m[torch.arange(qo), torch.arange(qo) + (kv - qo)] = True
            mask.append(m & (torch.arange(kv, device=DEV).view(1, -1) <= torch.arange(qo, device=DEV).view(-1, 1) + (kv - qo)))
        ref = {None: reference(api.q, api.k, api.v, None), "mask": reference(api.q, api.k, api.v, mask)}
        eager = {None: api.eager_out(None), "mask": api.eager_out(mask)}
        control = api.make(graph=True, mask_buffers=False)
        shared = api.make(graph=True, mask_buffers=True)
        steps = [("control", control, None), ("unmasked first", shared, None),
                 ("masked", shared, "mask"), ("then unmasked", shared, None)]
        for step, w, which in steps:
            api.plan(w, mask if which else None)
            try:
                out = graph_run(w, api.run_args())
                err_ref = float((out.float() - ref[which]).abs().nan_to_num(float("inf")).max())
                err_eager = float((out.float() - eager[which].float()).abs().nan_to_num(float("inf")).max())
                bad_rows = int(((out.float() - ref[which]).abs().nan_to_num(float("inf")) > TOL).any(-1).any(-1).sum())
                note = f"max|out-ref| {err_ref:.3g}, max|out-eager| {err_eager:.3g}, rows off {bad_rows}/{sum(QO)}"
                ok = err_ref <= TOL
            except Exception as e:  # noqa: BLE001 - a raise is an answer too
                note, ok = f"raised {type(e).__name__}: {str(e).splitlines()[0][:160]}", False
            print(f"{'ok  ' if ok else 'FAIL'} {name:6} {step:15} {note}", flush=True)
            if not ok:
                (doubt if step in ("control", "masked") else defect).append(f"{name}: {step}")
    if doubt:
        print("the probe is in doubt (a run that should be right is wrong): " + ", ".join(doubt))
        return 2
    if defect:
        print("an unmasked plan on a graph wrapper holding mask buffers is wrong: " + ", ".join(defect))
        return 1
    print("every run matches the reference")
    return 0


if __name__ == "__main__":
    sys.exit(main())
