"""The pytest gate, run in-process on small generated suites: --require, markers, skips by reason, JUnit + sidecar."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

import conformance.markers as markers

pytest_plugins = ["pytester"]

SUITE = """
import pytest
from conformance.gate_plugin import as_decision

@pytest.mark.sm90
def test_needs_hopper():
    pass

@pytest.mark.cuda
def test_cuda_declines_a_case(request):
    as_decision(request.node)
    pytest.skip("skip: backend has no fp8 inputs: detail")

def test_declines_a_case(request):
    as_decision(request.node)
    pytest.skip("skip: backend has no fp8 inputs: detail")

def test_plain():
    pass

def test_plain_skip():
    pytest.skip("nothing to do here: detail")
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_suite=SUITE)
    return pytester.runpytest_inprocess(
        "-p", "conformance.gate_plugin", "-p", "no:cacheprovider", "-p", "no:benchmark", *args
    )


def test_without_require_hardware_skips_pass_and_are_grouped_by_reason(pytester: pytest.Pytester) -> None:
    """On a CPU machine the sm90 test skips naming what is missing, and the summary groups skips by reason."""
    res = _run(pytester, "-rs")
    res.assert_outcomes(passed=1, skipped=4)
    out = res.stdout.str()
    assert "needs sm90: an NVIDIA GPU of compute capability 9.0" in out
    assert "skips by reason:" in out
    assert "1  backend has no fp8 inputs  [decision]" in out
    assert "1  needs cuda  [skip]" in out and "1  needs sm90  [skip]" in out
    assert "1  nothing to do here  [skip]" in out


def test_require_spares_decisions_about_a_case(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """A declined case may skip on any runner: with cuda met and required, only the hardware skip counts."""
    monkeypatch.setattr(markers, "detect_here", lambda: frozenset({"cuda"}))
    import conformance.gate_plugin as gp

    monkeypatch.setattr(gp, "detect_here", lambda: frozenset({"cuda"}))
    res = _run(pytester, "--require", "cuda")
    res.assert_outcomes(passed=1, skipped=4)
    assert res.ret == 0
    assert "2  backend has no fp8 inputs  [decision]" in res.stdout.str()


def test_a_required_marker_no_test_carries_fails_the_run(pytester: pytest.Pytester) -> None:
    """--require gfx950 where no collected test needs gfx950 proves nothing, and says so."""
    res = _run(pytester, "--require", "gfx950", "-k", "plain")
    assert res.ret == 1
    assert "--require gfx950: no collected test needs gfx950" in res.stdout.str()


def test_an_unknown_required_marker_is_a_usage_error(pytester: pytest.Pytester) -> None:
    res = _run(pytester, "--require", "sm100x")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    assert "--require='sm100x' is invalid" in res.stderr.str() + res.stdout.str()


def test_require_fails_a_hardware_skip_in_junit_and_the_sidecar(pytester: pytest.Pytester) -> None:
    """--require sm90 without sm90: the test fails naming the flag and the fix; X.xml gets X.json beside it."""
    res = _run(pytester, "--junitxml", "out/junit.xml", "--require", "sm90")
    res.assert_outcomes(passed=1, skipped=3, errors=1)
    assert res.ret == 1
    assert "--require sm90: this runner declares that hardware" in res.stdout.str()
    suite = ET.parse(pytester.path / "out" / "junit.xml").getroot()
    [case] = [c for c in suite.iter("testcase") if c.get("name") == "test_needs_hopper"]
    assert "--require sm90" in ET.tostring(case, encoding="unicode")
    side = json.loads((pytester.path / "out" / "junit.json").read_text())
    assert side["kind"] == "gate" and side["required"] == ["sm90"] and side["exitstatus"] == 1
    tests = {t["nodeid"].split("::")[-1]: t for t in side["tests"]}
    assert tests["test_needs_hopper"]["outcome"] == "failed" and tests["test_needs_hopper"]["required_failure"]
    assert tests["test_needs_hopper"]["markers"] == ["sm90"]
    assert tests["test_declines_a_case"]["decision"] is True
    assert tests["test_cuda_declines_a_case"]["decision"] is False  # no cuda here: a hardware skip
    assert {"reason": "backend has no fp8 inputs", "kind": "decision", "count": 1} in side["skips_by_reason"]
    assert {"reason": "needs sm90", "kind": "required: failed", "count": 1} in side["skips_by_reason"]
    assert side["totals"] == {"passed": 1, "failed": 1, "skipped": 3}
