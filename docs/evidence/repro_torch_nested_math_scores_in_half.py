"""Standalone: jagged (nested) SDPA's math path computes q.k^T in the input dtype (plain torch calls only).

    python3 repro_torch_nested_math_scores_in_half.py

Dense SDPA math upcasts 16-bit inputs and computes the scores in fp32; jagged nested SDPA (layout
torch.jagged) on the CPU goes through torch._scaled_dot_product_attention_math on strided nested
tensors, which does not. With large logits (|q|, |k| up to 64, as attncheck's input_scale=16
draws) the bf16 scores are off by whole units and the softmax with them. This prints, for one
request (qo 3, kv 300, 8 heads, head dim 64), the largest error against an fp32 reference of:
dense SDPA math in bf16, jagged SDPA in bf16, and a model that rounds q.k^T to bf16 (the defect).

Exit 1 when jagged SDPA's error is more than 10x dense math's and equals the bf16-scores model's
(the defect), 0 when it is not, 2 when dense math itself is off (the control: the set-up is wrong).
"""
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

torch.manual_seed(0)
dt, H, D, QO, KV = torch.bfloat16, 8, 64, 3, 300
print("torch", torch.__version__)
q = (torch.randn(QO, H, D) * 16).to(dt)  # [tokens, heads, dim], as a model's projection gives it
k = (torch.randn(KV, H, D) * 16).to(dt)
v = torch.randn(KV, H, D).to(dt)
scale = D**-0.5


def dense(x):  # [1, H, L, D]
    return x.transpose(0, 1)[None]


def jagged(x):
    offsets = torch.tensor([0, x.shape[0]], dtype=torch.int64)
    return torch.nested.nested_tensor_from_jagged(x, offsets).transpose(1, 2)


ref = F.scaled_dot_product_attention(dense(q).float(), dense(k).float(), dense(v).float(), scale=scale)[0]
with sdpa_kernel([SDPBackend.MATH]):
    math_bf16 = F.scaled_dot_product_attention(dense(q), dense(k), dense(v), scale=scale)[0]
    nested = F.scaled_dot_product_attention(jagged(q), jagged(k), jagged(v), scale=scale)
nested = nested.transpose(1, 2).values().transpose(0, 1)  # [H, QO, D]
scores = (dense(q) @ dense(k).transpose(-1, -2)) * scale  # bf16 matmul: the scores rounded to bf16
model = (torch.softmax(scores.float(), -1).to(dt) @ dense(v))[0]
err = {
    "dense math bf16": (math_bf16.float() - ref).abs().max().item(),
    "jagged SDPA bf16": (nested.float() - ref).abs().max().item(),
    "model: q.k^T in bf16": (model.float() - ref).abs().max().item(),
}
for name, e in err.items():
    print(f"{name:22s} max |out - fp32 reference| = {e:.4f}")
print(f"jagged SDPA vs the bf16-scores model: max diff {(nested.float() - model.float()).abs().max().item():.4f}")
if err["dense math bf16"] > 0.5:
    print("the control failed: dense math is off too")
    sys.exit(2)
defect = err["jagged SDPA bf16"] > 10 * err["dense math bf16"] and (nested.float() - model.float()).abs().max() == 0
print("DEFECT: jagged SDPA rounds the scores to bf16" if defect else "no defect: jagged SDPA keeps the scores in fp32")
sys.exit(1 if defect else 0)
