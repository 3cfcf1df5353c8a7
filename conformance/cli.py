"""attncheck: a test harness for attention kernel libraries (fp32 oracle, routing specs, lifecycle checks).

This module builds the parser from conformance/commands/ (one module per subcommand) and
dispatches; `python -m conformance` is the same. Exit status: 0 ok, 1 something failed, 2 bad
usage (one line naming the value and the fix, before anything is written), 130 interrupted (Ctrl-C),
143 terminated (SIGTERM, what `timeout` and CI cancellation send): either way the records written so
far are kept and the report says the run did not finish.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Optional, Sequence

from conformance.collector import skip_final_collection
from conformance.commands import diff, explore, ledger, mutate, prebuild, record, report, routes, run, sweep, threshold
from conformance.commands.common import EXIT_INTERRUPTED, EXIT_TERMINATED, EXIT_USAGE, PROG, USAGE_ERRORS
from conformance.usage import Parser
from kernels._env import warm_mkl_vml

COMMANDS = (run, record, diff, ledger, sweep, report, mutate, explore, routes, threshold, prebuild)
FORWARDED = {c.NAME: c.forward for c in COMMANDS if hasattr(c, "forward")}  # tools that keep their own parser


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised in the main thread: a run unwinds through its `finally` blocks as on Ctrl-C."""


def _terminate(signum: int, frame: object) -> None:
    raise Terminated()


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog=PROG, description=__doc__.splitlines()[0])  # its sub-parsers too: one-line usage errors
    sub = p.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    skip_final_collection()
    warm_mkl_vml()  # oneMKL picks its VML kernels in this one thread before any attention is computed
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGTERM, _terminate) if main_thread else None
    try:
        if argv[:1] and argv[0] in FORWARDED:
            return FORWARDED[argv[0]](argv[1:])
        args = build_parser().parse_args(argv)  # a malformed option: one line, exit 2 (conformance.usage.Parser)
        return args.handler(args, argv)
    except USAGE_ERRORS as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return EXIT_USAGE
    except Terminated:
        print(f"{PROG}: terminated (SIGTERM); results written so far are kept", file=sys.stderr)
        return EXIT_TERMINATED
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted; results written so far are kept", file=sys.stderr)
        return EXIT_INTERRUPTED
    finally:
        if main_thread:
            signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
