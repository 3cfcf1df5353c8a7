"""Precision defects of our own design, injected into FlashInfer's kernel sources.

FlashInfer builds its attention kernels from the CUDA headers it ships (flashinfer/data/include)
the first time a module is loaded (JIT). A fault here is an edit of such a header making one
mistake a low-precision kernel plausibly makes (kernels/torch_precision_faults.py models the same
ones in torch), applied to a copy of the installed package:

    install("fa2_no_rescale", "/tmp/faults")   # before flashinfer is imported: the edited copy is
    import flashinfer                          # what imports, its modules build into its own cache

The copy (`prepare`) links every file of the installed package but its Python files (copied:
flashinfer.jit.env finds the headers from its own resolved path) and its headers under data/include
(copied, the edited ones written): a linked header is found by the compiler under its real path (gcc
shortens a system header's path to it), and its own relative includes then read the installed headers:
an edit of a header included that way (fa3's attention_updater.cuh) would never reach the build.
Each fault's copy has its own JIT cache, so a module built from an edited source is never loaded by
an honest run, nor the reverse; HONEST is the copy with no edit, the control. An edit names the
text it replaces, which must occur exactly once in the installed version's header: otherwise the
fault does not apply to that version, said with the count, never a silent no-op. While installed,
the flashinfer module carries the fault's name (FAULT_MARKER), so versions() say "+fault:NAME".

Where they round: fa2's 16-bit accumulators round after every 16-key MMA step, as the torch
catalogue's do; fa3's row sum after every key tile. "The input dtype" is the query's (bf16 for an
fp8 query). `FAULTS` is the catalogue; docs/evidence/2026-12-03-h200/README.md holds its runs.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Optional

from kernels.standin_label import FAULT_MARKER

FA2 = "flashinfer/attention/prefill.cuh"  # fa2's prefill kernels (paged, ragged, single; decode with tensor cores)
FA3 = "flashinfer/attention/hopper/attention_updater.cuh"  # fa3's online softmax (sm90)
INCLUDE = Path("data") / "include"  # the headers, under the package directory
ROOT_ENV = "ATTNCHECK_FAULT_ROOT"  # where the copies go (default: the temporary directory)
# In a prepared copy: "NAME SOURCE", written last (a copy without it is unfinished, or of an earlier layout).
STAMP = ".attncheck-fault-2"

# Rounding helpers the edits inline (device lambdas; fa2's DTypeQ is half or __nv_bfloat16).
_ROUND_Q = (
    "[](float x) -> float { if constexpr (std::is_same_v<typename KTraits::DTypeQ, half>) "
    "{ return __half2float(__float2half_rn(x)); } else { return __bfloat162float(__float2bfloat16_rn(x)); } }"
)
# P kept to 7 mantissa bits (bf16's) under an fp16 query, else 3 (e4m3's), rounded to nearest even.
_COARSER = (
    "[](float x) -> float { constexpr uint32_t s = std::is_same_v<typename KTraits::DTypeQ, half> ? 16 : 20; "
    "uint32_t u = __float_as_uint(x); u = (u + ((1u << (s - 1)) - 1u) + ((u >> s) & 1u)) & ~((1u << s) - 1u); "
    "return __uint_as_float(u); }"
)
_ROUND_BF16 = "[](float x) -> float { return __bfloat162float(__float2bfloat16_rn(x)); }"

# The anchors, each found once in 0.7.2.post1's and 0.7.4's headers (tests/kernels/data/ holds those excerpts).
_FA2_ROWSUM = "          mma::m16k16_rowsum_f16f16f32(d[mma_q], s_frag_f16[mma_q][mma_kv]);\n"
_FA2_PV = (
    "            mma::mma_sync_m16n16k16_row_col_f16f16f32<typename KTraits::DTypeQ>(\n"
    "                o_frag[mma_q][mma_d_local], (uint32_t*)s_frag_f16[mma_q][mma_kv], b_frag);\n"
)
_FA2_RESCALE_LINES = (
    "            o_frag[mma_q][mma_d][j * 2 + 0] *= o_scale;\n"
    "            o_frag[mma_q][mma_d][j * 2 + 1] *= o_scale;\n"
    "            o_frag[mma_q][mma_d][j * 2 + 4] *= o_scale;\n"
    "            o_frag[mma_q][mma_d][j * 2 + 5] *= o_scale;\n"
)
# what follows them in the fp32-score branch only (the half branch sets m2s first)
_FA2_RESCALE_TAIL = (
    "          }\n"
    "#pragma unroll\n"
    "          for (uint32_t mma_kv = 0; mma_kv < KTraits::NUM_MMA_KV; ++mma_kv) {\n"
    "            s_frag[mma_q][mma_kv][j * 2 + 0] =\n"
)
_FA2_P_CAST = (
    "        vec_cast<typename KTraits::DTypeQ, float>::cast<8>(s_frag_f16[mma_q][mma_kv],\n"
    "                                                           s_frag[mma_q][mma_kv]);\n"
)
_FA2_SOFTMAX_ROW = "          float m_prev = m[mma_q][j];\n"
_FA3_SCALE = "        row_sum(mi) *= scores_scale(mi);\n"
_FA3_SUM = "      reduce_sum</*init=*/false, /*warp_reduce=*/false>(scores, row_sum);\n"


@dataclass(frozen=True)
class Edit:
    """One replacement in one header (its path under data/include): `old` must occur there exactly once."""

    header: str
    old: str
    new: str


@dataclass(frozen=True)
class SourceFault:
    """One precision mistake: the backends whose kernels it reaches, and the edits that make it."""

    name: str
    description: str
    backends: tuple[str, ...]
    edits: tuple[Edit, ...]


def _after(header: str, anchor: str, added: str) -> Edit:
    return Edit(header, anchor, anchor + added)


_ROWSUM_IN_Q = _after(
    FA2,
    _FA2_ROWSUM,
    f"          {{ auto rnd = {_ROUND_Q}; d[mma_q][0] = rnd(d[mma_q][0]); d[mma_q][1] = rnd(d[mma_q][1]); }}\n",
)

HONEST = "honest"
FAULTS: dict[str, SourceFault] = {
    f.name: f
    for f in (
        SourceFault(HONEST, "the control: the package copied with no edit, its own JIT cache", ("fa2", "fa3"), ()),
        SourceFault(
            "fa2_no_rescale",
            "fa2: the running output is not rescaled when a later key tile raises the row max",
            ("fa2",),
            (Edit(FA2, _FA2_RESCALE_LINES + _FA2_RESCALE_TAIL, _FA2_RESCALE_TAIL),),
        ),
        SourceFault(
            "fa2_row_sum_in_half",
            "fa2: the running row sum is held in the input dtype (rounded after every 16 keys)",
            ("fa2",),
            (_ROWSUM_IN_Q,),
        ),
        SourceFault(
            "fa2_acc_in_half",
            "fa2: the running output and row sum are held in the input dtype (rounded after every 16 keys)",
            ("fa2",),
            (
                _ROWSUM_IN_Q,
                _after(
                    FA2,
                    _FA2_PV,
                    f"            {{ auto rnd = {_ROUND_Q}; for (uint32_t r = 0; r < 8; ++r) "
                    "o_frag[mma_q][mma_d_local][r] = rnd(o_frag[mma_q][mma_d_local][r]); }\n",
                ),
            ),
        ),
        SourceFault(
            "fa2_p_coarser",
            "fa2: P is rounded coarser than the input dtype before P.V (to bf16's 7 mantissa bits "
            "under fp16, to e4m3's 3 under bf16)",
            ("fa2",),
            (
                Edit(
                    FA2,
                    _FA2_P_CAST,
                    f"        {{ auto rnd = {_COARSER}; for (uint32_t r = 0; r < 8; ++r) "
                    "s_frag[mma_q][mma_kv][r] = rnd(s_frag[mma_q][mma_kv][r]); }\n" + _FA2_P_CAST,
                ),
            ),
        ),
        SourceFault(
            "fa2_scores_in_half",
            "fa2: q.k is rounded to the input dtype before the softmax (scores not held in fp32)",
            ("fa2",),
            (
                Edit(
                    FA2,
                    _FA2_SOFTMAX_ROW,
                    f"          {{ auto rnd = {_ROUND_Q}; for (uint32_t mma_kv = 0; mma_kv < KTraits::NUM_MMA_KV; "
                    "++mma_kv) { s_frag[mma_q][mma_kv][j * 2 + 0] = rnd(s_frag[mma_q][mma_kv][j * 2 + 0]); "
                    "s_frag[mma_q][mma_kv][j * 2 + 1] = rnd(s_frag[mma_q][mma_kv][j * 2 + 1]); "
                    "s_frag[mma_q][mma_kv][j * 2 + 4] = rnd(s_frag[mma_q][mma_kv][j * 2 + 4]); "
                    "s_frag[mma_q][mma_kv][j * 2 + 5] = rnd(s_frag[mma_q][mma_kv][j * 2 + 5]); } }\n"
                    + _FA2_SOFTMAX_ROW,
                ),
            ),
        ),
        SourceFault(
            "fa3_no_rescale",
            "fa3: the running output is not rescaled when a later key tile raises the row max",
            ("fa3",),
            (_after(FA3, _FA3_SCALE, "        scores_scale(mi) = 1.f;\n"),),
        ),
        SourceFault(
            "fa3_row_sum_in_half",
            "fa3: the running row sum is held in bf16 (rounded after every key tile)",
            ("fa3",),
            (
                _after(
                    FA3,
                    _FA3_SUM,
                    f"      {{ auto rnd = {_ROUND_BF16}; for (int mi = 0; mi < size(row_sum); ++mi) "
                    "row_sum(mi) = rnd(row_sum(mi)); }\n",
                ),
            ),
        ),
    )
}


class FaultDoesNotApply(ValueError):
    """An edit's text is not in the installed header exactly once."""


