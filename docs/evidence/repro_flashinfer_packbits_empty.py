#!/usr/bin/env python3
"""FlashInfer's packbits of an empty bool tensor fails with "invalid argument".

Seen on the H200 (2026-12-01) through attncheck's adapter with mask_form=packed_flat: a masked paged
batch of one request with qo_len 0 and kv_len 0 has a flat mask of 0 bits; flashinfer.packbits of
it raised "PackBits failed with error code invalid argument" and the next CUDA call met the same
error (left pending). segment_packbits of the same mask worked. Here both, in a child process
each, with a non-empty mask as the control.

    python3 repro_flashinfer_packbits_empty.py     # exit 1 when packbits fails on the empty mask only

Exit 2 when a control fails: the set-up is wrong, not the defect.

Only torch and flashinfer; no attncheck code.
"""
import json
import subprocess
import sys

CALLS = {"packbits, 0 bits (the defect)": ("packbits", 0), "packbits, 13 bits (control)": ("packbits", 13),
         "segment_packbits, 0 bits (control)": ("segment_packbits", 0)}


def child(fn, n):
    import flashinfer
    import torch

    bits = torch.ones(n, dtype=torch.bool, device="cuda")
    if fn == "packbits":
        out = flashinfer.packbits(bits, "little")
    else:
        out, _ = flashinfer.segment_packbits(bits, torch.tensor([0, n], dtype=torch.int32, device="cuda"), "little")
    torch.cuda.synchronize()
    after = torch.ones(4, device="cuda").add_(1).sum().item()  # does the process still run a kernel?
    print(json.dumps({"bytes": out.numel(), "after": after}))


def main():
    import flashinfer
    import torch

    print(f"flashinfer {flashinfer.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    ok = {}
    for name, (fn, n) in CALLS.items():
        p = subprocess.run([sys.executable, __file__, "--child", json.dumps([fn, n])], capture_output=True, text=True)
        lines = p.stdout.strip().splitlines()
        ok[name] = p.returncode == 0 and bool(lines) and lines[-1].startswith("{")
        err = [ln for ln in p.stderr.splitlines() if "rror" in ln]
        print(f"{'ok  ' if ok[name] else 'FAIL'} {name}: " + (lines[-1] if ok[name] else (err or ["?"])[-1][:200]))
    names = list(CALLS)
    if not (ok[names[1]] and ok[names[2]]):
        print("a control failed: the set-up is wrong, not the defect")
        return 2
    reproduced = not ok[names[0]]
    print("DEFECT REPRODUCED: packbits fails on an empty mask" if reproduced else "not reproduced")
    return 1 if reproduced else 0


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--child":
        child(*json.loads(sys.argv[2]))
    else:
        sys.exit(main())
