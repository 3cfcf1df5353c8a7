"""`attncheck run`: exit statuses, usage errors that name the value, results kept when interrupted."""

from __future__ import annotations

import json
import math
import os

import pytest
import torch

from conformance import cli, parity_run
from conformance.commands import run as run_command
from kernels.protocol import KernelOutput, Support
from scenarios.poison import poison
from reports.records import ParityRecord, RunFooter, RunHeader, read_jsonl
from scenarios.case import Case
from scenarios.tensors import materialize, save
from cli_case import SMALL


def _run(args, capsys):
    code = cli.main(args)
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_small_case_run_passes_and_writes_results(tmp_path, capsys):
    """A given case through torch math exits 0 with header, records, footer and a report."""
    code, out, _ = _run(
        [
            "run",
            "--target",
            "torch",
            "--device",
            "cpu",
            "--backend",
            "math",
            "--case",
            json.dumps(SMALL),
            "--out",
            str(tmp_path),
        ],
        capsys,
    )
    assert code == 0, out
    recs = read_jsonl(str(tmp_path / "results.jsonl"))
    assert isinstance(recs[0], RunHeader) and isinstance(recs[-1], RunFooter)
    parity = [r for r in recs if isinstance(r, ParityRecord)]
    assert [r.status for r in parity] == ["pass"]
    assert "Outcomes by backend" in (tmp_path / "report.md").read_text()


def test_a_case_file_may_hold_a_list_of_cases(tmp_path, capsys):
    """--case @file.json with a JSON list runs every case in it (a subset of a matrix, say)."""
    f = tmp_path / "cases.json"
    f.write_text(json.dumps([SMALL, dict(SMALL, qo_lens=[2], kv_lens=[5])]))
    code, out, _ = _run(
        [
            "run",
            "--target",
            "torch",
            "--device",
            "cpu",
            "--backend",
            "math",
            "--case",
            f"@{f}",
            "--out",
            str(tmp_path / "o"),
        ],
        capsys,
    )
    assert code == 0, out
    parity = [r for r in read_jsonl(str(tmp_path / "o" / "results.jsonl")) if isinstance(r, ParityRecord)]
    assert [r.case["qo_lens"] for r in parity] == [[3, 0], [2]]


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--target", "nonesuch"], "'nonesuch'"),
        (["--budget", "fast"], "'fast'"),
        (["--backend", "warp"], "'warp'"),
        (
            ["--case", '{"layout": "ragged", "qo_lens": [1], "kv_lens": [1], "num_qo_heads": 8, "num_kv_heads": 3}'],
            "num_kv_heads=3",
        ),
        (["--case", "{not json"], "fix the JSON"),
        (["--case", '{"layout": "ragged"}'], "missing"),
        (["--case", "[]"], "non-empty list"),
        (["--device", "tpu"], "'tpu'"),
        (["--target", "flashinfer"], "unavailable here"),
    ],
)
def test_bad_usage_exits_2_naming_the_value(args, needle, tmp_path, capsys):
    """Each malformed input exits 2 with one line naming the value, and writes no results."""
    code, _, err = _run(["run", "--device", "cpu", "--out", str(tmp_path / "o"), *args], capsys)
    assert code == 2
    assert needle in err and ("Fix" in err or "fix" in err)
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_page_index_out_of_range_in_a_captured_batch_exits_2(tmp_path, capsys):
    """A replayed batch whose page table points past the pool is refused before any kernel runs."""
    case = Case("paged", (2, 3), (9, 5), 4, 2, head_dim_qk=16, head_dim_vo=16, page_size=4)
    inp = materialize(case, 0)
    assert inp.kv_page_indices is not None
    inp.kv_page_indices[1] = inp.k.shape[0] + 7
    save(inp, str(tmp_path / "batch.pt"))
    code, _, err = _run(
        ["run", "--device", "cpu", "--inputs", str(tmp_path / "batch.pt"), "--out", str(tmp_path / "o")], capsys
    )
    assert code == 2
    assert f"kv_page_indices={inp.k.shape[0] + 7}" in err
    assert not (tmp_path / "o" / "results.jsonl").exists()


def test_captured_batch_replays_to_a_pass(tmp_path, capsys):
    """A valid saved batch runs exactly as captured."""
    case = Case("paged", (2, 3), (9, 5), 4, 2, head_dim_qk=16, head_dim_vo=16, page_size=4, causal=True)
    save(materialize(case, 5), str(tmp_path / "batch.pt"))
    code, out, _ = _run(
        [
            "run",
            "--device",
            "cpu",
            "--backend",
            "math",
            "--inputs",
            str(tmp_path / "batch.pt"),
            "--out",
            str(tmp_path / "o"),
        ],
        capsys,
    )
    assert code == 0, out


class _DroppedRowAdapter:
    """A fault-injected adapter: correct attention except one output row it never writes."""

    target, backend, device = "faulty", "dropped-row", "cpu"

    def supports(self, case):
        return Support.yes()

    def plan(self, inputs):
        pass

    def run(self, inputs):
        from oracle.reference import attention

        ref = attention(inputs)
        out = poison(torch.empty_like(ref.out, dtype=torch.float32))
        out[1:] = ref.out[1:]
        return KernelOutput(out=out, lse=ref.lse, lse_base=math.e, resolved_backend="dropped-row")

    def fresh(self):
        return _DroppedRowAdapter()


