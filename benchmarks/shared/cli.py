"""The command-line conventions shared by every benchmark script.

Every script accepts ``--quick`` (smoke test: smaller data, fewer trees, one repeat; each script
says what it shrinks), ``--seed`` and ``--repeats`` (timed runs per measurement, median reported).
Options whose default depends on ``--quick`` are declared with :func:`add_sized` and resolved by
:func:`parse_args`. Scripts that write a report or plots add :func:`add_output_options`.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from shared import RESULTS_DIR


def make_parser(description: str, default_repeats: int = 3) -> argparse.ArgumentParser:
    """An argument parser with ``--quick``, ``--seed`` and ``--repeats``.

    ``--repeats`` defaults to ``default_repeats``, or 1 with ``--quick``.
    """
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument(
        "--quick", action="store_true",
        help="smoke-test mode: smaller data, fewer trees, one repeat",
    )
    parser.add_argument("--seed", type=int, default=0, help="random_state of every model")
    parser.add_argument(
        "--repeats", type=int, default=None,
        help=f"timed runs per measurement, median reported (default {default_repeats}, quick 1)",
    )
    parser.set_defaults(_sized={"repeats": (default_repeats, 1)})
    return parser


def add_sized(parser: argparse.ArgumentParser, flag: str, full, quick, help: str,
              type=int) -> None:
    """Add an option whose default is ``full``, or ``quick`` with ``--quick``.

    The help text gets ``(default <full>, quick <quick>)`` appended; :func:`parse_args` fills the
    value in when the option is not given.
    """
    parser.add_argument(flag, type=type, default=None,
                        help=f"{help} (default {full}, quick {quick})")
    dest = flag.lstrip("-").replace("-", "_")
    parser.get_default("_sized")[dest] = (full, quick)


def add_datasets(parser: argparse.ArgumentParser, choices: Sequence[str],
                 quick: Sequence[str] | None = None) -> None:
    """Add ``--datasets``: a comma-separated subset of ``choices`` (default all, or ``quick``).

    :func:`parse_args` turns it into a list of names, checked against ``choices``.
    """
    default = ",".join(choices)
    parser.add_argument("--datasets", default=None,
                        help=f"comma-separated subset of {default} (default all"
                             + (f"; quick {','.join(quick)})" if quick else ")"))
    parser.set_defaults(_datasets=(tuple(choices), tuple(quick or choices)))


def add_output_options(parser: argparse.ArgumentParser, report_name: str | None,
                       plots: bool = True) -> None:
    """Add ``--output FILE`` (and ``--no-plots`` when the script draws).

    A full run writes the report to ``results/<report_name>`` unless ``--output`` says elsewhere;
    a quick run writes it only where ``--output`` says. :func:`parse_args` resolves
    ``args.output`` to that path or None.
    """
    where = f"results/{report_name} in a full run, " if report_name else ""
    parser.add_argument("--output", default=None,
                        help=f"write the report to this file (default: {where}nothing in quick "
                             "mode)")
    if plots:
        parser.add_argument("--no-plots", action="store_true", help="do not write the PNG files")
    parser.set_defaults(_report_name=report_name)


def parse_list(text: str, allowed: Sequence[str]) -> list[str]:
    """Parse a comma-separated list, exiting with a message on a name not in ``allowed``."""
    items = [t.strip() for t in text.split(",") if t.strip()]
    unknown = sorted(set(items) - set(allowed))
    if unknown:
        raise SystemExit(f"unknown name(s) {unknown}; choose from {list(allowed)}")
    return items


def parse_args(parser: argparse.ArgumentParser, argv: Sequence[str] | None = None):
    """Parse ``argv`` and resolve the quick-dependent defaults, ``--datasets`` and ``--output``."""
    args = parser.parse_args(argv)
    for dest, (full, quick) in args._sized.items():
        if getattr(args, dest) is None:
            setattr(args, dest, quick if args.quick else full)
    if hasattr(args, "_datasets"):
        choices, quick = args._datasets
        default = quick if args.quick else choices
        args.datasets = parse_list(args.datasets, choices) if args.datasets else list(default)
    if hasattr(args, "_report_name"):
        if args.output is None and args._report_name and not args.quick:
            args.output = RESULTS_DIR / args._report_name
    return args
