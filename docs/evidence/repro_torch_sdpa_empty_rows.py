"""Standalone: torch SDPA rows with nothing to attend, per CUDA backend (plain torch calls only).

    python3 repro_torch_sdpa_empty_rows.py

SDPA's math backend returns 0 for a query row whose boolean mask allows no key (torch >= 2.5).
This prints, per backend, the largest |output| over such rows in two set-ups:
  A. a boolean attn_mask with one fully masked row (qo = kv = 8);
  B. causal_lower_right with qo_len 8 > kv_len 4, whose top 4 rows have no key.
A backend that honours the convention prints 0.0; "refused" means it declined the call.

Exit 1 when cuDNN or memory-efficient writes a non-zero row where math writes 0 (the defect), 0 when
neither does, 2 when math itself does not write 0 (the control: the set-up is wrong, not the defect).
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

torch.manual_seed(0)
dev, dt = "cuda", torch.bfloat16
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
      torch.cuda.get_device_name())
q = torch.randn(1, 4, 8, 64, device=dev, dtype=dt)
k = torch.randn(1, 4, 8, 64, device=dev, dtype=dt)
v = torch.randn(1, 4, 8, 64, device=dev, dtype=dt)
mask = torch.ones(8, 8, dtype=torch.bool, device=dev)
mask[3] = False  # row 3 attends nothing
worst = {}  # (backend, set-up) -> max |out| on the rows without keys; refused calls left out
for name, be in [("math", SDPBackend.MATH), ("efficient", SDPBackend.EFFICIENT_ATTENTION),
                 ("cudnn", SDPBackend.CUDNN_ATTENTION), ("flash", SDPBackend.FLASH_ATTENTION)]:
    for setup in ("A mask row", "B qo>kv causal_lower_right"):
        try:
            with sdpa_kernel([be]):
                if setup.startswith("A"):
                    o = F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
                    empty = o[0, :, 3]
                else:
                    o = F.scaled_dot_product_attention(q, k[:, :, :4], v[:, :, :4],
                                                       attn_mask=causal_lower_right(8, 4))
                    empty = o[0, :, :4]
            worst[name, setup] = empty.abs().max().item()
            print(f"{name:9s} {setup:28s} max|out| on empty rows = {worst[name, setup]:.4f}")
        except RuntimeError as e:
            print(f"{name:9s} {setup:28s} refused: {str(e).splitlines()[0][:80]}")
setups = ("A mask row", "B qo>kv causal_lower_right")
if any(worst.get(("math", setup)) != 0 for setup in setups):
    print("the control failed: math does not write 0 on rows without keys")
    sys.exit(2)
bad = [f"{name} {setup}" for (name, setup), w in worst.items() if name in ("cudnn", "efficient") and w > 0]
print("DEFECT REPRODUCED: non-zero rows without keys on " + ", ".join(bad) if bad else "not reproduced")
sys.exit(1 if bad else 0)
