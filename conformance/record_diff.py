"""`attncheck diff BASE NEW`: what an upgrade changed, judged against a recorded baseline.

BASE and NEW are what `attncheck record` (or `run`, `sweep`) wrote: a results file, or a
directory standing for every results file in it. Records are matched by (backend, case id), and
timing by (configuration, backend). Regressions, each of which makes the exit status 1:

* newly failing: a case that did not fail in BASE fails or errors in NEW (a crash included);
* error growth: worst error/bound grew by more than `error_factor` and reached `error_floor` (a
  growth far inside the bound, 0.01 -> 0.03, is numerics noise of a changed kernel, not a regression),
  in a case not already newly failing;
* routing change: the resolved backend or the fallback reason differs (both computed a result);
* lost capability: a case BASE computed that NEW skips or refuses (a variant that no longer
  dispatches), and a stage whose build failed in NEW and not in BASE (a variant that no longer builds);
* timing: the interval of median(NEW)/median(BASE) lies wholly above 1 + `max_slowdown`
  (reports/stats.py); a point estimate alone never makes a regression.

Also reported, not regressions: newly passing cases, timing improvements, and pairs on one side
only (with why, e.g. the time budget). A comparison that is not complete is never "no regression":
a side whose run has no end record (interrupted, killed, cut off) or that lacks (backend, case)
pairs the other side has is said in the report's first line and exits 1; two sides with no pair
in common are refused (exit 2). A baseline that cannot be compared (another schema, harness
major version, target, architecture, or a stand-in on one side only) is refused before anything
is compared: DiffRefused, one line naming the mismatch and the fix (the CLI exits 2).

With `attncheck ledger verify` results (ledger-verify.json) for a side, the ledger's evidence counts:
a newly failing record of NEW that an entry explains (conformance.known_failures.entry_for at any
version, among the entries NEW's verify run reproduced) is "known, still present", not a regression;
an entry BASE's run reproduced and NEW's does not is "fixed by the upgrade". A verify file must be of
its side's library version and architecture (else DiffRefused). Without verify files nothing changes.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Optional

from conformance.known_failures import entry_for
from conformance.ledger_verify_files import DOES_NOT_REPRODUCE, REPRODUCES, VerifyReport
from conformance.route_records import adapter_options_of
from kernels import skips
from reports.merge import Run
from reports.records import FAILING, ParityRecord, is_crash
from reports.stats import LEVEL, RatioCI, ratio_of_medians
from scenarios.errors import InvalidValue

COMPUTED = frozenset({"pass", "fail"})
NOT_DISPATCHED = frozenset({"skip", "refused"})


class DiffRefused(InvalidValue):
    """BASE and NEW cannot be compared; the message names the mismatch and the fix."""

    def __init__(self, field: str, value: Any, expected: str, fix: str) -> None:
        super().__init__(field, value, expected, fix, prefix="attncheck diff: ")


@dataclass(frozen=True)
class Side:
    """One side of the diff: its runs' shared stamp and its records keyed for matching."""

    name: str
    target: str
    arch: str
    harness_version: str
    versions: dict[str, str]
    standin: Optional[str]
    parity: dict[tuple[str, str], ParityRecord]
    timing: dict[tuple[str, str], list[float]]  # (config_id, backend) -> seconds
    stage_errors: dict[str, str]
    unfinished: tuple[str, ...] = ()  # "run <id>: <n> records, no end record", one per run without a footer
    options: dict[str, dict[str, Any]] = field(default_factory=dict)  # run id -> the adapter options it used
    ledger: Optional[VerifyReport] = None  # its `attncheck ledger verify` results, where given (with_ledger)


def _one(name: str, what: str, values: set[Any], fix: str) -> Any:
    if len(values) != 1:
        raise DiffRefused(name, sorted(map(str, values)), f"one {what} across {name}'s runs", fix)
    return next(iter(values))


