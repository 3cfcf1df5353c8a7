"""oracle/masks.py: which keys a row may attend, and FlashInfer's bit-packed mask form.

`allowed` is checked against the conventions written out per (row, key) in plain loops; the
packing against numpy.packbits(bitorder="little"), which is what FlashInfer's packbits mirrors.
"""

from __future__ import annotations

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from oracle.masks import allowed, pack_bits, segment_pack_bits, unpack_bits
from oracle_support import ORACLE_SETTINGS, SMALL_WINDOWS
from scenarios.case import Case
from scenarios.tensors import materialize

bit_lists = st.lists(st.booleans(), max_size=70)


@ORACLE_SETTINGS
@given(bits=bit_lists)
def test_pack_bits_equals_numpy_packbits_little_endian(bits: list[bool]) -> None:
    """pack_bits gives numpy.packbits(bitorder="little") byte for byte, zero-padded to a whole byte."""
    packed = pack_bits(torch.tensor(bits, dtype=torch.bool))
    assert packed.dtype == torch.uint8
    assert packed.tolist() == np.packbits(np.array(bits, dtype=bool), bitorder="little").tolist()


@ORACLE_SETTINGS
@given(bits=bit_lists)
def test_unpack_bits_inverts_pack_bits(bits: list[bool]) -> None:
    """unpack_bits(pack_bits(m), len(m)) is m."""
    m = torch.tensor(bits, dtype=torch.bool)
    assert torch.equal(unpack_bits(pack_bits(m), m.numel()), m)


def test_pack_bits_flattens_a_matrix_row_major() -> None:
    """A [qo, kv] mask packs as its row-major flattening: element (i, j) is bit i*kv + j."""
    m = torch.tensor([[True, False, False], [False, False, True], [True, True, False]])
    # bits 0, 5, 6, 7 set in byte 0; bit 8 (element (2, 2)) clear in byte 1.
    assert pack_bits(m).tolist() == [0b11100001, 0]


@ORACLE_SETTINGS
@given(shapes=st.lists(st.tuples(st.integers(0, 5), st.integers(0, 7)), max_size=4), seed=st.integers(0, 99))
def test_segment_pack_bits_aligns_each_request_to_a_byte(shapes: list[tuple[int, int]], seed: int) -> None:
    """Each request's bits start on a byte boundary at its packed offset and unpack to its own mask."""
    g = torch.Generator().manual_seed(seed)
    masks = [torch.rand(q * k, generator=g) < 0.5 for q, k in shapes]
    flat = torch.cat(masks) if masks else torch.zeros(0, dtype=torch.bool)
    indptr = torch.tensor([0] + np.cumsum([m.numel() for m in masks]).tolist(), dtype=torch.int32)
    packed, packed_indptr = segment_pack_bits(flat, indptr)
    assert packed_indptr.tolist() == [0] + np.cumsum([-(-m.numel() // 8) for m in masks]).tolist()
    assert int(packed_indptr[-1]) == packed.numel()
    for i, m in enumerate(masks):
        seg = packed[int(packed_indptr[i]) : int(packed_indptr[i + 1])]
        assert seg.tolist() == np.packbits(m.numpy(), bitorder="little").tolist()
        assert torch.equal(unpack_bits(seg, m.numel()), m)


def test_materialized_custom_mask_round_trips_through_segment_packing() -> None:
    """A materialised batch's custom mask survives segment packing request by request."""
    case = Case(
        layout="ragged",
        qo_lens=(3, 0, 5, 2),
        kv_lens=(5, 4, 3, 0),
        num_qo_heads=1,
        num_kv_heads=1,
        head_dim_qk=4,
        head_dim_vo=4,
        mask="custom",
    )
    inputs = materialize(case, seed=1)
    assert inputs.custom_mask is not None and inputs.mask_indptr is not None
    packed, packed_indptr = segment_pack_bits(inputs.custom_mask, inputs.mask_indptr)
    for i, (q, k) in enumerate(zip(case.qo_lens, case.kv_lens)):
        seg = packed[int(packed_indptr[i]) : int(packed_indptr[i + 1])]
        mask = inputs.request_mask(i)
        assert mask is not None
        assert torch.equal(unpack_bits(seg, q * k).view(q, k), mask)


def _by_the_book(qo: int, kv: int, causal: bool, window: int, custom: torch.Tensor | None) -> torch.Tensor:
    """The DESIGN.md conventions, one (row, key) at a time."""
    out = torch.zeros(qo, kv, dtype=torch.bool)
    for i in range(qo):
        for j in range(kv):
            ok = (not causal or j <= i + (kv - qo)) and (window < 0 or j >= i + (kv - qo) - window)
            out[i, j] = ok and (custom is None or bool(custom[i, j]))
    return out


@ORACLE_SETTINGS
@given(
    qo=st.integers(0, 7),
    kv=st.integers(0, 9),
    causal=st.booleans(),
    window=st.sampled_from(SMALL_WINDOWS),
    with_custom=st.booleans(),
    seed=st.integers(0, 99),
    data=st.data(),
)
def test_allowed_follows_the_documented_conventions(
    qo: int, kv: int, causal: bool, window: int, with_custom: bool, seed: int, data: st.DataObject
) -> None:
    """allowed() is bottom-right causal AND window AND custom, for any subset of rows asked for."""
    custom = torch.rand(qo, kv, generator=torch.Generator().manual_seed(seed)) < 0.6 if with_custom else None
    rows = sorted(data.draw(st.sets(st.integers(0, qo - 1), min_size=1)) if qo else [])
    keep = allowed(torch.tensor(rows, dtype=torch.long), qo, kv, causal=causal, window_left=window, custom=custom)
    expected = _by_the_book(qo, kv, causal, window, custom)[rows]
    if keep is None:
        assert not causal and window < 0 and custom is None
        return
    assert torch.equal(keep, expected)
