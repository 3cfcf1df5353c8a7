"""scripts/suite_cpu.py: the per-test CPU plugin and its summary, on a three-test session run in process."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"

SAMPLE = """
import subprocess, sys, time

def test_sleeps():
    time.sleep(0.2)

def test_computes():
    sum(i * i for i in range(2_000_000))

def test_starts_a_child():
    subprocess.run([sys.executable, "-c", "sum(i * i for i in range(3_000_000))"], check=True)
"""


def test_each_test_gets_its_wall_its_own_cpu_and_its_childrens(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.syspath_prepend(str(SCRIPTS))
    import suite_cpu  # loaded before the sessions, as when the suite measured is run with it: they share the module

    out = tmp_path / "cpu"
    monkeypatch.setenv("SUITE_CPU_DIR", str(out))
    pytester.makepyfile(test_cpu_sample=SAMPLE)
    for _ in range(2):  # a second session in this process writes its own rows only
        pytester.runpytest_inprocess("-p", "suite_cpu", "-p", "no:cacheprovider").assert_outcomes(passed=3)
    (written,) = os.listdir(out)
    written_rows = json.loads((out / written).read_text())["rows"]
    assert len(written_rows) == 3, [r[0] for r in written_rows]
    rows = {r[0].split("::")[1]: r[1:] for r in written_rows}
    sleeps, computes, child = rows["test_sleeps"], rows["test_computes"], rows["test_starts_a_child"]
    assert sleeps[0] >= 0.2 and sleeps[1] + sleeps[2] < 0.15, sleeps  # waited, did not compute
    assert computes[1] + computes[2] > 0.05 and computes[3] + computes[4] == 0, computes
    assert child[3] + child[4] > 0.05 and child[1] + child[2] < child[3] + child[4], child

    assert suite_cpu.main([str(out), "--top", "5"]) == 0
    printed = capsys.readouterr().out
    assert "    3  test_cpu_sample.py" in printed, printed
    assert suite_cpu.main([str(tmp_path / "missing")]) == 2
    assert "not a folder" in capsys.readouterr().err
