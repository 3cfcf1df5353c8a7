"""The seeds' sequences as directed examples: fixed call sequences every exploration runs first.

Each is the order a seed pull request says broke a real wrapper (long-then-short, short-then-long,
a masked plan then an unmasked one, an empty batch then a short one, capture then re-plan) plus an
explicit backend after a short plan (an explicit backend is never gated). In graph mode also the
re-plans a serving engine makes of one CUDA-graph wrapper per batch size: unmasked then masked, the
window on then off, causal on then off (docs/flashinfer-adapter.md, "Graph wrappers as engines
allocate them"). They run on each of the ragged and paged layouts the subject serves, through the
same machine rules and invariants as the exploration, so a failure here is reported and reproduced
the same way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

from scenarios.case import Case
from conformance.explore.machines import PRECONDITIONS, ScenarioFailure, ScenarioMachine
from scenarios.strategies import Profile

Call = tuple[str, dict[str, Any]]

# Lengths on both sides of every gate threshold of the ROCm tables (8 and 16): 33 is long everywhere,
# 8 short everywhere; two requests so a re-plan can move the longest one.
LONG = ((33, 5), (40, 12))
SHORT = ((8, 3), (40, 12))
# A short plan to capture, and a re-plan of it whose longest request is long: same batch size and
# no more query rows than the capture holds, as a CUDA-graph wrapper's fixed buffers require.
CAPTURED_SHORT = ((8, 8, 8), (40, 12, 20))
LONG_RELENGTHS = [(20, 40), (2, 12), (2, 20)]


GRAPH_ONLY = "skipped: graph mode only"
# The window a directed window toggle switches on: inside the LONG lengths, so it masks keys.
WINDOW = 7


@dataclass(frozen=True)
class Directed:
    name: str
    calls: tuple[Call, ...]
    graph_only: bool = False  # the re-plans of one CUDA-graph wrapper; skipped on an eager machine

    def rules(self) -> set[str]:
        return {name for name, _ in self.calls}


def _case(
    layout: str, lengths: tuple[tuple[int, ...], tuple[int, ...]], dtype: str, head_dims: tuple[int, int]
) -> Case:
    return Case(
        layout,
        lengths[0],
        lengths[1],
        4,
        1,
        head_dim_qk=head_dims[0],
        head_dim_vo=head_dims[1],
        q_dtype=dtype,
        kv_dtype=dtype,
        o_dtype=dtype,
        page_size=16 if layout == "paged" else 1,
    )


def directed_for(profile: Profile, explicit: Optional[str]) -> list[Directed]:
    """The directed sequences for every ragged/paged layout in `profile` (the multi-row batched APIs)."""
    dtype = "bf16" if "bf16" in profile.dtypes else profile.dtypes[0]
    dims = profile.head_dims()[0]
    out: list[Directed] = []
    for layout in [x for x in ("ragged", "paged") if x in profile.layouts]:
        long_, short = _case(layout, LONG, dtype, dims), _case(layout, SHORT, dtype, dims)
        captured = _case(layout, CAPTURED_SHORT, dtype, dims)
        empty = _case(layout, ((), ()), dtype, dims)
        run: Call = ("run", {})
        seqs = [
            Directed(
                f"{layout}: long then short",
                (("plan_long", {"case": long_}), run, ("plan_short", {"case": short}), run),
            ),
            Directed(
                f"{layout}: short then long",
                (("plan_short", {"case": short}), run, ("plan_long", {"case": long_}), run),
            ),
            Directed(
                f"{layout}: masked then unmasked",
                (("plan_masked", {"case": long_.replace(mask="custom")}), run, ("plan_unmasked", {"case": long_}), run),
            ),
            Directed(
                f"{layout}: empty batch then short",
                (("plan_empty", {"case": empty}), run, ("plan_short", {"case": short}), run),
            ),
            Directed(
                f"{layout}: capture then re-plan",
                (
                    ("plan_short", {"case": captured}),
                    ("capture_and_replay", {}),
                    ("replan_captured", {"lengths": LONG_RELENGTHS}),
                ),
            ),
            Directed(
                f"{layout}: unmasked then masked",
                (("plan_unmasked", {"case": long_}), run, ("toggle_mask", {}), run),
                graph_only=True,
            ),
            Directed(
                f"{layout}: window on then off",
                (
                    ("plan_windowed", {"case": long_.replace(window_left=WINDOW)}),
                    run,
                    ("toggle_window", {"window": WINDOW}),
                    run,
                ),
                graph_only=True,
            ),
            Directed(
                f"{layout}: causal on then off",
                (("plan", {"case": long_.replace(causal=True)}), run, ("toggle_causal", {}), run),
                graph_only=True,
            ),
        ]
        if explicit:
            seqs.append(
                Directed(
                    f"{layout}: explicit {explicit} after a short plan",
                    (("plan_short", {"case": short}), run, ("request_backend", {"backend": explicit})),
                )
            )
        out += seqs
    return out


def run_directed(machine: type[ScenarioMachine], seq: Directed) -> tuple[str, Optional[ScenarioFailure]]:
    """("passed" | "failed" | "skipped: why", failure): the calls in order, as the rules make them."""
    if seq.graph_only and not machine.graph:
        return GRAPH_ONLY, None
    missing = sorted(r for r in seq.rules() if not hasattr(machine, r))
    if missing:
        return f"skipped: the subject has no rule {', '.join(missing)}", None
    m = machine()
    try:
        for name, kwargs in seq.calls:
            check = PRECONDITIONS.get(name)
            if check is not None and not check(m):
                known = [st.note.split(":", 1)[0] for st in m.steps if st.outcome in ("known", "not-launched")]
                if known:  # a plan the ledger explains raised, so the sequence cannot go on
                    return f"known: {known[0]}", None
                return f"skipped: {name} does not apply here", None
            getattr(m, name)(**kwargs)
    except ScenarioFailure as e:
        return "failed", e
    finally:
        m.teardown()
    met = [st.note.split(":", 1)[0] for st in m.steps if st.call == "reset"]
    if met:  # a violation the ledger's lifecycle entries (or an earlier finding) explain, and the calls went on
        return f"known: {met[0]}", None
    return "passed", None
