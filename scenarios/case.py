"""The Case: a frozen, JSON-round-trippable description of one batch of attention.

A Case is fixed before anything runs. Adapters, the oracle and the reports all receive the same
Case; `Case.id` is both the pytest id and the report key. Tensors are never stored in it: they
are made from (case, seed, device) by `scenarios.tensors.materialize`.

Layouts (the API shape a library is called with):
  ragged  packed q [sum qo, Hq, Dqk]; packed k/v [sum kv, Hkv, D] (HND: [Hkv, sum kv, D])
  paged   packed q; k/v in pages [P, page, Hkv, D] (HND: [P, Hkv, page, D]) through a page table
  decode  paged KV, exactly one query row per request
  single  one request, q [qo, Hq, Dqk], k/v [kv, Hkv, D] (HND: [Hkv, kv, D])

Zero lengths are allowed everywhere (a request with no query rows, no keys, or both), and so
is an empty batch (no requests at all) for the batched layouts.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Optional

from scenarios import axes
from scenarios.axes import KVLayout as KVLayout, Layout as Layout, MaskKind as MaskKind  # defined with their values
from scenarios.dtypes import DTYPE_NAMES, OUTPUT_DTYPE_NAMES, is_fp8
from scenarios.errors import InvalidCase, InvalidValue

CASE_SCHEMA = 1


@dataclass(frozen=True)
class Case:
    """One batch. Lengths are per request; `sm_scale=None` means 1/sqrt(head_dim_qk).

    Masking is the AND of every feature that is on: bottom-right causal, the sliding window
    (window_left >= 0) and the custom mask (mask="custom"). Descales apply only to fp8 tensors;
    None means 1.0.
    """

    layout: Layout
    qo_lens: tuple[int, ...]
    kv_lens: tuple[int, ...]
    num_qo_heads: int
    num_kv_heads: int
    head_dim_qk: int = 128
    head_dim_vo: int = 128
    q_dtype: str = "bf16"
    kv_dtype: str = "bf16"
    o_dtype: str = "bf16"
    page_size: int = 1
    kv_layout: KVLayout = "NHD"
    causal: bool = False
    mask: MaskKind = "none"
    window_left: int = -1
    logits_soft_cap: float = 0.0
    sm_scale: Optional[float] = None
    q_scale: Optional[float] = None
    k_scale: Optional[float] = None
    v_scale: Optional[float] = None
    return_lse: bool = True
    # Standard deviation of generated q/k/v values; large values stress softmax range.
    input_scale: float = 1.0
    # Free text naming why the case exists (a seed bug, a matrix cell); not part of identity.
    label: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "qo_lens", tuple(int(x) for x in self.qo_lens))
        object.__setattr__(self, "kv_lens", tuple(int(x) for x in self.kv_lens))
        _validate(self)

    # ---- derived facts -------------------------------------------------------------------
    @property
    def batch_size(self) -> int:
        return len(self.qo_lens)

    @property
    def group_size(self) -> int:
        """Query heads per KV head (1 = MHA, num_qo_heads = MQA)."""
        return self.num_qo_heads // self.num_kv_heads

    @property
    def total_qo(self) -> int:
        return sum(self.qo_lens)

    @property
    def total_kv(self) -> int:
        return sum(self.kv_lens)

    @property
    def scale(self) -> float:
        return self.sm_scale if self.sm_scale is not None else 1.0 / math.sqrt(self.head_dim_qk)

    @property
    def is_paged(self) -> bool:
        return self.layout in ("paged", "decode")

    @property
    def pages_per_request(self) -> tuple[int, ...]:
        return tuple(-(-k // self.page_size) for k in self.kv_lens)

    @property
    def is_fp8(self) -> bool:
        return is_fp8(self.q_dtype) or is_fp8(self.kv_dtype)

    @property
    def features(self) -> tuple[str, ...]:  # names: FEATURES below
        """Short names of the features this case switches on, for grouping in reports."""
        out = []
        if self.causal:
            out.append("causal")
        if self.mask == "custom":
            out.append("custom_mask")
        if self.window_left >= 0:
            out.append("window")
        if self.logits_soft_cap > 0:
            out.append("soft_cap")
        if self.group_size > 1:
            out.append("gqa" if self.num_kv_heads > 1 else "mqa")
        if self.is_fp8:
            out.append("fp8")
        if max(self.kv_lens, default=0) >= axes.LONG_CONTEXT_KV:
            out.append("long_context")
        if self.batch_size == 0:
            out.append("empty_batch")
        elif 0 in self.qo_lens or 0 in self.kv_lens:
            out.append("zero_len")
        return tuple(out) or ("plain",)

    # ---- identity and serialisation ------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        d = {f.name: getattr(self, f.name) for f in fields(self)}  # every field a plain value: no deep copy
        d["qo_lens"] = list(self.qo_lens)
        d["kv_lens"] = list(self.kv_lens)
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Case":
        known = {f.name for f in fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise InvalidCase(
                "<json>",
                sorted(unknown),
                f"only the fields {sorted(known)}",
                "drop the unknown keys or upgrade attncheck",
            )
        for name, value in d.items():
            _check_json_type(name, value, _JSON_TYPES[name])
        kwargs: dict[str, Any] = {k: (tuple(v) if k in ("qo_lens", "kv_lens") else v) for k, v in d.items()}
        return cls(**kwargs)

    @property
    def id(self) -> str:
        """Stable, readable id: the salient axes, then a hash of every identity field."""
        d = self.to_json()
        d.pop("label")
        digest = hashlib.sha1(json.dumps(d, sort_keys=True).encode()).hexdigest()[:10]
        head = f"{self.layout}-b{self.batch_size}-h{self.num_qo_heads}x{self.num_kv_heads}"
        head += f"-d{self.head_dim_qk}" + ("" if self.head_dim_qk == self.head_dim_vo else f"v{self.head_dim_vo}")
        head += f"-{self.q_dtype}" + ("" if self.kv_dtype == self.q_dtype else f"kv{self.kv_dtype}")
        if self.is_paged:
            head += f"-p{self.page_size}{self.kv_layout}"
        feats = "+".join(f for f in self.features if f not in ("gqa", "mqa", "plain"))
        return f"{head}{'-' + feats if feats else ''}-{digest}"

    def replace(self, **changes: Any) -> "Case":
        d = self.to_json()
        d.update(changes)
        return Case.from_json(d)


def _check(ok: bool, field_: str, value: Any, expected: str, fix: str) -> None:
    if not ok:
        raise InvalidCase(field_, value, expected, fix)


def _validate(c: Case) -> None:
    _check(c.layout in axes.LAYOUTS, "layout", c.layout, f"one of {axes.LAYOUTS}", "pick a listed layout")
    _check(
        len(c.qo_lens) == len(c.kv_lens),
        "kv_lens",
        c.kv_lens,
        f"{len(c.qo_lens)} entries, one per request as in qo_lens",
        "give one kv length per request",
    )
    _check(all(x >= 0 for x in c.qo_lens), "qo_lens", c.qo_lens, "lengths >= 0", "drop negative lengths")
    _check(all(x >= 0 for x in c.kv_lens), "kv_lens", c.kv_lens, "lengths >= 0", "drop negative lengths")
    if c.layout == "single":
        _check(
            len(c.qo_lens) == 1,
            "qo_lens",
            c.qo_lens,
            "exactly one request for layout 'single'",
            "use layout 'ragged' for several requests",
        )
    if c.layout == "decode":
        _check(
            all(x == 1 for x in c.qo_lens),
            "qo_lens",
            c.qo_lens,
            "exactly one query row per request for layout 'decode'",
            "use layout 'paged' for multi-row queries",
        )
    _check(c.num_qo_heads >= 1, "num_qo_heads", c.num_qo_heads, ">= 1", "use at least one head")
    _check(c.num_kv_heads >= 1, "num_kv_heads", c.num_kv_heads, ">= 1", "use at least one head")
    _check(
        c.num_qo_heads % c.num_kv_heads == 0,
        "num_kv_heads",
        c.num_kv_heads,
        f"a divisor of num_qo_heads={c.num_qo_heads} (GQA maps query head h to kv head h // group)",
        "choose num_kv_heads that divides num_qo_heads",
    )
    for name in ("head_dim_qk", "head_dim_vo"):
        v = getattr(c, name)
        _check(isinstance(v, int) and v >= 1, name, v, "a positive int", "use e.g. 64, 128 or 256")
    for name in ("q_dtype", "kv_dtype"):
        _check(getattr(c, name) in DTYPE_NAMES, name, getattr(c, name), f"one of {DTYPE_NAMES}", "pick a listed dtype")
    _check(
        c.o_dtype in OUTPUT_DTYPE_NAMES,
        "o_dtype",
        c.o_dtype,
        f"one of {OUTPUT_DTYPE_NAMES}",
        "outputs are fp32, fp16 or bf16",
    )
    _check(c.page_size >= 1, "page_size", c.page_size, ">= 1", "use a positive page size")
    if not c.is_paged:
        _check(
            c.page_size == 1,
            "page_size",
            c.page_size,
            "1 for a layout without pages",
            "leave page_size at 1 unless layout is paged or decode",
        )
    _check(c.kv_layout in axes.KV_LAYOUTS, "kv_layout", c.kv_layout, f"one of {axes.KV_LAYOUTS}", "use NHD or HND")
    _check(c.mask in axes.MASK_KINDS, "mask", c.mask, f"one of {axes.MASK_KINDS}", "use 'none' or 'custom'")
    _check(
        isinstance(c.window_left, int) and c.window_left >= -1,
        "window_left",
        c.window_left,
        "-1 (no window) or a width >= 0",
        "use -1 to disable the window",
    )
    _check(
        c.logits_soft_cap >= 0 and math.isfinite(c.logits_soft_cap),
        "logits_soft_cap",
        c.logits_soft_cap,
        "0 (off) or a finite cap > 0",
        "use 0 to disable the soft cap",
    )
    if c.sm_scale is not None:
        _check(
            c.sm_scale > 0 and math.isfinite(c.sm_scale),
            "sm_scale",
            c.sm_scale,
            "None or a finite value > 0",
            "leave None for 1/sqrt(head_dim_qk)",
        )
    for name, dt in (("q_scale", c.q_dtype), ("k_scale", c.kv_dtype), ("v_scale", c.kv_dtype)):
        v = getattr(c, name)
        if v is not None:
            _check(
                is_fp8(dt),
                name,
                v,
                f"None, since the tensor it descales is {dt}, not fp8",
                "set descales only for fp8 tensors",
            )
            _check(v > 0 and math.isfinite(v), name, v, "a finite descale > 0", "use e.g. 1.0")
    _check(
        c.input_scale > 0 and math.isfinite(c.input_scale),
        "input_scale",
        c.input_scale,
        "a finite value > 0",
        "use 1.0 for unit-scale inputs",
    )


# Every name Case.features can return (the CLI's --feature choices).
FEATURES: tuple[str, ...] = (
    "causal",
    "custom_mask",
    "window",
    "soft_cap",
    "gqa",
    "mqa",
    "fp8",
    "long_context",
    "empty_batch",
    "zero_len",
    "plain",
)


# What each field of a Case holds in JSON: a bool is a JSON bool and a length a JSON integer, never a
# string or a float that would be read as one ("causal": "false" is not False; [4.5] is not [4]).
_JSON_TYPES: dict[str, str] = {
    "layout": "string",
    "kv_layout": "string",
    "mask": "string",
    "q_dtype": "string",
    "kv_dtype": "string",
    "o_dtype": "string",
    "label": "string",
    "qo_lens": "integers",
    "kv_lens": "integers",
    "num_qo_heads": "integer",
    "num_kv_heads": "integer",
    "head_dim_qk": "integer",
    "head_dim_vo": "integer",
    "page_size": "integer",
    "window_left": "integer",
    "causal": "boolean",
    "return_lse": "boolean",
    "logits_soft_cap": "number",
    "input_scale": "number",
    "sm_scale": "number or null",
    "q_scale": "number or null",
    "k_scale": "number or null",
    "v_scale": "number or null",
}


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


# Each JSON kind: the check of a value, and an example for the fix.
_JSON_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "string": (lambda v: isinstance(v, str), '"paged"'),
    "integers": (lambda v: isinstance(v, (list, tuple)) and all(_is_int(x) for x in v), "[4, 1]"),  # tuple: Python
    "integer": (_is_int, "8"),
    "boolean": (lambda v: isinstance(v, bool), "true or false"),
    "number": (lambda v: _is_int(v) or isinstance(v, float), "30.0"),
    "number or null": (lambda v: v is None or _is_int(v) or isinstance(v, float), "0.5 or null"),
}


def _check_json_type(name: str, value: Any, kind: str) -> None:
    """Refuse a JSON value whose type is not the field's, naming the field, the value and the fix."""
    check, example = _JSON_CHECKS[kind]
    if not check(value):
        what = "a JSON list of integers" if kind == "integers" else f"a JSON {kind}"
        raise InvalidCase(name, value, what, f'write it as e.g. "{name}": {example}')


def load_cases(text: str) -> list[Case]:
    """One Case (a JSON object) or several (a JSON list of objects), as text or @file.json."""
    src = text
    if text.startswith("@"):
        try:
            with open(text[1:], encoding="utf-8") as f:
                src = f.read()
        except OSError as e:
            raise InvalidValue("--case @", text[1:], "a readable JSON file", f"check the path ({e.strerror})") from None
    shown = text if text.startswith("@") else text[:80]  # a file is named whole: its name ends the path
    try:
        obj = json.loads(src)
    except json.JSONDecodeError as e:
        raise InvalidCase("<json>", shown, "a JSON object of Case fields", f"fix the JSON ({e.msg})") from None
    objs = obj if isinstance(obj, list) else [obj]
    if not objs or not all(isinstance(o, dict) for o in objs):
        raise InvalidCase(
            "<json>", shown, "a JSON object of Case fields, or a non-empty list of them", "wrap the fields in {...}"
        )
    try:
        return [Case.from_json(o) for o in objs]
    except TypeError as e:
        raise InvalidCase(
            "<json>",
            shown,
            "every required Case field (layout, qo_lens, kv_lens, num_qo_heads, num_kv_heads)",
            f"add the missing field ({e})",
        ) from None
