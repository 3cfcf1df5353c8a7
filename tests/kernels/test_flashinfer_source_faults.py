"""The FlashInfer source faults (kernels/flashinfer/source_faults.py): each edit lands once in both versions'
headers and makes its mistake; a copy is made whole or not at all, reused only for its own fault and
source; the installed copy is what imports, with its own JIT cache and the fault's label.

The headers are excerpts of the wheels' (tests/kernels/data/flashinfer_headers/); on the H200 `prepare`
checks the whole header the same way before anything is built."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from kernels.flashinfer import source_faults as sf
from kernels.standin_label import FAULT_MARKER

HEADERS = Path(__file__).parent / "data" / "flashinfer_headers"
VERSIONS = ("0.7.2.post1", "0.7.4")
EXCERPT = {sf.FA2: "prefill", sf.FA3: "attention_updater"}
REPO = Path(__file__).resolve().parents[2]


def header(version: str, name: str) -> str:
    return (HEADERS / f"{EXCERPT[name]}-{version}.cuh").read_text()


def edited_headers(fault: str, version: str) -> dict[str, tuple[str, str]]:
    """{header: (original, edited)} for the headers fault `fault` edits."""
    f = sf.FAULTS[fault]
    return {h: (header(version, h), sf.edited(header(version, h), f.edits, h)) for h in {e.header for e in f.edits}}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("fault", [n for n in sf.FAULTS if n != sf.HONEST])
def test_each_edit_lands_once_in_both_versions_and_changes_the_kernel(fault: str, version: str) -> None:
    for h, (before, after) in edited_headers(fault, version).items():
        assert after != before, f"{fault} changes nothing in {h}"
        for e in sf.FAULTS[fault].edits:
            assert after.count(e.new) >= 1 and before.count(e.old) == 1
        assert sf.FAULTS[fault].backends == (("fa2",) if h == sf.FA2 else ("fa3",))


def fp32_branch(text: str) -> str:
    """update_mdo_states' fp32-score branch: from its start to the half branch."""
    start = text.index("if constexpr (std::is_same_v<DTypeQKAccum, float>)")
    return text[start : text.index("} else if constexpr (std::is_same_v<DTypeQKAccum, half>)", start)]


@pytest.mark.parametrize("version", VERSIONS)
def test_each_fault_makes_its_own_mistake(version: str) -> None:
    _, t = edited_headers("fa2_no_rescale", version)[sf.FA2]
    assert "o_frag[mma_q][mma_d][j * 2 + 0] *= o_scale;" not in fp32_branch(t)  # the running output kept as it was
    assert "d[mma_q][j] *= o_scale;" in fp32_branch(t)  # the row sum still rescaled
    _, t = edited_headers("fa2_row_sum_in_half", version)[sf.FA2]
    assert "d[mma_q][0] = rnd(d[mma_q][0]);" in t and "o_frag[mma_q][mma_d_local][r] = rnd" not in t
    _, t = edited_headers("fa2_acc_in_half", version)[sf.FA2]
    assert "d[mma_q][0] = rnd(d[mma_q][0]);" in t and "o_frag[mma_q][mma_d_local][r] = rnd" in t
    _, t = edited_headers("fa2_p_coarser", version)[sf.FA2]
    assert t.index("s_frag[mma_q][mma_kv][r] = rnd(") < t.index("vec_cast<typename KTraits::DTypeQ, float>::cast<8>")
    _, t = edited_headers("fa2_scores_in_half", version)[sf.FA2]
    branch = fp32_branch(t)
    assert branch.index("= rnd(s_frag[mma_q][mma_kv][j * 2 + 5])") < branch.index("float m_prev = m[mma_q][j];")
    _, t = edited_headers("fa3_no_rescale", version)[sf.FA3]
    assert "row_sum(mi) *= scores_scale(mi);\n        scores_scale(mi) = 1.f;" in t
    _, t = edited_headers("fa3_row_sum_in_half", version)[sf.FA3]
    assert "row_sum(mi) = rnd(row_sum(mi));" in t


@pytest.mark.parametrize("times", [0, 2])
def test_an_edit_whose_text_is_not_there_once_does_not_apply_and_says_how_often(times: int) -> None:
    e = sf.FAULTS["fa3_no_rescale"].edits[0]
    text = header("0.7.4", sf.FA3).replace(e.old, e.old * times)
    with pytest.raises(sf.FaultDoesNotApply, match=f"occurs {times} times, expected once"):
        sf.edited(text, sf.FAULTS["fa3_no_rescale"].edits, sf.FA3)


def fake_package(tmp_path: Path) -> Path:
    """A flashinfer package with the two headers, a data file and Python files that find their headers as
    flashinfer.jit.env does (from their own resolved path)."""
    pkg = tmp_path / "site" / "flashinfer"
    inc = pkg / "data" / "include"
    for h in (sf.FA2, sf.FA3):
        (inc / h).parent.mkdir(parents=True, exist_ok=True)
        (inc / h).write_text(header("0.7.4", h))
    (pkg / "data" / "other.h").write_text("// not edited\n")
    (pkg / "jit").mkdir()
    (pkg / "jit" / "__init__.py").write_text("")
    (pkg / "jit" / "env.py").write_text(
        "import pathlib\nINCLUDE = pathlib.Path(__file__).resolve().parents[1] / 'data' / 'include'\n"
    )
    (pkg / "__init__.py").write_text("from .jit import env\n")
    return pkg


