"""`attncheck report`: runs of several runners in one report, as markdown, strict JSON and one
self-contained HTML page."""

from __future__ import annotations

import json
import os
from html.parser import HTMLParser
from typing import Any

import pytest

from conformance import cli
from conformance.gate import crashed
from conformance.parity_run import HARNESS_VERSION
from reports.html import parity_color
from reports.records import ParityRecord, RunFooter, RunHeader, TimingRecord, to_line
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
C = Case.from_json(CASE)


def _gfx942_run(path: str) -> str:
    """A FlashInfer run on a gfx942 runner: one pass near the bound, one fail, one crash, and an A/B sweep."""
    base = dict(run_id="g", target="flashinfer", device="cuda", seed=0)
    out = {
        "max_abs": 0.009,
        "bound": 0.01,
        "nan_count": 0,
        "unwritten_count": 0,
        "inf_mismatch_count": 0,
        "passed": True,
        "worst_index": [0, 0, 0],
        "max_rel": 0.0,
    }
    recs = [
        RunHeader(
            run_id="g",
            target="flashinfer",
            device="cuda",
            budget="quick",
            seed=0,
            versions={"flashinfer": "0.7.4"},
            argv=[],
            started="t",
            harness_version=HARNESS_VERSION,
            arch="gfx942",
        ),
        ParityRecord(backend="fa2", case_id=C.id, case=CASE, status="pass", out=out, features=["causal"], **base),
        ParityRecord(
            backend="aiter",
            case_id=C.id,
            case=CASE,
            status="fail",
            features=["causal"],
            out=dict(out, max_abs=0.05, passed=False),
            known="flashinfer-x",
            **base,
        ),
        crashed(C, "aiter+graph", "killed by signal SIGSEGV (11), running aiter+graph", base),
        *[
            TimingRecord(
                run_id="g",
                target="flashinfer",
                device="cuda",
                arch="gfx942",
                config_id=f"paged/bs1/kv1024/q{q}",
                layout="paged",
                batch=1,
                kv_len=1024,
                q_len=q,
                case={},
                backends=["aiter", "fa2"],
                samples={"aiter": [r] * 5, "fa2": [1.0] * 5},
                timer="cuda-events",
                cold_l2=True,
            )
            for q, r in ((16, 1.9), (24, 0.9))
        ],
        RunFooter(run_id="g", counts={}, elapsed_s=1.0, exit_status=1),
    ]
    with open(path, "w", encoding="utf-8") as f:
        f.writelines(to_line(r) + "\n" for r in recs)
    return path


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, Any]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, Any]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_runs_of_two_runners_merge_into_one_report(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    cpu = str(tmp_path / "cpu")
    assert (
        cli.main(
            [
                "run",
                "--device",
                "cpu",
                "--backend",
                "math",
                "--backend",
                "auto",
                "--case",
                json.dumps(CASE),
                "--out",
                cpu,
            ]
        )
        == 0
    )
    gfx = _gfx942_run(str(tmp_path / "gfx942.jsonl"))
    out = str(tmp_path / "rep")
    assert cli.main(["report", cpu, gfx, "--out", out, "--title", "nightly"]) == 0
    capsys.readouterr()
    md = open(os.path.join(out, "report.md"), encoding="utf-8").read()
    assert md.startswith("# nightly") and "`gfx942`: flashinfer on cuda" in md and "`cpu-" in md
    rows = {
        tuple(c.strip() for c in line.split("|")[1:4]): line for line in md.splitlines() if line.startswith("| gfx")
    }
    assert "| 5.00 " in rows[("gfx942", "flashinfer/aiter", "fp32")]
    assert "| 0.90 " in rows[("gfx942", "flashinfer/fa2", "fp32")]
    assert "**crash** aiter+graph" in md and "known failure: flashinfer-x" in md
    assert "## Routing: torch at cpu-" in md and "(holds)" in md
    assert "### gfx942 paged: time(aiter) / time(fa2)" in md and "q* = 16" in md

    model = json.loads(open(os.path.join(out, "report.json"), encoding="utf-8").read())  # strict JSON: no Infinity
    assert {r["arch"] for r in model["parity"]["rows"]} == {"gfx942", model["runs"][0]["arch"]}
    assert [f["crash"] for f in model["failures"]] == [False, True]
    assert model["timing"][0]["threshold"] == 16

    page = open(os.path.join(out, "report.html"), encoding="utf-8").read()
    tags = _Tags()
    tags.feed(page)
    names = {t for t, _ in tags.tags}
    assert "script" not in names and "link" not in names and "img" not in names and "style" in names
    assert not any("src" in a or "href" in a for _, a in tags.tags)
    cells = [a.get("style", "") for t, a in tags.tags if t == "td"]
    assert f"background:{parity_color(5.0)}" in cells and f"background:{parity_color(0.9)}" in cells


def test_heatmap_colours_follow_error_over_bound() -> None:
    """Green far inside the bound, amber near it, red at or beyond; nothing compared is uncoloured."""
    assert parity_color(None) is None and parity_color("inf") == parity_color(1.0) == parity_color(7.0)
    assert len({parity_color(0.0), parity_color(0.5), parity_color(0.99), parity_color(1.0)}) == 4


def test_the_same_run_twice_is_refused(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    gfx = _gfx942_run(str(tmp_path / "g.jsonl"))
    assert cli.main(["report", gfx, gfx, "--out", str(tmp_path / "r")]) == 2
    assert "pass each results file (or directory) once" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_version_the_runner_lacks_is_left_out_of_every_report() -> None:
    """The H200 runs stamp `hip: none` (no HIP on CUDA): the parity report printed it as a version."""
    from reports.parity import render_markdown
    from reports.records import read_jsonl, versions_text

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    recs = read_jsonl(os.path.join(root, "docs", "evidence", "2026-12-01-h200-2", "matrix_fa2_auto_isolated.jsonl"))
    (head,) = [r for r in recs if isinstance(r, RunHeader)]
    assert head.versions["hip"] == "none"
    md = render_markdown(recs)
    assert "hip" not in md.split("- versions: ")[1].splitlines()[0] and "flashinfer 0.7.2.post1" in md
    assert versions_text({"torch": "2.13", "hip": "none", "cudnn": None}) == "torch 2.13"


def test_results_with_no_record_or_no_end_are_said_first(tmp_path: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """An empty results file is no clean "0 failures": alone it is refused (exit 2, one line); beside a run
    it is said in the report's first line, as is a run with no end record."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    assert cli.main(["report", str(empty), "--out", str(tmp_path / "r0")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "holding at least one attncheck record" in err
    assert not (tmp_path / "r0").exists()
    cut = tmp_path / "cut.jsonl"
    lines = open(_gfx942_run(str(tmp_path / "g.jsonl")), encoding="utf-8").read().splitlines()
    cut.write_text("\n".join(lines[:-1]) + "\n")  # the run's footer never written
    assert cli.main(["report", str(cut), str(empty), "--out", str(tmp_path / "r")]) == 0
    first = (tmp_path / "r" / "report.md").read_text().splitlines()[0]
    assert first.startswith("**Incomplete results**: ") and f"{empty} holds no attncheck record" in first
    assert "run g (" in first and "has no end record" in first
    assert "Incomplete results" in (tmp_path / "r" / "report.html").read_text()
