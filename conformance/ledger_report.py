"""`attncheck ledger report`: each family of ledger entries written up as the report a maintainer would accept.

Per family (conformance/ledger_facts.py): the title, per entry and studied version whether it reproduces (the
newest `attncheck ledger verify` run of that version recorded under docs/evidence/, beside the entry's
`versions` and whether the version's code path is the defect's), the environment those outputs were recorded
in, the evidence scripts inline with their commands, expected against observed (the recorded outputs, each
marked with whether today's script printed it), the root cause per version, the controls and the related
upstream reports. Markdown, ready to paste; nothing is run.
"""

from __future__ import annotations

import difflib
import glob
import os
import re
from dataclasses import dataclass
from typing import Optional, Sequence

from conformance import ledger_facts as lf
from conformance import ledger_verify_files as files
from conformance.known_failures import KnownFailure, entries_by_id
from conformance.ledger_verify_files import COULD_NOT_RUN, DOES_NOT_REPRODUCE, REPRODUCES, Outcome, VerifyReport
from reports.records import versions_text
from scenarios.errors import InvalidValue

EVIDENCE = "docs/evidence"
VERIFY_GLOB = "**/" + files.VERIFY_JSON
# Version stamps that are the runner's paths and settings, not the library a maintainer installs.
LOCAL_SETTINGS = ("FLASHINFER_WORKSPACE_BASE", "MAX_JOBS")
# Lines of a recorded output that are the recorder's, not the script's.
RECORDER_LINE = re.compile(r"^# (attncheck ledger verify: |command: |(reproduces|does-not-reproduce|could-not-run): )")
JIT_LOG_LINE = re.compile(r"flashinfer\.jit: Building JIT module")
SOURCE_AT = re.compile(r"^(?P<at>[\w./-]+\.\w+:\d+(?:-\d+)?)(?P<rest>.*)$", re.DOTALL)
ENVIRONMENT_LINE = re.compile(r"^(flashinfer \S+, torch \S+|torch \S+ cuda \S+)")
# Provenance of an observed output.
PRINTED_TODAY = "printed by the script as it is today"
PRINTED_EARLIER = "printed by an earlier version of the script (sha256 {then}..., today {now}...): run it again"
UNHASHED = "recorded before outputs named their script's sha256: the script may have changed since"
STATUS_TEXT = {REPRODUCES: "reproduces", DOES_NOT_REPRODUCE: "does not reproduce", COULD_NOT_RUN: "could not run"}
NOT_RUN = "not run"
SHOWN_BESIDE = "shown in the H200 output kept beside the script"
RECORDED_BESIDE = "the H200 output kept beside the script"
ENV_NOT_RECORDED = "not recorded in the output (an H200 of the same sessions)"
SAME_PATH = "same code path"
NOT_READ = "sources not read"
TITLE = "# FlashInfer and torch defects found by attncheck"
UNKNOWN_ID_FIX = "pass an entry id of conformance/known_failures.py or a family of conformance/ledger_facts.py"


@dataclass(frozen=True)
class Run:
    """One entry's outcome in one recorded verify run, and where its output lies."""

    outcome: Outcome
    report: VerifyReport
    output: Optional[str]  # path of <id>.txt relative to the root; None when not written


@dataclass(frozen=True)
class Observation:
    label: str  # the version, or the recorded file's name
    source: str  # the output's path relative to the root
    environment: str
    provenance: str
    body: tuple[str, ...]


def families_of(ids: Sequence[str], ledger: Sequence[KnownFailure]) -> list[str]:
    """The families asked for, in FAMILIES order: an entry id selects its whole family (one root cause, one
    report); no ids: every family with an entry. An unknown id: InvalidValue naming it and the fix."""
    by_id = entries_by_id(ledger)
    asked = set()
    for i in ids:
        if i in lf.FAMILIES:
            asked.add(i)
        elif i in by_id and i in lf.FACTS:
            asked.add(lf.FACTS[i].family)
        else:
            near = difflib.get_close_matches(i, [*by_id, *lf.FAMILIES], n=1)
            fix = f"did you mean {near[0]}?" if near else UNKNOWN_ID_FIX
            raise InvalidValue("ID", i, "a ledger entry or family id", fix)
    with_entries = {lf.FACTS[e.id].family for e in ledger if e.id in lf.FACTS}
    return [f for f in lf.FAMILIES if f in with_entries and (not ids or f in asked)]


def verify_runs(root: str) -> dict[str, list[VerifyReport]]:
    """Every ledger-verify.json recorded under docs/evidence/, per installed version of each target, newest first
    (a file that cannot be read is left out)."""
    runs: dict[str, list[VerifyReport]] = {}
    for path in sorted(glob.glob(os.path.join(root, EVIDENCE, VERIFY_GLOB), recursive=True)):
        try:
            report = files.load(path, "--evidence")
        except InvalidValue:
            continue
        for target in lf.STUDIED:
            version = report.environment.versions.get(target)
            if version and any(o.target == target for o in report.outcomes):
                runs.setdefault(version, []).append(report)
    for reports in runs.values():
        reports.sort(key=lambda r: r.started, reverse=True)
    return runs


