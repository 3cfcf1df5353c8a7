"""kernels.REGISTRY resolves names lazily, checks itself, and names unknown targets precisely."""

from __future__ import annotations

import subprocess
import sys

import pytest

import kernels
from kernels import REGISTRY, check_registry, get_target
from kernels.errors import UnknownTarget


def test_torch_is_registered_and_resolves_to_a_target_named_torch() -> None:
    """get_target('torch') returns the Target whose name is 'torch'."""
    t = get_target("torch")
    assert t.name == "torch" and callable(t.make) and callable(t.backends)


@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_entry_resolves_to_a_target_named_like_its_key(name: str) -> None:
    """Each registry entry imports to a Target whose name is its key."""
    assert get_target(name).name == name


def test_importing_kernels_imports_no_torch() -> None:
    """The registry and its errors import without torch: a command that only lists or refuses pays for no torch."""
    code = (
        "import sys, kernels, kernels.errors, kernels.flashinfer.source_faults\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'torch'))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "[]", (done.stdout, done.stderr)


def test_unknown_target_carries_the_name_and_the_known_ones() -> None:
    """An unregistered name raises UnknownTarget with the name and every registered name."""
    with pytest.raises(UnknownTarget) as err:
        get_target("tensorrt")
    assert (err.value.name, err.value.known) == ("tensorrt", tuple(REGISTRY))


@pytest.mark.parametrize(
    "registry",
    [
        {"Torch": "kernels.torch_target:TARGET"},
        {"torch": "kernels.torch_target"},
        {"torch": "somewhere.else:TARGET"},
        {"torch": "kernels.no_such_module:TARGET"},
    ],
    ids=["bad-key", "no-attribute", "outside-kernels", "missing-module"],
)
def test_registry_self_check_rejects_malformed_entries(registry: dict[str, str]) -> None:
    """The import-time check refuses a malformed key, entry or a module that does not exist."""
    with pytest.raises(ImportError, match="REGISTRY"):
        check_registry(registry)


def test_registry_self_check_accepts_the_shipped_registry() -> None:
    """The registry as shipped passes its own check (it ran at import, too)."""
    check_registry(REGISTRY)


def test_an_entry_naming_something_other_than_its_target_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """An entry that resolves to an object without the Target's name and methods fails on lookup."""
    monkeypatch.setitem(kernels.REGISTRY, "torch", "kernels._env:NOT_INSTALLED")
    with pytest.raises(TypeError, match="expected a Target named 'torch'"):
        get_target("torch")
