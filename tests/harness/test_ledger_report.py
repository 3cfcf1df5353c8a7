"""The ledger's facts (conformance/ledger_facts.py) and `attncheck ledger report`: every entry has a family, a root
cause per studied version, controls and its upstream search; a report carries what a maintainer needs, from the
recorded evidence, marking an output printed by another version of its script; bad usage exits 2 in one line."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from typing import Any

import pytest

from conformance import cli, known_failures
from conformance import ledger_facts as lf
from conformance import ledger_report as lr
from conformance import ledger_verify_files as files
from conformance.known_failures import LEDGER, KnownFailure

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE_LINE = re.compile(r"^[\w./-]+\.(py|cu|cuh|h):\d+(-\d+)?\b")
UPSTREAM_REF = re.compile(r"^[\w.-]+/[\w.-]+#\d+$")


def test_every_entry_has_facts_in_a_family_and_every_family_an_entry() -> None:
    assert set(lf.FACTS) == {e.id for e in LEDGER}
    assert {f.family for f in lf.FACTS.values()} == set(lf.FAMILIES)
    assert all(f.certainty in lf.CERTAINTIES for f in lf.FACTS.values())


@pytest.mark.parametrize("entry", LEDGER, ids=lambda e: e.id)
def test_an_entrys_root_cause_names_source_lines_in_every_studied_version(entry: KnownFailure) -> None:
    """One Cause per version of the target studied, each line "path:line[-line] what" where the cause was read; a
    version the entry lists has the defect's code path (no `differs`)."""
    facts = lf.FACTS[entry.id]
    assert [c.version for c in facts.causes] == list(lf.STUDIED[entry.target])
    for cause in facts.causes:
        assert cause.lines and all(ln.strip() for ln in cause.lines)
        if facts.certainty != lf.NOT_LOCATED:
            assert all(SOURCE_LINE.match(ln) for ln in cause.lines), cause
        assert not (cause.version in entry.versions and cause.differs), (entry.id, cause.version, cause.differs)
    assert facts.controls and facts.expected and facts.cause


def test_related_reports_are_cited_by_number_title_and_state() -> None:
    related = [r for f in lf.FACTS.values() for r in f.related]
    assert related and all(UPSTREAM_REF.match(r.ref) and r.title and r.state and r.relation for r in related)
    assert lf.SEARCHED in lf.NONE_FOUND


# (ids asked, what the report must contain, what it must not)
REPORTS = [
    pytest.param(
        ["flashinfer-packed-mask-indptr"],
        (
            "## packed_custom_mask is read at element offsets",
            "flashinfer-ai/flashinfer#2201 (pull request, open)",
            "```python\n#!/usr/bin/env python3\n",
            "python3 repro_flashinfer_packed_mask_indptr.py",
            "request 1: 2.112",
            "0.7.2.post1/verify/flashinfer-packed-mask-indptr.txt`; 0.7.4,",
            "`flashinfer/prefill.py:5211-5212`",
            "NVIDIA H200 (sm90)",
        ),
        ("## plan(), run()", "FLASHINFER_WORKSPACE_BASE", "Building JIT module"),
        id="one-entry-family",
    ),
    pytest.param(
        ["empty-input"],
        (
            *(f"`{i}`" for i in lf.FACTS if lf.FACTS[i].family == "empty-input"),
            "repro_flashinfer_decode_empty_batch_plan.py tensor-cores",
            "repro_flashinfer_decode_empty_batch_plan.py cudnn",
            "attach `repro_flashinfer_decode_empty_batch_run.pt`",
            lf.NONE_FOUND,
        ),
        ("## packed_custom_mask",),
        id="family-id",
    ),
    pytest.param(
        ["flashinfer-fa3-hnd-kv-heads-wrong"],
        (
            "`flashinfer-fa3-hnd-kv-heads-sigfpe`",
            "printed by the script as it is today",
            "single_prefill_sm90.cu:75-79",
        ),
        (),
        id="entry-selects-its-family",
    ),
    pytest.param(
        ["flashinfer-sticky-paged-auto"],
        (
            "does not reproduce, ledger verify 2026-12-02; not listed; rewritten",
            "reproduces, ledger verify 2026-12-02; listed; same code path",
            "| `flashinfer-fa3-paged-192-128` | reproduces, ledger verify 2026-12-02; listed; same code path | "
            "reproduces, ledger verify 2026-12-02; listed; same code path |",
            "flashinfer-ai/flashinfer#808",
        ),
        (),
        id="versions-from-verify-runs",
    ),
    pytest.param(
        ["flashinfer-graph-no-query-rows"],
        ("`flashinfer/data/include/flashinfer/attention/cascade.cuh:715-717`", "(probable:", lf.NONE_FOUND),
        (),
        id="probable-cause",
    ),
    pytest.param(
        ["torch-sdpa-empty-rows"],
        (
            "| `torch-sdpa-empty-rows` | reproduces, ledger verify 2026-12-02; listed; sources not read |",
            "cuda 13.0, cudnn 91900, torch 2.11.0+cu130; python 3.12.3; NVIDIA H200 (sm90)",
        ),
        ("0.7.4",),
        id="torch",
    ),
]


