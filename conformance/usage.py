"""Usage checks every attncheck entry point shares: a parser whose errors are one line, the output
folder and the device checked before anything is written.

A module of its own, importing no other attncheck module, so that the command modules and the tools
that keep their own parser (explore/loop.py, route_records.py) all take it without an import cycle.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import NoReturn

from scenarios.errors import InvalidValue

EXIT_USAGE = 2

# argparse's own complaints, each with the fix that answers it (first match wins).
ARGPARSE_FIXES = (
    ("invalid int value", "pass a whole number"),
    ("invalid float value", "pass a number, e.g. 0.5"),
    ("invalid choice", "pass one of the listed choices"),
    ("the following arguments are required", "give them"),
    ("expected one argument", "give the option its value (write one starting with '-' as --option=VALUE)"),
    ("unrecognized arguments", "drop them"),
)


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage errors are one line naming the value and the fix, exit 2, as every
    other usage error of attncheck (argparse's own print the whole usage first). Sub-parsers inherit it."""

    def error(self, message: str) -> NoReturn:
        fix = next((f for key, f in ARGPARSE_FIXES if key in message), "correct it")
        sys.stderr.write(f"{self.prog}: error: {message}. Fix: {fix} (`{self.prog} --help` lists the options)\n")
        sys.exit(EXIT_USAGE)


def usable_out_dir(flag: str, path: str) -> None:
    """Refuse, without creating anything, an output directory that cannot be made: an empty path, `path` or
    a folder above it is a file, or the nearest existing folder is not writable."""
    if not path.strip():
        raise InvalidValue(flag, path, "a directory path", f"pass a folder name, e.g. {flag} attncheck-out")
    probe = os.path.abspath(path)
    while not os.path.exists(probe):
        probe = os.path.dirname(probe)
    if not os.path.isdir(probe):
        raise InvalidValue(
            flag, path, "a directory (or a path where one can be made)", f"{probe} is a file: pass another {flag}"
        )
    if not os.access(probe, os.W_OK | os.X_OK):
        raise InvalidValue(
            flag, path, "a directory (or a path where one can be made)", f"{probe} is not writable: pass another {flag}"
        )


def checked_device(device: str) -> str:
    """`device` when it names a device kind attncheck drives (cpu, cuda, cuda:N), else a usage error."""
    if device not in ("cpu", "cuda") and not (device.startswith("cuda:") and device[5:].isdigit()):
        raise InvalidValue("--device", device, "cpu, cuda or cuda:N", "pass --device cpu or --device cuda")
    return device


def heartbeat_seconds(value: float) -> float:
    """--heartbeat: seconds between the lines a long item prints, 0 for none; refused when negative or NaN."""
    if not value >= 0:
        raise InvalidValue("--heartbeat", value, "seconds >= 0 (0: no heartbeat)", "pass e.g. --heartbeat 30")
    return value
