"""The import contract of pyproject.toml holds: layers point down, no package imports around a loop."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LINT = "import sys; from importlinter.cli import lint_imports; sys.exit(lint_imports(no_cache=True, no_logo=True))"


def test_lint_imports_keeps_every_contract() -> None:
    """`lint-imports` on this checkout's packages (not an installed copy) exits 0: every contract kept."""
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}".rstrip(os.pathsep))
    r = subprocess.run([sys.executable, "-c", LINT], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "BROKEN" not in r.stdout and " KEPT" in r.stdout
