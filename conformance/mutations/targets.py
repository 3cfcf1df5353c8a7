"""Which mutants and which tests a `attncheck mutate` run takes, per target and budget (data).

A target's catalogue is every mutant class that can make that target's verdicts wrong: the
oracle (every target's judge), the target's routing specs, its adapters, and its library.
`all` is the union (what CI runs on a CPU).

The tests of a run (the rows of its kill matrix) are the tests the catalogue names, plus the
conformance suite (conformance/test_parity_grid.py at the quick matrix) of the run's library
(torch for `all`), when that library is available on the device:
  quick     a slice of the conformance suite: for each layout, the cheapest case every backend
            runs, with every backend (per group of backends, where the target groups them:
            torch's per-request and batched backends). Each mutant stops at its first kill (its named tests run
            first); then every row not yet seen failing is run under mutants that reach it until
            one kills it (CI; about a second per mutant)
  standard  the whole conformance suite (every case x backend of the quick matrix), the same way
  full      the whole conformance suite, the complete matrix: every selected test under every
            mutant (`--complete` asks for the complete matrix at any budget)
Every row must kill at least one mutant.
"""

from __future__ import annotations

from typing import Any

from conformance.mutations.adapter_mutants import FLASHINFER_ADAPTER_MUTANTS, TORCH_ADAPTER_MUTANTS
from conformance.mutations.catalogue import ORACLE_MUTANTS
from conformance.mutations.harness_mutants import HARNESS_MUTANTS
from conformance.mutations.kinds import AnyMutant, check_unique
from conformance.mutations.library_mutants import FLASHINFER_PACKAGE_MUTANTS, ROCM_STANDIN_MUTANTS, TORCH_PATCHES
from conformance.mutations.spec_mutants import FLASHINFER_SPEC_MUTANTS, TORCH_SPEC_MUTANTS

CATALOGUES: dict[str, tuple[AnyMutant, ...]] = {
    "torch": ORACLE_MUTANTS + TORCH_SPEC_MUTANTS + TORCH_ADAPTER_MUTANTS + TORCH_PATCHES + HARNESS_MUTANTS,
    "flashinfer": (
        ORACLE_MUTANTS
        + FLASHINFER_SPEC_MUTANTS
        + FLASHINFER_ADAPTER_MUTANTS
        + ROCM_STANDIN_MUTANTS
        + FLASHINFER_PACKAGE_MUTANTS
        + HARNESS_MUTANTS
    ),
}
CATALOGUES["all"] = tuple({m.name: m for t in ("torch", "flashinfer") for m in CATALOGUES[t]}.values())
TARGETS = tuple(CATALOGUES)
# The library targets whose conformance suite a run of each target takes.
# (one pytest session takes one --target, so `all` takes the default target's suite).
CONFORMANCE_TARGET: dict[str, str] = {"torch": "torch", "flashinfer": "flashinfer", "all": "torch"}
BUDGETS: dict[str, str] = {
    "quick": "a conformance slice, first kill per mutant, then every test proven (CI)",
    "standard": "the whole conformance suite, first kill per mutant, then every test proven",
    "full": "the whole conformance suite, the complete matrix (every selected test under every mutant)",
}
# How a budget runs each mutant (engine.py): stop at the first kill and cover the rows, or every cell.
STRATEGY = {"quick": "first-kill", "standard": "first-kill", "full": "complete"}
CONFORMANCE_MATRIX = "quick"  # the matrix budget of the conformance suite a mutation run takes
QUICK_LAYOUTS = ("ragged", "paged", "decode", "single")
PARITY_TEST = "conformance/test_parity_grid.py::test_backend_matches_the_oracle"

for _t in TARGETS:
    check_unique(CATALOGUES[_t])


def catalogue(target: str) -> tuple[AnyMutant, ...]:
    return CATALOGUES[target]


def parity_id(backend: str, case_id: str) -> str:
    return f"{PARITY_TEST}[{backend}-{case_id}]"


def conformance_options(target: str, device: str, seed: int = 0) -> list[str]:
    """The pytest options every session of a run gets (they choose the conformance suite)."""
    return [
        "--target",
        CONFORMANCE_TARGET[target],
        "--device",
        device,
        "--budget",
        CONFORMANCE_MATRIX,
        "--seed",
        str(seed),
    ]


def conformance_rows(target: str, device: str, budget: str, seed: int = 0) -> list[str]:
    """The parity-grid node ids a run of `budget` takes; none when the library is unavailable here."""
    from conformance.parity_run import matrix_of
    from kernels import get_target

    name = CONFORMANCE_TARGET[target]
    lib = get_target(name)
    if not lib.available(device).ok:
        return []
    cases = matrix_of(name, CONFORMANCE_MATRIX, seed, device)
    if budget != "quick":
        return [parity_id(b, c.id) for c in cases for b in lib.backends(device)]
    rows = []
    for group in backend_groups(lib, device):
        chosen = _representative(cases, [lib.make(b, device) for b in group])
        rows += [parity_id(b, c.id) for c in chosen for b in group]
    return rows


def backend_groups(lib: Any, device: str) -> tuple[tuple[str, ...], ...]:
    """The target's backends in the groups the quick slice represents apart (`backend_groups(device)`
    where the target has it: torch's per-request and batched backends serve different batches), else one."""
    groups = getattr(lib, "backend_groups", None)
    return tuple(groups(device)) if groups is not None else (lib.backends(device),)


def _representative(cases: list, adapters: list) -> list:
    """Per layout, the cheapest case with work to do that every backend runs."""
    chosen = []
    for layout in QUICK_LAYOUTS:
        pool = [
            c
            for c in cases
            if c.layout == layout
            and any(q and k for q, k in zip(c.qo_lens, c.kv_lens))
            and all(a.supports(c).ok for a in adapters)
        ]
        if pool:
            chosen.append(
                min(pool, key=lambda c: (sum(q * k for q, k in zip(c.qo_lens, c.kv_lens)) * c.num_qo_heads, c.id))
            )
    return chosen
