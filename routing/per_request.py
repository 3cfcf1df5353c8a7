"""Routing of a library that runs each request of a batch on its own: torch SDPA has no batched API.

kernels/torch_sdpa.py calls SDPA once per request and reports the sorted '+'-join of the backends
chosen (`PER_REQUEST`'s name when no request ran one, kernels.torch_sdpa.EMPTY_PATH), so such a
spec's rows describe one request and a batch's expectation is built here from its requests'. Used by
conformance.route_records (records) and conformance.explore.machines (the scenario machines' routing invariant).
"""

from __future__ import annotations

from typing import Sequence, cast

from routing.spec import ExpectedRoute, RoutingQuery, RoutingSpec, expected_route, expected_sequence
from routing.specs.torch_sdpa import BATCHED_REQUESTS

# Per-request libraries and the name their adapter reports for a batch in which no request ran a backend.
PER_REQUEST = {"torch": "empty"}
# Their backends that make one call for the whole batch (torch's padded, jagged and FlexAttention batches):
# their rows read the batch, not a request.
WHOLE_BATCH = {"torch": BATCHED_REQUESTS}
JOIN = "+"


def request_queries(query: RoutingQuery) -> list[RoutingQuery]:
    """One query per request of `query`'s batch; a batch with no request is `query` itself."""
    return [
        query.replace(qo_lens=(qo,), kv_lens=(kv,), max_q_len=qo, max_kv_len=kv, all_requests_empty=qo == 0 or kv == 0)
        for qo, kv in zip(query.qo_lens, query.kv_lens)
    ] or [query]


def batch_route(spec: RoutingSpec, query: RoutingQuery) -> ExpectedRoute:
    """What a per-request library reports for `query`'s batch: its requests' backends, sorted and joined
    with '+' (PER_REQUEST's name when none ran one); `rule` names the rows that decided, in spec order,
    joined the same way. A request's gap or expected raise is the batch's. A WHOLE_BATCH backend's batch is
    one call: its own row."""
    if query.requested in WHOLE_BATCH.get(spec.library, ()):
        return expected_route(spec, query)  # one call for the batch: its rows read the batch as that call
    none_ran = PER_REQUEST[spec.library]
    parts = [expected_route(spec, r) for r in request_queries(query)]
    for p in parts:
        if p.gap is not None or p.raises is not None:
            return p
    reasons = {p.reason for p in parts}
    if len(reasons) != 1:
        raise ValueError(f"spec {spec.library}: requests of one batch expect different reasons {reasons}")
    # No part raises or has a gap (returned above), so each names a backend: validate() holds every row
    # to exactly one of expect_backend / expect_raises.
    ran = sorted(cast("set[str]", {p.backend for p in parts if p.backend != none_ran}))
    decided = {p.rule for p in parts}
    return ExpectedRoute(
        JOIN.join(ran) if ran else none_ran, reasons.pop(), JOIN.join(r.name for r in spec.rules if r.name in decided)
    )


def rows_of(expected: ExpectedRoute) -> tuple[str, ...]:
    """The rows an expectation names: one, or several joined by `batch_route`."""
    return tuple(expected.rule.split(JOIN)) if expected.rule else ()


def routes_for(spec: RoutingSpec, queries: Sequence[RoutingQuery]) -> list[ExpectedRoute]:
    """The expectations for successive plans on one wrapper: per batch for a per-request library (it
    chooses afresh on every call, no lifecycle to apply), else the spec's lifecycle (expected_sequence)."""
    if spec.library in PER_REQUEST:
        return [batch_route(spec, q) for q in queries]
    return expected_sequence(spec, queries)
