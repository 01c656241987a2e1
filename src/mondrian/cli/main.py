"""Command line of the package: ``python -m mondrian demo|fit|path|predict``.

Running ``python -m mondrian`` without a command (or with ``--help``) prints the usage.
``fit``, ``path`` and ``predict`` read a CSV file (see :mod:`mondrian.cli.csv_commands`).
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
        epilog="Run 'python -m mondrian COMMAND --help' for the options of a command.",
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
    _add_csv_commands(commands)
    return parser


def _fraction(text):
    """Parse a number in [0, 1) for argparse."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1), got {value}")
    return value


def _add_file_options(command):
    command.add_argument(
        "--header", choices=("auto", "yes", "no"), default="auto",
        help="whether the first row names the columns; auto: yes unless it holds only numbers "
             "(without a header the columns are col1, col2, ...; default: %(default)s)")
    command.add_argument("--encoding", default="utf-8",
                         help="text encoding of the CSV files, e.g. latin-1 (default: "
                              "%(default)s; a byte-order mark is dropped)")


def _add_data_options(command, fraction_help):
    command.add_argument("csv", metavar="FILE.csv",
                         help="CSV file, plain or gzip-compressed (FILE.csv.gz)")
    command.add_argument("--target", metavar="COLUMN",
                         help="name of the target column (default: the last column)")
    command.add_argument(
        "--task", choices=("auto", "classification", "regression"), default="auto",
        help="auto: text labels are classes, and so are integers with at most 20 distinct "
             "values or coded 0..K-1 or 1..K; other numbers are regression targets (the "
             "result table says which rule decided; default: %(default)s)")
    _add_file_options(command)
    command.add_argument("--n-estimators", type=_positive_int, default=50, metavar="N",
                         help="number of trees (default: %(default)s)")
    command.add_argument("--seed", type=int, default=0,
                         help=f"seed of the {fraction_help} split and the model "
                              "(default: %(default)s)")


def _add_csv_commands(commands):
    fit = commands.add_parser(
        "fit", help="train and evaluate a Mondrian forest on a CSV file",
        description="Train a MondrianForestClassifier or MondrianForestRegressor on a CSV file "
                    "(one fit, or online mini-batches with a progress bar on stderr), evaluate "
                    "it on a test part or a test file, print a result table and optionally "
                    "save the model.")
    _add_data_options(fit, "train/test")
    fit.add_argument("--test-fraction", type=_fraction, default=0.2, metavar="F",
                     help="share of the rows held out for testing; 0 tests nothing "
                          "(default: %(default)s)")
    fit.add_argument("--test", metavar="TEST.csv",
                     help="test on this file (same columns) instead of a held-out part")
    fit.add_argument("--lifetime", default="inf",
                     help="lifetime: a positive number, inf, or auto (chosen on a validation "
                          "part; default: %(default)s)")
    fit.add_argument("--feature-weights", metavar="W",
                     help="auto (learned from the labels), none (uniform) or one weight per "
                          "feature, comma-separated (default: the model's default)")
    fit.add_argument("--batch-size", type=_positive_int, metavar="N",
                     help="train online with partial_fit on batches of N rows, with a progress "
                          "bar (the same law as one fit, more CPU; default: one fit)")
    fit.add_argument("--save", metavar="MODEL.pkl", help="save the trained model (pickle)")
    fit.add_argument("--quiet", action="store_true", help="do not show the progress bar")

    path = commands.add_parser(
        "path", help="draw the lifetime path of a CSV dataset to a PNG file",
        description="Fit a forest at lifetime inf on part of a CSV file, evaluate every smaller "
                    "lifetime on the rest in one pass (the lifetime path) and draw the "
                    "validation metric against the lifetime, the best lifetime marked.")
    _add_data_options(path, "fit/validation")
    path.add_argument("--validation-fraction", type=_fraction, default=0.3, metavar="F",
                      help="share of the rows the path is evaluated on (default: %(default)s)")
    path.add_argument("--metric", help="metric to draw (default: the path's criterion)")
    path.add_argument("--output", "-o", default="lifetime_path.png", metavar="FILE.png",
                      help="picture to write (default: %(default)s)")

    predict = commands.add_parser(
        "predict", help="predict a CSV file with a model saved by fit --save",
        description="Load a model saved by 'python -m mondrian fit --save' and write its "
                    "predictions for every row of a CSV file (same feature columns; a target "
                    "column, if present, is ignored) as CSV. The model file is a pickle: load "
                    "only files you trust.")
    predict.add_argument("model", metavar="MODEL.pkl", help="a model saved by fit --save")
    predict.add_argument("csv", metavar="FILE.csv", help="rows to predict (plain or gzip CSV)")
    predict.add_argument("--output", "-o", metavar="OUT.csv",
                         help="where to write the predictions (default: stdout)")
    predict.add_argument("--proba", action="store_true",
                         help="also write class probabilities (classifiers)")
    predict.add_argument("--std", action="store_true",
                         help="also write the predictive standard deviation (regressors)")
    _add_file_options(predict)


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
    from mondrian.cli import csv_commands

    run = {"fit": csv_commands.run_fit, "path": csv_commands.run_path,
           "predict": csv_commands.run_predict}[args.command]
    try:
        run(args)
    except csv_commands.CommandError as error:
        print(f"python -m mondrian {args.command}: error: {error}", file=sys.stderr)
        return 1
    except BrokenPipeError:  # stdout closed early (`... | head`): stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return 0
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover
    return 2  # pragma: no cover


if __name__ == "__main__":
    sys.exit(main())
