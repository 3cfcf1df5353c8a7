#!/usr/bin/env python3
"""Probe: the three flex errors of the torch standard run on the H200 (2026-12-03, seventh sitting, call 3), each
case through its adapter in a fresh process without the oracle (so nothing else of attncheck has compiled
anything), then the same call eagerly: does compiled flex_attention raise NoValidChoicesError on its own?

    python3 docs/evidence/probe_flex_standard_errors.py scripts/h200_steps/flex_standard_errors_cases.json
"""

import os
import sys

sys.path.insert(0, os.getcwd())

import torch  # noqa: E402

from kernels import get_target  # noqa: E402
from kernels import torch_flex, torch_flex_padded  # noqa: E402
from scenarios.case import load_cases  # noqa: E402
from scenarios.tensors import materialize  # noqa: E402

BACKENDS = ("flex", "flex-padded")
SAVED = torch_flex.flex_function


def eager_flex(device: str):
    return SAVED("cpu")


def outcome(adapter, inputs) -> str:
    try:
        adapter.plan(inputs)
        adapter.run(inputs)
        return "ok"
    except Exception as e:  # noqa: BLE001 - every outcome is reported
        return f"{type(e).__name__}" + (": NoValidChoicesError" if "NoValidChoicesError" in str(e) else "")


def main() -> int:
    cases = load_cases(open(sys.argv[1]).read())
    print(f"torch {torch.__version__}, {torch.cuda.get_device_name()}", flush=True)
    print("| case | backend | compiled (the adapter on CUDA) | eager flex_attention (the same adapter) |")
    print("|---|---|---|---|")
    target = get_target("torch")
    for case in cases:
        inputs = materialize(case, seed=0, device="cuda")
        for backend in BACKENDS:
            adapter = target.make(backend, "cuda")
            if not adapter.supports(case).ok:
                continue
            compiled = outcome(adapter, inputs)
            eager_adapter = target.make(backend, "cuda")
            for module in (torch_flex, torch_flex_padded):  # the eager function, called on CUDA tensors
                module.flex_function = eager_flex
            try:
                eager = outcome(eager_adapter, inputs)
            finally:
                torch_flex.flex_function = torch_flex_padded.flex_function = SAVED
            print(f"| {case.id} | {backend} | {compiled} | {eager} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
