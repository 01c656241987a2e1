"""Prequential demo: an online Mondrian forest beside a periodically refitted random forest.

The stream is a shuffled scikit-learn toy dataset. Every stream sample is first predicted and
then learnt (test-then-train). The Mondrian forest learns one sample at a time with
``predict_one`` / ``learn_one``; the batch random forest can only be refitted on everything seen
so far, which the demo does at a few checkpoints. A held-out part of the dataset measures the
accuracy of both models at every checkpoint.
"""

import sys
import time
from dataclasses import dataclass, field

import numpy as np

__all__ = ["DATASETS", "DemoResult", "ProgressBar", "format_report", "run_demo"]

#: Datasets shipped with scikit-learn that the demo can stream.
DATASETS = ("digits", "iris", "wine", "breast_cancer")

#: Fractions of the stream after which the batch random forest is refitted.
CHECKPOINTS = (0.1, 0.25, 0.5, 1.0)

#: Fraction of the shuffled dataset held out for testing.
TEST_FRACTION = 0.2


class ProgressBar:
    """A minimal text progress bar.

    On a terminal the bar is redrawn in place at most ``refresh`` times per second. On any
    other stream (a log file, a pipe) one plain line is written at every tenth of the work, so
    logs stay short.

    Parameters
    ----------
    total : int
        Number of steps of the work.
    label : str, default=""
        Text shown before the bar.
    stream : file-like, default=None
        Where to write; ``sys.stderr`` when ``None``.
    width : int, default=28
        Number of characters of the bar itself.
    refresh : float, default=12.0
        Maximum number of redraws per second on a terminal.
    enabled : bool, default=True
        With ``False`` nothing is ever written.
    """

    def __init__(self, total, label="", stream=None, width=28, refresh=12.0, enabled=True):
        self.total = max(int(total), 1)
        self.label = label
        self.stream = sys.stderr if stream is None else stream
        self.width = width
        self.enabled = enabled
        self.interactive = enabled and bool(getattr(self.stream, "isatty", lambda: False)())
        self._min_interval = 1.0 / refresh
        self._start = time.perf_counter()
        self._last_draw = -np.inf
        self._next_tenth = 1
        self._line_length = 0
        self.count = 0

    def update(self, count, info=""):
        """Move the bar to ``count`` completed steps.

        Parameters
        ----------
        count : int
            Number of completed steps (between 0 and ``total``).
        info : str, default=""
            Extra text written after the bar (for instance a running accuracy).
        """
        self.count = count
        if not self.enabled:
            return
        now = time.perf_counter()
        if self.interactive:
            if count < self.total and now - self._last_draw < self._min_interval:
                return
            self._last_draw = now
            line = self._render(now, info)
            padding = " " * max(self._line_length - len(line), 0)
            self._line_length = len(line)
            self.stream.write("\r" + line + padding)
            self.stream.flush()
        elif count * 10 >= self._next_tenth * self.total:
            self._next_tenth = count * 10 // self.total + 1
            self.stream.write(self._render(now, info) + "\n")
            self.stream.flush()

    def close(self):
        """End the bar's line on a terminal."""
        if self.enabled and self.interactive:
            self.stream.write("\n")
            self.stream.flush()

    def _render(self, now, info):
        fraction = min(self.count / self.total, 1.0)
        filled = int(round(fraction * self.width))
        bar = "#" * filled + "-" * (self.width - filled)
        elapsed = now - self._start
        rate = self.count / elapsed if elapsed > 0 else 0.0
        if 0 < self.count < self.total and rate > 0:
            timing = f"eta {(self.total - self.count) / rate:5.1f}s"
        else:
            timing = f"{elapsed:5.1f}s"
        parts = [
            self.label,
            f"[{bar}]",
            f"{100 * fraction:3.0f}%",
            f"{self.count:>{len(str(self.total))}}/{self.total}",
            f"{rate:7.0f}/s",
            timing,
        ]
        if info:
            parts.append(info)
        return "  ".join(part for part in parts if part)


@dataclass
class ModelResult:
    """What the demo measured for one model.

    Attributes
    ----------
    name : str
        Name shown in the report.
    prequential_accuracy : float or None
        Test-then-train accuracy over the stream (``None`` when not measured).
    test_accuracy : float
        Accuracy on the held-out part after the whole stream.
    train_time : float
        Seconds spent training (prediction excluded).
    n_train : int
        Number of stream samples the model learnt from.
    checkpoint_accuracy : list of float
        Held-out accuracy at every checkpoint (empty when not measured).
    """

    name: str
    prequential_accuracy: float | None
    test_accuracy: float
    train_time: float
    n_train: int
    checkpoint_accuracy: list = field(default_factory=list)

    @property
    def samples_per_second(self):
        """Stream samples per second of training time."""
        return self.n_train / self.train_time if self.train_time > 0 else float("inf")


