"""The known-failure ledger: each entry backed by a standalone script, matched to the records it explains."""
from __future__ import annotations

import ast
import os
import sys

import pytest

from conformance.known_failures import ENTRY_STATUSES, LEDGER, known_for
from reports.records import ParityRecord, read_jsonl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
H200_RUN = os.path.join(ROOT, "docs", "evidence", "flashinfer_matrix_h200_fa2.jsonl")


@pytest.mark.parametrize("entry", LEDGER, ids=lambda e: e.id)
def test_each_entry_has_a_standalone_script_of_plain_library_calls(entry) -> None:
    path = os.path.join(ROOT, entry.evidence)
    assert os.path.exists(path), entry.evidence
    tree = ast.parse(open(path, encoding="utf-8").read())
    imported = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    imported |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    outside = imported - set(sys.stdlib_module_names) - {"torch", "flashinfer"}
    assert not outside, outside  # the standard library, torch and flashinfer: no attncheck code
    assert entry.status in ENTRY_STATUSES and entry.seen and entry.versions


def test_ids_are_unique() -> None:
    assert len({e.id for e in LEDGER}) == len(LEDGER)


def test_the_h200_runs_failures_are_each_explained_by_one_entry() -> None:
    recs = [r for r in read_jsonl(H200_RUN) if isinstance(r, ParityRecord) and r.status in ("fail", "error")]
    assert len(recs) == 6
    got = {(r.backend, known_for("flashinfer", r.case, r.backend, "0.7.2.post1")) for r in recs}
    assert got == {(b, k) for b in ("fa2", "fa2+graph")
                   for k in ("flashinfer-empty-batch-plan", "flashinfer-paged-mask-zero-pages")}


def test_an_entry_does_not_explain_other_versions_targets_or_passing_shapes() -> None:
    empty = {"layout": "ragged", "qo_lens": [], "kv_lens": [], "mask": "none"}
    assert known_for("flashinfer", empty, "fa2", "0.7.2.post1") == "flashinfer-empty-batch-plan"
    assert known_for("flashinfer", empty, "fa2", "0.7.1") is None
    assert known_for("torch", empty, "math") is None
    assert known_for("flashinfer", dict(empty, qo_lens=[3], kv_lens=[5]), "fa2", "0.7.2.post1") is None


def test_the_fa3_hnd_entries_split_on_the_group_size_the_kernel_computes() -> None:
    """num_qo_heads // kv_len (K's token axis read as heads): 0 kills the process (crash), more runs wrongly."""
    ragged = {"layout": "ragged", "qo_lens": [300], "kv_lens": [128], "num_qo_heads": 8, "num_kv_heads": 1,
              "head_dim_qk": 128, "head_dim_vo": 128, "q_dtype": "bf16", "kv_dtype": "bf16", "kv_layout": "HND",
              "mask": "none"}
    few_keys = dict(ragged, kv_lens=[7], num_kv_heads=8)
    assert known_for("flashinfer", ragged, "fa3", "0.7.2.post1", "sm90") == "flashinfer-fa3-hnd-kv-heads-sigfpe"
    assert known_for("flashinfer", ragged, "auto+graph", "0.7.2.post1", "sm90") == "flashinfer-fa3-hnd-kv-heads-sigfpe"
    assert known_for("flashinfer", few_keys, "fa3", "0.7.2.post1", "sm90") == "flashinfer-fa3-hnd-kv-heads-wrong"
    single = dict(ragged, layout="single", kv_lens=[4099])
    assert known_for("flashinfer", single, "auto", "0.7.2.post1", "sm90") == "flashinfer-fa3-hnd-kv-heads-sigfpe"
    for case, backend, arch in ((dict(ragged, kv_layout="NHD"), "fa3", "sm90"),  # NHD reads the right axis
                                (ragged, "fa2", "sm90"),  # fa2 reads the layout
                                (dict(ragged, mask="custom"), "auto", "sm90"),  # auto takes fa2 for a mask
                                (ragged, "auto", "sm80"),  # no fa3 there
                                (dict(ragged, layout="paged"), "fa3", "sm90")):  # the paged path reads it
        assert known_for("flashinfer", case, backend, "0.7.2.post1", arch) is None, (case, backend, arch)


SESSION_2 = os.path.join(ROOT, "docs", "evidence", "2026-12-01-h200-2", "matrix_fa2_auto_isolated.jsonl")
# The two records an isolated child blamed for the pending error a fresh control had left (the
# harness defect fixed with conformance/isolate.py's second probe): the cases themselves are innocent.
BLAMED_BY_THE_OLD_CHILD = {"paged-b1-h64x8-d256-bf16-p1HND-4b9141ac07",
                           "decode-b2-h8x8-d256-bf16-p16HND-zero_len-d2a4605c2a"}


