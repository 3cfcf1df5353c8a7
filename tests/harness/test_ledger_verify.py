"""`attncheck ledger verify`: each entry's evidence script run in a process of its own and classified by how it
ended; the exit status rule; JSON, markdown and per-entry outputs written as they are produced; bad usage."""

from __future__ import annotations

import glob
import json
import os
import signal
import sys
import time
from typing import Any

import pytest

from conformance import cli, known_failures, ledger_env
from conformance import ledger_verify as lv
from conformance import ledger_verify_files as files
from conformance.known_failures import KnownFailure
from conformance.ledger_env import Environment

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
H200 = Environment(sys.executable, "3.11.7", {"torch": "2.11.0+cu130", "flashinfer": "0.7.4"}, "sm90", "NVIDIA H200")
# Tiny evidence scripts, one per way a script can end.
SCRIPTS = {
    "exit-1": "import sys\nprint('DEFECT REPRODUCED')\nsys.exit(1)\n",
    "exit-0": "print('not reproduced')\n",
    "import-error": "import flashinfer_that_is_not_installed\n",
    "message-exit": "import sys\nsys.exit('usage: a message, which plain python exits 1 with')\n",
    "own-exit-2": "import sys\nprint('the control failed')\nsys.exit(2)\n",
    "signal": "import os, signal\nprint('dying', flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n",
    "timeout": "import time\nprint('sleeping', flush=True)\ntime.sleep(5)\n",
}
# (status, exit code, reason fragment) each script must be classified as.
EXPECTED = {
    "exit-1": ("reproduces", 1, "exit 1"),
    "exit-0": ("does-not-reproduce", 0, "exit 0"),
    "import-error": ("could-not-run", lv.UNCAUGHT_EXIT, "raised ModuleNotFoundError: No module named"),
    "message-exit": ("could-not-run", lv.UNCAUGHT_EXIT, "exited with a message"),
    "own-exit-2": ("could-not-run", 2, "exit 2: the script could not judge"),
    "signal": ("could-not-run", -signal.SIGKILL, "killed by signal SIGKILL (9)"),
    "timeout": ("could-not-run", None, "timed out after 0.5 s"),
}


def _entry(tmp: Any, name: str, text: str, **kw: Any) -> KnownFailure:
    path = tmp / f"evidence_{name.replace('-', '_')}.py"  # not a module name a script imports (signal.py would be)
    path.write_text(text)
    return KnownFailure(
        kw.pop("id", name),
        kw.pop("target", "flashinfer"),
        kw.pop("versions", ("0.7.4",)),
        "a fake defect",
        "error",
        str(path),
        True,
        "nowhere",
        **kw,
    )


def _run_cli(monkeypatch: Any, capsys: Any, ledger: tuple, env: Environment, *args: str) -> tuple[int, str, str]:
    monkeypatch.setattr(known_failures, "LEDGER", ledger)
    monkeypatch.setattr(ledger_env, "probe", lambda python: env)
    code = cli.main(["ledger", "verify", *args])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


@pytest.mark.parametrize("how", list(SCRIPTS))
def test_a_script_is_classified_by_how_it_ends(tmp_path: Any, how: str) -> None:
    """Exit 1 reproduces, exit 0 does not; anything else could not run, with the reason: an escaping exception
    or an exit with a message (plain python's exit 1, which the bootstrap keeps from reading as a verdict),
    the script's own exit 2, a signal, a timeout (the script killed)."""
    out = tmp_path / "out"
    out.mkdir()
    entry = _entry(tmp_path, how, SCRIPTS[how])
    started = time.monotonic()
    [o] = lv.verify([entry], H200, str(out), 0.5, ["attncheck"]).outcomes
    status, code, reason = EXPECTED[how]
    assert (o.status, o.exit_code) == (status, code) and reason in o.reason, o
    assert time.monotonic() - started < 3.0  # a timed-out script does not run on
    text = (out / f"{how}.txt").read_text()
    assert text.startswith(files.HEADER) and text.rstrip().endswith(f"({o.seconds:.1f} s)")