def side(name: str, runs: list[Run]) -> Side:
    heads = [r.header for r in runs if r.header is not None]
    if not heads:
        raise DiffRefused(
            name,
            "no run header",
            "results written by attncheck run, record or sweep",
            f"pass the --out directory (or results.jsonl) of `attncheck record` as {name}",
        )
    target = _one(name, "target", {h.target for h in heads}, "diff one target's results at a time")
    arch = _one(name, "architecture", {h.arch for h in heads}, "diff one runner's results at a time")
    hv = _one(name, "attncheck version", {h.harness_version for h in heads}, "record each side with one version")
    if arch is None:
        raise DiffRefused(
            f"{name} arch",
            None,
            "a baseline stamped with its architecture",
            f"re-record {name} with `attncheck record` (files written before the stamp carry none)",
        )
    parity: dict[tuple[str, str], ParityRecord] = {}
    timing: dict[tuple[str, str], list[float]] = {}
    errors: dict[str, str] = {}
    for run in runs:
        for rec in run.parity:
            parity[(rec.backend, rec.case_id)] = rec
        for t in run.timing:
            for backend, xs in t.samples.items() if t.status == "ok" else ():
                timing[(t.config_id, backend)] = xs
        for st in run.stages:
            err = (st.prepare or {}).get("error")
            if err:
                errors[st.stage] = str(err)
    versions: dict[str, str] = {}
    for h in heads:
        versions.update(h.versions)
    standin = next((h.standin for h in heads if h.standin), None)
    unfinished = tuple(
        f"run {r.run_id}: {len(r.parity) + len(r.timing)} records, no end record" for r in runs if r.unfinished
    )
    options = {r.run_id: asdict(adapter_options_of(r.header)) for r in runs if r.header is not None}
    return Side(name, target, arch, hv, versions, standin, parity, timing, errors, unfinished, options)


def with_ledger(s: Side, report: VerifyReport) -> Side:
    """The side with its verify results, refused unless they were measured on the side's library version
    and architecture (a verify run of another version says nothing about this side's records)."""
    theirs, ours = report.environment.versions.get(s.target), s.versions.get(s.target)
    if (theirs, report.environment.arch) != (ours, s.arch):
        raise DiffRefused(
            f"{s.name} ledger",
            f"{report.path}: {s.target} {theirs} on {report.environment.arch}",
            f"a verify run of {s.name}'s {s.target} {ours} on {s.arch}",
            f"run `attncheck ledger verify` with {s.name}'s library on its runner, or leave the file out",
        )
    return replace(s, ledger=report)


def check_compatible(base: Side, new: Side) -> None:
    """Refuse a pair of sides that cannot be compared, naming the first mismatch and its fix."""
    bmaj, nmaj = base.harness_version.split(".")[0], new.harness_version.split(".")[0]
    if bmaj != nmaj:
        raise DiffRefused(
            "harness version",
            f"{base.harness_version} -> {new.harness_version}",
            "BASE and NEW from one attncheck major version",
            f"re-record BASE with attncheck {new.harness_version} on the old library version",
        )
    if base.target != new.target:
        raise DiffRefused(
            "target",
            f"{base.target} -> {new.target}",
            "one target on both sides",
            f"record a {new.target} baseline, or pass NEW of target {base.target}",
        )
    if base.arch != new.arch:
        raise DiffRefused(
            "arch",
            f"{base.arch} -> {new.arch}",
            "BASE and NEW from one architecture",
            f"record a baseline on {new.arch} (or run NEW on {base.arch})",
        )
    if (base.standin is None) != (new.standin is None):
        raise DiffRefused(
            "standin",
            f"{base.standin} -> {new.standin}",
            "the library on both sides, or a stand-in on both",
            "compare runs of the real library with each other",
        )


@dataclass(frozen=True)
class Change:
    """One difference: the pair it concerns and what changed, in words and as figures."""

    kind: str
    key: str
    detail: str
    base: Optional[str] = None
    new: Optional[str] = None


