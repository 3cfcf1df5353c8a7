"""One pytest-xdist worker per GPU: the device lists, the refusals, the vendor variable, and a real -n 2 run."""

from __future__ import annotations

import json
import os

import pytest

from conformance import pinning
from scenarios.errors import InvalidValue

pytest_plugins = ["pytester"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_auto_lists_what_the_controller_sees() -> None:
    assert pinning.device_list("auto", {}, 2, rocm=False) == ["0", "1"]
    assert pinning.device_list("auto", {"CUDA_VISIBLE_DEVICES": "2,3"}, 2, rocm=False) == ["2", "3"]
    assert pinning.device_list("auto", {"HIP_VISIBLE_DEVICES": "5", "CUDA_VISIBLE_DEVICES": "1,2"}, 1, rocm=True) == [
        "5"
    ]
    assert pinning.device_list("1,0", {}, 0, rocm=False) == ["1", "0"]


@pytest.mark.parametrize("spec", ["0,0", "a,b", "0;1", ""])
def test_a_malformed_or_repeated_list_is_refused(spec: str) -> None:
    with pytest.raises(InvalidValue) as e:
        pinning.device_list(spec, {}, 2, rocm=False)
    assert e.value.field == "--gpus" and e.value.value == spec


def test_more_workers_than_gpus_is_refused() -> None:
    assert pinning.assign(2, ["3", "7"]) == {"gw0": "3", "gw1": "7"}
    with pytest.raises(InvalidValue) as e:
        pinning.assign(3, ["0", "1"])
    assert e.value.fix == "pass -n 2"


def test_rocm_sets_hip_only_and_drops_an_inherited_cuda_list() -> None:
    """HIP applies CUDA_VISIBLE_DEVICES on top of HIP_VISIBLE_DEVICES, so a ROCm worker must not keep both."""
    env = {"CUDA_VISIBLE_DEVICES": "0,1"}
    pinning.pin(env, "1", rocm=True)
    assert env == {"HIP_VISIBLE_DEVICES": "1"}
    env = {}
    pinning.pin(env, "1", rocm=False)
    assert env == {"CUDA_VISIBLE_DEVICES": "1"}


SUITE = """
import os, pytest

@pytest.mark.parametrize("i", range(4))
def test_sees_one_device(i, worker_id, tmp_path_factory):
    out = os.path.join(os.environ["PIN_OUT"], worker_id)
    with open(out, "w") as f:
        f.write(os.environ.get("CUDA_VISIBLE_DEVICES", "unset"))
"""


def test_two_workers_are_pinned_to_two_devices(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest -n 2 --gpus 3,5: gw0 sees device 3 and gw1 device 5; the sidecar records the assignment."""
    monkeypatch.setenv("PYTHONPATH", ROOT)
    monkeypatch.setenv("PIN_OUT", str(pytester.path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    pytester.makepyfile(test_pin=SUITE)
    res = pytester.runpytest_inprocess(
        "-p",
        "conformance.gate_plugin",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:benchmark",
        "-n",
        "2",
        "--gpus",
        "3,5",
        "--gate-json",
        "gate.json",
    )
    res.assert_outcomes(passed=4)
    assert (pytester.path / "gw0").read_text() == "3" and (pytester.path / "gw1").read_text() == "5"
    assert json.loads((pytester.path / "gate.json").read_text())["pinning"] == {"gw0": "3", "gw1": "5"}


def test_gpus_without_workers_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pin="def test_x():\n    pass\n")
    res = pytester.runpytest_inprocess("-p", "conformance.gate_plugin", "-p", "no:cacheprovider", "--gpus", "0,1")
    assert res.ret == pytest.ExitCode.USAGE_ERROR
    assert "add -n N" in res.stderr.str() + res.stdout.str()