def test_the_second_h200_runs_failures_are_each_a_ledger_entry_a_lifecycle_defect_or_a_fixed_harness_fault() -> None:
    recs = [r for r in read_jsonl(SESSION_2) if isinstance(r, ParityRecord) and r.status in ("fail", "error")]
    assert len(recs) == 20
    why = {}
    for r in recs:
        known = known_for("flashinfer", r.case, r.backend, "0.7.2.post1", "sm90")
        why[(r.backend, r.case_id)] = known or ("lifecycle" if r.fresh == "pass" else
                                                "harness" if r.case_id in BLAMED_BY_THE_OLD_CHILD else None)
    assert None not in why.values(), why
    assert sorted(set(why.values())) == ["flashinfer-empty-batch-plan", "flashinfer-fa2-window-noncausal-split-kv",
                                         "flashinfer-graph-no-query-rows", "flashinfer-paged-mask-zero-pages",
                                         "harness", "lifecycle"]


def test_the_window_graph_and_head_dim_entries_match_only_what_was_shown() -> None:
    window = {"layout": "paged", "qo_lens": [300, 127, 1], "kv_lens": [4099, 33, 4099], "causal": False,
              "window_left": 64, "mask": "none", "head_dim_qk": 128}
    w = "flashinfer-fa2-window-noncausal-split-kv"
    assert known_for("flashinfer", window, "fa2", "0.7.4", "sm90") == w
    assert known_for("flashinfer", window, "fa2+graph", "0.7.2.post1", "sm90") == w
    for case, backend in ((dict(window, causal=True), "fa2"), (dict(window, window_left=-1), "fa2"),
                          (dict(window, qo_lens=[17], kv_lens=[4099]), "fa2"), (window, "fa3"),
                          (dict(window, qo_lens=[300], kv_lens=[150]), "fa2")):
        assert known_for("flashinfer", case, backend, "0.7.2.post1", "sm90") is None, (case, backend)
    no_rows = {"layout": "ragged", "qo_lens": [0], "kv_lens": [1], "mask": "none", "head_dim_qk": 256,
               "head_dim_vo": 256, "causal": True, "window_left": -1, "kv_layout": "NHD", "num_qo_heads": 16,
               "q_dtype": "bf16", "kv_dtype": "bf16"}
    assert known_for("flashinfer", no_rows, "fa2+graph", "0.7.2.post1", "sm90") == "flashinfer-graph-no-query-rows"
    assert known_for("flashinfer", no_rows, "fa2", "0.7.2.post1", "sm90") is None  # eager runs it
    assert known_for("flashinfer", dict(no_rows, qo_lens=[0, 3], kv_lens=[4, 4]), "fa2+graph", "0.7.2.post1",
                     "sm90") is None
    d96 = dict(no_rows, qo_lens=[5, 3], kv_lens=[9, 7], head_dim_qk=96, head_dim_vo=96, causal=False)
    d96_entry = "flashinfer-fa2-ragged-head-dim-96-illegal-access"
    assert known_for("flashinfer", d96, "auto", "0.7.2.post1", "sm90") == d96_entry
    assert known_for("flashinfer", dict(d96, head_dim_qk=128, head_dim_vo=128), "fa2", "0.7.2.post1", "sm90") is None


@pytest.mark.parametrize("form", ["packed", "packed_flat"])
def test_the_packed_mask_entry_explains_exactly_the_packed_runs_failures(form: str) -> None:
    """The H200's `--adapter-option mask_form=...` runs: every failing record is explained (the packed-mask
    entry where mask bits follow another request's), no passing record is claimed, and the entry needs the
    option: a bool-mask run of the same cases is not explained by it."""
    path = os.path.join(ROOT, "docs", "evidence", "2026-12-01-h200-2", f"mask_{form}.jsonl")
    recs = [r for r in read_jsonl(path) if isinstance(r, ParityRecord) and r.status in ("pass", "fail", "error")]
    opts = {"mask_form": form}
    known = {(r.backend, r.case_id): known_for("flashinfer", r.case, r.backend, "0.7.2.post1", "sm90", opts)
             for r in recs}
    failing = [r for r in recs if r.status != "pass"]
    assert len(failing) >= 15 and all(known[(r.backend, r.case_id)] for r in failing), \
        [(r.backend, r.case_id) for r in failing if not known[(r.backend, r.case_id)]]
    assert not [r.case_id for r in recs if r.status == "pass" and known[(r.backend, r.case_id)]]
    packed = [r for r in failing if known[(r.backend, r.case_id)] == "flashinfer-packed-mask-indptr"]
    assert len(packed) >= 14
    assert all(known_for("flashinfer", r.case, r.backend, "0.7.2.post1", "sm90") != "flashinfer-packed-mask-indptr"
               for r in packed)


def test_the_ledgers_default_options_are_the_adapters() -> None:
    """A run that names no adapter option is matched as the adapter's defaults; the two cannot drift."""
    from dataclasses import fields

    from conformance.known_failures import DEFAULT_OPTIONS
    from kernels.flashinfer import AdapterOptions

    defaults = {f.name: f.default for f in fields(AdapterOptions)}
    assert {k: defaults[k] for k in DEFAULT_OPTIONS} == DEFAULT_OPTIONS
    zero_pages = {"layout": "paged", "mask": "custom", "qo_lens": [3, 0, 64], "kv_lens": [300, 128, 0]}
    assert known_for("flashinfer", zero_pages, "fa2", "0.7.2.post1") == "flashinfer-paged-mask-zero-pages"
    assert known_for("flashinfer", zero_pages, "fa2", "0.7.2.post1", options={"mask_form": "packed"}) is None