def fault(name: str) -> SourceFault:
    """The catalogue's fault `name`; a ValueError naming the choices otherwise."""
    if name not in FAULTS:
        raise ValueError(f"FlashInfer source fault {name!r}: expected one of {', '.join(FAULTS)}")
    return FAULTS[name]


def edited(text: str, edits: tuple[Edit, ...], header: str) -> str:
    """`text` (the header `header`) with every edit of that header made; FaultDoesNotApply when an edit's
    text occurs other than once."""
    for e in edits:
        if e.header != header:
            continue
        n = text.count(e.old)
        if n != 1:
            first = e.old.strip().splitlines()[0]
            raise FaultDoesNotApply(f"{header}: the edited text ({first!r} ...) occurs {n} times, expected once")
        text = text.replace(e.old, e.new)
    return text


def installed_package() -> Path:
    """The directory of the flashinfer package this interpreter would import, without importing it."""
    spec = importlib.util.find_spec("flashinfer")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("flashinfer is not installed: the source faults edit an installed package")
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def prepare(name: str, root: str | os.PathLike[str], source: Optional[Path] = None) -> Path:
    """ROOT/flashinfer: the package at `source` (default: the installed one) with fault `name`'s edits, reused
    when ROOT already holds it finished for the same fault and source. Returns ROOT."""
    f = fault(name)
    src = (source or installed_package()).resolve()
    root_p = Path(root).resolve()
    pkg = root_p / "flashinfer"
    stamp = f"{f.name} {src}"
    if (pkg / STAMP).is_file() and (pkg / STAMP).read_text() == stamp:
        return root_p
    headers = {e.header for e in f.edits}
    texts = {h: edited((src / INCLUDE / h).read_text(), f.edits, h) for h in headers}  # fails before writing
    if pkg.exists():
        shutil.rmtree(pkg)
    for d, _dirs, files in os.walk(src):
        rel = Path(d).relative_to(src)
        if "__pycache__" in rel.parts:
            continue
        (pkg / rel).mkdir(parents=True, exist_ok=True)
        for fn in files:
            s, t = Path(d) / fn, pkg / rel / fn
            if fn.endswith(".py") or rel.parts[:2] == INCLUDE.parts:
                shutil.copy2(s, t)
            else:
                t.symlink_to(s)
    for h, text in texts.items():
        (pkg / INCLUDE / h).write_text(text)
    (pkg / STAMP).write_text(stamp)
    return root_p