class _FaultyTarget:
    name = "faulty"

    def backends(self, device):
        return ("dropped-row",)

    def available(self, device):
        return Support.yes()

    def make(self, backend, device):
        return _DroppedRowAdapter()

    def versions(self):
        return {"faulty": "0"}


def test_a_failing_backend_exits_1_and_records_the_unwritten_row(tmp_path, capsys, monkeypatch):
    """An adapter that leaves a row unwritten fails with the count of unwritten elements."""
    monkeypatch.setattr(parity_run, "get_target", lambda name: _FaultyTarget())
    code, out, _ = _run(
        ["run", "--target", "faulty", "--device", "cpu", "--case", json.dumps(SMALL), "--out", str(tmp_path)], capsys
    )
    assert code == 1
    (rec,) = [r for r in read_jsonl(str(tmp_path / "results.jsonl")) if isinstance(r, ParityRecord)]
    assert rec.status == "fail"
    assert rec.out is not None and rec.out["unwritten_count"] == SMALL["num_qo_heads"] * SMALL["head_dim_vo"]
    assert "FAIL" in out


def test_interrupted_run_keeps_what_it_measured(tmp_path, capsys, monkeypatch):
    """A run stopped midway leaves its header and finished records, and a report saying so."""
    seen = []

    def stop_after_two(rec, i, n):
        seen.append(rec)
        if i == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(run_command, "_progress", lambda pace, beat: stop_after_two)
    code, _, err = _run(
        [
            "run",
            "--target",
            "torch",
            "--device",
            "cpu",
            "--backend",
            "math",
            "--backend",
            "flex",
            "--case",
            json.dumps(SMALL),
            "--case",
            json.dumps({**SMALL, "causal": False}),
            "--out",
            str(tmp_path),
        ],
        capsys,
    )
    assert code == 130 and "interrupted" in err
    recs = read_jsonl(str(tmp_path / "results.jsonl"))
    assert isinstance(recs[0], RunHeader)
    assert [r.case_id for r in recs if isinstance(r, ParityRecord)] == [r.case_id for r in seen]
    assert not any(isinstance(r, RunFooter) for r in recs)
    assert "did not finish" in (tmp_path / "report.md").read_text()


def test_python_dash_m_conformance_is_the_same_cli(tmp_path):
    """`python -m conformance` answers like `attncheck`."""
    import subprocess
    import sys

    res = subprocess.run(
        [sys.executable, "-m", "conformance", "run", "--target", "nonesuch", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
    )
    assert res.returncode == 2 and "'nonesuch'" in res.stderr


def test_feature_and_adapter_option_are_checked_before_anything_is_written(tmp_path) -> None:
    from conformance.cli import main

    assert main(["run", "--target", "torch", "--feature", "mask", "--out", str(tmp_path / "a")]) == 2
    assert main(["run", "--target", "torch", "--adapter-option", "mask_form", "--out", str(tmp_path / "b")]) == 2
    assert main(["run", "--target", "torch", "--adapter-option", "mask_form=packed", "--out", str(tmp_path / "c")]) == 2
    assert main(["run", "--target", "torch", "--time-budget", "-1", "--out", str(tmp_path / "d")]) == 2
    assert not any((tmp_path / d).exists() for d in "abcd")


def test_feature_keeps_only_cases_with_it(tmp_path) -> None:
    from conformance.cli import main
    from reports.records import ParityRecord, read_jsonl

    assert main(["run", "--target", "torch", "--backend", "math", "--feature", "window", "--out", str(tmp_path)]) == 0
    recs = [r for r in read_jsonl(str(tmp_path / "results.jsonl")) if isinstance(r, ParityRecord)]
    assert recs and all("window" in r.features for r in recs)


def test_explore_is_dispatched_to_the_scenario_machines(tmp_path) -> None:
    from conformance.cli import main

    with pytest.raises(SystemExit) as e:  # argparse of conformance/explore/loop.py: unknown target
        main(["explore", "--target", "nonesuch", "--out", str(tmp_path / "e")])
    assert e.value.code == 2 and not (tmp_path / "e").exists()


def test_sigterm_ends_a_run_like_ctrl_c_with_exit_143(tmp_path):
    """SIGTERM (what `timeout` and CI cancellation send) midway: the message, the records kept, a report
    saying the run did not finish, exit status 143."""
    import signal
    import subprocess
    import sys
    import time

    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    cases = json.dumps([{**SMALL, "qo_lens": [n, 1]} for n in range(1, 200)])
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "conformance",
            "run",
            "--target",
            "torch",
            "--device",
            "cpu",
            "--backend",
            "math",
            "--case",
            cases,
            "--out",
            str(tmp_path),
        ],
        cwd=root,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    results = tmp_path / "results.jsonl"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not results.exists() or len(results.read_text().splitlines()) < 3):
        time.sleep(0.05)
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=120)
    assert p.returncode == 143 and "terminated (SIGTERM); results written so far are kept" in err
    recs = read_jsonl(str(results))
    assert isinstance(recs[0], RunHeader) and any(isinstance(r, ParityRecord) for r in recs)
    assert not any(isinstance(r, RunFooter) for r in recs)
    assert "did not finish" in (tmp_path / "report.md").read_text()
