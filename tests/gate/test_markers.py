"""Which markers a machine meets, from patched GPU facts; the architecture stamp; the grid's markers."""

from __future__ import annotations

import pytest

from conformance import markers
from conformance.markers import GpuFacts, NO_GPU, arch_of, detect, needs_of

H200 = GpuFacts(1, False, (9, 0), None)
TWO_H200 = GpuFacts(2, False, (9, 0), None)
MI300X = GpuFacts(1, True, (9, 4), "gfx942")
MI355X = GpuFacts(8, True, (9, 5), "gfx950")
A100 = GpuFacts(1, False, (8, 0), None)


@pytest.mark.parametrize(
    "facts,libs,want",
    [
        (NO_GPU, frozenset(), set()),
        (NO_GPU, frozenset({"flashinfer"}), {"flashinfer"}),
        (H200, frozenset(), {"cuda", "sm90"}),
        (TWO_H200, frozenset({"flashinfer"}), {"cuda", "sm90", "multi_gpu", "flashinfer"}),
        (A100, frozenset(), {"cuda"}),
        (MI300X, frozenset({"aiter"}), {"cuda", "rocm", "gfx942", "aiter"}),
        (MI355X, frozenset(), {"cuda", "rocm", "gfx950", "multi_gpu"}),
        (GpuFacts(1, True, (9, 0), "gfx90a"), frozenset(), {"cuda", "rocm"}),
    ],
)
def test_detect_meets_exactly_what_the_facts_show(facts: GpuFacts, libs: frozenset[str], want: set[str]) -> None:
    """An sm90 number on ROCm is not Hopper, an MI250 is no gfx942, one GPU is not multi-GPU."""
    assert detect(facts, libs) == want


def test_arch_stamps() -> None:
    assert arch_of(H200, "cuda") == "sm90" and arch_of(MI300X, "cuda:0") == "gfx942"
    assert arch_of(H200, "cpu").startswith("cpu-") and arch_of(NO_GPU, "cuda").startswith("cpu-")


def test_every_marker_is_registered_with_the_gate() -> None:
    """The markers the grid and detection use are all declared (pytest runs with --strict-markers)."""
    names = set(markers.BY_NAME)
    assert {"cuda", "sm90", "rocm", "gfx942", "gfx950", "multi_gpu", "flashinfer"} <= names
    assert set(markers.LIBRARY_MODULES) <= names
    assert set(needs_of("flashinfer", "cuda:1")) == {"cuda", "flashinfer"} and needs_of("torch", "cpu") == ()


def test_this_cpu_machine_meets_no_hardware_marker() -> None:
    assert not {"cuda", "sm90", "rocm", "gfx942", "gfx950", "multi_gpu"} & markers.detect_here()


def test_every_hardware_marker_is_declared_once() -> None:
    """`pytest --markers` lists each of attncheck's markers once (the gate plugin declares the hardware ones)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_DISABLE_PLUGIN_AUTOLOAD"}
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "--markers", "-p", "no:cacheprovider"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr[-2000:]
    names = [line.split(":")[0] for line in r.stdout.splitlines() if line.startswith("@pytest.mark.")]
    ours = [n for n in names if n.split(".")[-1].split("(")[0] in {m.name for m in markers.MARKERS} | {"slow"}]
    assert ours and len(ours) == len(set(ours)), ours
