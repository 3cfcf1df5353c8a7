"""Check a parity run's records against a routing spec: verdicts and coverage, both ways.

    attncheck routes RESULTS.jsonl --spec flashinfer_cuda --arch sm90 [--library-version V] [--out DIR]
    (or python -m conformance.route_records RESULTS.jsonl ...)

The `auto` records are checked against the library's own choice along the plans of the long-lived
wrapper that served each one, as the record names it (`ParityRecord.wrapper`, observed by the adapter
during the run); under a FlashInfer spec an explicit backend's records are checked against its rows too.
A library with one spec per version (FlashInfer on CUDA) is judged by the rows of the version the
run's header names (or --library-version); a version without rows is unmodelled: said, not checked.
Exit status: 0 when every observation passes and is explained (unreached rows are listed, not
failed) or the version is unmodelled, 1 when one fails or no row explains it (a spec gap included),
2 on bad input (the message names the value and the fix). Which records count and what each is expected to show:
docs/routing-specs.md, section "`conformance/route_records.py`: which records count".
"""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass, field, fields
from typing import Any, Optional, Sequence

from tabulate import tabulate

from conformance.collector import skip_final_collection
from kernels.flashinfer.adapter import UNOBSERVED, AdapterOptions, mask_buffer_held, packed_mask_bytes
from kernels.flashinfer.variants import split_backend
from kernels.protocol import reason_from_json
from reports.merge import Run
from reports.records import IncompatibleRecord, ParityRecord, RunHeader, read_jsonl
from routing.check import Coverage, ObservedRoute, RoutingVerdict, check, coverage
from routing.per_request import WHOLE_BATCH, routes_for, rows_of
from routing.spec import ExpectedRoute, RoutingEnv, RoutingQuery, RoutingSpec, query_from_case
from routing.specs import NAMES, is_versioned, library_of, modelled_versions, spec_for, unmodelled_note
from scenarios.case import Case
from conformance.usage import Parser
from scenarios.errors import InvalidValue

AUTO = "auto"
PLANNED = frozenset({"pass", "fail", "error", "refused"})
JSON_FILE = "routing.json"
MD_FILE = "routing.md"
# The harness target each spec judges (records of another target cannot be checked against it).
SPEC_TARGETS = {"flashinfer-cuda": "flashinfer", "flashinfer-rocm": "flashinfer", "torch": "torch"}
# Specs with rows for explicit requests (FlashInfer's: an explicit backend runs as asked, or the fork's
# reasons); the torch spec models SDPA's own choice only, so its explicit backends' records are left out.
EXPLICIT_ROWS = frozenset({"flashinfer-cuda", "flashinfer-rocm"})
# Specs whose CPU rows read no per-architecture table (torch's CPU rule does not vary by arch): a run
# whose every record ran on the CPU needs no --arch there.
ARCH_FREE_ON_CPU = frozenset({"torch"})
_EXC = re.compile(r"^([A-Za-z_][\w.]*): ")


class BadInput(InvalidValue):
    """Input this tool cannot check (unknown spec, unreadable file, records of another target)."""

    def __init__(self, field: str, value: Any, expected: str, fix: str) -> None:
        super().__init__(field, value, expected, fix, prefix="conformance.route_records: ")


@dataclass(frozen=True)
class RecordVerdict:
    """One planned record: what the spec expects there, and the verdict if the record observed anything."""

    record: ParityRecord
    query: RoutingQuery
    expected: ExpectedRoute
    verdict: Optional[RoutingVerdict]
    note: str = ""  # why there is no verdict


@dataclass
class RecordsReport:
    spec: str
    arch: str
    verdicts: list[RecordVerdict]
    coverage: Coverage
    counts: dict[str, int] = field(default_factory=dict)

    @property
    def observed(self) -> list[RoutingVerdict]:
        return [v.verdict for v in self.verdicts if v.verdict is not None]

    @property
    def ok(self) -> bool:
        """No failing or unexplained observation (unreached rows do not fail a run)."""
        return not (self.coverage.failed or self.coverage.unexplained)


# ---- which wrapper served each record (mirrors kernels/flashinfer/adapter.py) ---------------------------


@dataclass
class _Slot:
    seq: int
    max_pages: int
    max_mask_bytes: int
    fixed_rows: Optional[int]