def test_a_copy_links_what_it_does_not_edit_and_writes_the_edited_header(tmp_path: Path) -> None:
    src = fake_package(tmp_path)
    root = sf.prepare("fa2_p_coarser", tmp_path / "copy", source=src)
    pkg = root / "flashinfer"
    assert (pkg / "data" / "other.h").is_symlink()
    assert not (pkg / "jit" / "env.py").is_symlink()  # copied: it resolves its own path
    # copied, edited or not: a linked header's relative includes would read the installed headers (gcc finds a
    # system header under its real path), and the edit of a header included that way would never be built
    assert not (pkg / "data" / "include" / sf.FA3).is_symlink()
    edited = pkg / "data" / "include" / sf.FA2
    assert not edited.is_symlink() and "s_frag[mma_q][mma_kv][r] = rnd(" in edited.read_text()
    assert "rnd(" not in (src / "data" / "include" / sf.FA2).read_text()  # the installed package untouched
    assert (pkg / sf.STAMP).read_text() == f"fa2_p_coarser {src.resolve()}"


def test_a_copy_is_reused_for_its_own_fault_and_source_only(tmp_path: Path) -> None:
    src = fake_package(tmp_path)
    root = sf.prepare("fa2_no_rescale", tmp_path / "copy", source=src)
    marker = root / "flashinfer" / "data" / "mine"
    marker.write_text("")
    sf.prepare("fa2_no_rescale", tmp_path / "copy", source=src)
    assert marker.exists()  # the same fault and source: reused
    sf.prepare("fa2_scores_in_half", tmp_path / "copy", source=src)
    assert not marker.exists()  # another fault: made again
    edited = (root / "flashinfer" / "data" / "include" / sf.FA2).read_text()
    assert "float m_prev" in edited and "= rnd(s_frag[mma_q][mma_kv][j * 2 + 0])" in edited
    assert "o_frag[mma_q][mma_d][j * 2 + 0] *= o_scale;" in edited  # the earlier fault's edit is gone


def test_a_fault_that_does_not_apply_writes_nothing(tmp_path: Path) -> None:
    src = fake_package(tmp_path)
    (src / "data" / "include" / sf.FA3).write_text("// another version's header\n")
    with pytest.raises(sf.FaultDoesNotApply, match="occurs 0 times"):
        sf.prepare("fa3_no_rescale", tmp_path / "copy", source=src)
    assert not (tmp_path / "copy").exists()


def test_the_installed_copy_is_what_imports_with_its_own_jit_cache_and_label(tmp_path: Path) -> None:
    """In a fresh interpreter, with the fake package installed on its path (install() swaps the import), as
    scripts/run_with_flashinfer_fault.py installs it (injected: the copy under $ATTNCHECK_FAULT_ROOT)."""
    src = fake_package(tmp_path)
    code = (
        "import os, sys\n"
        "from kernels.flashinfer import source_faults as sf\n"
        "with sf.injected('fa3_row_sum_in_half'):\n"
        "    import flashinfer\n"
        f"print(flashinfer.__file__, os.environ['FLASHINFER_WORKSPACE_BASE'], getattr(flashinfer, {FAULT_MARKER!r}))\n"
        "print(open(flashinfer.env.INCLUDE / sf.FA3).read().count('row_sum(mi) = rnd(row_sum(mi));'))\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(src.parent), str(REPO)]))
    env[sf.ROOT_ENV] = str(tmp_path / "faults")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    (copy,) = (tmp_path / "faults").iterdir()  # one folder per fault and installed package
    assert copy.name.startswith("fa3_row_sum_in_half-")
    assert first.split() == [str(copy / "flashinfer" / "__init__.py"), str(copy / "jit"), "fa3_row_sum_in_half"]
    assert second == "1"  # the headers the copy's JIT reads are the edited ones


def test_install_refuses_once_flashinfer_is_imported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setitem(sys.modules, "flashinfer", object())
    with pytest.raises(RuntimeError, match="imported already"):
        sf.install("honest", tmp_path)


def test_the_script_lists_the_catalogue_and_refuses_an_unknown_fault() -> None:
    script = str(REPO / "scripts" / "run_with_flashinfer_fault.py")
    # Run as `python script --list` runs it, saying at exit whether torch was imported: listing needs no torch.
    at_exit = "import atexit, sys; atexit.register(lambda: print('torch' in sys.modules))"
    listing = (
        f"{at_exit}; sys.argv = [{script!r}, '--list']; import runpy; runpy.run_path({script!r}, run_name='__main__')"
    )
    listed = subprocess.run([sys.executable, "-c", listing], capture_output=True, text=True, timeout=120)
    *lines, torch_imported = listed.stdout.splitlines()
    assert listed.returncode == 0 and [ln.split()[0] for ln in lines] == list(sf.FAULTS), listed.stderr
    assert torch_imported == "False"
    bad = subprocess.run([sys.executable, script, "fa2_nope", "run"], capture_output=True, text=True, timeout=120)
    assert bad.returncode == 2 and "fa2_nope" in bad.stderr and "fa2_no_rescale" in bad.stderr