@pytest.mark.parametrize("ids,present,absent", REPORTS)
def test_a_report_carries_what_a_maintainer_needs(ids: list[str], present: tuple, absent: tuple) -> None:
    text = lr.render(ids, LEDGER, ROOT)
    missing = [p for p in present if p not in text]
    assert not missing, missing
    assert not [a for a in absent if a in text]


def test_no_id_writes_every_family_once() -> None:
    text = lr.render([], LEDGER, ROOT)
    assert [ln[3:] for ln in text.splitlines() if ln.startswith("## ")] == [f.title for f in lf.FAMILIES.values()]


def test_a_version_shown_only_by_the_output_kept_beside_the_script_says_so(tmp_path: Any) -> None:
    """Before any verify run of a version, a confirmed entry whose kept output names that version is shown there."""
    ev = tmp_path / "docs" / "evidence"
    ev.mkdir(parents=True)
    (ev / "repro_x.py").write_text("print('x')\n")
    (ev / "repro_x.h200.txt").write_text("torch 2.11.0+cu130 cuda 13.0\nDEFECT\n")
    entry = KnownFailure(
        "torch-sdpa-empty-rows", "torch", ("2.11.0+cu130",), "s", "fail", "docs/evidence/repro_x.py", True, "-"
    )
    text = lr.render([entry.id], [entry], str(tmp_path))
    assert f"| `torch-sdpa-empty-rows` | {lr.SHOWN_BESIDE}; listed; {lr.NOT_READ} |" in text, text


def test_a_run_cut_short_says_nothing_against_an_earlier_verdict(tmp_path: Any) -> None:
    """An entry reproduced in one verify run and timed out in a later one (fa3-hnd-kv-heads-wrong on 2026-12-02's
    second and third sittings): the version cell keeps the verdict, not the newest run's silence."""
    real = json.loads(
        open(os.path.join(ROOT, "docs/evidence/2026-12-02-h200-explore/0.7.4/verify/ledger-verify.json")).read()
    )
    [outcome] = [o for o in real["entries"] if o["id"] == "flashinfer-empty-batch-plan"]
    cut = {**outcome, "status": files.COULD_NOT_RUN, "reason": "timed out after 120 s", "exit_code": None}
    for name, started, o in (("early", "2026-12-02T01:00:00Z", outcome), ("late", "2026-12-02T02:00:00Z", cut)):
        d = tmp_path / "docs" / "evidence" / name / "verify"
        d.mkdir(parents=True)
        (d / files.VERIFY_JSON).write_text(json.dumps({**real, "started": started, "entries": [o]}))
    runs = lr.verify_runs(str(tmp_path))
    assert [o.status for r in runs["0.7.4"] for o in r.outcomes] == [files.COULD_NOT_RUN, files.REPRODUCES]
    [entry] = [e for e in LEDGER if e.id == "flashinfer-empty-batch-plan"]
    run = lr.newest_run(entry, "0.7.4", runs, str(tmp_path))
    assert run is not None and run.outcome.status == files.REPRODUCES, run