def newest_run(entry: KnownFailure, version: str, runs: dict[str, list[VerifyReport]], root: str) -> Optional[Run]:
    """The entry's outcome in the newest verify run of `version` that judged it (reproduces or not), else in the
    newest that could not run it, if any: a run cut short says nothing against an earlier verdict."""
    found = [
        (o, report)
        for report in runs.get(version, [])
        for o in report.outcomes
        if o.id == entry.id and report.environment.versions.get(entry.target) == version
    ]
    if not found:
        return None
    o, report = files.newest_verdict(found)
    out = os.path.join(os.path.dirname(report.path), o.output) if o.output else None
    return Run(o, report, os.path.relpath(out, root) if out else None)


def _environment(report: VerifyReport) -> str:
    env = report.environment
    versions = {k: v for k, v in env.versions.items() if k not in LOCAL_SETTINGS}
    return f"{versions_text(versions)}; python {env.python_version}; {env.device or 'no GPU'} ({env.arch})"


def _split(text: str) -> tuple[list[str], list[str]]:
    """(environment lines, body lines) of a recorded output: the recorder's lines and JIT build logs dropped, the
    leading comment lines and the script's own library/device line taken as the environment."""
    env: list[str] = []
    body: list[str] = []
    library_line = False
    for ln in text.splitlines():
        if RECORDER_LINE.match(ln) or JIT_LOG_LINE.search(ln):
            continue
        if ln.startswith("# ") and not body:
            env.append(ln[2:])
        elif ENVIRONMENT_LINE.match(ln) and not library_line:
            env.append(ln)
            library_line = True
        else:
            body.append(ln)
    while body and not body[-1].strip():
        body.pop()
    return env, body


def _read(path: str) -> Optional[str]:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def provenance(text: str, root: str) -> str:
    """Whether the script as it is today printed this recorded output."""
    head = files.recorded_header(text)
    if head is None:
        return UNHASHED
    now = files.sha256_of(os.path.join(root, head[0])) or "gone"
    return PRINTED_TODAY if now == head[2] else PRINTED_EARLIER.format(then=head[2][:12], now=now[:12])


def observations(entry: KnownFailure, runs: dict[str, list[VerifyReport]], root: str) -> list[Observation]:
    """What the entry's script printed: the newest verify output per studied version; the output recorded beside
    the script too where no verify output was printed by today's script."""
    seen: list[Observation] = []
    for version in lf.STUDIED[entry.target]:
        run = newest_run(entry, version, runs, root)
        text = _read(os.path.join(root, run.output)) if run and run.output else None
        if run is None or text is None:
            continue
        _, body = _split(text)
        if body:
            env = f"{_environment(run.report)}; {run.report.started}"
            seen.append(Observation(version, run.output or "", env, provenance(text, root), tuple(body)))
    if not any(o.provenance == PRINTED_TODAY for o in seen):
        beside = os.path.splitext(entry.evidence)[0] + ".h200.txt"
        text = _read(os.path.join(root, beside))
        if text is not None:
            env_lines, body = _split(text)
            env = "; ".join(env_lines)
            seen.append(Observation(RECORDED_BESIDE, beside, env, provenance(text, root), tuple(body)))
    return seen


def _kept_beside(entry: KnownFailure, version: str, root: str) -> bool:
    """Whether the output kept beside the entry's script names `version` of its library, which the confirmed entry
    lists: the version's evidence before verify runs existed."""
    text = _read(os.path.join(root, os.path.splitext(entry.evidence)[0] + ".h200.txt"))
    if text is None or not entry.confirmed or version not in entry.versions:
        return False
    named = re.compile(rf"\b{re.escape(entry.target)}(-python)? {re.escape(version)}(?![\w.+])")
    return any(named.search(ln) for ln in _split(text)[0])


def _version_cell(entry: KnownFailure, facts: lf.Facts, version: str, run: Optional[Run], root: str) -> str:
    if run is None:
        status = SHOWN_BESIDE if _kept_beside(entry, version, root) else NOT_RUN
    else:
        status = STATUS_TEXT[run.outcome.status]
        if run.outcome.status == COULD_NOT_RUN:
            status += f": {run.outcome.reason}"
        status += f", ledger verify {run.report.started[:10]}"
        now = files.sha256_of(os.path.join(root, entry.evidence))
        if run.outcome.sha256 is not None and run.outcome.sha256 != now:
            status += ", by an earlier version of the script"
    cause = next((c for c in facts.causes if c.version == version), None)
    if cause is None or not any(SOURCE_AT.match(ln) for ln in cause.lines):
        code = NOT_READ
    else:
        code = cause.differs or SAME_PATH
    return f"{status}; {'listed' if version in entry.versions else 'not listed'}; {code}"


