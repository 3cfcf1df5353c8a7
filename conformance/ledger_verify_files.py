"""What `attncheck ledger verify` writes and `attncheck diff` reads back: the format, nothing that runs.

DIR/ledger-verify.json (the environment, the command, one object per entry), DIR/ledger-verify.md (a
table), and DIR/<id>.txt: a script's whole output, headed by the line `HEADER` names, which carries the
sha256 of the script text that printed it (so an output can be told from one of another version of its
script: `stale_output`). docs/ledger.md describes the fields.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import asdict, dataclass, field
from typing import Any, Optional, Sequence, TypeVar

from conformance.ledger_env import Environment
from reports.records import versions_text
from scenarios.errors import InvalidValue

VERIFY_JSON, VERIFY_MD = "ledger-verify.json", "ledger-verify.md"
KIND, SCHEMA = "ledger-verify", 1
REPRODUCES, DOES_NOT_REPRODUCE, COULD_NOT_RUN = "reproduces", "does-not-reproduce", "could-not-run"
STATUSES = (REPRODUCES, DOES_NOT_REPRODUCE, COULD_NOT_RUN)
HEADER = "# attncheck ledger verify: "
_HEADER_RE = re.compile(
    r"^# attncheck ledger verify: (?P<script>\S+)(?P<args>(?: \S+)*?) sha256 (?P<sha>[0-9a-f]{64});"
)
TAIL_LINES = 20


@dataclass(frozen=True)
class Outcome:
    """One entry's verdict: what its script said (status, reason) and what that means for the ledger."""

    id: str
    target: str
    versions: tuple[str, ...]  # the versions the entry lists
    status: str  # one of STATUSES
    reason: str  # why, in words (the exit status, the signal, the exception, the missing library)
    fails: bool  # counts against the exit status (docs/ledger.md)
    note: str  # what it means for the entry
    script: str  # as the entry names it
    args: tuple[str, ...] = ()
    sha256: Optional[str] = None  # of the script text; None when there is no script
    installed: Optional[str] = None  # the target's version here; None: not installed
    exit_code: Optional[int] = None  # negative: killed by that signal; None: not run, or timed out
    seconds: float = 0.0
    output: Optional[str] = None  # the <id>.txt beside the JSON; None when not run
    tail: tuple[str, ...] = ()  # the output's last lines

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(versions=list(self.versions), args=list(self.args), tail=list(self.tail))
        return d

    @staticmethod
    def from_json(d: dict[str, Any]) -> Outcome:
        return Outcome(
            **{
                **d,
                "versions": tuple(d["versions"]),
                "args": tuple(d.get("args", ())),
                "tail": tuple(d.get("tail", ())),
            }
        )


@dataclass
class VerifyReport:
    environment: Environment
    command: list[str]
    started: str
    timeout_s: float
    outcomes: list[Outcome] = field(default_factory=list)
    finished: Optional[str] = None  # None: interrupted (or still running)
    path: str = ""  # where it was read from
    kept_from: Optional[str] = None  # the start of the earlier run into the directory whose entries were kept

    @property
    def exit_status(self) -> int:
        """1 when an entry fails (docs/ledger.md), else 0."""
        return 1 if any(o.fails for o in self.outcomes) else 0

    def status_of(self, target: str) -> dict[str, str]:
        """entry id -> status, for the entries of `target`."""
        return {o.id: o.status for o in self.outcomes if o.target == target}

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": KIND,
            "schema": SCHEMA,
            "command": self.command,
            "started": self.started,
            "finished": self.finished,
            "complete": self.finished is not None,
            "timeout_s": self.timeout_s,
            "kept_from": self.kept_from,
            "environment": self.environment.to_json(),
            "exit_status": self.exit_status if self.finished is not None else None,
            "entries": [o.to_json() for o in self.outcomes],
        }


def sha256_of(path: str) -> Optional[str]:
    try:
        with open(path, "rb") as f:
            return hashlib.sha256(f.read()).hexdigest()
    except OSError:
        return None


