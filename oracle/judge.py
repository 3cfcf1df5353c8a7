"""Judge one kernel result: reference and baseline computed once per inputs, then compared.

`truth(inputs)` runs the oracle twice (reference, honest-kernel baseline, oracle/honest.py);
`judge()` converts the kernel's LSE from the adapter's declared base (never guessed) and applies
the tolerance rule of oracle/tolerances.py to output and LSE.

The reference is the fp32 oracle, except for cases whose every dtype is fp32: there the
honest baseline rounds nothing and *is* the fp32 oracle, so the reference is computed in fp64
and the baseline error is the fp32 oracle's own error (otherwise it would be 0 and the bound
would fall to the floor).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from oracle import tolerances
from oracle.compare import Comparison, compare, max_abs_err
from oracle.reference import Reference, attention, lse_from_base2
from scenarios.tensors import Inputs


@dataclass
class Truth:
    ref: Reference
    base: Reference
    dtype: str  # the governing dtype whose floor applies
    out_baseline_err: float
    lse_baseline_err: float


def truth(inputs: Inputs, budget_bytes: int | None = None) -> Truth:
    c = inputs.case
    dtype = tolerances.governing_dtype(c.q_dtype, c.kv_dtype, c.o_dtype)
    ref = attention(inputs, "fp64" if dtype == "fp32" else "fp32", budget_bytes)
    base = attention(inputs, "honest", budget_bytes)
    return Truth(
        ref=ref,
        base=base,
        dtype=dtype,
        out_baseline_err=max_abs_err(base.out, ref.out),
        lse_baseline_err=max_abs_err(base.lse, ref.lse),
    )


def _scale(t: torch.Tensor) -> float:
    fin = t[torch.isfinite(t)]
    return float(fin.abs().max()) if fin.numel() else 0.0


def judge(
    t: Truth,
    out: torch.Tensor,
    lse: Optional[torch.Tensor],
    *,
    lse_base: float = torch.e,
    adapter: str = "",
    backend: str = "",
) -> tuple[Comparison, Optional[Comparison]]:
    """Compare a kernel's out (and LSE, in base `lse_base`: e or 2) with the truth."""
    f_out = tolerances.factor_for(adapter, backend, t.dtype, "out")
    out_cmp = compare(
        out,
        t.ref.out,
        quantity="out",
        baseline_err=t.out_baseline_err,
        bound=tolerances.bound(t.out_baseline_err, t.dtype, "out", _scale(t.ref.out), f_out),
    )
    if lse is None:
        return out_cmp, None
    if lse_base == 2:
        lse = lse_from_base2(lse.double())
    elif lse_base != torch.e:
        raise ValueError(f"lse_base={lse_base!r}: adapters declare e or 2")
    f_lse = tolerances.factor_for(adapter, backend, t.dtype, "lse")
    lse_cmp = compare(
        lse,
        t.ref.lse,
        quantity="lse",
        baseline_err=t.lse_baseline_err,
        bound=tolerances.bound(t.lse_baseline_err, t.dtype, "lse", _scale(t.ref.lse), f_lse),
    )
    return out_cmp, lse_cmp
