"""What the attncheck subcommands share: exit codes, usage errors, device, JIT cache, option checks.

Exit status of every subcommand: 0 ok, 1 something failed, 2 bad usage, reported in one line that
names the value and the fix before anything is written; 130 interrupted.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Optional

from conformance.usage import EXIT_USAGE as EXIT_USAGE  # the one exit status usage.py owns
from conformance.usage import checked_device
from kernels.errors import KernelUnavailable, UnknownBackend, UnknownTarget
from scenarios.errors import InvalidInputs, InvalidValue

PROG = "attncheck"
EXIT_OK, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_TERMINATED = 0, 1, 130, 143
USAGE_ERRORS = (UnknownTarget, UnknownBackend, KernelUnavailable, InvalidValue, InvalidInputs)


def prog(name: str) -> str:
    """The program name a subcommand's own parser shows: `attncheck routes`."""
    return f"{PROG} {name}"


def default_device() -> str:
    from kernels import _env

    return "cuda" if _env.cuda_available() else "cpu"


def device_of(given: Optional[str]) -> str:
    """--device as given (checked), else cuda where torch sees one, else cpu."""
    return checked_device(given) if given else default_device()


def set_jit_cache(path: str) -> None:
    """Point FlashInfer's JIT cache at `path`; it reads the variable once, at import (a second call with
    the same path, once it is imported, changes nothing and is accepted)."""
    if os.environ.get("FLASHINFER_WORKSPACE_BASE") == os.path.abspath(path) and os.path.isdir(path):
        return
    if "flashinfer" in sys.modules:
        raise InvalidValue(
            "--jit-cache",
            path,
            "to be set before flashinfer is imported",
            "set FLASHINFER_WORKSPACE_BASE in the environment instead",
        )
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise InvalidValue(
            "--jit-cache", path, "a directory that can be created", f"pass a writable path ({e.strerror})"
        ) from None
    os.environ["FLASHINFER_WORKSPACE_BASE"] = os.path.abspath(path)


def parse_options(items: Optional[list[str]]) -> dict:
    """["mask_form=packed", "decode_tensor_cores=true"] -> {"mask_form": "packed", "decode_tensor_cores": True}."""
    out: dict = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidValue("--adapter-option", item, "KEY=VALUE", "write it as e.g. mask_form=packed")
        low = value.lower()
        out[key] = True if low == "true" else False if low == "false" else int(value) if value.isdigit() else value
    return out


def out_dir(flag: str, path: str) -> None:
    """Create the output directory `path` (given by `flag`), or refuse it as a usage error."""
    try:
        os.makedirs(path, exist_ok=True)
    except OSError as e:
        raise InvalidValue(
            flag, path, "a directory that can be created", f"pass a writable path ({e.strerror})"
        ) from None


def writable_file(flag: str, path: str) -> None:
    """Refuse, without creating anything, a file path that cannot be written: a directory, or a folder above it
    that is missing, is a file, or is not writable."""
    if os.path.isdir(path):
        raise InvalidValue(flag, path, "a file path", "pass a file name, not a directory")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise InvalidValue(flag, path, "a file in an existing directory", f"create {folder} first or pass another path")
    if not os.access(folder, os.W_OK | os.X_OK) or (os.path.exists(path) and not os.access(path, os.W_OK)):
        raise InvalidValue(flag, path, "a writable file", "pass a path you may write")


def add_forwarded(sub: Any, name: str, what: str) -> None:
    """Register a subcommand whose tool keeps its own parser: cli.main hands it the arguments unparsed."""
    sub.add_parser(name, help=f"{what} (its options: {prog(name)} --help)", add_help=False)