def output_header(o: Outcome, env: Environment, date: str) -> str:
    """The first line of <id>.txt: the script, its arguments and sha256, the versions, the machine, the date."""
    args = "".join(f" {a}" for a in o.args)
    machine = f"{env.device or 'no GPU'} ({env.arch})"
    return (
        f"{HEADER}{o.script}{args} sha256 {o.sha256}; {versions_text(env.versions)}; "
        f"python {env.python_version}; {machine}; {date}\n"
    )


def recorded_header(text: str) -> Optional[tuple[str, tuple[str, ...], str]]:
    """(script, arguments, sha256) named by an output's first line, or None when it has no verify header."""
    first = text.split("\n", 1)[0]
    if not first.startswith(HEADER):
        return None
    m = _HEADER_RE.match(first)
    if m is None:
        raise ValueError(f"a verify header without a script and its sha256: {first[:200]!r}")
    return m["script"], tuple(m["args"].split()), m["sha"]


def stale_output(text: str, root: str) -> Optional[str]:
    """Why an output with a verify header was not printed by the script its entry names today (its text
    changed since, or it is gone); None when the hashes agree. An output without the header: ValueError."""
    head = recorded_header(text)
    if head is None:
        raise ValueError("no verify header: the output does not say which version of its script printed it")
    script, _, sha = head
    now = sha256_of(os.path.join(root, script))
    if now is None:
        return f"{script} is gone"
    if now != sha:
        return f"printed by {script} of sha256 {sha[:12]}..., which is {now[:12]}... today"
    return None


def same_libraries(a: Environment, b: Environment) -> bool:
    """One library stack on one machine: the versions (not the JIT settings beside them), arch and device."""
    from kernels.flashinfer.lib import JIT_ENV_VARS

    def libs(e: Environment) -> dict[str, str]:
        return {k: v for k, v in e.versions.items() if k not in JIT_ENV_VARS}

    return (libs(a), a.arch, a.device, a.python_version) == (libs(b), b.arch, b.device, b.python_version)


R = TypeVar("R")


def newest_verdict(found: Sequence[tuple[Outcome, R]]) -> tuple[Outcome, R]:
    """Of one entry's outcomes (at least one), each with its run, newest first: the newest that judged the entry
    (reproduces or not), else the newest. A run cut short says nothing against an earlier verdict."""
    return next((p for p in found if p[0].status != COULD_NOT_RUN), found[0])


def combined(reports: Sequence[VerifyReport], flag: str) -> VerifyReport:
    """Several verify runs of one library stack as one (a ledger too slow for one device call is verified a few
    entries per call): per entry, the newest run that ran its script, else the newest that named it. Runs
    of other libraries or another machine: one InvalidValue naming `flag` and the file."""
    first = reports[0]
    if len(reports) == 1:
        return first
    for r in reports[1:]:
        if not same_libraries(first.environment, r.environment):
            raise InvalidValue(
                flag,
                r.path,
                f"a verify run on the libraries and machine of {first.path}",
                "pass the verify runs of one library version on one kind of machine",
            )
    newest_first = sorted(reports, key=lambda r: r.started, reverse=True)
    per_entry: dict[str, list[tuple[Outcome, VerifyReport]]] = {}
    for r in newest_first:
        for o in r.outcomes:
            per_entry.setdefault(o.id, []).append((o, r))
    chosen = [newest_verdict(found)[0] for found in per_entry.values()]
    unfinished = any(r.finished is None for r in reports)
    return VerifyReport(
        newest_first[0].environment,
        newest_first[0].command,
        newest_first[0].started,
        max(r.timeout_s for r in reports),
        sorted(chosen, key=lambda o: o.id),
        None if unfinished else newest_first[0].finished,
        " + ".join(r.path for r in reports),
    )