@dataclass
class DiffReport:
    base: Side
    new: Side
    newly_failing: list[Change] = field(default_factory=list)
    error_growth: list[Change] = field(default_factory=list)
    routing_changes: list[Change] = field(default_factory=list)
    lost_capabilities: list[Change] = field(default_factory=list)
    timing_regressions: list[Change] = field(default_factory=list)
    newly_passing: list[Change] = field(default_factory=list)
    timing_improvements: list[Change] = field(default_factory=list)
    one_side_only: list[Change] = field(default_factory=list)
    known_still_present: list[Change] = field(default_factory=list)  # only with NEW's verify results
    fixed_by_upgrade: list[Change] = field(default_factory=list)  # only with both sides' verify results
    settings: dict[str, float] = field(default_factory=dict)
    incomplete: list[str] = field(default_factory=list)  # why this is not a complete comparison

    REGRESSIONS = ("newly_failing", "error_growth", "routing_changes", "lost_capabilities", "timing_regressions")
    NOTES = ("newly_passing", "timing_improvements", "one_side_only")
    LEDGER_NOTES = ("known_still_present", "fixed_by_upgrade")

    @property
    def regressions(self) -> int:
        return sum(len(getattr(self, k)) for k in self.REGRESSIONS)

    @property
    def exit_status(self) -> int:
        """1 on a regression or an incomplete comparison, else 0."""
        return 1 if self.regressions or self.incomplete else 0


def _status(r: ParityRecord) -> str:
    return r.status + (f" ({r.reason[:160]})" if r.reason and r.status != "pass" else "")


def _ratio(r: ParityRecord) -> str:
    w = r.worst_ratio
    return "-" if w is None else ("inf" if math.isinf(w) else f"{w:.3g}")


def _ci(ci: RatioCI) -> str:
    return f"{ci.ratio:.3f} [{ci.lo:.3f}, {ci.hi:.3f}] (n={ci.n})"


def diff(
    base: Side, new: Side, error_factor: float = 2.0, error_floor: float = 0.25, max_slowdown: float = 0.10
) -> DiffReport:
    """Every regression and note between two compatible sides (check_compatible first), and why the
    comparison is incomplete where it is; two sides with no pair in common are refused."""
    if not (set(base.parity) & set(new.parity)) and not (set(base.timing) & set(new.timing)):
        sizes = f"BASE {len(base.parity) + len(base.timing)}, NEW {len(new.parity) + len(new.timing)}"
        raise DiffRefused(
            "pairs",
            sizes,
            "at least one (backend, case) or timed pair on both sides",
            "compare results of the same matrix, backends and sweep; rerun the side that stopped early",
        )
    rep = DiffReport(
        base, new, settings={"error_factor": error_factor, "error_floor": error_floor, "max_slowdown": max_slowdown}
    )
    for s in (base, new):
        rep.incomplete += [f"{s.name} is unfinished ({u})" for u in s.unfinished]
    for s, other in ((new, base), (base, new)):
        missing = len(set(other.parity) - set(s.parity)) + len(set(other.timing) - set(s.timing))
        if missing:
            rep.incomplete.append(f"{s.name} lacks {missing} pair(s) that {other.name} has")
    for key in sorted(set(base.parity) | set(new.parity)):
        k = f"{key[0]} {key[1]}"
        b, n = base.parity.get(key), new.parity.get(key)
        if b is None or n is None:
            present = n or b
            assert present is not None
            where = "NEW" if b is None else "BASE"
            if b is None and n is not None and n.status in FAILING:
                detail = f"fails in NEW, absent from BASE: {n.reason[:200]}"
                _newly_failing(rep, new, n, Change("newly failing", k, detail, None, _status(n)))
            else:
                rep.one_side_only.append(Change("one side only", k, f"only in {where}", None, _status(present)))
            continue
        newly_failing = n.status in FAILING and b.status not in FAILING
        if newly_failing:
            what = "crashed" if is_crash(n) else n.status
            known = f"; known failure {n.known}" if n.known else ""
            change = Change("newly failing", k, f"{b.status} -> {what}{known}", _status(b), _status(n))
            _newly_failing(rep, new, n, change)
        elif b.status in FAILING and n.status == "pass":
            rep.newly_passing.append(Change("newly passing", k, f"{b.status} -> pass", _status(b), _status(n)))
        if b.status in COMPUTED and n.status in NOT_DISPATCHED:
            if skips.constant_of(n.reason) == skips.TIME_BUDGET:
                rep.one_side_only.append(
                    Change("not run", k, "computed in BASE, not run in NEW (time budget)", _status(b), _status(n))
                )
            else:
                rep.lost_capabilities.append(
                    Change("lost capability", k, f"{b.status} -> {n.status}: {n.reason[:200]}", _status(b), _status(n))
                )
        bw, nw = b.worst_ratio, n.worst_ratio
        if not newly_failing and bw is not None and nw is not None and nw >= error_floor and nw > error_factor * bw:
            rep.error_growth.append(
                Change(
                    "error growth",
                    k,
                    f"worst err/bound {_ratio(b)} -> {_ratio(n)} (> {error_factor:g}x, >= {error_floor:g})",
                    _ratio(b),
                    _ratio(n),
                )
            )
        if (
            b.status in COMPUTED
            and n.status in COMPUTED
            and (b.resolved_backend, b.fallback_reason) != (n.resolved_backend, n.fallback_reason)
        ):
            rep.routing_changes.append(
                Change(
                    "routing change",
                    k,
                    f"{b.resolved_backend} ({b.fallback_reason!r}) -> {n.resolved_backend} ({n.fallback_reason!r})",
                    str(b.resolved_backend),
                    str(n.resolved_backend),
                )
            )
    rep.fixed_by_upgrade = _fixed(base, new)
    for stage, err in sorted(new.stage_errors.items()):
        if stage not in base.stage_errors:
            rep.lost_capabilities.append(Change("no longer builds", f"stage {stage}", err[:300], None, "build error"))
    limit = 1.0 + max_slowdown
    for key in sorted(set(base.timing) & set(new.timing)):
        ci = ratio_of_medians(new.timing[key], base.timing[key])
        k = f"{key[1]} {key[0]}"
        if ci.above(limit):
            rep.timing_regressions.append(
                Change("slower", k, f"NEW/BASE {_ci(ci)}: the whole interval is above {limit:.2f}", None, _ci(ci))
            )
        elif ci.below(1.0 / limit):
            rep.timing_improvements.append(Change("faster", k, f"NEW/BASE {_ci(ci)}", None, _ci(ci)))
    for key in sorted(set(base.timing) ^ set(new.timing)):
        rep.one_side_only.append(
            Change(
                "timing one side only", f"{key[1]} {key[0]}", f"timed only in {'BASE' if key in base.timing else 'NEW'}"
            )
        )
    return rep


