#!/usr/bin/env python
"""What FlashInfer's `backend="auto"` resolves to, per wrapper API and plan, on this GPU and install.

    python scripts/probe_flashinfer_auto_routing.py [--check REPO] [--out FILE.jsonl]

Self-contained: imports torch and flashinfer only. Each case plans one wrapper (bf16, head dim 128,
page size 16) and reads what auto resolved to where attncheck's adapter reads it
(kernels/flashinfer/adapter.py `resolved_backend_of`): the wrapper's `_backend` for paged and ragged,
the decode wrapper's `resolved_backend` property. plan() only: the choice is made there, and no kernel
runs (each new kernel variant still compiles once: fa2 and fa3, with and without a window, and decode).

Cases: paged and ragged at 1, 16, 64, 65, 128 and 300 query rows and a (64, 65) batch, with a custom mask,
a sliding window, an HND cache; decode at batch 1, 16 and 64, with and without tensor cores; and re-plans
of ONE wrapper: unmasked then masked, masked then unmasked, short then long, long then short, eager and
(paged, ragged) under CUDA graphs with rows the first plan fixed. One JSON line per case, then a table.

The JIT compiles for this GPU's arch only (FLASHINFER_CUDA_ARCH_LIST, MAX_JOBS = all cores, unless set);
set FLASHINFER_WORKSPACE_BASE to reuse a JIT cache. --skip-window leaves the window cases out (their
kernels are other variants: fewer compiles on a cold cache).

--check REPO imports attncheck from REPO (its root) and compares every plan with the routing spec of the
installed flashinfer version (routing.specs.flashinfer_cuda_spec, expected_sequence along each wrapper):
exit 1 on a disagreement, 0 when all agree or the version has no spec rows (said). Without --check, exit 0.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Optional

import torch

flashinfer: Any = None  # imported in main(), once the JIT's environment is set

HEAD_DIM = 128
PAGE = 16
HEADS = (8, 2)  # qo, kv
WINDOW = 32
EXTRA_KV = 64  # each request sees its query rows plus this many earlier keys
ROWS = (1, 16, 64, 65, 128, 300)
BATCHES = tuple((n,) for n in ROWS) + ((64, 65), (64, 64))
DEV = "cuda"
SKIP_WINDOW = False


class Plan:
    """One plan() of a wrapper: api, lengths and features (what the selector and the spec read)."""

    def __init__(
        self,
        api: str,
        qo: tuple[int, ...],
        *,
        mask: bool = False,
        window: bool = False,
        layout: str = "NHD",
        tensor_cores: bool = False,
    ) -> None:
        self.api, self.qo, self.mask, self.window, self.layout, self.tc = api, qo, mask, window, layout, tensor_cores
        self.kv = tuple(n + EXTRA_KV for n in qo) if api != "decode" else tuple(200 for _ in qo)

    def label(self) -> str:
        feats = [f for f, on in (("mask", self.mask), ("window", self.window), ("tc", self.tc)) if on]
        shape = f"batch={len(self.qo)}" if self.api == "decode" else f"qo={list(self.qo)}"
        layout = f" {self.layout}" if self.layout != "NHD" else ""
        return f"{self.api} {shape}{layout}" + "".join(f" +{f}" for f in feats)

    def to_json(self) -> dict[str, Any]:
        return {
            "api": self.api,
            "qo_lens": list(self.qo),
            "kv_lens": list(self.kv),
            "mask": self.mask,
            "window": self.window,
            "kv_layout": self.layout,
            "tensor_cores": self.tc,
        }


def _i32(values: list[int]) -> torch.Tensor:
    return torch.tensor(values, dtype=torch.int32, device=DEV)


def _indptr(lens: tuple[int, ...]) -> list[int]:
    out = [0]
    for n in lens:
        out.append(out[-1] + n)
    return out


def _pages(kv: tuple[int, ...]) -> tuple[list[int], list[int], list[int]]:
    """(page indptr, page indices, last page lengths) for these KV lengths."""
    counts = [max(1, -(-n // PAGE)) for n in kv]
    indptr = _indptr(tuple(counts))
    last = [n - (c - 1) * PAGE for n, c in zip(kv, counts)]
    return indptr, list(range(indptr[-1])), last


def _mask(p: Plan) -> Optional[torch.Tensor]:
    if not p.mask:
        return None
    bits = sum(q * k for q, k in zip(p.qo, p.kv))
    return (torch.rand(bits, device=DEV) > 0.3).contiguous()


WORKSPACE: Optional[torch.Tensor] = None


def _workspace() -> torch.Tensor:
    global WORKSPACE
    if WORKSPACE is None:
        WORKSPACE = torch.zeros(256 << 20, dtype=torch.uint8, device=DEV)  # plan only: wrappers may share it
    return WORKSPACE


def make_wrapper(first: Plan, graph: bool) -> Any:
    """A new auto wrapper for `first`'s API and layout (under CUDA graphs: buffers sized by `first`)."""
    ws = _workspace()
    if first.api == "decode":
        return flashinfer.BatchDecodeWithPagedKVCacheWrapper(
            ws, first.layout, use_tensor_cores=first.tc, backend="auto"
        )
    cls = (
        flashinfer.BatchPrefillWithPagedKVCacheWrapper
        if first.api == "paged"
        else flashinfer.BatchPrefillWithRaggedKVCacheWrapper
    )
    if not graph:
        return cls(ws, first.layout, backend="auto")
    b = len(first.qo)
    mask_kw = {}
    if first.mask:
        mask_kw = dict(
            custom_mask_buf=torch.zeros(1 << 20, dtype=torch.uint8, device=DEV), mask_indptr_buf=_i32([0] * (b + 1))
        )
    if first.api == "paged":
        return cls(
            ws,
            first.layout,
            use_cuda_graph=True,
            qo_indptr_buf=_i32([0] * (b + 1)),
            paged_kv_indptr_buf=_i32([0] * (b + 1)),
            paged_kv_indices_buf=_i32([0] * 4096),
            paged_kv_last_page_len_buf=_i32([0] * b),
            backend="auto",
            **mask_kw,
        )
    return cls(
        ws,
        first.layout,
        use_cuda_graph=True,
        qo_indptr_buf=_i32([0] * (b + 1)),
        kv_indptr_buf=_i32([0] * (b + 1)),
        backend="auto",
        **mask_kw,
    )