def earlier(out_dir: str, env: Environment) -> Optional[VerifyReport]:
    """The ledger-verify.json already in `out_dir`, where it was written on the same libraries and machine
    (a run of a few ids keeps the rest); None otherwise (it is replaced)."""
    path = os.path.join(out_dir, VERIFY_JSON)
    if not os.path.isfile(path):
        return None
    try:
        report = load(path, "--out")
    except InvalidValue:
        return None
    return report if same_libraries(report.environment, env) else None


def _write_atomic(path: str, text: str) -> None:
    tmp = path + ".partial"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def write(out_dir: str, report: VerifyReport) -> None:
    """ledger-verify.json and ledger-verify.md as they stand (called after every entry)."""
    _write_atomic(os.path.join(out_dir, VERIFY_JSON), json.dumps(report.to_json(), indent=1) + "\n")
    _write_atomic(os.path.join(out_dir, VERIFY_MD), render_markdown(report))


def _summary(report: VerifyReport) -> str:
    counts = {s: sum(o.status == s and (o.fails or s != COULD_NOT_RUN) for o in report.outcomes) for s in STATUSES}
    counts["not judged here"] = sum(o.status == COULD_NOT_RUN and not o.fails for o in report.outcomes)
    failing = [o for o in report.outcomes if o.fails]
    said = ", ".join(f"{n} {s}" for s, n in counts.items() if n) or "no entry"
    if report.finished is None:
        return f"**unfinished** (interrupted): {said} so far"
    verdict = f"**exit {report.exit_status}**"
    if failing:
        ids = ", ".join(f"`{o.id}`" for o in failing)
        return f"{verdict}: {said}; against the ledger or not judged: {ids}"
    return f"{verdict}: {said}; nothing contradicts the ledger"


def render_markdown(report: VerifyReport) -> str:
    env = report.environment
    lines = [
        "# attncheck ledger verify",
        "",
        f"- {_summary(report)}",
        f"- {versions_text(env.versions)}; python {env.python_version} ({env.python}); "
        f"{env.device or 'no GPU'} ({env.arch})",
        f"- {report.started}: `{' '.join(report.command)}`, at most {report.timeout_s:g} s per script",
        *(
            [f"- entries this run did not ask for are kept from the run of {report.kept_from}"]
            if report.kept_from
            else []
        ),
        "",
        "| entry | target | versions listed | status | exit | seconds | what it says |",
        "|---|---|---|---|---|---|---|",
    ]
    for o in report.outcomes:
        status = f"**{o.status}**" if o.fails else o.status
        code = "-" if o.exit_code is None else str(o.exit_code)
        said = o.note if o.status != COULD_NOT_RUN else f"{o.reason}; {o.note}"
        lines.append(
            f"| `{o.id}` | {o.target} | {', '.join(o.versions)} | {status} | {code} | {o.seconds:.1f} | "
            f"{said.replace('|', '/')} |"
        )
    return "\n".join(lines) + "\n"


def load(path: str, flag: str) -> VerifyReport:
    """A ledger-verify.json; one InvalidValue naming `flag`, the file and the fix when it cannot be read."""
    fix = "pass the ledger-verify.json that `attncheck ledger verify --out DIR` wrote"
    try:
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        raise InvalidValue(flag, path, "a readable ledger-verify.json", f"{fix} ({type(e).__name__})") from None
    if not isinstance(d, dict) or d.get("kind") != KIND or d.get("schema") != SCHEMA:
        raise InvalidValue(flag, path, f"a {KIND} file of schema {SCHEMA}", fix)
    try:
        outcomes = [Outcome.from_json(o) for o in d["entries"]]
        if any(o.status not in STATUSES for o in outcomes):
            raise ValueError("status")
        return VerifyReport(
            Environment.from_json(d["environment"]),
            list(d["command"]),
            str(d["started"]),
            float(d["timeout_s"]),
            outcomes,
            d.get("finished"),
            path,
            d.get("kept_from"),
        )
    except (KeyError, TypeError, ValueError):
        raise InvalidValue(flag, path, f"a complete {KIND} file", fix) from None