def _reproduced(s: Side) -> frozenset[str]:
    """The ids of the side's target's entries its verify run reproduced (none without one)."""
    if s.ledger is None:
        return frozenset()
    return frozenset(i for i, st in s.ledger.status_of(s.target).items() if st == REPRODUCES)


def _newly_failing(rep: DiffReport, new: Side, n: ParityRecord, change: Change) -> None:
    """A regression, unless a ledger entry NEW's verify run reproduced explains the record: known, still present."""
    reproduced = _reproduced(new)
    entry = None
    if reproduced:
        options = new.options.get(n.run_id)
        entry = entry_for(new.target, n.case, n.backend, None, new.arch, options, n.resolved_backend, reproduced)
    if entry is None:
        rep.newly_failing.append(change)
        return
    version = new.versions.get(new.target)
    why = f"{change.detail}; ledger entry {entry.id}, whose script reproduces it on NEW ({new.target} {version})"
    rep.known_still_present.append(replace(change, kind="known, still present", detail=why))


def _fixed(base: Side, new: Side) -> list[Change]:
    """Entries BASE's verify run reproduced and NEW's says do not (both runs needed)."""
    if new.ledger is None:
        return []
    now = new.ledger.status_of(new.target)
    vb, vn = base.versions.get(base.target), new.versions.get(new.target)
    return [
        Change("fixed by the upgrade", i, f"reproduced on {vb}, does not on {vn}", REPRODUCES, DOES_NOT_REPRODUCE)
        for i in sorted(_reproduced(base))
        if now.get(i) == DOES_NOT_REPRODUCE
    ]


_TITLES = {
    "newly_failing": "Newly failing",
    "error_growth": "Error growth",
    "routing_changes": "Routing changes",
    "lost_capabilities": "Lost capabilities",
    "timing_regressions": "Timing regressions",
    "newly_passing": "Newly passing",
    "timing_improvements": "Timing improvements",
    "one_side_only": "On one side only",
    "known_still_present": "Known, still present",
    "fixed_by_upgrade": "Fixed by the upgrade",
}