@dataclass
class DemoResult:
    """Everything :func:`run_demo` measured.

    Attributes
    ----------
    dataset : str
        Name of the dataset.
    seed : int
        Seed of the shuffle and of both models.
    n_estimators : int
        Number of trees of both forests.
    n_features, n_classes, n_stream, n_test : int
        Shape of the problem: features, classes, stream length and held-out size.
    checkpoints : list of int
        Stream positions (samples seen) where the random forest was refitted.
    models : list of ModelResult
        One entry per model, the online Mondrian forest first.
    wall_time : float
        Seconds taken by the whole demo.
    """

    dataset: str
    seed: int
    n_estimators: int
    n_features: int
    n_classes: int
    n_stream: int
    n_test: int
    checkpoints: list
    models: list
    wall_time: float


def load_dataset(name):
    """Load one of the scikit-learn toy datasets listed in :data:`DATASETS`.

    Parameters
    ----------
    name : {"digits", "iris", "wine", "breast_cancer"}

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
    """
    from sklearn import datasets

    if name not in DATASETS:
        raise ValueError(f"unknown dataset {name!r}; choose one of {', '.join(DATASETS)}")
    X, y = getattr(datasets, f"load_{name}")(return_X_y=True)
    return np.asarray(X, dtype=np.float64), np.asarray(y)


def _checkpoint_positions(n_stream):
    positions = sorted({max(1, int(round(f * n_stream))) for f in CHECKPOINTS})
    positions[-1] = n_stream
    return positions


def _stream_result(name, n_stream, correct, train_time, checkpoint_accuracy):
    """Result of a learner tested then trained on every point of the stream."""
    return ModelResult(
        name=name,
        prequential_accuracy=correct / n_stream,
        test_accuracy=checkpoint_accuracy[-1],
        train_time=train_time,
        n_train=n_stream,
        checkpoint_accuracy=checkpoint_accuracy,
    )


def run_demo(n_estimators=20, seed=0, dataset="digits", quiet=False, progress_stream=None):
    """Run the prequential comparison and return its measurements.

    Parameters
    ----------
    n_estimators : int, default=20
        Trees of the Mondrian forest and of the random forest.
    seed : int, default=0
        Seeds the shuffle, the split and both models.
    dataset : {"digits", "iris", "wine", "breast_cancer"}, default="digits"
        Which scikit-learn dataset to stream.
    quiet : bool, default=False
        Suppress the progress bar.
    progress_stream : file-like, default=None
        Where the progress bar goes; ``sys.stderr`` when ``None``.

    Returns
    -------
    DemoResult
    """
    from sklearn.ensemble import RandomForestClassifier

    from mondrian import MondrianForestClassifier

    wall_start = time.perf_counter()
    X, y = load_dataset(dataset)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    X, y = X[order], y[order]
    n_test = max(1, int(round(TEST_FRACTION * len(y))))
    n_stream = len(y) - n_test
    X_stream, y_stream = X[:n_stream], y[:n_stream]
    X_test, y_test = X[n_stream:], y[n_stream:]
    checkpoints = _checkpoint_positions(n_stream)

    online = MondrianForestClassifier(n_estimators=n_estimators, random_state=seed)
    mf_correct = 0
    mf_train_time = 0.0
    mf_checkpoint_acc = []

    batch = None
    rf_correct = 0
    rf_train_time = 0.0
    rf_checkpoint_acc = []
    # Until the random forest is first fitted, its "prediction" is the most frequent label
    # seen so far: a batch learner has no model before its first refit.
    label_counts = {}

    bar = ProgressBar(n_stream, label=f"{dataset}", stream=progress_stream, enabled=not quiet)
    next_checkpoint = 0
    for i in range(n_stream):
        x_i, y_i = X_stream[i], y_stream[i]

        # Test ...
        mf_correct += bool(online.predict_one(x_i) == y_i)
        if batch is not None:
            rf_guess = batch.predict(x_i.reshape(1, -1))[0]
        elif label_counts:
            rf_guess = max(label_counts, key=label_counts.get)
        else:
            rf_guess = None
        rf_correct += bool(rf_guess == y_i)

        # ... then train.
        start = time.perf_counter()
        online.learn_one(x_i, y_i)
        mf_train_time += time.perf_counter() - start
        label_counts[y_i] = label_counts.get(y_i, 0) + 1

        seen = i + 1
        if seen == checkpoints[next_checkpoint]:
            batch = RandomForestClassifier(n_estimators=n_estimators, random_state=seed)
            start = time.perf_counter()
            batch.fit(X_stream[:seen], y_stream[:seen])
            rf_train_time += time.perf_counter() - start
            rf_checkpoint_acc.append(float(batch.score(X_test, y_test)))
            mf_checkpoint_acc.append(float(online.score(X_test, y_test)))
            next_checkpoint = min(next_checkpoint + 1, len(checkpoints) - 1)
        bar.update(seen, info=f"MF preq acc {mf_correct / seen:.3f}")
    bar.close()

    # The same forest fitted in one batch, for reference.
    one_shot = MondrianForestClassifier(n_estimators=n_estimators, random_state=seed)
    start = time.perf_counter()
    one_shot.fit(X_stream, y_stream)
    one_shot_time = time.perf_counter() - start

    models = [
        _stream_result(
            f"MondrianForestClassifier, online learn_one ({n_estimators} trees)",
            n_stream, mf_correct, mf_train_time, mf_checkpoint_acc,
        ),
        _stream_result(
            f"RandomForestClassifier, batch refits ({n_estimators} trees)",
            n_stream, rf_correct, rf_train_time, rf_checkpoint_acc,
        ),
        ModelResult(
            name=f"MondrianForestClassifier, one batch fit ({n_estimators} trees)",
            prequential_accuracy=None,
            test_accuracy=float(one_shot.score(X_test, y_test)),
            train_time=one_shot_time,
            n_train=n_stream,
        ),
    ]
    return DemoResult(
        dataset=dataset,
        seed=seed,
        n_estimators=n_estimators,
        n_features=X.shape[1],
        n_classes=len(np.unique(y)),
        n_stream=n_stream,
        n_test=n_test,
        checkpoints=checkpoints,
        models=models,
        wall_time=time.perf_counter() - wall_start,
    )