def _pages(case: Case) -> int:
    return sum(case.pages_per_request) if case.is_paged else 0


def sequences_of(records: Sequence[ParityRecord], options: AdapterOptions, target: Optional[str]) -> list[int]:
    """Sequence index (one per library wrapper) of each planned record, in order.

    A record names its wrapper (`wrapper`, what the adapter used): records of one run and backend that
    name the same wrapper are one sequence, and a record of an adapter without wrappers (torch) is one
    sequence per (run, backend, layout, KV layout). Files written before records named their wrapper
    are read with `legacy_plan_sequences`.
    """
    if target == "flashinfer" and all(r.wrapper is None for r in records):
        return legacy_plan_sequences([(r.run_id, r.backend, Case.from_json(r.case)) for r in records], options)
    seqs: dict[tuple, int] = {}
    out = []
    for r in records:
        key: tuple = (
            (r.run_id, r.backend, r.wrapper)
            if r.wrapper is not None
            else (r.run_id, r.backend, r.case.get("layout"), r.case.get("kv_layout"))
        )
        out.append(seqs.setdefault(key, len(seqs)))
    return out


def legacy_plan_sequences(plans: Sequence[tuple[str, str, Case]], options: AdapterOptions) -> list[int]:
    """Sequence index (one per wrapper) for each planned (run_id, backend, case) of a FlashInfer file
    written before records named their wrapper: the FlashInfer adapter's keying rebuilt (eager: one
    wrapper per API and KV layout, single prefill one sequence; graph: per API, KV layout, batch size and
    mask kind, replaced when a case outgrows it). New records are read by `sequences_of`.
    """
    eager: dict[tuple, int] = {}
    slots: dict[tuple, _Slot] = {}
    out: list[int] = []
    n = 0
    for run_id, backend, case in plans:
        lib_backend, graph = split_backend(backend)
        if not graph or case.layout == "single":
            key = (run_id, lib_backend, graph, case.layout, case.kv_layout if case.layout != "single" else "")
            if key not in eager:
                eager[key], n = n, n + 1
            out.append(eager[key])
            continue
        masked = case.mask == "custom"
        key = (run_id, lib_backend, case.layout, case.kv_layout, case.batch_size, masked)
        pages, mask_bytes = _pages(case), packed_mask_bytes(case, options.mask_form)
        slot = slots.get(key)
        grow = slot is not None and (
            pages > slot.max_pages
            or (masked and mask_bytes > slot.max_mask_bytes)
            or (case.layout != "decode" and slot.fixed_rows is not None and case.total_qo > slot.fixed_rows)
        )
        if slot is None or grow:
            max_pages = max(options.graph_max_pages, slot.max_pages if slot else 0)
            max_mask = max(options.graph_max_mask_bytes, slot.max_mask_bytes if slot else 0)
            while max_pages < pages:
                max_pages *= 2
            while max_mask < mask_bytes:
                max_mask *= 2
            slot = slots[key] = _Slot(n, max_pages, max_mask, None)
            n += 1
        if slot.fixed_rows is None and case.layout != "decode":
            slot.fixed_rows = case.total_qo  # the first plan fixes _max_total_num_rows (prefill.py:3477, :5249)
        out.append(slot.seq)
    return out


# ---- records -> verdicts ------------------------------------------------------------------------


def adapter_options_of(header: Optional[RunHeader]) -> AdapterOptions:
    """The AdapterOptions a run used, read from its argv (`--adapter-option KEY=VALUE`, repeatable)."""
    argv = list(header.argv) if header is not None else []
    items = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--adapter-option"]
    items += [a.split("=", 1)[1] for a in argv if a.startswith("--adapter-option=")]
    known = {f.name for f in fields(AdapterOptions)}
    opts: dict[str, Any] = {}
    for item in items:
        k, _, v = item.partition("=")
        if k in known:
            low = v.lower()
            opts[k] = True if low == "true" else False if low == "false" else int(v) if v.isdigit() else v
    return AdapterOptions(**opts)


def _exception_type(rec: ParityRecord) -> str:
    m = _EXC.match(rec.reason or "")
    return m.group(1) if m else ("LibraryRefused" if rec.status == "refused" else "<unknown>")


