"""Command line of the package: ``python -m mondrian demo``.

Running ``python -m mondrian`` without a command (or with ``--help``) prints the usage.
"""

import argparse
import sys

__all__ = ["build_parser", "main"]


def _positive_int(text):
    """Parse a strictly positive integer for argparse."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {value}")
    return value


def build_parser():
    """Build the argument parser of ``python -m mondrian``.

    Returns
    -------
    argparse.ArgumentParser
    """
    from mondrian import __version__
    from mondrian.cli.demo import DATASETS

    parser = argparse.ArgumentParser(
        prog="python -m mondrian",
        description="Mondrian forests with a Cython core.",
        epilog="Run 'python -m mondrian demo --help' for the options of the demo.",
    )
    parser.add_argument("--version", action="version", version=f"mondrian {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    demo = commands.add_parser(
        "demo",
        help="online Mondrian forest vs. a refitted random forest on a toy dataset",
        description=(
            "Stream a shuffled scikit-learn dataset through an online MondrianForestClassifier "
            "(predict_one, then learn_one, for every sample) and compare it with a batch "
            "RandomForestClassifier refitted at a few checkpoints. A progress bar goes to "
            "stderr and the result table (markdown) to stdout."
        ),
    )
    demo.add_argument(
        "--n-estimators",
        type=_positive_int,
        default=20,
        metavar="N",
        help="number of trees of both forests (default: %(default)s)",
    )
    demo.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the shuffle, the split and both models (default: %(default)s)",
    )
    demo.add_argument(
        "--dataset",
        choices=DATASETS,
        default="digits",
        help="scikit-learn dataset to stream (default: %(default)s)",
    )
    demo.add_argument("--quiet", action="store_true", help="do not show the progress bar")
    return parser


def main(argv=None):
    """Entry point of ``python -m mondrian``.

    Parameters
    ----------
    argv : list of str, default=None
        Command-line arguments without the program name; ``sys.argv[1:]`` when ``None``.

    Returns
    -------
    int
        Exit status.
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    if args.command == "demo":
        from mondrian.cli.demo import format_report, run_demo

        result = run_demo(
            n_estimators=args.n_estimators,
            seed=args.seed,
            dataset=args.dataset,
            quiet=args.quiet,
        )
        print(format_report(result))
        return 0
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
