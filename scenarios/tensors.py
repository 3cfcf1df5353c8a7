"""Materialise a Case into tensors: the only place input values are drawn.

`materialize(case, seed, device)` is deterministic in (case, seed) whatever the device: values
are drawn on the CPU with a seeded generator and then moved. Paged layouts get a page table whose
pages are shuffled across a pool that also holds unused pages; unused pages and the unused tail
of each last page are filled with large garbage, so a kernel that reads outside the table gives
a visibly wrong answer rather than a lucky one.

The custom mask is FlashInfer's form: one boolean [qo_len, kv_len] matrix per request, row-major,
concatenated (True = attend). Each request with qo_len > 0 and kv_len > 0 gets one fully masked
query row, so the empty-row contract is exercised whenever a custom mask is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import torch

from scenarios.case import Case
from scenarios.dtypes import finfo_max, is_fp8, to_torch
from scenarios.errors import InvalidInputs

# Garbage written where no valid key lives; large enough that attending to it is obvious.
GARBAGE_SCALE = 64.0
# Unused pages in the pool beyond those the table references, as a fraction (at least 2).
UNUSED_PAGE_FRACTION = 0.25


@dataclass
class Inputs:
    """Tensors for one Case. Shapes are given in the Case docstring; index tensors are int32.

    For ragged/single: k, v are the packed (or single) KV tensors and kv_indptr is set.
    For paged/decode: k, v are the page pools and kv_page_indptr/kv_page_indices/
    kv_last_page_len form the page table (FlashInfer's convention).
    """

    case: Case
    seed: int
    q: torch.Tensor
    k: torch.Tensor
    v: torch.Tensor
    qo_indptr: torch.Tensor
    kv_indptr: Optional[torch.Tensor] = None
    kv_page_indptr: Optional[torch.Tensor] = None
    kv_page_indices: Optional[torch.Tensor] = None
    kv_last_page_len: Optional[torch.Tensor] = None
    custom_mask: Optional[torch.Tensor] = None  # flat bool, sum(qo_i * kv_i)
    mask_indptr: Optional[torch.Tensor] = None  # [B+1] offsets into custom_mask

    @property
    def device(self) -> torch.device:
        return self.q.device

    def request_mask(self, i: int) -> Optional[torch.Tensor]:
        """Request i's boolean [qo_len, kv_len] custom mask, or None when the case has none."""
        if self.custom_mask is None:
            return None
        assert self.mask_indptr is not None
        c = self.case
        lo, hi = int(self.mask_indptr[i]), int(self.mask_indptr[i + 1])
        return self.custom_mask[lo:hi].view(c.qo_lens[i], c.kv_lens[i])


def _indptr(lens: tuple[int, ...]) -> torch.Tensor:
    out = torch.zeros(len(lens) + 1, dtype=torch.int32)
    if lens:
        out[1:] = torch.cumsum(torch.tensor(lens, dtype=torch.int64), 0).to(torch.int32)
    return out


def _values(g: torch.Generator, shape: tuple[int, ...], scale: float, dtype_name: str) -> torch.Tensor:
    """Normal values at `scale`, stored in dtype_name; fp8 is clamped into its finite range."""
    x = torch.randn(shape, generator=g, dtype=torch.float32) * scale
    if dtype_name != "fp32":
        lim = finfo_max(dtype_name)
        x = x.clamp(-lim, lim)
    return x.to(to_torch(dtype_name))


def _garbage(g: torch.Generator, shape: tuple[int, ...], scale: float, dtype_name: str) -> torch.Tensor:
    return _values(g, shape, scale * GARBAGE_SCALE, dtype_name)


def _custom_mask(g: torch.Generator, case: Case) -> tuple[torch.Tensor, torch.Tensor]:
    parts = []
    for q, k in zip(case.qo_lens, case.kv_lens):
        m = torch.rand((q, k), generator=g) < 0.6
        if q > 0 and k > 0:
            m[int(torch.randint(q, (1,), generator=g))] = False
        parts.append(m.reshape(-1))
    flat = torch.cat(parts) if parts else torch.zeros(0, dtype=torch.bool)
    lens = tuple(q * k for q, k in zip(case.qo_lens, case.kv_lens))
    return flat, _indptr(lens)


def _to_layout(x_nhd: torch.Tensor, kv_layout: str) -> torch.Tensor:
    """[N, H, D] -> HND [H, N, D] when asked."""
    return x_nhd.transpose(0, 1).contiguous() if kv_layout == "HND" else x_nhd


def materialize(case: Case, seed: int = 0, device: str | torch.device = "cpu") -> Inputs:
    """Draw every input tensor of `case` from `seed`, then move them to `device`."""
    g = torch.Generator().manual_seed(seed)
    s = case.input_scale
    hq, hk, dqk, dvo = case.num_qo_heads, case.num_kv_heads, case.head_dim_qk, case.head_dim_vo
    q = _values(g, (case.total_qo, hq, dqk), s, case.q_dtype)
    inp = Inputs(case=case, seed=seed, q=q, k=torch.empty(0), v=torch.empty(0), qo_indptr=_indptr(case.qo_lens))
    if case.is_paged:
        _paged_kv(g, case, inp)
    else:
        inp.k = _to_layout(_values(g, (case.total_kv, hk, dqk), s, case.kv_dtype), case.kv_layout)
        inp.v = _to_layout(_values(g, (case.total_kv, hk, dvo), s, case.kv_dtype), case.kv_layout)
        inp.kv_indptr = _indptr(case.kv_lens)
    if case.mask == "custom":
        inp.custom_mask, inp.mask_indptr = _custom_mask(g, case)
    return to_device(inp, device)


def _paged_kv(g: torch.Generator, case: Case, inp: Inputs) -> None:
    ps, hk = case.page_size, case.num_kv_heads
    pages = case.pages_per_request
    used = sum(pages)
    pool = used + max(2, int(used * UNUSED_PAGE_FRACTION))
    perm = torch.randperm(pool, generator=g).to(torch.int32)
    indices = perm[:used].clone()
    # Pool filled with garbage first; valid slots are overwritten below.
    k_pool = _garbage(g, (pool, ps, hk, case.head_dim_qk), case.input_scale, case.kv_dtype)
    v_pool = _garbage(g, (pool, ps, hk, case.head_dim_vo), case.input_scale, case.kv_dtype)
    k_tok = _values(g, (case.total_kv, hk, case.head_dim_qk), case.input_scale, case.kv_dtype)
    v_tok = _values(g, (case.total_kv, hk, case.head_dim_vo), case.input_scale, case.kv_dtype)
    page_ptr, tok = 0, 0
    for n_pages, kv in zip(pages, case.kv_lens):
        for j in range(n_pages):
            n = min(ps, kv - j * ps)
            p = int(indices[page_ptr + j])
            k_pool[p, :n] = k_tok[tok : tok + n]
            v_pool[p, :n] = v_tok[tok : tok + n]
            tok += n
        page_ptr += n_pages
    last = [(kv - (n - 1) * ps) if n > 0 else 0 for n, kv in zip(pages, case.kv_lens)]
    if case.kv_layout == "HND":
        k_pool = k_pool.transpose(1, 2).contiguous()
        v_pool = v_pool.transpose(1, 2).contiguous()
    inp.k, inp.v = k_pool, v_pool
    inp.kv_page_indptr = _indptr(pages)
    inp.kv_page_indices = indices
    inp.kv_last_page_len = torch.tensor(last, dtype=torch.int32)


_TENSOR_FIELDS = (
    "q",
    "k",
    "v",
    "qo_indptr",
    "kv_indptr",
    "kv_page_indptr",
    "kv_page_indices",
    "kv_last_page_len",
    "custom_mask",
    "mask_indptr",
)


def to_device(inp: Inputs, device: str | torch.device) -> Inputs:
    moved = {}
    for name in _TENSOR_FIELDS:
        t = getattr(inp, name)
        moved[name] = None if t is None else t.to(device)
    return Inputs(case=inp.case, seed=inp.seed, **moved)  # type: ignore[arg-type]


def _expected_shapes(c: Case, pool: int) -> dict[str, tuple[int, ...]]:
    hk = c.num_kv_heads
    shapes: dict[str, tuple[int, ...]] = {"q": (c.total_qo, c.num_qo_heads, c.head_dim_qk)}
    for name, d in (("k", c.head_dim_qk), ("v", c.head_dim_vo)):
        if c.is_paged:
            shapes[name] = (pool, c.page_size, hk, d) if c.kv_layout == "NHD" else (pool, hk, c.page_size, d)
        else:
            shapes[name] = (c.total_kv, hk, d) if c.kv_layout == "NHD" else (hk, c.total_kv, d)
    return shapes


def validate_inputs(inp: Inputs) -> None:
    """Refuse tensors that contradict their Case: shapes, dtypes, page table, mask length.

    Materialised inputs always pass; this guards captured batches replayed from a file.
    """
    c = inp.case
    for name, shape in _expected_shapes(c, int(inp.k.shape[0]) if c.is_paged else 0).items():
        got = tuple(getattr(inp, name).shape)
        if got != shape:
            raise InvalidInputs(
                f"{name}.shape",
                got,
                f"{shape} for case {c.id}",
                "capture the tensors with the layout and lengths the case states",
            )
    for name, dt in (("q", c.q_dtype), ("k", c.kv_dtype), ("v", c.kv_dtype)):
        if getattr(inp, name).dtype != to_torch(dt):
            raise InvalidInputs(
                f"{name}.dtype",
                str(getattr(inp, name).dtype),
                to_torch(dt),
                "store the tensor in the dtype the case names",
            )
    if c.mask == "custom":
        want = sum(q * k for q, k in zip(c.qo_lens, c.kv_lens))
        got_n = -1 if inp.custom_mask is None else int(inp.custom_mask.numel())
        if got_n != want:
            raise InvalidInputs(
                "custom_mask.numel",
                got_n,
                f"{want} = sum(qo_len * kv_len)",
                "give one boolean per (query row, key) of every request",
            )
    validate_page_table(inp)


def validate_page_table(inp: Inputs) -> None:
    """Refuse a page table that contradicts its Case or points outside the pool."""
    c = inp.case
    if not c.is_paged:
        return
    assert inp.kv_page_indptr is not None and inp.kv_page_indices is not None
    assert inp.kv_last_page_len is not None
    pool = inp.k.shape[0]
    idx = inp.kv_page_indices
    if idx.numel() and (int(idx.min()) < 0 or int(idx.max()) >= pool):
        bad = int(idx.max()) if int(idx.max()) >= pool else int(idx.min())
        raise InvalidInputs(
            "kv_page_indices",
            bad,
            f"page indices in [0, {pool}) (the pool has {pool} pages)",
            "index only pages that exist in the k/v pool",
        )
    expected_pages = list(c.pages_per_request)
    got_pages = (inp.kv_page_indptr[1:] - inp.kv_page_indptr[:-1]).tolist()
    if got_pages != expected_pages:
        raise InvalidInputs(
            "kv_page_indptr",
            got_pages,
            f"pages per request {expected_pages}",
            "derive the indptr from ceil(kv_len / page_size)",
        )
    ps = c.page_size
    for i, (n, kv) in enumerate(zip(expected_pages, c.kv_lens)):
        last = int(inp.kv_last_page_len[i])
        want = (kv - (n - 1) * ps) if n > 0 else 0
        if last != want:
            raise InvalidInputs(
                f"kv_last_page_len[{i}]",
                last,
                f"{want} for kv_len={kv}, page_size={ps}",
                "set the last page's fill so (pages-1)*page_size + last == kv_len",
            )


def save(inp: Inputs, path: str) -> None:
    """Write a batch (tensors and case) to a file `load` reads back: a captured batch to replay."""
    blob = {name: getattr(inp, name) for name in _TENSOR_FIELDS if getattr(inp, name) is not None}
    blob["case"] = inp.case.to_json()
    blob["seed"] = inp.seed
    torch.save(blob, path)


def load(path: str) -> Inputs:
    """Read a batch written by `save` (or by hand: a dict of the Inputs tensor fields plus 'case')."""
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
    except FileNotFoundError:
        raise InvalidInputs(
            "--inputs", path, "an existing file written by scenarios.tensors.save", "check the path"
        ) from None
    except IsADirectoryError:
        raise InvalidInputs(
            "--inputs", path, "a file written by scenarios.tensors.save, not a directory", "pass the batch file itself"
        ) from None
    except Exception as e:  # torch.load on anything else: truncated, random bytes, text, another pickle
        raise InvalidInputs(
            "--inputs",
            path,
            "a batch file written by scenarios.tensors.save",
            f"pass an intact file; this one does not load ({type(e).__name__})",
        ) from None
    if not isinstance(blob, dict) or not isinstance(blob.get("case"), dict):
        raise InvalidInputs(
            "--inputs",
            path,
            "a dict with a 'case' entry and the Inputs tensors",
            "write the file with scenarios.tensors.save",
        )
    case = Case.from_json(blob["case"])
    missing = [n for n in ("q", "k", "v", "qo_indptr") if n not in blob]
    if missing:
        raise InvalidInputs("--inputs", path, f"the tensors {missing} too", "save every Inputs field")
    return Inputs(case=case, seed=int(blob.get("seed", -1)), **{n: blob.get(n) for n in _TENSOR_FIELDS})  # type: ignore[arg-type]


def fp8_descales(case: Case) -> tuple[float, float, float]:
    """(q, k, v) descales, 1.0 where the Case gives none or the tensor is not fp8."""
    return (
        case.q_scale if (case.q_scale is not None and is_fp8(case.q_dtype)) else 1.0,
        case.k_scale if (case.k_scale is not None and is_fp8(case.kv_dtype)) else 1.0,
        case.v_scale if (case.v_scale is not None and is_fp8(case.kv_dtype)) else 1.0,
    )