def _observe(rec: ParityRecord, expected: ExpectedRoute) -> tuple[Optional[ObservedRoute], str]:
    if rec.resolved_backend is not None and rec.resolved_backend != UNOBSERVED:
        return ObservedRoute(rec.resolved_backend, reason_from_json(rec.fallback_reason)), ""
    if rec.resolved_backend == UNOBSERVED:
        return None, "the library's backend choice was not seen (single prefill's module lookup)"
    if rec.status in ("error", "refused") and expected.raises is not None:
        return ObservedRoute(None, raised=_exception_type(rec)), ""
    return None, f"{rec.status} before a backend was reported"


def has_rows(library: str, backend: str) -> bool:
    """Whether spec `library` has rows for a record of `backend`: auto, a FlashInfer explicit backend, or a
    batched backend of a per-request library (routing.per_request.WHOLE_BATCH: torch's padded-auto and
    nested-auto choose, the forced ones must run as asked)."""
    requested = split_backend(backend)[0]
    return library in EXPLICIT_ROWS or requested == AUTO or requested in WHOLE_BATCH.get(library, ())


def check_records(
    records: Sequence[Any],
    spec: RoutingSpec,
    arch: str,
    *,
    cudnn_direct_seqlens: bool = False,
    options: Optional[AdapterOptions] = None,
) -> RecordsReport:
    """Verdicts for every planned record, `auto` and explicit backends alike (an explicit request has its
    rows too: upstream never redirects one), and coverage of the spec both ways."""
    header = next((r for r in records if isinstance(r, RunHeader)), None)
    options = options if options is not None else adapter_options_of(header)
    parity = [r for r in records if isinstance(r, ParityRecord)]
    auto = [r for r in parity if split_backend(r.backend)[0] == AUTO]
    checked = [r for r in parity if has_rows(spec.library, r.backend)]
    planned = [r for r in checked if r.status in PLANNED]
    cases = [Case.from_json(r.case) for r in planned]
    seqs = sequences_of(planned, options, header.target if header is not None else None)
    queries = []
    for r, c in zip(planned, cases):
        requested, graph = split_backend(r.backend)
        env = RoutingEnv(
            arch=arch, graph_mode=graph, device=r.device.split(":")[0], cudnn_direct_seqlens=cudnn_direct_seqlens
        )
        q = query_from_case(c, env, requested=requested, use_tensor_cores=options.decode_tensor_cores)
        # a graph wrapper holding mask buffers shows the selector a mask on every plan (graph_wrappers="shared")
        queries.append(q.replace(custom_mask=True) if mask_buffer_held(c, graph, options) else q)
    expected: list[Optional[ExpectedRoute]] = [None] * len(planned)
    for s in sorted(set(seqs)):
        idx = [i for i, k in enumerate(seqs) if k == s]
        for i, e in zip(idx, routes_for(spec, [queries[i] for i in idx])):
            expected[i] = e
    out = []
    for r, q, e in zip(planned, queries, expected):
        assert e is not None
        obs, note = _observe(r, e)
        out.append(RecordVerdict(r, q, e, check(e, obs) if obs is not None else None, note))
    cov = coverage(spec, [v.verdict for v in out if v.verdict is not None])
    counts = {
        "parity records": len(parity),
        "auto records": len(auto),
        "explicit records": len(checked) - len(auto),
        "skipped (not planned)": len(checked) - len(planned),
        "planned": len(planned),
        "observed": sum(v.verdict is not None for v in out),
        "unobserved": sum(v.verdict is None for v in out),
    }
    return RecordsReport(spec.title, arch, out, cov, counts)


# ---- rendering ----------------------------------------------------------------------------------


def _expects(e: ExpectedRoute) -> str:
    if e.gap is not None:
        return f"spec gap ({e.gap.table}[{e.gap.arch}])"
    return f"raises {e.raises}" if e.raises else f"{e.backend}, {e.reason!r}"


def _seen(v: RoutingVerdict) -> str:
    o = v.observed
    return f"raised {o.raised}" if o.raised else f"{o.backend}, {o.reason!r}"


