"""`attncheck record` and `attncheck diff`: each kind of regression, the statistical timing rule, refusals."""

from __future__ import annotations

import json
import os
from typing import Any, Optional

import pytest

from conformance import cli
from conformance.ledger_env import Environment
from conformance.ledger_verify_files import VERIFY_JSON, Outcome, VerifyReport
from conformance.parity_run import HARNESS_VERSION
from reports.records import ParityRecord, RunFooter, RunHeader, StageRecord, TimingRecord, read_jsonl, to_line
from scenarios.case import Case

CASE = {
    "layout": "ragged",
    "qo_lens": [3, 1],
    "kv_lens": [9, 4],
    "num_qo_heads": 4,
    "num_kv_heads": 2,
    "head_dim_qk": 16,
    "head_dim_vo": 16,
    "causal": True,
    "q_dtype": "fp32",
    "kv_dtype": "fp32",
    "o_dtype": "fp32",
}


def _cmp(ratio: float) -> dict[str, Any]:
    return {
        "max_abs": ratio * 0.01,
        "bound": 0.01,
        "nan_count": 0,
        "unwritten_count": 0,
        "inf_mismatch_count": 0,
        "passed": ratio < 1,
        "worst_index": [0, 0, 0],
        "max_rel": 0.0,
    }


def _par(
    backend: str,
    case_id: str,
    status: str,
    ratio: Optional[float] = 0.1,
    resolved: Optional[str] = None,
    reason: str = "",
    fallback: Optional[str] = None,
) -> ParityRecord:
    return ParityRecord(
        run_id="r",
        target="torch",
        backend=backend,
        device="cuda",
        case_id=case_id,
        case=CASE,
        seed=0,
        status=status,
        reason=reason,
        resolved_backend=resolved or backend,
        fallback_reason=fallback,
        out=_cmp(ratio) if ratio is not None else None,
    )


def _tim(config: str, samples: list[float]) -> TimingRecord:
    return TimingRecord(
        run_id="r",
        target="torch",
        device="cuda",
        arch="sm90",
        config_id=config,
        layout="paged",
        batch=1,
        kv_len=64,
        q_len=4,
        case=CASE,
        backends=["math"],
        samples={"math": samples},
    )


def _write(path: str, recs: list[Any], finished: bool = True, **header: Any) -> str:
    h = dict(
        run_id="r",
        target="torch",
        device="cuda",
        budget="quick",
        seed=0,
        versions={"torch": "2.11"},
        argv=[],
        started="t",
        harness_version=HARNESS_VERSION,
        arch="sm90",
    )
    h.update(header)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(to_line(RunHeader(**h)) + "\n")
        f.writelines(to_line(r) + "\n" for r in recs)
        if finished:
            f.write(to_line(RunFooter(run_id="r", counts={}, elapsed_s=1.0, exit_status=0)) + "\n")
    return path


BASE = [
    _par("math", "A", "pass"),
    _par("flash", "B", "pass", 0.1),
    _par("auto", "C", "pass", resolved="flash"),
    _par("math", "D", "pass"),
    _par("math", "E", "fail", 3.0),
    _par("auto", "F", "pass", resolved="fa2"),
    _tim("paged/bs1/kv64/q4", [1.00, 1.01, 0.99, 1.00, 1.02, 0.98, 1.00, 1.01]),
    _tim("paged/bs1/kv64/q8", [1.00, 1.00, 1.00, 1.00, 1.00]),
    _tim("paged/bs1/kv64/q16", [1.00, 1.01, 0.99, 1.00, 1.02]),
]
NEW = [
    _par("math", "A", "fail", 2.0),
    _par("flash", "B", "pass", 0.6),
    _par("auto", "C", "pass", resolved="math"),
    _par("math", "D", "skip", None, reason="library refused the configuration: no kernel"),
    _par("math", "E", "pass"),
    _par("auto", "F", "pass", resolved="fa2", fallback="qo_len=16 <= 16 (fa2 is faster than AITER for short queries)"),
    _tim("paged/bs1/kv64/q4", [1.30, 1.31, 1.29, 1.30, 1.32, 1.28, 1.30, 1.31]),
    # median 1.2x, but spread so wide the interval reaches below 1.10: not a regression
    _tim("paged/bs1/kv64/q8", [0.90, 1.00, 1.20, 1.50, 1.60]),
    _tim("paged/bs1/kv64/q16", [0.80, 0.81, 0.79, 0.80, 0.82]),
]


