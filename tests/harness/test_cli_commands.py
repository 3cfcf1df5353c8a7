"""The attncheck subcommands (conformance/commands/): every one listed, the forwarded tools answering as
their `python -m` form does (exit 2 and one line on bad input), and the CLI importing no adapter."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest

from conformance import cli
from cli_case import SMALL

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SUBCOMMANDS = (
    "run",
    "record",
    "diff",
    "ledger",
    "sweep",
    "report",
    "mutate",
    "explore",
    "routes",
    "threshold",
    "prebuild",
)


def _python_m(module: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", module, *args], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )


def _attncheck(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = cli.main(list(args))
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def _help(capsys: pytest.CaptureFixture, *args: str) -> str:
    with pytest.raises(SystemExit) as e:
        cli.main([*args, "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


def _same_refusal(capsys: pytest.CaptureFixture, name: str, module: str, *args: str) -> str:
    """`attncheck NAME ARGS` and `python -m MODULE ARGS` both exit 2 with the same one-line message."""
    code, _, err = _attncheck(capsys, name, *args)
    ref = _python_m(module, *args)
    assert code == ref.returncode == 2, ref.stderr
    ours, theirs = err.strip().splitlines(), ref.stderr.strip().splitlines()
    assert len(ours) == len(theirs) == 1, (err, ref.stderr)
    assert "Fix" in ours[0] or "fix" in ours[0] or "run this on" in ours[0]
    assert ours[0].split("error: ", 1)[1] == theirs[0].split("error: ", 1)[1]
    return ours[0]


def test_every_subcommand_is_listed_in_the_help(capsys: pytest.CaptureFixture) -> None:
    """`attncheck --help` lists each subcommand with its line, the forwarded tools included."""
    out = _help(capsys)
    listed = set(re.findall(r"^ {4}([a-z]+) ", out, flags=re.MULTILINE))
    assert listed == set(SUBCOMMANDS), out


def test_routes_answers_like_python_dash_m_route_records(tmp_path, capsys: pytest.CaptureFixture) -> None:
    """`attncheck routes`: its help under that name, a run's records checked (exit 0), an unknown spec
    refused as `python -m conformance.route_records` refuses it (exit 2, one line)."""
    assert _help(capsys, "routes").startswith("usage: attncheck routes ")
    assert (
        cli.main(["run", "--device", "cpu", "--backend", "auto", "--case", json.dumps(SMALL), "--out", str(tmp_path)])
        == 0
    )
    capsys.readouterr()
    code, out, _ = _attncheck(capsys, "routes", str(tmp_path / "results.jsonl"), "--spec", "torch")
    assert code == 0 and "routing spec torch" in out
    line = _same_refusal(
        capsys, "routes", "conformance.route_records", str(tmp_path / "results.jsonl"), "--spec", "nonesuch"
    )
    assert line.startswith("attncheck routes: error: ") and "'nonesuch'" in line


def test_threshold_renders_a_table_and_refuses_an_unknown_name_in_one_line(capsys: pytest.CaptureFixture) -> None:
    """`attncheck threshold NAME` renders one seed table (exit 0); an unknown name exits 2 with one line
    under the program's own name, naming the value and the fix."""
    assert _help(capsys, "threshold").startswith("usage: attncheck threshold ")
    code, out, _ = _attncheck(capsys, "threshold", "paged-gfx942")
    assert code == 0 and "## paged-gfx942" in out and "## paged-gfx950" not in out
    code, _, err = _attncheck(capsys, "threshold", "nope")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith("attncheck threshold: error: ") and "'nope'" in lines[0] and "Fix" in lines[0]


def test_prebuild_refuses_a_device_without_flashinfer_in_one_line(capsys: pytest.CaptureFixture) -> None:
    """`attncheck prebuild`: its own options in its help; a device without FlashInfer exits 2 with one line
    under the program's own name, before any build."""
    out = _help(capsys, "prebuild")
    assert out.startswith("usage: attncheck prebuild ")
    assert all(opt in out for opt in ("--budget", "--backend", "--case", "--decode-tensor-cores"))
    code, _, err = _attncheck(capsys, "prebuild", "--device", "cpu", "--backend", "fa2")
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith("attncheck prebuild: error: --device cpu") and "run this on" in lines[0]


def test_importing_the_cli_imports_no_adapter_and_no_flashinfer() -> None:
    """The subcommands import their work inside their handlers: `import conformance.cli` loads no adapter
    module, no FlashInfer, not the record checker."""
    probe = (
        "import sys, conformance.cli; print(sorted(m for m in sys.modules if m in ('flashinfer', "
        "'kernels.torch_target', 'kernels.flashinfer.adapter', 'conformance.route_records', "
        "'conformance.parity_run', 'routing.threshold', 'conformance.explore.loop')))"
    )
    res = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT, timeout=120, check=False
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "[]"
