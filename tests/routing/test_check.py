"""Reason parsing and the checker, both directions, on synthetic observations (no FlashInfer)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kernels.protocol import NOT_REPORTED
from routing import reasons as R
from routing.check import ObservedRoute, check, coverage
from routing.spec import ExpectedRoute, RoutingQuery, SpecGap, expected_route
from routing.specs.flashinfer_rocm import SPEC

PAGED = (
    "query length <= {t} on a page size AITER cannot page natively (its flat gather copies the "
    "whole KV cache, which a short query cannot amortise)"
)
RAGGED = (
    "query length <= {t} on ragged KV (AITER's mha_varlen_fwd costs more per call than the "
    "in-tree kernel, which a short query cannot amortise)"
)
BR367 = "qo_len={n} <= 16 (fa2 is faster than AITER for short queries)"


# --- parse_reason ------------------------------------------------------------------------------
@given(st.integers(0, 100_000))
def test_short_query_reasons_parse_whatever_threshold_they_embed(t):
    """Formatted text with any number inside parses to its constant, and T is read back."""
    assert R.parse_reason(PAGED.format(t=t)) is R.PAGED_SHORT_QUERY
    assert R.parse_reason(RAGGED.format(t=t)) is R.RAGGED_SHORT_QUERY
    assert R.embedded_threshold(R.PAGED_SHORT_QUERY, PAGED.format(t=t)) == t
    assert R.embedded_threshold(R.RAGGED_SHORT_QUERY, RAGGED.format(t=t)) == t


def test_paged_and_ragged_short_query_reasons_do_not_collide():
    """Each short-query text contains only its own fragment; the two constants differ (#373)."""
    assert R.PAGED_SHORT_QUERY != R.RAGGED_SHORT_QUERY
    assert R.PAGED_SHORT_QUERY.fragment not in RAGGED.format(t=16)
    assert R.RAGGED_SHORT_QUERY.fragment not in PAGED.format(t=16)
    assert "flat gather" in R.PAGED_SHORT_QUERY.fragment and "ragged KV" in R.RAGGED_SHORT_QUERY.fragment


def test_no_fragment_contains_another():
    """Import-time self-check holds: no text can match two constants by construction."""
    for a in R.ALL:
        for b in R.ALL:
            assert a is b or a.fragment not in b.fragment


@pytest.mark.parametrize(
    "text",
    [
        BR367.format(n=16),  # the open PR's string: not MAIN's, so not explained
        "query length <= 16",  # the shared prefix alone names no gate
        "fa2 chosen",
        PAGED.format(t=16) + "; " + RAGGED.format(t=16),  # two fragments: ambiguous
        "",
    ],
)
def test_unknown_or_ambiguous_text_is_unrecognised(text):
    """Text matching no single fragment parses to UNRECOGNISED."""
    assert R.parse_reason(text) is R.UNRECOGNISED


def test_none_and_not_reported_pass_through():
    """None ('no fallback') and NOT_REPORTED ('library gives no reason') are kept apart."""
    assert R.parse_reason(None) is None
    assert R.parse_reason(NOT_REPORTED) is NOT_REPORTED


# --- check: direction one, expected vs observed --------------------------------------------------
E_RAGGED = ExpectedRoute("fa2", R.RAGGED_SHORT_QUERY, "ragged_short_query", threshold=16)
E_AITER = ExpectedRoute("aiter", None, "aiter")


@pytest.mark.parametrize(
    "expected,observed,status",
    [
        (E_RAGGED, ObservedRoute("fa2", RAGGED.format(t=16)), "pass"),
        (E_RAGGED, ObservedRoute("aiter", None), "wrong_backend"),
        (E_RAGGED, ObservedRoute("fa2", PAGED.format(t=16)), "wrong_reason"),
        (E_RAGGED, ObservedRoute("fa2", RAGGED.format(t=8)), "wrong_threshold"),
        (E_RAGGED, ObservedRoute("fa2", BR367.format(n=3)), "unrecognised_reason"),
        (E_RAGGED, ObservedRoute("fa2", NOT_REPORTED), "library_gives_no_reason"),
        (E_RAGGED, ObservedRoute("fa2", None), "wrong_reason"),
        (E_AITER, ObservedRoute("aiter", None), "pass"),
        (E_AITER, ObservedRoute("aiter", NOT_REPORTED), "library_gives_no_reason"),
        (E_AITER, ObservedRoute("aiter", "custom mask (not supported by AITER)"), "wrong_reason"),
        (E_AITER, ObservedRoute(None, None, raised="ValueError"), "unexpected_raise"),
        (ExpectedRoute(None, None, "r", raises="ValueError"), ObservedRoute(None, None, raised="ValueError"), "pass"),
        (ExpectedRoute(None, None, "r", raises="ValueError"), ObservedRoute("fa2", None), "expected_raise"),
        (
            ExpectedRoute(None, None, "r", raises="ValueError"),
            ObservedRoute(None, None, raised="TypeError"),
            "expected_raise",
        ),
        (ExpectedRoute(None, None, None, gap=SpecGap("ragged", "gfx950")), ObservedRoute("aiter", None), "spec_gap"),
    ],
)
def test_check_statuses(expected, observed, status):
    """Each way an observation can differ from the spec has its own status; only 'pass' passes."""
    v = check(expected, observed)
    assert v.status == status and v.passed == (status == "pass")


def test_not_reported_never_passes_as_none():
    """A library that gives no reason cannot pass an expectation of 'no fallback'."""
    assert not check(E_AITER, ObservedRoute("aiter", NOT_REPORTED)).passed


# --- coverage: direction two, rows reached and decisions explained -------------------------------
def test_coverage_lists_rows_never_reached():
    """Rows no passing verdict confirms are reported as unreached."""
    query = RoutingQuery(api="ragged", arch="gfx942", max_q_len=4)
    v = check(expected_route(SPEC, query), ObservedRoute("fa2", RAGGED.format(t=16)))
    cov = coverage(SPEC, [v])
    assert v.passed and "ragged_short_query" not in cov.unreached
    assert "custom_mask" in cov.unreached and not cov.complete and cov.unexplained == ()


def test_coverage_flags_a_decision_no_row_explains():
    """An observed route no row produces (unknown text, or a pairing no row has) is unexplained."""
    query = RoutingQuery(api="ragged", arch="gfx942", max_q_len=64)
    e = expected_route(SPEC, query)
    odd = [
        check(e, ObservedRoute("fa2", BR367.format(n=64))),
        check(e, ObservedRoute("aiter", "custom mask (not supported by AITER)")),
        check(e, ObservedRoute(None, None, raised="RuntimeError")),
    ]
    cov = coverage(SPEC, odd)
    assert len(cov.unexplained) == 3 and len(cov.failed) == 3


def test_coverage_separates_explained_failures_from_unexplained_ones():
    """A wrong but known route (fa2 for a mask) fails yet is explained by a row."""
    e = expected_route(SPEC, RoutingQuery(api="ragged", arch="gfx942", max_q_len=64))
    v = check(e, ObservedRoute("fa2", "custom mask (not supported by AITER)"))
    cov = coverage(SPEC, [v])
    assert v.status == "wrong_backend" and cov.failed == (v,) and cov.unexplained == ()
