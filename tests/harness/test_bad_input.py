"""Every bad input the attncheck command line can get, for every subcommand, in one table: exit 2, one
line on stderr naming the value and the fix, no traceback, nothing printed on stdout, nothing written.

A row is the argv after `attncheck` and a piece of the line that names the offending value. `%NAME` in an
argument is a path: `%out` a folder that must not appear, `%results` the folder of a finished run,
any other name a file or folder made in the test's `given/` (GIVEN says how; a name GIVEN lacks is a
path that does not exist). Each call is in-process (conformance.cli.main), from an empty working folder.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable

import pytest
import torch

from conformance import cli
from scenarios.case import Case
from scenarios.tensors import materialize, save
from cli_case import SMALL

CASE = ["--case", json.dumps(SMALL)]


def _truncated(p: Path) -> None:
    save(materialize(Case.from_json(SMALL), 0, "cpu"), str(p))
    p.write_bytes(p.read_bytes()[:200])


GIVEN: dict[str, Callable[[Path], object]] = {
    "file": lambda p: p.write_text("not a folder"),
    "dir": lambda p: p.mkdir(),
    "empty": lambda p: p.write_bytes(b""),
    "an-empty-file-whose-name-takes-the-path-past-eighty-characters.json": lambda p: p.write_bytes(b""),
    "garbage": lambda p: p.write_bytes(bytes(range(256)) * 4),
    "text": lambda p: p.write_text("q,k,v\n1,2,3\n"),
    "truncated": _truncated,
    "case-not-an-object": lambda p: torch.save({"case": "ragged", "q": torch.zeros(1)}, str(p)),
    "merge-conflict": lambda p: p.write_text('<<<<<<< HEAD\n{"verdicts": {}}\n=======\n'),
}

RUN = ["run", "--device", "cpu", "--out", "%out"]
SWEEP = ["sweep", "--device", "cpu", "--a", "math", "--b", "flash", "--out", "%out"]
ROUTES = ["routes", "%results/results.jsonl", "--spec", "torch"]
EXPLORE = ["explore", "--out", "%out"]
MUTATE = ["mutate", "--out", "%out"]
VERIFY = ["ledger", "verify", "--out", "%out"]
P = pytest.param
ROWS = [
    # the command line itself
    P([], "command", id="no-subcommand"),
    P(["nope"], "'nope'", id="unknown-subcommand"),
    # run
    P([*RUN, "--inputs", "%truncated"], "--inputs=", id="run-inputs-truncated"),
    P([*RUN, "--inputs", "%garbage"], "--inputs=", id="run-inputs-random-bytes"),
    P([*RUN, "--inputs", "%text"], "--inputs=", id="run-inputs-text"),
    P([*RUN, "--inputs", "%empty"], "--inputs=", id="run-inputs-empty"),
    P([*RUN, "--inputs", "%missing.pt"], "--inputs=", id="run-inputs-missing"),
    P([*RUN, "--inputs", "%dir"], "not a directory", id="run-inputs-directory"),
    P([*RUN, "--inputs", "%case-not-an-object"], "a dict with a 'case' entry", id="run-inputs-case-not-an-object"),
    P([*RUN, *CASE, "--out", "%file"], "is a file: pass another --out", id="run-out-a-file"),
    P([*RUN, *CASE, "--out", "%file/under"], "is a file: pass another --out", id="run-out-under-a-file"),
    P([*RUN, *CASE, "--out", ""], "--out=''", id="run-out-empty"),
    P([*RUN, "--case", '{"layout": "ragged", "qo_lens": "abc"}'], "Case.qo_lens='abc'", id="run-case-lengths-text"),
    P([*RUN, "--case", json.dumps({**SMALL, "causal": "false"})], "Case.causal='false'", id="run-case-bool-text"),
    P([*RUN, "--case", '{"layout": "ragged",'], "fix the JSON", id="run-case-json-cut"),
    P([*RUN, "--case", "[]"], "non-empty list", id="run-case-empty-list"),
    P([*RUN, "--case", "@%missing.json"], "missing.json'", id="run-case-file-missing"),
    P([*RUN, "--case", "@%dir"], "dir'", id="run-case-file-a-directory"),
    P([*RUN, "--case", "@%empty"], "empty'", id="run-case-file-empty"),
    P(
        [*RUN, "--case", "@%an-empty-file-whose-name-takes-the-path-past-eighty-characters.json"],
        "eighty-characters.json'",
        id="run-case-file-long-name",
    ),
    P([*RUN, *CASE, "--target", "nope"], "'nope'", id="run-target"),
    P([*RUN, *CASE, "--budget", "huge"], "'huge'", id="run-budget"),
    P([*RUN, *CASE, "--backend", "nope"], "'nope'", id="run-backend"),
    P([*RUN, *CASE, "--adapter-option", "novalue"], "KEY=VALUE", id="run-adapter-option"),
    P([*RUN, *CASE, "--device", "tpu"], "--device='tpu'", id="run-device"),
    P([*RUN, *CASE, "--feature", "speed"], "--feature='speed'", id="run-feature"),
    P([*RUN, *CASE, "--time-budget", "-1"], "--time-budget", id="run-time-budget"),
    P([*RUN, *CASE, "--time-budget", "soon"], "'soon'", id="run-time-budget-not-a-number"),
    P([*RUN, *CASE, "--seed", "1.5"], "'1.5'", id="run-seed-not-an-integer"),
    P([*RUN, *CASE, "--jit-cache", "%file/jit"], "--jit-cache=", id="run-jit-cache-under-a-file"),
    P([*RUN, *CASE, "--heartbeat", "-1"], "--heartbeat=-1.0", id="run-heartbeat-negative"),
    P([*RUN, *CASE, "--case-timeout", "30"], "--case-timeout=30.0", id="run-case-timeout-without-isolate"),
    P([*RUN, *CASE, "--isolate", "--case-timeout", "0"], "--case-timeout=0.0", id="run-case-timeout-zero"),
    P([*RUN, *CASE, "--bogus"], "--bogus", id="run-unknown-option"),
    # record
    P(["record", *RUN[1:], *CASE, "--time", "warp"], "'warp'", id="record-time-backend"),
    P(["record", *RUN[1:], *CASE, "--time", "math", "--reps", "2"], "--reps=2", id="record-reps"),
    P(["record", *RUN[1:], *CASE, "--time", "math", "--rows", "-1x4"], "--rows", id="record-rows-negative"),
    P(["record", *RUN[1:], *CASE, "--time", "math", "--device", "tpu"], "--device='tpu'", id="record-device"),
    P(["record", *RUN[1:], *CASE, "--out", "%file"], "is a file", id="record-out-a-file"),
    # diff
    P(["diff", "%missing", "%results"], "missing'", id="diff-base-missing"),
    P(["diff", "%results", "%empty"], "NEW=", id="diff-new-empty"),
    P(["diff", "%garbage", "%results"], "garbage'", id="diff-base-garbage"),
    P(["diff", "%dir", "%results"], "dir'", id="diff-base-folder-without-results"),
    P(["diff", "%results", "%results", "--out", "%file"], "--out=", id="diff-out-a-file"),
    P(["diff", "%results", "%results", "--error-factor", "x"], "'x'", id="diff-error-factor-not-a-number"),
    P(["diff", "%results", "%results", "--error-floor", "0"], "--error-floor 0.25", id="diff-error-floor-zero"),
    P(["diff", "%results", "%results", "--base-ledger", "%missing"], "--base-ledger=", id="diff-ledger-missing"),
    # ledger
    P(["ledger"], "ACTION", id="ledger-no-action"),
    P([*VERIFY, "nope-id"], "'nope-id'", id="ledger-verify-unknown-id"),
    P([*VERIFY, "--timeout", "-1"], "--timeout=-1.0", id="ledger-verify-timeout-negative"),
    P([*VERIFY, "--target", "nope"], "'nope'", id="ledger-verify-target"),
    P([*VERIFY, "--out", "%file"], "is a file", id="ledger-verify-out-a-file"),
    P([*VERIFY, "--python", "%missing"], "--python=", id="ledger-verify-python-missing"),
    P(["ledger", "report", "nope-id"], "'nope-id'", id="ledger-report-unknown-id"),
    P(["ledger", "report", "--out", "%dir"], "not a directory", id="ledger-report-out-a-folder"),
    P(["ledger", "report", "--out", "%file/x.md"], "--out=", id="ledger-report-out-under-a-file"),
    # sweep
    P([*SWEEP, "--b", "warp"], "'warp'", id="sweep-backend"),
    P([*SWEEP, "--target", "nope"], "'nope'", id="sweep-target"),
    P([*SWEEP, "--out", "%file"], "is a file: pass another --out", id="sweep-out-a-file"),
    P([*SWEEP, "--out", "%file/under"], "is a file: pass another --out", id="sweep-out-under-a-file"),
    P([*SWEEP, "--out", ""], "--out=''", id="sweep-out-empty"),
    P([*SWEEP, "--device", "tpu"], "--device='tpu'", id="sweep-device"),
    P([*SWEEP, "--reps", "x"], "'x'", id="sweep-reps-not-an-integer"),
    P([*SWEEP, "--q", "0"], "--q='0'", id="sweep-q-zero"),
    P([*SWEEP, "--head-dim=-8"], "head_dim_qk=-8", id="sweep-head-dim-negative"),
    P([*SWEEP, "--heartbeat", "-1"], "--heartbeat=-1.0", id="sweep-heartbeat-negative"),
    P(["sweep", "--device", "cpu", "--a", "math", "--out", "%out"], "--b", id="sweep-b-missing"),
    # report
    P(["report", "%missing", "--out", "%out"], "missing'", id="report-missing"),
    P(["report", "%empty", "--out", "%out"], "empty'", id="report-empty"),
    P(["report", "%garbage", "--out", "%out"], "garbage'", id="report-garbage"),
    P(["report", "%dir", "--out", "%out"], "dir'", id="report-folder-without-results"),
    P(["report", "%results", "--out", "%file"], "--out=", id="report-out-a-file"),
    # mutate
    P([*MUTATE, "--target", "nope"], "'nope'", id="mutate-target"),
    P([*MUTATE, "--budget", "huge"], "'huge'", id="mutate-budget"),
    P([*MUTATE, "--device", "tpu"], "'tpu'", id="mutate-device"),
    P([*MUTATE, "--workers", "0"], "--workers=0", id="mutate-workers-zero"),
    P([*MUTATE, "--workers", "two"], "'two'", id="mutate-workers-not-an-integer"),
    P([*MUTATE, "--only", "nope"], "'nope'", id="mutate-only-unknown"),
    P([*MUTATE, "--out", "%file"], "is a file", id="mutate-out-a-file"),
    P([*MUTATE, "--out", "", "--only", "cli-prebuild-name-dropped-twice"], "--out=''", id="mutate-out-empty"),
    P([*MUTATE, "--verdicts", "%dir"], "--verdicts=", id="mutate-verdicts-a-folder"),
    P([*MUTATE, "--verdicts", "%merge-conflict"], "merge conflict", id="mutate-verdicts-merge-conflict"),
    # explore
    P(["explore"], "--out", id="explore-out-missing"),
    P([*EXPLORE, "--target", "nope"], "'nope'", id="explore-target"),
    P([*EXPLORE, "--budget", "huge"], "'huge'", id="explore-budget"),
    P([*EXPLORE, "--subject", "nope"], "--subject='nope'", id="explore-subject"),
    P([*EXPLORE, "--examples", "0"], "--examples=0", id="explore-examples-zero"),
    P([*EXPLORE, "--steps", "1.5"], "'1.5'", id="explore-steps-not-an-integer"),
    P([*EXPLORE, "--jobs", "0"], "--jobs=0", id="explore-jobs-zero"),
    P([*EXPLORE, "--device", "tpu"], "--device='tpu'", id="explore-device"),
    P([*EXPLORE, "--out", "%file"], "is a file: pass another --out", id="explore-out-a-file"),
    P([*EXPLORE, "--out", "%file/under"], "is a file: pass another --out", id="explore-out-under-a-file"),
    P([*EXPLORE, "--out", ""], "--out=''", id="explore-out-empty"),
    P([*EXPLORE, "--heartbeat", "-1"], "--heartbeat=-1.0", id="explore-heartbeat-negative"),
    # routes
    P(["routes", "%missing", "--spec", "torch"], "missing'", id="routes-missing"),
    P(["routes", "%garbage", "--spec", "torch"], "garbage'", id="routes-garbage"),
    P(["routes", "%empty", "--spec", "torch"], "holding records", id="routes-empty"),
    P(["routes", "%dir", "--spec", "torch"], "dir'", id="routes-folder"),
    P([*ROUTES[:2], "--spec", "nope"], "'nope'", id="routes-spec"),
    P(ROUTES[:2], "--spec", id="routes-spec-missing"),
    P([*ROUTES, "--out", "%file"], "--out=", id="routes-out-a-file"),
    # threshold
    P(["threshold", "nope"], "'nope'", id="threshold-name"),
    P(["threshold", "--bogus"], "--bogus", id="threshold-unknown-option"),
    # prebuild (no FlashInfer on a CPU: what needs no device is named first)
    P(["prebuild", "--device", "cpu", "--backend", "fa2"], "--device cpu", id="prebuild-device"),
    P(["prebuild", "--device", "cpu", "--budget", "huge"], "'huge'", id="prebuild-budget"),
    P(["prebuild", "--device", "cpu", "--case", '{"layout"'], "fix the JSON", id="prebuild-case"),
    P(["prebuild", "--device", "cpu", "--out", "%dir"], "not a directory", id="prebuild-out-a-folder"),
    P(["prebuild", "--bogus"], "--bogus", id="prebuild-unknown-option"),
]


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of a finished run (auto on the CPU, one small case): what diff, report and routes read."""
    out = tmp_path_factory.mktemp("results")
    assert cli.main(["run", "--device", "cpu", "--backend", "auto", *CASE, "--out", str(out)]) == 0
    return out