def _cited(line: str) -> str:
    """A source line's "path:lines" in code font, the words after it as they are."""
    m = SOURCE_AT.match(line)
    return f"`{m['at']}`{m['rest']}" if m else line


def _script_block(script: str, users: list[KnownFailure], root: str) -> list[str]:
    name = os.path.basename(script)
    lines = [f"`{script}`:", "", "```bash"]
    for e in users:
        args = "".join(f" {a}" for a in e.evidence_args)
        lines.append(f"python3 {name}{args}   # {e.id}: exit 1 when the defect shows, 0 when not, 2 a control failed")
    lines.append("```")
    companion = os.path.splitext(script)[0] + ".pt"
    if os.path.exists(os.path.join(root, companion)):
        lines += ["", f"It loads the tensors saved beside it: attach `{os.path.basename(companion)}`."]
    text = _read(os.path.join(root, script))
    lines += ["", "```python", (text or f"# {script} is missing").rstrip("\n"), "```", ""]
    return lines


def _alike(seen: list[Observation]) -> dict[tuple[tuple[str, ...], str], list[Observation]]:
    """Observations grouped by what they printed (the same output on two versions is shown once)."""
    groups: dict[tuple[tuple[str, ...], str], list[Observation]] = {}
    for o in seen:
        groups.setdefault((o.body, o.provenance), []).append(o)
    return groups


def render_family(
    family: lf.Family, entries: list[KnownFailure], runs: dict[str, list[VerifyReport]], root: str
) -> str:
    """One family's report, in Markdown."""
    facts = [lf.FACTS[e.id] for e in entries]
    versions = list(dict.fromkeys(v for e in entries for v in lf.STUDIED[e.target]))
    out = [f"## {family.title}", "", f"*attncheck family `{family.id}`: {', '.join(f'`{e.id}`' for e in entries)}*", ""]
    out += [family.summary, "", "### Versions", ""]
    out += ["| entry | " + " | ".join(versions) + " |", "|---|" + "---|" * len(versions)]
    for e, f in zip(entries, facts):
        cells = [
            _version_cell(e, f, v, newest_run(e, v, runs, root), root) if v in lf.STUDIED[e.target] else "-"
            for v in versions
        ]
        out.append(f"| `{e.id}` | " + " | ".join(c.replace("|", "/") for c in cells) + " |")
    seen = {e.id: observations(e, runs, root) for e in entries}
    out += ["", "### Environment", ""]
    envs = dict.fromkeys((o.source, o.environment or ENV_NOT_RECORDED) for obs in seen.values() for o in obs)
    out += [f"- `{source}`: {env}" for source, env in envs] or ["- no recorded output"]
    out += ["", "### Reproduction", ""]
    scripts = dict.fromkeys(e.evidence for e in entries)
    for script in scripts:
        out += _script_block(script, [e for e in entries if e.evidence == script], root)
    out += ["### Expected and observed", ""]
    for e, f in zip(entries, facts):
        out += [f"**`{e.id}`**: {e.summary}", "", f"Expected: {f.expected}", ""]
        for (body, prov), obs in _alike(seen[e.id]).items():
            where = "; ".join(f"{o.label}, `{o.source}`" for o in obs)
            out += [f"Observed ({where}; {prov}):", "", "```text", *body, "```", ""]
        if not seen[e.id]:
            out += ["Observed: no recorded output.", ""]
    out += ["### Root cause", ""]
    for e, f in zip(entries, facts):
        out += [f"**`{e.id}`** ({f.certainty}): {f.cause}", ""]
        for c in f.causes:
            differs = f" ({c.differs})" if c.differs else ""
            out += [f"- {e.target} {c.version}{differs}:", *(f"  - {_cited(ln)}" for ln in c.lines)]
        out.append("")
    out += ["### The library disagrees with itself", ""]
    out += [f"- {c}" for c in dict.fromkeys(c for f in facts for c in f.controls)] + [""]
    out += ["### Related reports", ""]
    related = list(dict.fromkeys(r for f in facts for r in f.related))
    out += [f'- {r.ref} ({r.kind}, {r.state}): "{r.title}": {r.relation}' for r in related] or [f"- {lf.NONE_FOUND}"]
    return "\n".join(out) + "\n"


def render(ids: Sequence[str], ledger: Sequence[KnownFailure], root: str) -> str:
    """The reports of the families asked for (every family when none), in Markdown."""
    families = families_of(ids, ledger)
    runs = verify_runs(root)
    parts = [TITLE, ""]
    for fid in families:
        entries = [e for e in ledger if e.id in lf.FACTS and lf.FACTS[e.id].family == fid]
        parts.append(render_family(lf.FAMILIES[fid], entries, runs, root))
    return "\n".join(parts)