def install(name: str, root: str | os.PathLike[str]) -> Path:
    """Make fault `name`'s copy (prepare) the flashinfer this process imports, its JIT cache ROOT/jit, and
    import it labelled with the fault. Before any import of flashinfer; returns ROOT."""
    if "flashinfer" in sys.modules:
        raise RuntimeError(
            "FlashInfer source fault: flashinfer is imported already; install the fault before anything imports it"
        )
    root_p = prepare(name, root)
    sys.path.insert(0, str(root_p))
    os.environ["FLASHINFER_WORKSPACE_BASE"] = str(root_p / "jit")
    import flashinfer

    if Path(flashinfer.__file__).resolve().parent != (root_p / "flashinfer").resolve():
        raise RuntimeError(f"FlashInfer source fault: imported {flashinfer.__file__}, not the copy under {root_p}")
    setattr(flashinfer, FAULT_MARKER, name)
    return root_p


def default_root(name: str) -> Path:
    """Where fault `name`'s copy of the installed package goes: under $ATTNCHECK_FAULT_ROOT (default: the
    temporary directory), one folder per fault and installed package, so two versions never share one."""
    base = Path(os.environ.get(ROOT_ENV) or Path(tempfile.gettempdir()) / "attncheck-source-faults")
    src = hashlib.sha1(str(installed_package()).encode()).hexdigest()[:10]
    return base / f"{fault(name).name}-{src}"


@contextlib.contextmanager
def injected(name: str) -> Iterator[SourceFault]:
    """Fault `name` installed (at default_root) for the rest of the process: an imported module cannot be
    swapped back, so leaving the block undoes nothing (scripts/run_with_flashinfer_fault.py runs one command)."""
    install(name, default_root(name))
    yield FAULTS[name]