def _listing(root: Path) -> list[tuple[str, int]]:
    return sorted((str(p.relative_to(root)), p.stat().st_size if p.is_file() else -1) for p in root.rglob("*"))


@pytest.mark.parametrize("argv,needle", ROWS)
def test_every_bad_input_exits_2_in_one_line_and_writes_nothing(
    tmp_path: Path,
    results: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    needle: str,
) -> None:
    """Each bad value any subcommand can get: exit 2, one line naming it and the fix, no file anywhere."""
    given, cwd = tmp_path / "given", tmp_path / "cwd"
    given.mkdir()
    cwd.mkdir()

    def path(m: re.Match[str]) -> str:
        name = m.group(1)
        if name in ("out", "results"):
            return str(tmp_path / "out" if name == "out" else results)
        if name in GIVEN and not (given / name).exists():
            GIVEN[name](given / name)
        return str(given / name)

    args = [re.sub(r"%([a-z][a-z.-]*)", path, a) for a in argv]
    before, ran = _listing(tmp_path), _listing(results)
    monkeypatch.chdir(cwd)
    capsys.readouterr()
    try:
        code = cli.main(args)
    except SystemExit as e:  # argparse's own refusals (conformance.usage.Parser)
        code = e.code
    out, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert needle in lines[0] and "Fix:" in lines[0], lines[0]
    assert out == "", out
    assert _listing(tmp_path) == before and _listing(results) == ran