def _evidence(tmp: Any, script_text: str, printed_by: str) -> KnownFailure:
    """A one-entry ledger in a scratch root: the script as it is now, and a verify run whose output names the sha256
    of `printed_by`."""
    ev = tmp / "docs" / "evidence"
    (ev / "run" / "verify").mkdir(parents=True)
    (ev / "repro_x.py").write_text(script_text)
    entry = KnownFailure(
        "flashinfer-packed-mask-indptr", "flashinfer", ("0.7.4",), "s", "fail", "docs/evidence/repro_x.py", True, "-"
    )
    sha = hashlib.sha256(printed_by.encode()).hexdigest()
    header = f"{files.HEADER}docs/evidence/repro_x.py sha256 {sha}; flashinfer 0.7.4; python 3.12.3; H200 (sm90); d\n"
    (ev / "run" / "verify" / f"{entry.id}.txt").write_text(
        header + "# command: x\nDEFECT SHOWN\n# reproduces: exit 1\n"
    )
    report = json.loads(
        open(os.path.join(ROOT, "docs/evidence/2026-12-02-h200-explore/0.7.4/verify/ledger-verify.json")).read()
    )
    [outcome] = [o for o in report["entries"] if o["id"] == entry.id]
    report["entries"] = [{**outcome, "sha256": sha, "output": f"{entry.id}.txt", "script": entry.evidence}]
    (ev / "run" / "verify" / files.VERIFY_JSON).write_text(json.dumps(report))
    return entry


@pytest.mark.parametrize("edited", [False, True], ids=["same-script", "script-edited-since"])
def test_an_observed_output_says_whether_todays_script_printed_it(tmp_path: Any, edited: bool) -> None:
    """An output printed by another version of its script is shown as such (and the version cell says so), and the
    output kept beside the script is added; one printed by today's script stands alone."""
    entry = _evidence(tmp_path, "print('v2')\n" if edited else "print('v1')\n", "print('v1')\n")
    shutil.copy(
        os.path.join(ROOT, "docs/evidence/repro_flashinfer_packed_mask_indptr.h200.txt"),
        tmp_path / "docs/evidence/repro_x.h200.txt",
    )
    [obs, *beside] = lr.observations(entry, lr.verify_runs(str(tmp_path)), str(tmp_path))
    assert obs.body == ("DEFECT SHOWN",) and "flashinfer 0.7.4" in obs.environment
    assert (obs.provenance == lr.PRINTED_TODAY) is not edited
    assert [b.provenance for b in beside] == ([lr.UNHASHED] if edited else [])
    run = lr.newest_run(entry, "0.7.4", lr.verify_runs(str(tmp_path)), str(tmp_path))
    cell = lr._version_cell(entry, lf.FACTS[entry.id], "0.7.4", run, str(tmp_path))
    assert ("by an earlier version of the script" in cell) is edited


def _report_cli(capsys: Any, monkeypatch: Any, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(known_failures, "LEDGER", LEDGER)
    code = cli.main(["ledger", "report", *args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.mark.parametrize(
    "args,needle",
    [
        pytest.param(["flashinfer-packed-mask"], "ID='flashinfer-packed-mask'", id="unknown-id"),
        pytest.param(["empty-input", "no-such-family"], "ID='no-such-family'", id="unknown-among-known"),
        pytest.param(["--out", "DIR"], "a file path", id="out-a-directory"),
        pytest.param(["--out", "DIR/missing/r.md"], "existing directory", id="out-under-a-missing-folder"),
    ],
)
def test_bad_usage_exits_2_in_one_line_and_writes_nothing(
    tmp_path: Any, capsys: Any, monkeypatch: Any, args: list[str], needle: str
) -> None:
    args = [a.replace("DIR", str(tmp_path)) for a in args]
    code, out, err = _report_cli(capsys, monkeypatch, *args)
    assert code == 2 and needle in err and "Fix:" in err and len(err.strip().splitlines()) == 1, err
    assert out == "" and os.listdir(tmp_path) == []


def test_the_report_goes_to_out_or_to_standard_output(tmp_path: Any, capsys: Any, monkeypatch: Any) -> None:
    code, out, _ = _report_cli(capsys, monkeypatch, "flashinfer-packed-mask-indptr")
    assert code == 0 and out.startswith(lr.TITLE) and "## packed_custom_mask" in out
    target = tmp_path / "report.md"
    code, out, _ = _report_cli(capsys, monkeypatch, "flashinfer-packed-mask-indptr", "--out", str(target))
    assert code == 0 and str(target) in out and "```python" not in out
    assert target.read_text().startswith(lr.TITLE) and os.listdir(tmp_path) == ["report.md"]