def plan(w: Any, p: Plan) -> None:
    h_qo, h_kv = HEADS
    common = dict(
        q_data_type=torch.bfloat16,
        kv_data_type=torch.bfloat16,
        window_left=WINDOW if p.window else -1,
    )
    if p.api == "decode":
        indptr, indices, last = _pages(p.kv)
        w.plan(_i32(indptr), _i32(indices), _i32(last), h_qo, h_kv, HEAD_DIM, PAGE, **common)
    elif p.api == "paged":
        indptr, indices, last = _pages(p.kv)
        w.plan(
            _i32(_indptr(p.qo)),
            _i32(indptr),
            _i32(indices),
            _i32(last),
            h_qo,
            h_kv,
            HEAD_DIM,
            PAGE,
            custom_mask=_mask(p),
            causal=not p.mask,
            **common,
        )
    else:
        w.plan(
            _i32(_indptr(p.qo)),
            _i32(_indptr(p.kv)),
            h_qo,
            h_kv,
            HEAD_DIM,
            custom_mask=_mask(p),
            causal=not p.mask,
            **common,
        )


def resolved(api: str, w: Any) -> str:
    """What attncheck's adapter reports (kernels/flashinfer/adapter.py resolved_backend_of)."""
    if api == "decode" and isinstance(getattr(type(w), "resolved_backend", None), property):
        return str(w.resolved_backend)
    return str(getattr(w, "_backend", getattr(w, "backend", "unknown")))


def observe(plans: list[Plan], graph: bool) -> list[dict[str, Any]]:
    """Plan each of `plans` in turn on ONE new wrapper; what each resolved to, or what it raised."""
    w = make_wrapper(plans[0], graph)
    out = []
    for p in plans:
        t0 = time.perf_counter()
        try:
            plan(w, p)
            got: dict[str, Any] = {"resolved": resolved(p.api, w)}
        except Exception as e:  # noqa: BLE001 - the library's refusal is the observation
            got = {"raised": f"{type(e).__name__}: {str(e).splitlines()[0][:160] if str(e) else ''}"}
        torch.cuda.synchronize()
        out.append({**p.to_json(), **got, "plan_s": round(time.perf_counter() - t0, 2)})
    return out


def cases() -> list[tuple[str, list[Plan], bool]]:
    """(name, plans on one wrapper, graph mode)."""
    out: list[tuple[str, list[Plan], bool]] = []
    for api in ("paged", "ragged"):
        for qo in BATCHES:
            out.append((f"fresh {Plan(api, qo).label()}", [Plan(api, qo)], False))
        for feat in ({"mask": True}, {"window": True}, {"layout": "HND"}):
            if feat.get("window") and SKIP_WINDOW:
                continue
            for qo in ((16,), (65,), (300,)):
                p = Plan(api, qo, **feat)  # type: ignore[arg-type]
                out.append((f"fresh {p.label()}", [p], False))
        short, long_ = Plan(api, (16,)), Plan(api, (300,))
        masked = Plan(api, (300,), mask=True)
        out += [
            (f"{api}: unmasked then masked", [long_, masked], False),
            (f"{api}: masked then unmasked", [masked, long_], False),
            (f"{api}: short then long", [short, long_], False),
            (f"{api}: long then short", [long_, short], False),
            # under CUDA graphs, later plans within the rows and pages the first fixed
            (f"{api} graph: long then short", [Plan(api, (65, 63)), Plan(api, (64, 64))], True),
            (f"{api} graph: short then long", [Plan(api, (64, 64)), Plan(api, (65, 63))], True),
        ]
    for tc in (False, True):
        for b in (1, 16, 64):
            p = Plan("decode", (1,) * b, tensor_cores=tc)
            out.append((f"fresh {p.label()}", [p], False))
        if not SKIP_WINDOW:
            p = Plan("decode", (1,) * 16, window=True, tensor_cores=tc)
            out.append((f"fresh {p.label()}", [p], False))
    return out


