"""`pytest --hypothesis-profile=NAME` finds attncheck's profiles, and the oracle's property tests follow it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROBE = f"""
import sys
sys.path.insert(0, {str(ROOT / "tests" / "oracle")!r})


def test_probe():
    import oracle_support
    print("ORACLE_MAX_EXAMPLES", oracle_support.ORACLE_SETTINGS.max_examples)
"""


@pytest.mark.parametrize(
    "flags,examples",
    [
        pytest.param([], 60, id="default"),
        pytest.param(["--hypothesis-profile=attncheck-oracle-thorough"], 1000, id="thorough"),
    ],
)
def test_the_oracle_tests_draw_what_the_chosen_profile_says(tmp_path: Any, flags: list[str], examples: int) -> None:
    """By default 60 derandomised examples; under the thorough profile, chosen the usual way, 1000."""
    probe = tmp_path / "test_probe.py"
    probe.write_text(PROBE)
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}".rstrip(os.pathsep))
    env.pop("ATTNCHECK_ORACLE_PROFILE", None)
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)  # Hypothesis' pytest plugin is what reads the flag
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-s",
            "-p",
            "no:cacheprovider",
            "-p",
            "conftest",
            "--rootdir",
            str(tmp_path),
            *flags,
            str(probe),
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    assert f"ORACLE_MAX_EXAMPLES {examples}" in r.stdout
