"""The three shapes a mutant takes, by where its edit is applied.

* Mutant: one exact text edit of a repository file, applied to a private copy of the repository
  (the oracle, routing specs, adapters, and the ROCm fork's CPU stand-in, which is the library
  under test on a CPU).
* PackageMutant: one exact text edit of a module of an INSTALLED library (FlashInfer), applied
  inside the run's process by serving that module from the edited text; the installation on
  disk is never touched.
* TorchPatch: a torch function replaced inside the run's process by a faulty wrapper
  (conformance/mutations/torch_faults.py), since torch's kernels are not Python text to edit.

Every shape names the tests that must kill it (`kills`), the device it needs, and its class
(`kind`: oracle, routing-spec, adapter, library, harness). `at_import` marks a mutant meant to be refused
when its module is imported (a routing spec's own validation): only for such a mutant does a
module that fails to collect count as a kill rather than as a broken run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

from conformance.mutations.errors import InvalidMutant

KINDS = ("oracle", "routing-spec", "adapter", "library", "harness")
# A kill written `file::test[*]` names every parametrization of that test the mutant reaches (the
# conformance grid's ids are made at run time); any other kill is one exact node id.
ANY_PARAM = "[*]"
DEVICES = ("cpu", "cuda")
_KILL_ROOTS = ("tests/", "conformance/")


def _check_common(name: str, kind: str, needs: str, kills: tuple[str, ...]) -> None:
    if not name or not all(ch.isalnum() or ch == "-" for ch in name):
        raise InvalidMutant(name, "name", name, "a non-empty slug of letters, digits and '-'")
    if kind not in KINDS:
        raise InvalidMutant(name, "kind", kind, f"one of {KINDS}")
    if needs not in DEVICES:
        raise InvalidMutant(name, "needs", needs, f"one of {DEVICES}")
    if not kills:
        raise InvalidMutant(name, "kills", kills, "at least one pytest node id")
    for k in kills:
        if not (k.startswith(_KILL_ROOTS) and "::" in k) or ("*" in k and not k.endswith(ANY_PARAM)):
            raise InvalidMutant(name, "kills", k, "node ids like tests/<dir>/<file>.py::<test>[<id>] or <test>[*]")


def named(test: str, kills: tuple[str, ...]) -> bool:
    """Whether `test` is one of `kills` (exactly, or as a parametrization of a `[*]` entry)."""
    return any(test == k or (k.endswith(ANY_PARAM) and test.startswith(k[:-2])) for k in kills)


def exact_kills(kills: tuple[str, ...]) -> list[str]:
    return [k for k in kills if not k.endswith(ANY_PARAM)]


@dataclass(frozen=True)
class Mutant:
    """One semantic mutant: replace `old` with `new` in `path` (relative to the repository root)."""

    name: str
    path: str
    old: str
    new: str
    description: str
    kills: tuple[str, ...]
    kind: str = "oracle"
    needs: str = "cpu"
    at_import: bool = False

    def __post_init__(self) -> None:
        if not self.name or not all(ch.isalnum() or ch == "-" for ch in self.name):
            raise InvalidMutant(self.name, "name", self.name, "a non-empty slug of letters, digits and '-'")
        if self.path.startswith("/") or not self.path.endswith(".py"):
            raise InvalidMutant(self.name, "path", self.path, "a repository-relative .py path")
        if not self.old or self.old == self.new:
            raise InvalidMutant(self.name, "new", self.new, "text different from a non-empty `old`")
        _check_common(self.name, self.kind, self.needs, self.kills)

    @property
    def module(self) -> str:
        """The dotted module the mutant edits (what the runner checks was imported from the copy)."""
        return self.path[:-3].replace("/", ".")


@dataclass(frozen=True)
class PackageMutant:
    """Replace `old` with `new` in `path` of the installed `package` (e.g. flashinfer, prefill.py)."""

    name: str
    package: str
    path: str
    old: str
    new: str
    description: str
    kills: tuple[str, ...]
    kind: str = "library"
    needs: str = "cuda"

    def __post_init__(self) -> None:
        if self.path.startswith("/") or not self.path.endswith(".py"):
            raise InvalidMutant(self.name, "path", self.path, "a .py path relative to the package")
        if not self.old or self.old == self.new:
            raise InvalidMutant(self.name, "new", self.new, "text different from a non-empty `old`")
        _check_common(self.name, self.kind, self.needs, self.kills)

    @property
    def module(self) -> str:
        return f"{self.package}.{self.path[:-3].replace('/', '.')}".removesuffix(".__init__")


@dataclass(frozen=True)
class TorchPatch:
    """Replace torch's `target` ("module:attr") by `fault`(original) in the run's process.

    `fault` names a factory in conformance/mutations/torch_faults.py. `sites` are (repository
    path, text) pairs: the calls that reach the patched function, whose lines select the tests.
    """

    name: str
    target: str
    fault: str
    sites: tuple[tuple[str, str], ...]
    description: str
    kills: tuple[str, ...]
    kind: str = "library"
    needs: str = "cpu"

    def __post_init__(self) -> None:
        if ":" not in self.target or not self.target.startswith("torch"):
            raise InvalidMutant(self.name, "target", self.target, "'torch.module.path:attribute'")
        if not self.sites:
            raise InvalidMutant(self.name, "sites", self.sites, "at least one (path, calling text) pair")
        _check_common(self.name, self.kind, self.needs, self.kills)


AnyMutant = Union[Mutant, PackageMutant, TorchPatch]


def check_unique(mutants: tuple[AnyMutant, ...]) -> None:
    """Names are unique within a catalogue (the kill matrix is keyed by them)."""
    names = [m.name for m in mutants]
    dupes = sorted({n for n in names if names.count(n) > 1})
    if dupes:
        raise InvalidMutant(dupes[0], "name", dupes, "names unique within the catalogue")