def _running(pid: int) -> bool:
    """Whether `pid` runs: a killed process whose parent died may stay a zombie (the container's init may not
    reap it), which is not running."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


def test_a_timeout_kills_the_scripts_children_too(tmp_path: Any) -> None:
    """The script and what it started die at the limit: a GPU child left running would hold the device."""
    pid_file = tmp_path / "child.pid"
    text = (
        "import subprocess, sys, time\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(30)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
        "time.sleep(5)\n"
    )
    out = tmp_path / "out"
    out.mkdir()
    [o] = lv.verify([_entry(tmp_path, "parent", text)], H200, str(out), 0.5, ["attncheck"]).outcomes
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 1.0
    while (alive := _running(pid)) and time.monotonic() < deadline:
        time.sleep(0.02)
    if alive:
        os.kill(pid, signal.SIGKILL)  # the child this test's script started
    assert o.status == "could-not-run" and "timed out" in o.reason
    assert not alive, "the script's child outlived the timeout"


def test_the_exit_status_is_1_only_where_the_ledger_is_contradicted_or_a_script_broke(
    tmp_path: Any, monkeypatch: Any, capsys: Any
) -> None:
    """Listed for the installed version and not reproduced: exit 1. A defect gone on a version the entry does
    not list, or showing on one it does not list (a note: add it), and an entry for another architecture or
    library (not run) say nothing against the ledger: exit 0."""
    listed_holds = _entry(tmp_path, "holds", SCRIPTS["exit-1"])
    unlisted_shows = _entry(tmp_path, "shows", SCRIPTS["exit-1"], versions=("0.7.2.post1",))
    unlisted_gone = _entry(tmp_path, "gone", SCRIPTS["exit-0"], versions=("0.7.2.post1",))
    other_arch = _entry(tmp_path, "arch", SCRIPTS["exit-0"], archs=("sm100",))
    torch_only = _entry(tmp_path, "torchy", SCRIPTS["exit-0"], target="torch", versions=("2.11.0+cu130",))
    no_torch = Environment(**{**H200.__dict__, "versions": {"flashinfer": "0.7.4"}})
    ok = (listed_holds, unlisted_shows, unlisted_gone, other_arch, torch_only)
    code, out, _ = _run_cli(monkeypatch, capsys, ok, no_torch, "--out", str(tmp_path / "a"))
    rep = json.loads((tmp_path / "a" / files.VERIFY_JSON).read_text())
    got = {e["id"]: (e["status"], e["fails"]) for e in rep["entries"]}
    assert code == 0 and rep["exit_status"] == 0, out
    assert got == {
        "holds": ("reproduces", False),
        "shows": ("reproduces", False),
        "gone": ("does-not-reproduce", False),
        "arch": ("could-not-run", False),
        "torchy": ("could-not-run", False),
    }
    notes = {e["id"]: e["note"] + " / " + e["reason"] for e in rep["entries"]}
    assert "add it to `versions`" in notes["shows"] and "sm100" in notes["arch"] and "torch" in notes["torchy"]
    assert not (tmp_path / "a" / "arch.txt").exists()  # not run at all
    # a line per entry as it ends: its place, and the time spent and left (issue 20: progress with time left)
    assert "[1/5] holds: reproduces" in out and "[4/5] arch: could-not-run" in out, out
    assert "elapsed, about" in out and "[5/5] torchy" in out, out

    listed_gone = _entry(tmp_path, "fixed", SCRIPTS["exit-0"])
    code, _, _ = _run_cli(monkeypatch, capsys, (*ok, listed_gone), no_torch, "--out", str(tmp_path / "b"))
    rep = json.loads((tmp_path / "b" / files.VERIFY_JSON).read_text())
    [fixed] = [e for e in rep["entries"] if e["fails"]]
    assert code == 1 and fixed["id"] == "fixed" and "drop 0.7.4 from `versions`" in fixed["note"]


def test_a_cpu_run_without_flashinfer_runs_nothing_and_exits_0(tmp_path: Any, capsys: Any) -> None:
    """The real ledger on this CPU machine: FlashInfer's entries want their library, torch's a GPU. Every entry
    is could-not-run with its reason, none is run, and the exit status is 0 (CI on a CPU must not fail)."""
    code = cli.main(["ledger", "verify", "--out", str(tmp_path)])
    capsys.readouterr()
    rep = json.loads((tmp_path / files.VERIFY_JSON).read_text())
    assert code == 0 and rep["complete"] and len(rep["entries"]) == len(known_failures.LEDGER)
    assert {e["status"] for e in rep["entries"]} == {"could-not-run"} and not any(e["fails"] for e in rep["entries"])
    assert rep["environment"]["device"] is None and rep["environment"]["arch"].startswith("cpu-")
    assert glob.glob(str(tmp_path / "*.txt")) == []


def test_the_json_markdown_and_outputs_say_what_ran_where(tmp_path: Any, monkeypatch: Any, capsys: Any) -> None:
    """ledger-verify.json: the environment (versions as `record` stamps them, python, device, date, command) and
    per entry its status, exit code, seconds, script, arguments, sha256 and last lines; the markdown table; each
    <id>.txt headed by the script's sha256, the versions and the date."""
    entry = _entry(tmp_path, "shown", "import sys\nprint(sys.argv[1:])\nsys.exit(1)\n", evidence_args=("sigfpe",))
    code, out, _ = _run_cli(monkeypatch, capsys, (entry,), H200, "shown", "--out", str(tmp_path / "o"))
    rep = json.loads((tmp_path / "o" / files.VERIFY_JSON).read_text())
    [e] = rep["entries"]
    sha = files.sha256_of(entry.evidence)
    assert code == 0 and "shown: reproduces" in out
    assert rep["command"] == ["attncheck", "ledger", "verify", "shown", "--out", str(tmp_path / "o")]
    assert rep["environment"]["versions"]["flashinfer"] == "0.7.4" and rep["environment"]["device"] == "NVIDIA H200"
    assert rep["complete"] and rep["started"].endswith("Z") and rep["finished"].endswith("Z")
    assert (e["status"], e["exit_code"], e["script"], e["args"], e["sha256"]) == (
        "reproduces",
        1,
        entry.evidence,
        ["sigfpe"],
        sha,
    )
    assert e["tail"] == ["['sigfpe']"] and e["output"] == "shown.txt" and e["seconds"] > 0
    text = (tmp_path / "o" / "shown.txt").read_text()
    assert files.recorded_header(text) == (entry.evidence, ("sigfpe",), sha)
    assert "flashinfer 0.7.4" in text.splitlines()[0] and rep["started"][:10] in text.splitlines()[0]
    md = (tmp_path / "o" / files.VERIFY_MD).read_text()
    assert "| `shown` | flashinfer | 0.7.4 | reproduces | 1 |" in md and "**exit 0**" in md