def rule_rows(report: RecordsReport, spec: RoutingSpec) -> list[list[Any]]:
    """[rule, expects, observations, passed, failed] for every row, then one line per gap table."""
    rows = []
    for r in spec.rules:
        vs = [v for v in report.observed if r.name in rows_of(v.expected)]
        exp = f"raises {r.expect_raises}" if r.expect_raises else f"{r.expect_backend}, {r.expect_reason!r}"
        rows.append([r.name, exp, len(vs), sum(v.passed for v in vs), sum(not v.passed for v in vs)])
    gaps: dict[str, int] = {}
    for v in report.observed:
        if v.expected.gap is not None:
            gaps[v.expected.gap.table] = gaps.get(v.expected.gap.table, 0) + 1
    for table, count in sorted(gaps.items()):
        rows.append([f"(gap: {table}[{report.arch}])", "no row for this arch", count, 0, count])
    return rows


def _problem_rows(report: RecordsReport) -> list[list[str]]:
    unexplained = {id(v) for v in report.coverage.unexplained}
    out = []
    for rv in report.verdicts:
        v = rv.verdict
        if v is not None and not v.passed:
            out.append(
                [
                    rv.record.backend,
                    rv.record.case_id,
                    v.expected.rule or "-",
                    _expects(v.expected),
                    _seen(v),
                    v.status + (" (unexplained)" if id(v) in unexplained else ""),
                    v.detail,
                ]
            )
    return out


HEADERS = ["rule", "expects", "observations", "passed", "failed"]
PROBLEM_HEADERS = ["backend", "case", "rule", "expected", "observed", "status", "detail"]


def render_text(report: RecordsReport, spec: RoutingSpec) -> str:
    lines = [
        f"routing spec {report.spec} at arch {report.arch}: " + ", ".join(f"{k} {v}" for k, v in report.counts.items()),
        "",
        tabulate(rule_rows(report, spec), HEADERS, tablefmt="simple"),
        "",
    ]
    cov = report.coverage
    lines.append("unreached rows: " + (", ".join(cov.unreached) if cov.unreached else "none"))
    problems = _problem_rows(report)
    lines.append(f"failing observations: {len(cov.failed)} ({len(cov.unexplained)} unexplained by any row)")
    if problems:
        lines += ["", tabulate(problems, PROBLEM_HEADERS, tablefmt="simple")]
    return "\n".join(lines)


def render_markdown(report: RecordsReport, spec: RoutingSpec) -> str:
    cov = report.coverage
    lines = [
        f"# Routing: {report.spec} at {report.arch}",
        "",
        "| " + " | ".join(report.counts) + " |",
        "|" + "---|" * len(report.counts),
        "| " + " | ".join(str(v) for v in report.counts.values()) + " |",
        "",
        "## Rows",
        "",
        tabulate(rule_rows(report, spec), HEADERS, tablefmt="github"),
        "",
        "## Unreached rows",
        "",
        *(f"* `{n}`" for n in cov.unreached),
        *([] if cov.unreached else ["none"]),
        "",
        f"## Failing observations ({len(cov.failed)}; {len(cov.unexplained)} unexplained)",
        "",
    ]
    problems = _problem_rows(report)
    lines.append(tabulate(problems, PROBLEM_HEADERS, tablefmt="github") if problems else "none")
    unobserved: dict[str, int] = {}
    for rv in report.verdicts:
        if rv.verdict is None:
            unobserved[rv.note] = unobserved.get(rv.note, 0) + 1
    lines += [
        "",
        "## Planned but unobserved",
        "",
        *(f"* {n} x {k}" for k, n in sorted(unobserved.items())),
        *([] if unobserved else ["none"]),
    ]
    return "\n".join(lines) + "\n"


def to_json(report: RecordsReport, spec: RoutingSpec) -> dict[str, Any]:
    def verdict(rv: RecordVerdict) -> dict[str, Any]:
        v = rv.verdict
        return {
            "backend": rv.record.backend,
            "case_id": rv.record.case_id,
            "status": rv.record.status,
            "rule": rv.expected.rule,
            "expected": _expects(rv.expected),
            "observed": _seen(v) if v is not None else None,
            "verdict": v.status if v is not None else None,
            "detail": v.detail if v is not None else rv.note,
        }

    unexplained = {id(v) for v in report.coverage.unexplained}
    return {
        "spec": report.spec,
        "arch": report.arch,
        "ok": report.ok,
        "counts": report.counts,
        "rows": [dict(zip(HEADERS, row)) for row in rule_rows(report, spec)],
        "unreached": list(report.coverage.unreached),
        "unexplained": [
            verdict(rv) for rv in report.verdicts if rv.verdict is not None and id(rv.verdict) in unexplained
        ],
        "verdicts": [verdict(rv) for rv in report.verdicts],
    }