def _diff(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = cli.main(["diff", *args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_each_kind_of_regression_is_found_and_exits_1(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    _write(
        str(tmp_path / "base" / "results.jsonl"),
        BASE,
        versions={"torch": "2.11", "flashinfer": "0.7.2.post1", "FLASHINFER_WORKSPACE_BASE": "/j/0.7.2"},
    )
    new = _write(
        str(tmp_path / "new" / "results.jsonl"),
        NEW,
        versions={"torch": "2.11", "flashinfer": "0.7.4", "FLASHINFER_WORKSPACE_BASE": "/j/0.7.4"},
    )
    with open(new, "a", encoding="utf-8") as f:  # a stage whose build failed: a variant that no longer builds
        f.write(to_line(StageRecord(run_id="r", stage="fa3", backends=["fa3"], prepare={"error": "nvcc: boom"})) + "\n")
    code, out, _ = _diff(capsys, str(tmp_path / "base"), str(tmp_path / "new"), "--out", str(tmp_path / "d"))
    assert code == 1
    rep = json.loads((tmp_path / "d" / "diff.json").read_text())
    keys = {
        k: [c["key"] for c in rep[k]]
        for k in (
            "newly_failing",
            "error_growth",
            "routing_changes",
            "lost_capabilities",
            "timing_regressions",
            "newly_passing",
            "timing_improvements",
        )
    }
    assert keys == {
        "newly_failing": ["math A"],
        "error_growth": ["flash B"],
        "routing_changes": ["auto C", "auto F"],
        "lost_capabilities": ["math D", "stage fa3"],
        "timing_regressions": ["math paged/bs1/kv64/q4"],
        "newly_passing": ["math E"],
        "timing_improvements": ["math paged/bs1/kv64/q16"],
    }
    assert rep["regressions"] == 7 and rep["version_changes"] == ["flashinfer 0.7.2.post1 -> 0.7.4"]
    assert rep["setting_changes"] == ["FLASHINFER_WORKSPACE_BASE /j/0.7.2 -> /j/0.7.4"]  # provenance, apart
    assert "**7 regression(s)**" in out and "flashinfer 0.7.2.post1 -> 0.7.4" in out
    assert (tmp_path / "d" / "diff.md").read_text().startswith("# attncheck diff: torch on sm90")


def test_a_baseline_against_itself_has_no_regression(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    base = _write(str(tmp_path / "b.jsonl"), BASE)
    code, out, _ = _diff(capsys, base, base)
    assert code == 0 and "**no regression**" in out


@pytest.mark.parametrize(
    "new_recs,finished,why",
    [
        pytest.param(
            BASE, False, "NEW is unfinished (run r: 9 records, no end record)", id="killed-after-its-last-record"
        ),
        pytest.param(
            BASE[:3],
            False,
            "NEW is unfinished (run r: 3 records, no end record); NEW lacks 6 pair(s) that BASE has",
            id="cut-off",
        ),
        pytest.param(BASE[:3], True, "NEW lacks 6 pair(s) that BASE has", id="finished-but-narrower"),
        pytest.param([*BASE, _par("math", "Z", "pass")], True, "BASE lacks 1 pair(s) that NEW has", id="wider"),
    ],
)
def test_an_incomplete_comparison_is_said_first_and_exits_1(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], new_recs: list[Any], finished: bool, why: str
) -> None:
    """A NEW cut short, killed, or narrower than BASE is never "no regression": the first line says why."""
    base = _write(str(tmp_path / "b.jsonl"), BASE)
    new = _write(str(tmp_path / "n.jsonl"), new_recs, finished=finished)
    code, out, _ = _diff(capsys, base, new, "--out", str(tmp_path / "d"))
    first = out.splitlines()[0]
    assert code == 1 and first.startswith("**Incomplete comparison, not a verdict**: ") and why in first
    assert "**no regression** among the pairs both sides have" in out
    rep = json.loads((tmp_path / "d" / "diff.json").read_text())
    assert rep["regressions"] == 0 and rep["exit_status"] == 1 and rep["incomplete"]


def test_two_sides_with_no_pair_in_common_are_refused(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A header-only NEW (the run died before its first record) compares nothing: exit 2, one line."""
    base = _write(str(tmp_path / "b.jsonl"), BASE)
    new = _write(str(tmp_path / "n.jsonl"), [], finished=False)
    code, out, err = _diff(capsys, base, new)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1
    assert "pairs=" in err and "rerun the side that stopped early" in err


@pytest.mark.parametrize(
    "base_kw,new_kw,needle",
    [
        ({}, dict(arch="gfx942"), "arch='sm90 -> gfx942'"),
        ({}, dict(harness_version="1.0.0"), "re-record BASE with attncheck 1.0.0"),
        ({}, dict(target="flashinfer"), "target='torch -> flashinfer'"),
        (dict(arch=None), {}, "re-record BASE with `attncheck record`"),
        ({}, dict(standin="rocm_flashinfer"), "standin="),
    ],
)
def test_an_incompatible_baseline_is_refused_in_one_line(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], base_kw: dict[str, Any], new_kw: dict[str, Any], needle: str
) -> None:
    """Exit 2, one line naming the mismatch and the fix, and no diff written."""
    base = _write(str(tmp_path / "b.jsonl"), BASE, **base_kw)
    new = _write(str(tmp_path / "n.jsonl"), BASE, **new_kw)
    code, _, err = _diff(capsys, base, new, "--out", str(tmp_path / "d"))
    assert code == 2, err
    assert needle in err and "Fix:" in err and err.count("\n") == 1
    assert not (tmp_path / "d").exists()


def test_a_baseline_of_another_schema_is_refused(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    base = _write(str(tmp_path / "b.jsonl"), BASE)
    old = tmp_path / "old.jsonl"
    old.write_text("\n".join(json.dumps(dict(json.loads(line), schema=2)) for line in open(base)) + "\n")
    code, _, err = _diff(capsys, str(old), base)
    assert code == 2 and "not 1" not in err and "schema version" in err and "re-record" in err
    code, _, err = _diff(capsys, str(tmp_path / "missing"), base)
    assert code == 2 and "missing" in err


def test_a_file_written_before_the_arch_stamp_still_reads(tmp_path: Any) -> None:
    """RunHeader.arch was added within schema 1: an older header without it reads as arch None."""
    line = json.loads(
        to_line(
            RunHeader(
                run_id="r",
                target="torch",
                device="cpu",
                budget="quick",
                seed=0,
                versions={},
                argv=[],
                started="t",
                harness_version="0.1.0",
            )
        )
    )
    del line["arch"]
    (tmp_path / "old.jsonl").write_text(json.dumps(line) + "\n")
    [h] = read_jsonl(str(tmp_path / "old.jsonl"))
    assert isinstance(h, RunHeader) and h.arch is None


def test_record_writes_a_stamped_baseline_with_timing(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """attncheck record: parity records and timing samples, stamped with versions, arch and harness version."""
    out = str(tmp_path / "base")
    code = cli.main(
        [
            "record",
            "--device",
            "cpu",
            "--backend",
            "math",
            "--backend",
            "flash",
            "--case",
            json.dumps(CASE),
            "--out",
            out,
            "--time",
            "math",
            "--rows",
            "1x32",
            "--q",
            "2",
            "--heads",
            "2/1",
            "--head-dim",
            "8",
            "--dtype",
            "fp32",
            "--reps",
            "3",
            "--warmup",
            "0",
        ]
    )
    assert code == 0, capsys.readouterr().out
    heads = [
        r
        for f in ("results.jsonl", "timing.jsonl")
        for r in read_jsonl(os.path.join(out, f))
        if isinstance(r, RunHeader)
    ]
    assert (
        all(
            h.arch and h.arch.startswith("cpu-") and h.harness_version == HARNESS_VERSION and "torch" in h.versions
            for h in heads
        )
        and len(heads) == 2
    )
    [t] = [r for r in read_jsonl(os.path.join(out, "timing.jsonl")) if isinstance(r, TimingRecord)]
    assert t.backends == ["math"] and len(t.samples["math"]) == 3
    capsys.readouterr()
    code, out_text, _ = _diff(capsys, out, out)
    assert code == 0 and "compared 2 (backend, case) pairs and 1 timed" in out_text


def test_record_refuses_a_bad_timing_backend_before_writing(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(
        ["record", "--device", "cpu", "--case", json.dumps(CASE), "--out", str(tmp_path / "b"), "--time", "warp"]
    )
    assert code == 2 and "'warp'" in capsys.readouterr().err
    assert not (tmp_path / "b").exists()


# ---- with `attncheck ledger verify` results ------------------------------------------------------------------

SIGFPE = Case("ragged", (300,), (128,), 8, 1, kv_layout="HND").to_json()  # fa3 HND, group 0: the crash entry
EMPTY = Case("ragged", (), (), 4, 2).to_json()  # plan() of no requests: flashinfer-empty-batch-plan
PLAIN = Case("ragged", (3,), (9,), 4, 2).to_json()  # no entry explains it


def _fi(backend: str, case: dict[str, Any], status: str, reason: str = "", known: Optional[str] = None) -> ParityRecord:
    return ParityRecord(
        run_id="r",
        target="flashinfer",
        backend=backend,
        device="cuda",
        case_id=Case.from_json(case).id,
        case=case,
        seed=0,
        status=status,
        reason=reason,
        resolved_backend=backend if status in ("pass", "fail") else None,
        out=_cmp(0.1) if status == "pass" else None,
        known=known,
    )


def _verify(path: Any, version: str, statuses: dict[str, str], arch: str = "sm90", started: str = "t") -> str:
    env = Environment("python3", "3.11.7", {"torch": "2.11.0+cu130", "flashinfer": version}, arch, "NVIDIA H200")
    outcomes = [
        Outcome(i, "flashinfer", ("0.7.2.post1",), st, "", False, "", "docs/evidence/x.py")
        for i, st in statuses.items()
    ]
    report = VerifyReport(env, ["attncheck", "ledger", "verify"], started, 300.0, outcomes, finished="t")
    os.makedirs(str(path), exist_ok=True)
    with open(os.path.join(str(path), VERIFY_JSON), "w", encoding="utf-8") as f:
        json.dump(report.to_json(), f)
    return os.path.join(str(path), VERIFY_JSON)


def _upgrade(tmp_path: Any, new_empty_batch: str = "error") -> None:
    """BASE 0.7.2.post1 held the crash case back and passed the others; NEW 0.7.4 launched it and it crashed."""
    held = "not launched: flashinfer-fa3-hnd-kv-heads-sigfpe (not filed upstream yet): ..."
    base = [_fi("fa3", SIGFPE, "skip", held, "flashinfer-fa3-hnd-kv-heads-sigfpe"), _fi("fa2", EMPTY, "pass")]
    new = [_fi("fa3", SIGFPE, "error", "crashed, the process evaluating this case died: killed by signal SIGFPE (8)")]
    new.append(_fi("fa2", EMPTY, new_empty_batch, "RuntimeError: max(): Expected reduction dim"))
    base.append(_fi("fa2", PLAIN, "pass"))
    new.append(_fi("fa2", PLAIN, "pass"))
    kw: dict[str, Any] = dict(target="flashinfer", device="cuda")
    _write(str(tmp_path / "base" / "results.jsonl"), base, versions={"flashinfer": "0.7.2.post1"}, **kw)
    _write(str(tmp_path / "new" / "results.jsonl"), new, versions={"flashinfer": "0.7.4"}, **kw)


def test_with_verify_results_a_reproduced_entry_is_known_a_vanished_one_fixed_the_rest_regressions(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """skip -> crashed where NEW's verify reproduces the crash entry: known, still present. A newly failing record
    whose entry NEW's verify does not reproduce stays a regression. An entry reproduced on BASE and not on NEW is
    fixed by the upgrade; one NEW could not run is not. Without the verify files: exactly as before."""
    _upgrade(tmp_path)
    d = str(tmp_path / "d")
    code, out, _ = _diff(capsys, str(tmp_path / "base"), str(tmp_path / "new"), "--out", d)
    rep = json.loads((tmp_path / "d" / "diff.json").read_text())
    assert code == 1 and "ledger" not in rep and "known_still_present" not in rep and "Known, still" not in out
    assert sorted(c["key"] for c in rep["newly_failing"]) == [f"fa2 {PLAIN_ID[0]}", f"fa3 {PLAIN_ID[1]}"]

    reproduced, gone, unknown = "reproduces", "does-not-reproduce", "could-not-run"
    _verify(tmp_path / "base", "0.7.2.post1", {k: reproduced for k in ENTRIES})
    _verify(
        tmp_path / "new",
        "0.7.4",
        {ENTRIES[0]: reproduced, ENTRIES[1]: gone, ENTRIES[2]: gone, ENTRIES[3]: unknown},
    )
    code, out, _ = _diff(capsys, str(tmp_path / "base"), str(tmp_path / "new"), "--out", d)
    rep = json.loads((tmp_path / "d" / "diff.json").read_text())
    assert [c["key"] for c in rep["known_still_present"]] == [f"fa3 {PLAIN_ID[1]}"]
    assert "flashinfer-fa3-hnd-kv-heads-sigfpe" in rep["known_still_present"][0]["detail"]
    assert [c["key"] for c in rep["newly_failing"]] == [f"fa2 {PLAIN_ID[0]}"] and code == 1
    assert [c["key"] for c in rep["fixed_by_upgrade"]] == sorted(ENTRIES[1:3])
    assert "## Known, still present" in out and "## Fixed by the upgrade (2)" in out and "**1 regression(s)**" in out

    _upgrade(tmp_path, new_empty_batch="pass")  # the empty batch fixed: only the known crash is left
    code, out, _ = _diff(capsys, str(tmp_path / "base"), str(tmp_path / "new"))
    assert code == 0 and "**no regression**" in out


def test_several_verify_runs_of_a_side_count_per_entry_the_newest_that_ran(
    tmp_path: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A ledger too slow for one device call is verified a few entries per sitting: --new-ledger repeated combines
    the runs, per entry the newest that ran its script (a later timeout says nothing); runs of another version are
    refused in one line."""
    _upgrade(tmp_path)
    _verify(tmp_path / "base", "0.7.2.post1", {k: "reproduces" for k in ENTRIES})
    old = _verify(tmp_path / "v1", "0.7.4", {ENTRIES[0]: "reproduces", ENTRIES[1]: "reproduces"}, started="2026-12-01")
    new = _verify(tmp_path / "v2", "0.7.4", {ENTRIES[0]: "could-not-run", ENTRIES[1]: "does-not-reproduce"})
    d = str(tmp_path / "d")
    code, out, _ = _diff(capsys, str(tmp_path / "base"), str(tmp_path / "new"), "--out", d, "--new-ledger", new)
    rep = json.loads((tmp_path / "d" / "diff.json").read_text())
    assert rep["known_still_present"] == []  # the sigfpe entry could not run: nothing explains the crash
    code, out, _ = _diff(
        capsys, str(tmp_path / "base"), str(tmp_path / "new"), "--out", d, "--new-ledger", new, "--new-ledger", old
    )
    rep = json.loads((tmp_path / "d" / "diff.json").read_text())
    assert [c["key"] for c in rep["known_still_present"]] == [f"fa3 {PLAIN_ID[1]}"]  # the older run reproduced it
    assert [c["key"] for c in rep["fixed_by_upgrade"]] == [ENTRIES[1]]  # the newer run no longer does
    assert f"{new} + {old}" in out

    other = _verify(tmp_path / "v3", "0.7.2.post1", {ENTRIES[0]: "reproduces"})
    code, _, err = _diff(
        capsys, str(tmp_path / "base"), str(tmp_path / "new"), "--new-ledger", new, "--new-ledger", other
    )
    assert code == 2 and "--new-ledger" in err and other in err and err.count("\n") == 1, err


ENTRIES = (
    "flashinfer-fa3-hnd-kv-heads-sigfpe",
    "flashinfer-empty-batch-plan",
    "flashinfer-packed-mask-indptr",
    "flashinfer-packbits-empty",
)
PLAIN_ID = (Case.from_json(EMPTY).id, Case.from_json(SIGFPE).id)


@pytest.mark.parametrize(
    "files_kw,needle",
    [
        pytest.param(dict(version="0.7.2.post1"), "NEW ledger=", id="verify-of-another-version"),
        pytest.param(dict(arch="sm100"), "on sm100", id="verify-of-another-arch"),
        pytest.param(dict(broken=True), "--new-ledger=", id="not-a-verify-file"),
    ],
)
def test_a_verify_file_that_is_not_of_its_side_is_refused_in_one_line(
    tmp_path: Any, capsys: pytest.CaptureFixture[str], files_kw: dict[str, Any], needle: str
) -> None:
    """NEW's verify results must be of NEW's library version and architecture; exit 2, nothing written."""
    _upgrade(tmp_path)
    args = [str(tmp_path / "base"), str(tmp_path / "new"), "--out", str(tmp_path / "d")]
    if files_kw.get("broken"):
        (tmp_path / "v.json").write_text('{"kind": "run"}')
        args += ["--new-ledger", str(tmp_path / "v.json")]
    else:
        version = files_kw.get("version", "0.7.4")
        _verify(tmp_path / "new", version, {ENTRIES[0]: "reproduces"}, files_kw.get("arch", "sm90"))
    code, _, err = _diff(capsys, *args)
    assert code == 2 and needle in err and "Fix:" in err and err.count("\n") == 1, err
    assert not (tmp_path / "d").exists()