def test_an_interrupt_keeps_what_ran(tmp_path: Any, monkeypatch: Any, capsys: Any) -> None:
    """Stopped in the second entry: the first's result is on disk, the second is recorded as interrupted, the
    report as unfinished, and the CLI exits 130."""
    first, second = _entry(tmp_path, "first", SCRIPTS["exit-1"]), _entry(tmp_path, "second", SCRIPTS["exit-1"])
    real = lv.run_script

    def stop_in_the_second(python: str, script: str, *rest: Any) -> lv.ScriptRun:
        if script == second.evidence:
            raise KeyboardInterrupt
        return real(python, script, *rest)

    monkeypatch.setattr(lv, "run_script", stop_in_the_second)
    code, _, err = _run_cli(monkeypatch, capsys, (first, second), H200, "--out", str(tmp_path / "o"))
    rep = json.loads((tmp_path / "o" / files.VERIFY_JSON).read_text())
    assert code == 130 and "interrupted" in err
    assert not rep["complete"] and rep["exit_status"] is None
    assert [(e["id"], e["status"]) for e in rep["entries"]] == [("first", "reproduces"), ("second", "could-not-run")]
    assert rep["entries"][1]["reason"] == lv.INTERRUPTED
    assert "**unfinished**" in (tmp_path / "o" / files.VERIFY_MD).read_text()


@pytest.mark.parametrize(
    "args,needle",
    [
        pytest.param(["nope"], "ID='nope'", id="unknown-id"),
        pytest.param(["fake", "--target", "torch"], "drop --target or the id", id="id-of-another-target"),
        pytest.param(["--timeout", "0"], "--timeout=0.0", id="timeout-0"),
        pytest.param(["--python", "/no/such/python"], "--python='/no/such/python'", id="python-missing"),
        pytest.param(["--python", "false"], "--python='", id="python-not-a-python"),
        pytest.param(["--out", "FILE/sub"], "is a file", id="out-under-a-file"),
    ],
)
def test_bad_usage_exits_2_in_one_line_and_writes_nothing(
    tmp_path: Any, monkeypatch: Any, capsys: Any, args: list[str], needle: str
) -> None:
    (tmp_path / "FILE").write_text("")
    args = [a.replace("FILE", str(tmp_path / "FILE")) for a in args]
    entry = _entry(tmp_path, "fake", SCRIPTS["exit-1"])
    monkeypatch.setattr(known_failures, "LEDGER", (entry,))
    monkeypatch.chdir(tmp_path)
    code = cli.main(["ledger", "verify", *args])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and len(err.strip().splitlines()) == 1, err
    assert sorted(os.listdir(tmp_path)) == ["FILE", "evidence_fake.py"]


