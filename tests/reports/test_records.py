"""A parity record is built once, from what happened, and never edited afterwards.

conformance/evaluate.py builds it at the end of each outcome, the ledger's verdict and the
isolated child's context note make a new one (dataclasses.replace): what was written to the
results file is what every later reader sees.
"""

from __future__ import annotations

import dataclasses

import pytest

from reports.records import ParityRecord
from scenarios.case import Case

CASE = Case("ragged", (3,), (5,), 4, 2)


def test_a_record_cannot_be_edited_only_replaced() -> None:
    rec = ParityRecord(
        run_id="r",
        target="torch",
        backend="math",
        device="cpu",
        case_id=CASE.id,
        case=CASE.to_json(),
        seed=0,
        status="fail",
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        rec.status = "pass"  # type: ignore[misc]
    known = dataclasses.replace(rec, known="an-entry")
    assert (rec.known, known.known, known.status) == (None, "an-entry", "fail")
