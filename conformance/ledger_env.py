"""The machine and libraries an `attncheck ledger verify` run judged the ledger on.

The versions are those `attncheck record` stamps a baseline with (kernels.flashinfer.lib.versions:
torch, CUDA/HIP, cuDNN, FlashInfer when installed, the JIT settings), read in the interpreter that
runs the evidence scripts: this one, or another one's (`--python`), asked in a child process.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
from dataclasses import asdict, dataclass
from typing import Any, Optional

from scenarios.errors import InvalidValue

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What another interpreter runs to describe itself: this module, from this checkout, printing JSON.
PROBE = (
    "import json, sys; sys.path.insert(0, {root!r}); from conformance.ledger_env import environment_here; "
    "print(json.dumps(environment_here().to_json()))"
)
PROBE_TIMEOUT_S = 300.0


@dataclass(frozen=True)
class Environment:
    python: str  # the interpreter the scripts run under
    python_version: str
    versions: dict[str, str]  # as `attncheck record` stamps them
    arch: str  # sm90, gfx942, ... or cpu-<machine> (conformance/markers.py)
    device: Optional[str]  # the name of CUDA device 0; None without a GPU

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_json(d: dict[str, Any]) -> Environment:
        return Environment(
            str(d["python"]), str(d["python_version"]), dict(d["versions"]), str(d["arch"]), d.get("device")
        )


def environment_here() -> Environment:
    """This interpreter's versions, architecture and GPU."""
    from conformance.markers import arch_of, gpu_facts
    from kernels.flashinfer.lib import versions

    facts = gpu_facts()
    device = None
    if facts.count:
        import torch

        device = str(torch.cuda.get_device_name(0))
    return Environment(sys.executable, platform.python_version(), versions(), arch_of(facts, "cuda"), device)


def probe(python: str) -> Environment:
    """The environment of `python`: this process's when it is this interpreter, else asked of it."""
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return environment_here()
    try:
        res = subprocess.run(
            [python, "-c", PROBE.format(root=ROOT)],
            capture_output=True,
            text=True,
            timeout=PROBE_TIMEOUT_S,
            check=False,
            stdin=subprocess.DEVNULL,
        )
        lines = res.stdout.strip().splitlines()
        if res.returncode == 0 and lines:
            return Environment.from_json(json.loads(lines[-1]))
        why = (res.stderr.strip().splitlines() or [f"exit {res.returncode}"])[-1]
    except (OSError, subprocess.TimeoutExpired, ValueError, KeyError) as e:
        why = f"{type(e).__name__}: {e}"
    raise InvalidValue(
        "--python",
        python,
        "an interpreter with torch that can read its library versions",
        f"pass the python of the environment under test ({why[:200]})",
    )
