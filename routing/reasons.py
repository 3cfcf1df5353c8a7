"""Every fallback reason a routing spec may expect, as named constants; `parse_reason()`.

A library formats its reasons with values inside (``f"query length <= {T} on ragged KV ..."``),
so a constant holds the STABLE FRAGMENT of the text, as flashinfer's own tests pin
``WARN_TAG = "not Blackwell-native"``. Specs and the checker compare constants by equality; they
never compare library text. One function, `parse_reason`, maps library text to a constant:

* ``None`` stays ``None``: the library reports that no fallback happened.
* ``NOT_REPORTED`` stays ``NOT_REPORTED``: the library gives no reason at all (distinct from None).
* text containing exactly one constant's fragment -> that constant.
* anything else (no fragment, or fragments of two constants) -> ``UNRECOGNISED``, which the
  checker always fails: a new or reworded reason must be added here before it can pass.

Fragments are checked at import: none may contain another, so no text can match two of them by
construction (the seeds' collision: the paged "flat gather" and ragged "ragged KV" short-query
reasons both read "query length <= 16 ...", and a shared fragment would let one pass for the
other; the paged demotion site in the library matches its own string by equality for the same
reason).

Sources are rocm_fork.md section 2 (selector steps), section 4 (lifecycle) and section 7 (rules).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Optional, Union

from kernels.protocol import NOT_REPORTED, Reason, _NotReported


@dataclass(frozen=True)
class ReasonCode:
    """One kind of fallback reason: its constant name, the stable fragment, and where it comes from.

    `threshold_re`, when set, extracts the threshold T the text embeds (rule 8: the short-query
    reasons name T, not the query length).
    """

    name: str
    fragment: str
    source: str = field(default="", compare=False)
    threshold_re: Optional[str] = field(default=None, compare=False)

    def __repr__(self) -> str:
        return self.name


# --- ROCm fork (AMD-Ecosystem/flashinfer MAIN @10f72434): _auto_select_prefill_backend -----------
CAPABILITY_UNDECLARED = ReasonCode(
    "CAPABILITY_UNDECLARED",
    "requires an AMD gfx942/gfx950 device",
    "selector step 1: undeclared arch (CPU/unknown reads 'unknown')",
)
CAPABILITY_UNSUPPORTED = ReasonCode(
    "CAPABILITY_UNSUPPORTED", " is not supported on ", "selector step 1: op unsupported on arch"
)
CAPABILITY_UNKNOWN_OP = ReasonCode(
    "CAPABILITY_UNKNOWN_OP", "is not a declared capability", "selector step 1: unknown op"
)
CAPABILITY_KNOWN_BAD = ReasonCode(
    "CAPABILITY_KNOWN_BAD", "known-broken", "selector step 1: known-bad window (no row today)"
)
LAYOUT = ReasonCode("LAYOUT", "(AITER requires NHD)", "selector step 2")
CUSTOM_MASK = ReasonCode("CUSTOM_MASK", "custom mask (not supported by AITER)", "selector step 3")
# Step 4 formats "(AITER requires fp16/bf16{'/fp8' if allow_fp8 else ''})": paged passes
# allow_fp8=True, the other callers do not, so the two texts are distinct constants.
DTYPE = ReasonCode("DTYPE", "(AITER requires fp16/bf16)", "selector step 4, allow_fp8=False")
DTYPE_FP8_ALLOWED = ReasonCode(
    "DTYPE_FP8_ALLOWED", "(AITER requires fp16/bf16/fp8)", "selector step 4, allow_fp8=True (paged)"
)
DTYPE_MISMATCH = ReasonCode("DTYPE_MISMATCH", "(AITER requires equal dtypes)", "selector step 5")
HEAD_DIMS = ReasonCode("HEAD_DIMS", "(AITER requires equal head dims)", "selector step 6")
POS_ENCODING = ReasonCode("POS_ENCODING", "(AITER only supports NONE)", "selector step 7")
SOFTCAP_DEFECT = ReasonCode(
    "SOFTCAP_DEFECT", "(AITER mha_varlen_fwd computes the soft cap incorrectly)", "selector step 8"
)
PAGED_SHORT_QUERY = ReasonCode(
    "PAGED_SHORT_QUERY",
    "on a page size AITER cannot page natively (its flat gather copies the whole KV cache",
    "selector step 9, aiter_flat_gather_gated_q_len; rule 8",
    threshold_re=r"query length <= (-?\d+) on a page size AITER cannot page natively",
)
RAGGED_SHORT_QUERY = ReasonCode(
    "RAGGED_SHORT_QUERY",
    "on ragged KV (AITER's mha_varlen_fwd costs more per call than the in-tree kernel",
    "selector step 9, aiter_ragged_gated_q_len (#373); rule 8",
    threshold_re=r"query length <= (-?\d+) on ragged KV",
)
ABI_FLOOR = ReasonCode(
    "ABI_FLOOR", "ABI floor (the vendored struct layouts do not match", "selector step 11: amd-aiter below 0.1.20"
)
NOT_INSTALLED = ReasonCode("NOT_INSTALLED", "aiter package not installed", "selector step 11")

# --- ROCm fork: wrapper lifecycle (section 4) ---------------------------------------------------
BOOTSTRAP_FAILED = ReasonCode(
    "BOOTSTRAP_FAILED", "kernel bootstrap failed on this install", "aiter_utils.handle_aiter_probe_failure; rule 17"
)
NATIVE_PAGING_UNAVAILABLE = ReasonCode(
    "NATIVE_PAGING_UNAVAILABLE",
    "aiter native paging was unavailable for page_size=",
    "paged plan() probe site, soft-cap defect branch",
)
DECODE_CAPACITY = ReasonCode(
    "DECODE_CAPACITY", "exceeding the declared max_seq_len", "decode _aiter_graph_capacity_overrun; rule 30"
)

ALL: tuple[ReasonCode, ...] = (
    CAPABILITY_UNDECLARED,
    CAPABILITY_UNSUPPORTED,
    CAPABILITY_UNKNOWN_OP,
    CAPABILITY_KNOWN_BAD,
    LAYOUT,
    CUSTOM_MASK,
    DTYPE,
    DTYPE_FP8_ALLOWED,
    DTYPE_MISMATCH,
    HEAD_DIMS,
    POS_ENCODING,
    SOFTCAP_DEFECT,
    PAGED_SHORT_QUERY,
    RAGGED_SHORT_QUERY,
    ABI_FLOOR,
    NOT_INSTALLED,
    BOOTSTRAP_FAILED,
    NATIVE_PAGING_UNAVAILABLE,
    DECODE_CAPACITY,
)

# Text no constant explains (or that two would). Never in ALL; always fails a check.
UNRECOGNISED = ReasonCode("UNRECOGNISED", "\x00<unrecognised>\x00", "parse_reason: no single fragment")

Parsed = Union[ReasonCode, None, _NotReported]


def parse_reason(text: Reason) -> Parsed:
    """Library reason -> a constant of ALL, None, NOT_REPORTED, or UNRECOGNISED.

    >>> parse_reason("query length <= 16 on ragged KV (AITER's mha_varlen_fwd costs more per call "
    ...              "than the in-tree kernel, which a short query cannot amortise)")
    RAGGED_SHORT_QUERY
    """
    if text is None:
        return None
    if text is NOT_REPORTED:
        return NOT_REPORTED
    if not isinstance(text, str):
        return UNRECOGNISED
    hits = [c for c in ALL if c.fragment in text]
    return hits[0] if len(hits) == 1 else UNRECOGNISED


def embedded_threshold(code: ReasonCode, text: str) -> Optional[int]:
    """The threshold T a short-query reason embeds, or None when `code` embeds none or text lacks it."""
    if code.threshold_re is None:
        return None
    m = re.search(code.threshold_re, text)
    return int(m.group(1)) if m else None


def _check_constants() -> None:
    """Import-time self-check (STYLE item 10): unique names, no fragment inside another."""
    names = [c.name for c in ALL]
    if len(set(names)) != len(names):
        raise AssertionError(f"reasons.ALL has duplicate names: {sorted(names)}")
    for a in ALL:
        if not a.fragment.strip():
            raise AssertionError(f"reasons.{a.name} has an empty fragment")
        for b in ALL:
            if a is not b and a.fragment in b.fragment:
                raise AssertionError(
                    f"reasons.{a.name} fragment {a.fragment!r} is inside reasons.{b.name}'s "
                    f"{b.fragment!r}: text of {b.name} would parse as both. Fix: lengthen {a.name}'s fragment"
                )
    module = globals()
    for c in ALL:
        if module.get(c.name) is not c:
            raise AssertionError(f"reasons.{c.name} is in ALL but not bound to the module name {c.name}")


_check_constants()
del _check_constants