def arch() -> str:
    major, minor = torch.cuda.get_device_capability()
    return f"sm{major}{minor}"


def expected(repo: str, version: str, plans: list[Plan], graph: bool) -> tuple[Optional[list[str]], str]:
    """The spec's outcome for each plan on one wrapper, or (None, why) where the version has no rows."""
    if repo not in sys.path:
        sys.path.insert(0, repo)
    from routing.spec import RoutingQuery, expected_sequence
    from routing.specs import flashinfer_cuda_spec, unmodelled_note

    spec = flashinfer_cuda_spec(version)
    if spec is None:
        return None, unmodelled_note("flashinfer_cuda", version)
    qs = [
        RoutingQuery(
            api=p.api,  # type: ignore[arg-type]
            arch=arch(),
            q_dtype="bf16",
            kv_dtype="bf16",
            o_dtype="bf16",
            kv_layout=p.layout,
            custom_mask=p.mask,
            head_dim_qk=HEAD_DIM,
            head_dim_vo=HEAD_DIM,
            causal=not p.mask,
            max_q_len=max(p.qo),
            max_kv_len=max(p.kv),
            page_size=PAGE,
            graph_mode=graph,
            use_tensor_cores=p.tc,
            qo_lens=p.qo,
            kv_lens=p.kv,
            num_qo_heads=HEADS[0],
            num_kv_heads=HEADS[1],
            window_left=WINDOW if p.window else -1,
        )
        for p in plans
    ]
    return [e.raises or str(e.backend) for e in expected_sequence(spec, qs)], f"{spec.title}"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", metavar="REPO", default=None, help="attncheck's root: compare with its routing spec")
    ap.add_argument("--out", default=None, help="also write the JSON lines to this file")
    ap.add_argument("--skip-window", action="store_true", help="leave the sliding-window cases out")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("probe_flashinfer_auto_routing: error: no CUDA device; run it on the GPU", file=sys.stderr)
        return 2
    global flashinfer, SKIP_WINDOW
    SKIP_WINDOW = args.skip_window
    major, minor = torch.cuda.get_device_capability()
    os.environ.setdefault("FLASHINFER_CUDA_ARCH_LIST", f"{major}.{minor}{'a' if major >= 9 else ''}")
    os.environ.setdefault("MAX_JOBS", str(os.cpu_count() or 1))
    import flashinfer as fi

    flashinfer = fi
    version = str(flashinfer.__version__)
    head = {"flashinfer": version, "torch": torch.__version__, "cuda": torch.version.cuda, "arch": arch()}
    print(json.dumps({"probe": "flashinfer auto routing", **head}), flush=True)
    sink = open(args.out, "w", encoding="utf-8") if args.out else None
    rows, disagreements, t0 = [], 0, time.perf_counter()
    unmodelled = ""
    for name, plans, graph in cases():
        seen = observe(plans, graph)
        line: dict[str, Any] = {"case": name, "graph": graph, "plans": seen}
        if args.check:
            want, spec = expected(args.check, version, plans, graph)
            line["spec"] = spec
            unmodelled = spec if want is None else unmodelled
            if want is not None:
                got = [s.get("resolved") or s["raised"].split(":")[0] for s in seen]
                line["expected"] = want
                line["agrees"] = got == want
                disagreements += got != want
        text = json.dumps(line)
        print(text, flush=True)
        if sink:
            sink.write(text + "\n")
        outcome = " -> ".join(s.get("resolved") or s["raised"].split(":")[0] for s in seen)
        mark = "" if "agrees" not in line else ("  ok" if line["agrees"] else f"  SPEC {' -> '.join(line['expected'])}")
        rows.append(f"{name:<48} {outcome}{mark}")
    if sink:
        sink.close()
    print(f"\nflashinfer {version} on {arch()} ({time.perf_counter() - t0:.0f} s):")
    print("\n".join(rows))
    if args.check and unmodelled:
        print(f"\nnot checked: {unmodelled}")
    elif args.check:
        print(f"\n{disagreements} case(s) disagree with the routing spec" if disagreements else "\nall cases agree")
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