def version_changes(rep: DiffReport, settings: bool = False) -> list[str]:
    """Library versions that differ (or, `settings`, the JIT environment stamped beside them: a JIT cache
    directory is provenance, not a version, and is listed apart)."""
    from kernels.flashinfer.lib import JIT_ENV_VARS

    keys = sorted(k for k in set(rep.base.versions) | set(rep.new.versions) if (k in JIT_ENV_VARS) == settings)
    return [
        f"{k} {rep.base.versions.get(k, '-')} -> {rep.new.versions.get(k, '-')}"
        for k in keys
        if rep.base.versions.get(k) != rep.new.versions.get(k)
    ]


def render_markdown(rep: DiffReport, limit_per_section: int = 200) -> str:
    verdict = f"**{rep.regressions} regression(s)**" if rep.regressions else "**no regression**"
    if rep.incomplete:
        verdict += " among the pairs both sides have"
    settings = version_changes(rep, settings=True)
    first = (
        [
            f"**Incomplete comparison, not a verdict**: {'; '.join(rep.incomplete)}. Fix: rerun the side "
            "that stopped (or pass the complete results), then diff again.",
            "",
        ]
        if rep.incomplete
        else []
    )
    lines = [
        *first,
        f"# attncheck diff: {rep.base.target} on {rep.base.arch}",
        "",
        f"- {verdict}; versions: {', '.join(version_changes(rep)) or 'unchanged'}"
        + (f"; settings: {', '.join(settings)}" if settings else ""),
        f"- compared {len(set(rep.base.parity) & set(rep.new.parity))} (backend, case) pairs and "
        f"{len(set(rep.base.timing) & set(rep.new.timing))} timed (configuration, backend) pairs; "
        f"error growth beyond {rep.settings['error_factor']:g}x reaching {rep.settings['error_floor']:g} of the "
        f"bound; timing regressions where the {LEVEL:.0%} interval of NEW/BASE lies above "
        f"{1 + rep.settings['max_slowdown']:.2f}",
        *_ledger_lines(rep),
        "",
    ]
    for k in (*DiffReport.REGRESSIONS, *DiffReport.LEDGER_NOTES, *DiffReport.NOTES):
        items: list[Change] = getattr(rep, k)
        if not items:
            continue
        lines += [f"## {_TITLES[k]} ({len(items)})", ""]
        lines += [f"- `{c.key}`: {c.detail}" for c in items[:limit_per_section]]
        if len(items) > limit_per_section:
            lines.append(f"- ... and {len(items) - limit_per_section} more (diff.json has them all)")
        lines.append("")
    return "\n".join(lines)


def _ledgers(rep: DiffReport) -> list[tuple[str, VerifyReport]]:
    return [(s.name, s.ledger) for s in (rep.base, rep.new) if s.ledger is not None]


def _ledger_lines(rep: DiffReport) -> list[str]:
    out = []
    for name, v in _ledgers(rep):
        mine = [o for o in v.outcomes if o.target == rep.new.target]
        n = sum(o.status == REPRODUCES for o in mine)
        unfinished = "; **unfinished**" if v.finished is None else ""
        out.append(f"- {name}'s ledger verify ({v.path}): {n} of its {len(mine)} entries reproduce{unfinished}")
    return out


def to_json(rep: DiffReport) -> dict[str, Any]:
    def sd(s: Side) -> dict[str, Any]:
        return {
            "target": s.target,
            "arch": s.arch,
            "harness_version": s.harness_version,
            "versions": s.versions,
            "standin": s.standin,
            "parity_pairs": len(s.parity),
            "timed_pairs": len(s.timing),
            "unfinished": list(s.unfinished),
        }

    return {
        "regressions": rep.regressions,
        "incomplete": rep.incomplete,
        "exit_status": rep.exit_status,
        "base": sd(rep.base),
        "new": sd(rep.new),
        "settings": rep.settings,
        "version_changes": version_changes(rep),
        "setting_changes": version_changes(rep, settings=True),
        **{k: [c.__dict__ for c in getattr(rep, k)] for k in (*DiffReport.REGRESSIONS, *DiffReport.NOTES)},
        **_ledger_json(rep),
    }


def _ledger_json(rep: DiffReport) -> dict[str, Any]:
    """The ledger's keys, only where a verify file was read (without one the JSON is as it always was)."""
    if not _ledgers(rep):
        return {}
    return {
        "ledger": {name: v.path for name, v in _ledgers(rep)},
        **{k: [c.__dict__ for c in getattr(rep, k)] for k in DiffReport.LEDGER_NOTES},
    }
