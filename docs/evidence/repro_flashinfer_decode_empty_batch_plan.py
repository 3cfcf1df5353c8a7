#!/usr/bin/env python3
"""FlashInfer batch decode: plan() of a batch with no requests raises, with tensor cores or on cuDNN.

The decode twin of repro_flashinfer_empty_batch_plan.py (paged and ragged prefill). In 0.7.2.post1,
BatchDecodeWithPagedKVCacheWrapper.plan() takes `kv_lens_arr_host.max()` of the empty length tensor on
its tensor-core path (decode.py:2371; use_tensor_cores=True, and fa3 always) and on the cuDNN path
(decode.py:2547), raising torch's "max(): Expected reduction dim to be specified for input.numel() == 0".
Without tensor cores plan() returns and run() divides by zero instead (ledger
flashinfer-decode-empty-batch-run). Seen through attncheck on the H200 (2026-12-01, fourth sitting):
auto with --adapter-option decode_tensor_cores=true, eager and graph, and --backend cudnn.

    python3 repro_flashinfer_decode_empty_batch_plan.py [tensor-cores|cudnn]  # exit 1 when such a plan() raises

With an argument only that variant counts (the ledger's two entries); exit 2 when the CUDA-core control
raises too (the set-up is wrong, not the defect).

Only torch and flashinfer; no attncheck code.
"""
import sys

import flashinfer
import torch

dev = "cuda"
ws = lambda: torch.zeros(128 * 2**20, dtype=torch.uint8, device=dev)  # noqa: E731
zero = torch.zeros(1, dtype=torch.int32, device=dev)
empty = torch.zeros(0, dtype=torch.int32, device=dev)
bf = torch.bfloat16
JUDGED = {None: None, "tensor-cores": "tensor cores, auto", "cudnn": "cudnn"}
if sys.argv[2:] or (sys.argv[1:] or [None])[0] not in JUDGED:
    print(f"usage: {sys.argv[0]} [tensor-cores|cudnn]", file=sys.stderr)
    sys.exit(2)
judged = JUDGED[(sys.argv[1:] or [None])[0]]
print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
raised = []
for name, kw in {"CUDA cores (control: plan returns)": dict(backend="auto"),
                 "tensor cores, auto": dict(backend="auto", use_tensor_cores=True),
                 "cudnn": dict(backend="cudnn")}.items():
    try:
        w = flashinfer.BatchDecodeWithPagedKVCacheWrapper(ws(), "NHD", **kw)
        w.plan(zero, empty, empty, 4, 2, 128, 16, q_data_type=bf, kv_data_type=bf)
        print(f"{name:36s}: plan() of an empty batch returned")
    except Exception as e:  # noqa: BLE001 - the raise is the observation
        raised.append(name)
        print(f"{name:36s}: plan() of an empty batch raised {type(e).__name__}: {str(e).splitlines()[0][:160]}")
if any("control" in name for name in raised):
    print("the control failed: the set-up is wrong, not the defect")
    sys.exit(2)
raised = [name for name in raised if judged in (None, name)]
print("DEFECT REPRODUCED: " + ", ".join(raised) if raised else "not reproduced")
sys.exit(1 if raised else 0)