# ---- command line -------------------------------------------------------------------------------


def library_for(target: str, arch: str) -> Optional[str]:
    """The library whose routing spec (routing/specs) judges a run of `target` on `arch`, if one is written."""
    if target == "torch":
        return "torch"
    if target == "flashinfer":
        return "flashinfer-rocm" if arch.startswith("gfx") else "flashinfer-cuda"
    return None


def check_runs(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """The routing section of a merged report: each run's `auto` records against its spec, as JSON; a
    run of a library version without rows says so (`unmodelled`) instead of a verdict."""
    out: list[dict[str, Any]] = []
    for run in runs:
        if run.header is None or not any(r.backend.split("+")[0] == AUTO for r in run.parity):
            continue
        name = library_for(run.header.target, run.arch)
        if name is None:
            continue
        version = run.header.versions.get(run.header.target)
        spec = spec_for(name, version)
        if spec is None:
            note = unmodelled_note(name, version)
            out.append({"run_id": run.run_id, "spec": name, "arch": run.arch, "ok": None, "unmodelled": note})
            continue
        try:
            report = check_records([run.header, *run.parity], spec, run.arch)
        except (InvalidValue, TypeError, KeyError) as e:  # records this version cannot replay: said, not skipped
            out.append(
                {
                    "run_id": run.run_id,
                    "spec": spec.title,
                    "arch": run.arch,
                    "ok": False,
                    "error": f"{type(e).__name__}: {e}",
                }
            )
            continue
        out.append({"run_id": run.run_id, **to_json(report, spec), "markdown": render_markdown(report, spec)})
    return out


def resolve_library(name: str) -> str:
    """The library a --spec value names (its library or module name)."""
    library = library_of(name)
    if library is None:
        raise BadInput("--spec", name, f"one of {', '.join(NAMES)}", f"pass e.g. --spec {NAMES[0]}")
    return library


def run_version(library: str, records: Sequence[Any], given: Optional[str]) -> Optional[str]:
    """The library version a versioned spec is picked by: `given` (--library-version), else the one the
    run's header names; None for a library with one spec. BadInput where neither names one."""
    if not is_versioned(library):
        return None
    if given is not None:
        return given
    header = next((r for r in records if isinstance(r, RunHeader)), None)
    version = header.versions.get(SPEC_TARGETS[library]) if header is not None else None
    if version is None:
        raise BadInput(
            "--library-version",
            None,
            f"the {SPEC_TARGETS[library]} version the run used (its header names none)",
            f"pass e.g. --library-version {modelled_versions(library)[-1]}",
        )
    return version


def load_records(path: str) -> list[Any]:
    try:
        return read_jsonl(path)
    except OSError as e:
        raise BadInput(
            "RESULTS", path, "a readable results.jsonl", f"pass the file `attncheck run` wrote ({e.strerror})"
        ) from None
    except (IncompatibleRecord, ValueError, TypeError) as e:  # ValueError: bad JSON, bytes that are not text
        raise BadInput(
            "RESULTS",
            path,
            "attncheck records, one JSON object per line",
            f"pass a results.jsonl of this attncheck version ({type(e).__name__}: {e})"[:400],
        ) from None


def _check_input(records: list[Any], library: str, path: str) -> None:
    if not records:
        raise BadInput("RESULTS", path, "a results.jsonl holding records", "pass the file of a run that wrote records")
    parity = [r for r in records if isinstance(r, ParityRecord)]
    want = SPEC_TARGETS.get(library)
    other = sorted({r.target for r in parity} - {want}) if want else []
    if other:
        fits = sorted(name for name, target in SPEC_TARGETS.items() if target == other[0]) or ["(none written)"]
        raise BadInput(
            "--spec",
            library,
            f"a spec of target {other[0]!r}, the target of {path}",
            f"pass --spec {' or '.join(fits)}, or results of target {want!r}",
        )
    explicit_too = library in EXPLICIT_ROWS
    if not any(has_rows(library, r.backend) for r in parity):
        others = " or any other" if explicit_too else "".join(f", {b}" for b in sorted(WHOLE_BATCH.get(library, ())))
        wanted = "records of backend auto or auto+graph" + others
        raise BadInput("RESULTS", path, wanted, "run attncheck with --backend auto (and/or auto+graph)")
    for r in parity:
        if explicit_too or split_backend(r.backend)[0] == AUTO:
            try:
                Case.from_json(r.case)
            except (InvalidValue, TypeError) as e:
                raise BadInput(
                    "RESULTS",
                    path,
                    f"valid cases (record {r.case_id})",
                    f"pass a results.jsonl written by this attncheck version ({e})",
                ) from None


def main(argv: Optional[Sequence[str]] = None, prog: str = "python -m conformance.route_records") -> int:
    skip_final_collection()
    p = Parser(
        prog=prog,
        description="Check the auto (and, under a FlashInfer spec, explicit) records of "
        "a parity run against a routing spec.",
    )
    p.add_argument("results", help="results.jsonl written by `attncheck run`")
    p.add_argument("--spec", required=True, help=f"spec name: {', '.join(NAMES)}")
    p.add_argument("--arch", default=None, help="architecture the run used, e.g. sm90 (CUDA) or gfx942 (ROCm)")
    p.add_argument(
        "--library-version",
        default=None,
        help="the library version whose rows judge the run, where a spec has one per version "
        "(default: the version the run's header names)",
    )
    p.add_argument("--out", default=None, help=f"directory for {JSON_FILE} and {MD_FILE}")
    p.add_argument(
        "--cudnn-direct-seqlens",
        action="store_true",
        help="the run's cuDNN takes token-unit indptrs (backend >= 9.24, frontend >= 1.25): SM100 ragged",
    )
    args = p.parse_args(argv)
    try:
        library = resolve_library(args.spec)
        records = load_records(args.results)
        _check_input(records, library, args.results)
        version = run_version(library, records, args.library_version)
        spec = spec_for(library, version)
        cpu_only = library in ARCH_FREE_ON_CPU and all(
            r.device.split(":")[0] == "cpu" for r in records if isinstance(r, ParityRecord)
        )
        arch = args.arch or ("unknown" if spec is None or not spec.archs or cpu_only else None)
        if arch is None:
            assert spec is not None
            raise BadInput(
                "--arch",
                None,
                f"the run's architecture, one of {', '.join(spec.archs)} (others: gaps)",
                f"pass e.g. --arch {spec.archs[0]}",
            )
        if args.out:
            try:
                os.makedirs(args.out, exist_ok=True)
            except OSError as e:
                raise BadInput(
                    "--out", args.out, "a directory that can be created", f"pass a writable path ({e.strerror})"
                ) from None
    except BadInput as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    if spec is None:  # a version without rows: said, nothing checked, never a failure
        note = unmodelled_note(library, version)
        print(f"routing not checked: {note}")
        if args.out:
            with open(os.path.join(args.out, JSON_FILE), "w", encoding="utf-8") as f:
                json.dump({"spec": library, "version": version, "ok": None, "unmodelled": note}, f, indent=1)
            with open(os.path.join(args.out, MD_FILE), "w", encoding="utf-8") as f:
                f.write(f"# Routing: {library} {version} (not checked)\n\n{note}\n")
        return 0
    report = check_records(records, spec, arch, cudnn_direct_seqlens=args.cudnn_direct_seqlens)
    if spec.archs and arch not in spec.archs and not cpu_only:
        print(
            f"note: arch {arch!r} is not one of {', '.join(spec.archs)}: rows that read a per-arch table "
            "report a spec gap there"
        )
    print(render_text(report, spec))
    if args.out:
        with open(os.path.join(args.out, JSON_FILE), "w", encoding="utf-8") as f:
            json.dump(to_json(report, spec), f, indent=1, sort_keys=True)
        with open(os.path.join(args.out, MD_FILE), "w", encoding="utf-8") as f:
            f.write(render_markdown(report, spec))
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