def _table(header, rows, align):
    """Render a markdown table; ``align`` holds ``"<"`` or ``">"`` per column."""
    cells = [list(header)] + [list(row) for row in rows]
    widths = [max(len(row[j]) for row in cells) for j in range(len(header))]

    def line(row):
        padded = [
            cell.ljust(w) if a == "<" else cell.rjust(w)
            for cell, w, a in zip(row, widths, align, strict=True)
        ]
        return "| " + " | ".join(padded) + " |"

    dashes = [
        "-" * (w + 1) + ":" if a == ">" else "-" * (w + 2)
        for w, a in zip(widths, align, strict=True)
    ]
    rule = "|" + "|".join(dashes) + "|"
    return "\n".join([line(cells[0]), rule] + [line(row) for row in cells[1:]])


def format_report(result):
    """Format a :class:`DemoResult` as markdown text.

    Parameters
    ----------
    result : DemoResult

    Returns
    -------
    str
    """
    online, batch = result.models[0], result.models[1]
    lines = [
        f"## mondrian demo: {result.dataset}",
        "",
        f"{result.n_stream} stream samples (test-then-train), {result.n_test} held out; "
        f"{result.n_features} features, {result.n_classes} classes; seed {result.seed}.",
        "",
        "### Held-out accuracy while the stream is learnt",
        "",
    ]
    rows = [
        [f"{seen}", f"{100 * seen / result.n_stream:.0f}%", f"{mf:.3f}", f"{rf:.3f}"]
        for seen, mf, rf in zip(
            result.checkpoints,
            online.checkpoint_accuracy,
            batch.checkpoint_accuracy,
            strict=True,
        )
    ]
    lines.append(
        _table(
            ["samples seen", "stream", "Mondrian forest (online)", "random forest (refit)"],
            rows,
            [">", ">", ">", ">"],
        )
    )
    lines += ["", "### Results", ""]
    rows = []
    for model in result.models:
        preq = "-" if model.prequential_accuracy is None else f"{model.prequential_accuracy:.3f}"
        rows.append(
            [
                model.name,
                preq,
                f"{model.test_accuracy:.3f}",
                f"{model.train_time:.3f}",
                f"{model.samples_per_second:,.0f}",
            ]
        )
    lines.append(
        _table(
            ["model", "prequential acc", "test acc", "train time (s)", "samples/s"],
            rows,
            ["<", ">", ">", ">", ">"],
        )
    )
    refits = ", ".join(str(seen) for seen in result.checkpoints)
    lines += [
        "",
        "Prequential accuracy: every stream sample is predicted before it is learnt. The random "
        f"forest is refitted from scratch after {refits} samples and predicts with its latest "
        "fit (the most frequent label seen so far before its first fit). Training time sums "
        "all learn_one calls, or all refits; samples/s is stream length / training time. The "
        "last row fits the same Mondrian forest on the whole stream at once, for reference: "
        "online and batch training have the same law given the same feature map; a stream "
        "fixes its min-max map from its first 64 samples, a batch fit from all of its data.",
        "",
        f"Total wall time: {result.wall_time:.1f} s.",
    ]
    return "\n".join(lines)
