"""The quick slice of the conformance suite (conformance/mutations/targets.py `conformance_rows`) per backend group.

torch's per-request backends serve every layout, its batched ones only batches of two or more: a case that
every backend runs would leave the single layout (batches of one) and most per-request cases out, so the
slice picks a case per layout for each group the target names (`backend_groups`).
"""

from __future__ import annotations

from conformance.mutations.targets import PARITY_TEST, backend_groups, conformance_rows
from kernels import get_target

QUICK_LAYOUTS = ("ragged", "paged", "decode", "single")


def _rows_by_backend(rows: list[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for row in rows:
        params = row[len(PARITY_TEST) + 1 : -1]
        for layout in QUICK_LAYOUTS:
            marker = f"-{layout}-"
            if marker in params:
                backend = params[: params.index(marker)]
                out.setdefault(backend, set()).add(layout)
    return out


def test_the_quick_slice_takes_a_case_per_layout_for_each_backend_group() -> None:
    torch_target = get_target("torch")
    per_request, batched = backend_groups(torch_target, "cpu")
    layouts = _rows_by_backend(conformance_rows("torch", "cpu", "quick"))
    assert set(layouts) == set(per_request) | set(batched)
    assert all(layouts[b] == set(QUICK_LAYOUTS) for b in per_request), layouts
    assert all(layouts[b] and "single" not in layouts[b] for b in batched), layouts