def test_an_output_says_when_its_script_changed_since(tmp_path: Any) -> None:
    """Issue 18: the output carries the sha256 of the script text that printed it, so an edit is seen."""
    out = tmp_path / "out"
    out.mkdir()
    entry = _entry(tmp_path, "edited", SCRIPTS["exit-1"])
    lv.verify([entry], H200, str(out), 5.0, ["attncheck"])
    text = (out / "edited.txt").read_text()
    assert files.stale_output(text, ROOT) is None
    with open(entry.evidence, "a") as f:
        f.write("# an edit\n")
    assert "which is" in str(files.stale_output(text, ROOT))
    with pytest.raises(ValueError, match="no verify header"):
        files.stale_output("flashinfer 0.7.2.post1, torch 2.11.0+cu130, NVIDIA H200\n", ROOT)


# Outputs recorded on the H200 before outputs named their script's hash (the ratchet: an output recorded from now
# on carries the header; docs/ledger.md). Leave a name here only while its file lacks the header.
UNHASHED_H200_OUTPUTS = (
    "probe_flashinfer_cudnn_limits.h200.txt",
    "probe_flashinfer_fa3_softcap_lse.h200.txt",
    "probe_flashinfer_graph_zero_rows_capture.h200.txt",
    "probe_flashinfer_paged_window_noncausal.h200.txt",
    "probe_flashinfer_zero_query_rows.h200.txt",
    "repro_flashinfer_cudnn_empty_kv_rows.h200.txt",
    "repro_flashinfer_decode_empty_batch_plan.h200.txt",
    "repro_flashinfer_decode_empty_batch_run.h200.txt",
    "repro_flashinfer_empty_batch_plan.h200.txt",
    "repro_flashinfer_fa3_hnd_kv_heads.h200.txt",
    "repro_flashinfer_fa3_paged_unequal_head_dims.h200.txt",
    "repro_flashinfer_packbits_empty.h200.txt",
    "repro_flashinfer_packed_mask_indptr.h200.txt",
    "repro_flashinfer_paged_mask_zero_pages.h200.txt",
    "repro_flashinfer_paged_mask_zero_pages_graph.h200.txt",
    "repro_flashinfer_ragged_auto_replan_fa2_to_fa3.h200.txt",
    "repro_flashinfer_ragged_head_dim_96.h200.txt",
    "repro_flashinfer_ragged_stale_mask.h200.txt",
    "repro_flashinfer_ragged_stale_mask_auto.h200.txt",
    "repro_flashinfer_ragged_stale_mask_crash.h200.txt",
    "repro_torch_sdpa_empty_rows.h200.txt",
)


def test_every_hashed_evidence_output_was_printed_by_its_script_as_it_is_today() -> None:
    """docs/evidence/*.h200.txt: one with a verify header must name the sha256 of its script's text today; one
    without must be among the outputs recorded before the header existed (and lack it)."""
    stale, unhashed = [], []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "evidence", "*.h200.txt"))):
        text = open(path, encoding="utf-8").read()
        if files.recorded_header(text) is None:
            unhashed.append(os.path.basename(path))
        elif files.stale_output(text, ROOT) is not None:
            stale.append(f"{os.path.basename(path)}: {files.stale_output(text, ROOT)}")
    assert stale == []
    assert unhashed == sorted(UNHASHED_H200_OUTPUTS)


def test_a_run_of_a_few_ids_keeps_the_earlier_runs_other_entries(tmp_path: Any) -> None:
    """A ledger too slow for one device command is verified a few ids at a time into one directory: a run keeps
    the entries of an earlier run on the same libraries and machine that it does not ask for (and replaces the
    ones it does); a run on another version starts the file afresh."""
    out = tmp_path / "out"
    out.mkdir()
    shown, gone = _entry(tmp_path, "shown", SCRIPTS["exit-1"]), _entry(tmp_path, "gone", SCRIPTS["exit-0"])
    first = lv.verify([shown, gone], H200, str(out), 5.0, ["attncheck"])
    lv.verify([gone], H200, str(out), 5.0, ["attncheck"])
    rep = files.load(str(out / files.VERIFY_JSON), "--out")
    assert [o.id for o in rep.outcomes] == ["shown", "gone"] and rep.kept_from == first.started
    assert rep.exit_status == 1 and "kept from the run of" in (out / files.VERIFY_MD).read_text()
    older = Environment(**{**H200.__dict__, "versions": {**H200.versions, "flashinfer": "0.7.2.post1"}})
    lv.verify([gone], older, str(out), 5.0, ["attncheck"])
    rep = files.load(str(out / files.VERIFY_JSON), "--out")
    assert [o.id for o in rep.outcomes] == ["gone"] and rep.kept_from is None and rep.exit_status == 0
