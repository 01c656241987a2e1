"""Density benchmark: Mondrian forest density vs scikit-learn KernelDensity with a CV bandwidth.

Held-out log-likelihood on 2 to 8 dimensional data, then a density-based classifier on digits
0 vs 9 (the density experiments of the Mondrian process thesis, Fig. 2.2):

MondrianForest
    ``mondrian.MondrianForestDensity(n_estimators=50, lifetime="auto")``: the lifetime is chosen
    by the exact leave-one-out path of the training points, so the fit time includes the search.
    Run with ``concentration="auto"`` (the default: chosen by leave-one-out likelihood),
    ``1.0`` and ``0.1``.
KDE
    ``sklearn.neighbors.KernelDensity(kernel="gaussian")`` with the bandwidth chosen by
    ``GridSearchCV`` (5-fold, held-out log-likelihood) over ``np.logspace(-1.5, 0.5, 20)``; the
    fit time includes the grid search and the refit.

Datasets (every one standardized by a scaler fit on its training part only, so log-likelihoods
are in standardized units, comparable between models but not between datasets):

- ``mixture2d``: 3-component Gaussian mixture in 2-D, 1000 train / 1000 test rows;
- ``mixture5d``: 3-component Gaussian mixture in 5-D (random means and covariances, fixed seed),
  1000 / 1000 rows; for both mixtures the true density is reported too;
- ``iris``: each of the 3 classes (50 rows, 4-D) separately, 5-fold CV; the held-out
  log-likelihood is averaged over folds and classes;
- ``digits-pca{2,4,8}``: sklearn's 8x8 digits (1797 rows), random 70/30 split, PCA to 2, 4 or 8
  dimensions fit on the training part, then standardized.

Reported: mean held-out log-likelihood per point (higher is better), the difference to KDE, fit
time (seconds, median of ``--repeats`` runs; iris: mean over its 15 fits), the chosen lifetime or
bandwidth (iris: median over the 15 fits). Then the classifier on digits 0 vs 9 (70/30 split,
PCA to 2 and 4 dimensions fit on the training rows of those two classes, standardized): one
density per class, prediction ``argmax_c log p(x | c) + log prior(c)``; test accuracy of the
Mondrian and KDE classifiers, with logistic regression as a reference; also with only 10
training rows per class (mean ± std over 20 random draws), since the full task saturates.

Feature weights (``feature_weights=None`` vs ``"auto"``) on real data from
``/work/shared/datasets`` (skipped with a message when the folder is absent): each set's rows
with its target as one more column (the joint density), standard split 0, at most
``WEIGHT_TRAIN_ROWS`` training rows, dequantized (the values are rounded, so every value gets
uniform noise of one rounding step: the smallest gap between the column's distinct values;
otherwise a density gains without bound by sharpening on the repeated values), standardized on
the training part; ``power_plant`` also with
``NOISE_COLUMNS`` added uniform noise columns (where weights should switch features off). Held-out
log-likelihood per point, the fit time of "auto" relative to None (interleaved runs, median), and
the chosen power and weights. ``--weights-only`` runs just this part (printed, not written unless
``--output``).

Plots (matplotlib, Agg): ``results/density_path_mixture2d.png``, the held-out (test) and
leave-one-out log-likelihood of the 2-D mixture against the lifetime, from
``lifetime_path(X_test)``, with the chosen lifetime marked; ``results/density_digits.png``, the
decision regions of the two density classifiers on digits 0 vs 9 in 2-D.

Run from the repository root::

    python benchmarks/bench_density.py            # full run, writes results/density.md
    python benchmarks/bench_density.py --quick    # 10 trees, 300-row mixtures, no report file
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp
from scipy.stats import multivariate_normal
from shared.cli import add_output_options, add_sized, make_parser, parse_args
from shared.datasets import datasets_dir, load_uci_regression, subsample_train
from shared.figures import figure_path, import_pyplot, mondrian_plot, save_figure
from shared.measure import fit_estimator, time_callable
from shared.optional import import_mondrian
from shared.report import Report, environment_line, log
from sklearn.datasets import load_digits, load_iris
from sklearn.decomposition import PCA
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, train_test_split
from sklearn.neighbors import KernelDensity
from sklearn.preprocessing import StandardScaler

PATH_PLOT = "density_path_mixture2d"  # figure stems, under results/
DIGITS_PLOT = "density_digits"
FULL_TREES = 50
QUICK_TREES = 10
MIXTURE_ROWS = 1000  # train rows and test rows of each mixture
QUICK_MIXTURE_ROWS = 300
CONCENTRATIONS = ("auto", 1.0, 0.1)
BANDWIDTHS = np.logspace(-1.5, 0.5, 20)
CV_FOLDS = 5
TEST_SIZE = 0.3
PCA_DIMS = (2, 4, 8)
CLASSIFIER_DIMS = (2, 4)
DIGIT_PAIR = (0, 9)
SMALL_PER_CLASS = 10  # training rows per class of the small-sample classifier runs
SMALL_DRAWS = 20
MIXTURE_PARAMS_SEED = 12345  # fixes the 5-D mixture's parameters, whatever --seed is
KDE = "KDE (CV bandwidth)"
TRUE = "true density"
LOGREG = "logistic regression"
COLUMNS = [
    "dataset", "dim", "train rows", "test rows", "model", "held-out log-lik", "- KDE",
    "fit (s)", "lifetime / bandwidth",
]
FORMATS = {"held-out log-lik": ".4f", "- KDE": "+.4f", "fit (s)": ".3f"}
CLASSIFIER_COLUMNS = ["dim", "train rows", "test rows", "draws", "model", "test accuracy",
                      "fit (s)", "lifetime / bandwidth (class 0; class 9)"]
CLASSIFIER_FORMATS = {"fit (s)": ".3f"}
WEIGHT_SETS = ("power_plant", "power_plant+noise", "concrete", "wine_red")
WEIGHT_TRAIN_ROWS = 2000
NOISE_COLUMNS = 3
WEIGHT_COLUMNS = ["dataset", "dim", "train rows", "test rows", "weights", "held-out log-lik",
                  "- None", "fit / None fit", "power", "weights (min / max)"]
WEIGHT_FORMATS = {"held-out log-lik": ".4f", "- None": "+.4f", "fit / None fit": ".2f"}


def _c(concentration) -> str:
    return concentration if isinstance(concentration, str) else f"{concentration:g}"


def mondrian_name(concentration) -> str:
    """Row label of the Mondrian forest density with one concentration."""
    return f"MondrianForest (c={_c(concentration)})"


# --------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------


@dataclass
class Mixture:
    """A Gaussian mixture with known parameters."""

    weights: np.ndarray
    means: np.ndarray
    covs: np.ndarray

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """Draw ``n`` points."""
        comp = rng.choice(len(self.weights), size=n, p=self.weights)
        X = np.empty((n, self.means.shape[1]))
        for k in range(len(self.weights)):
            rows = comp == k
            X[rows] = rng.multivariate_normal(self.means[k], self.covs[k], size=int(rows.sum()))
        return X

    def log_pdf(self, X: np.ndarray) -> np.ndarray:
        """Log density at the rows of ``X``."""
        parts = [np.log(w) + multivariate_normal(m, c).logpdf(X)
                 for w, m, c in zip(self.weights, self.means, self.covs, strict=True)]
        return logsumexp(np.stack(parts), axis=0)


def mixture_2d() -> Mixture:
    """Three correlated / elongated components in the plane."""
    covs = np.array([[[1.0, 0.6], [0.6, 0.8]],
                     [[0.3, 0.0], [0.0, 1.5]],
                     [[0.5, -0.3], [-0.3, 0.4]]])
    return Mixture(np.array([0.5, 0.3, 0.2]), np.array([[-2.0, 0.0], [2.0, -1.0], [0.5, 2.5]]),
                   covs)


def mixture_5d() -> Mixture:
    """Three components in 5-D with random means and covariances (fixed seed)."""
    rng = np.random.default_rng(MIXTURE_PARAMS_SEED)
    d = 5
    means = rng.normal(scale=2.0, size=(3, d))
    covs = []
    for _ in range(3):
        A = rng.normal(size=(d, d))
        covs.append(A @ A.T / d + 0.1 * np.eye(d))
    return Mixture(np.array([0.4, 0.35, 0.25]), means, np.array(covs))


@dataclass
class Split:
    """Standardized train / test rows of one density task."""

    name: str
    X_train: np.ndarray
    X_test: np.ndarray
    true_log_pdf: np.ndarray | None = None  # of the standardized test rows, when known


def standardize(X_train: np.ndarray, X_test: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Scale both parts with a scaler fit on ``X_train``; also return log|det| of the scaling."""
    scaler = StandardScaler().fit(X_train)
    log_det = float(np.sum(np.log(scaler.scale_)))
    return scaler.transform(X_train), scaler.transform(X_test), log_det


def mixture_split(name: str, mixture: Mixture, n: int, seed: int) -> Split:
    """Sample train and test rows, standardize, and carry the true log density along."""
    rng = np.random.default_rng(seed)
    X_train, X_test = mixture.sample(n, rng), mixture.sample(n, rng)
    true = mixture.log_pdf(X_test)
    Z_train, Z_test, log_det = standardize(X_train, X_test)
    # Change of variables: density of z = (x - mu) / s is p(x) * prod(s).
    return Split(name, Z_train, Z_test, true + log_det)


def digits_pca_split(dim: int, seed: int) -> Split:
    """Digits, random 70/30 split, PCA to ``dim`` fit on train, then standardized."""
    X, y = load_digits(return_X_y=True)
    X_train, X_test = train_test_split(X, test_size=TEST_SIZE, random_state=seed, stratify=y)
    pca = PCA(n_components=dim, random_state=seed).fit(X_train)
    Z_train, Z_test, _ = standardize(pca.transform(X_train), pca.transform(X_test))
    return Split(f"digits-pca{dim}", Z_train, Z_test)


def iris_class_splits(seed: int) -> list[Split]:
    """Every class of iris, every fold of a 5-fold CV: 15 standardized splits."""
    X, y = load_iris(return_X_y=True)
    splits = []
    for c in np.unique(y):
        Xc = X[y == c]
        for k, (tr, te) in enumerate(KFold(CV_FOLDS, shuffle=True, random_state=seed).split(Xc)):
            Z_train, Z_test, _ = standardize(Xc[tr], Xc[te])
            splits.append(Split(f"iris class {c} fold {k}", Z_train, Z_test))
    return splits


# --------------------------------------------------------------------------------------------
# Models
# --------------------------------------------------------------------------------------------


def kde_search(seed: int) -> GridSearchCV:
    """Gaussian KDE with the bandwidth chosen by 5-fold CV log-likelihood."""
    cv = KFold(CV_FOLDS, shuffle=True, random_state=seed)
    return GridSearchCV(KernelDensity(kernel="gaussian"), {"bandwidth": BANDWIDTHS}, cv=cv)


def make_models(mondrian, n_estimators: int, seed: int) -> dict:
    """The density estimators, as ``name -> unfitted template``."""
    models = {mondrian_name(c): mondrian.MondrianForestDensity(
        n_estimators=n_estimators, lifetime="auto", concentration=c, random_state=seed)
        for c in CONCENTRATIONS}
    models[KDE] = kde_search(seed)
    return models


def chosen_parameter(model) -> float:
    """The lifetime chosen by a Mondrian forest, or the bandwidth chosen by the grid search."""
    if isinstance(model, GridSearchCV):
        return float(model.best_params_["bandwidth"])
    return float(model.lifetime_)


def log_density(model, X: np.ndarray) -> np.ndarray:
    """Log density at the rows of ``X`` (the refit KDE of a grid search)."""
    est = model.best_estimator_ if isinstance(model, GridSearchCV) else model
    return est.score_samples(X)


def describe_parameter(model_name: str, value: float) -> str:
    """``lifetime 3.1`` or ``bandwidth 0.25``."""
    kind = "bandwidth" if model_name == KDE else "lifetime"
    return f"{kind} {value:.3g}"


# --------------------------------------------------------------------------------------------
# Experiments
# --------------------------------------------------------------------------------------------


def run_split(split: Split, models: dict, repeats: int) -> tuple[list[dict], dict]:
    """Fit every model on one split; one row per model (plus the true density when known)."""
    rows, fitted = [], {}
    for name, template in models.items():
        log(f"[{split.name}] {name} ...")
        fit_s, model = time_callable(lambda t=template: fit_estimator(t, split.X_train),
                                            repeats)
        fitted[name] = model
        rows.append({"model": name, "ll": float(np.mean(log_density(model, split.X_test))),
                     "fit": fit_s, "param": chosen_parameter(model)})
    if split.true_log_pdf is not None:
        rows.append({"model": TRUE, "ll": float(np.mean(split.true_log_pdf)), "fit": None,
                     "param": None})
    return rows, fitted


def table_rows(name: str, split: Split, runs: list[dict], param_text=None) -> list[dict]:
    """Display rows of one dataset, with the difference to KDE."""
    kde = next(r["ll"] for r in runs if r["model"] == KDE)
    rows = []
    for r in runs:
        if param_text is not None:
            param = param_text(r)
        else:
            param = None if r["param"] is None else describe_parameter(r["model"], r["param"])
        rows.append({"dataset": name, "dim": split.X_train.shape[1],
                     "train rows": len(split.X_train), "test rows": len(split.X_test),
                     "model": r["model"], "held-out log-lik": r["ll"], "- KDE": r["ll"] - kde,
                     "fit (s)": r["fit"], "lifetime / bandwidth": param})
    return rows


def run_iris(models: dict, seed: int, repeats: int) -> list[dict]:
    """Held-out log-likelihood per class and fold of iris, averaged over all 15 splits."""
    splits = iris_class_splits(seed)
    per_model: dict[str, list[dict]] = {name: [] for name in models}
    for split in splits:
        runs, _ = run_split(split, models, repeats)
        for r in runs:
            per_model[r["model"]].append(r)
    runs = [{"model": name, "ll": float(np.mean([r["ll"] for r in rs])),
             "fit": float(np.mean([r["fit"] for r in rs])),
             "param": [r["param"] for r in rs]} for name, rs in per_model.items()]

    def param_text(r: dict) -> str:
        values = np.asarray(r["param"])
        return (f"{describe_parameter(r['model'], float(np.median(values)))} "
                f"(median; {values.min():.3g}–{values.max():.3g})")

    rows = table_rows("iris (per class, 5-fold)", splits[0], runs, param_text)
    for row in rows:
        row["train rows"] = f"{len(splits[0].X_train)}/class"
        row["test rows"] = f"{len(splits[0].X_test)}/class"
    return rows


@dataclass
class PathCurves:
    """What the 2-D mixture's lifetime path plot needs."""

    path: object
    lifetime: float
    test_ll_at_lifetime: float


def run_density_tasks(models: dict, args) -> tuple[list[dict], PathCurves | None]:
    """Every held-out log-likelihood experiment; also the lifetime path of the 2-D mixture."""
    n = QUICK_MIXTURE_ROWS if args.quick else MIXTURE_ROWS
    rows, curves = [], None
    mixtures = [("mixture2d", mixture_2d()), ("mixture5d", mixture_5d())]
    for name, mixture in mixtures:
        split = mixture_split(name, mixture, n, args.seed)
        runs, fitted = run_split(split, models, args.repeats)
        rows += table_rows(name, split, runs)
        if name == "mixture2d":
            model = fitted[mondrian_name(CONCENTRATIONS[0])]
            log("[mixture2d] lifetime_path(X_test) ...")
            curves = PathCurves(model.lifetime_path(split.X_test), float(model.lifetime_),
                                float(np.mean(model.score_samples(split.X_test))))
    rows += run_iris(models, args.seed, args.repeats)
    for dim in PCA_DIMS:
        split = digits_pca_split(dim, args.seed)
        runs, _ = run_split(split, models, args.repeats)
        rows += table_rows(split.name, split, runs)
    return rows, curves


def digits_pair(dim: int, seed: int, per_class: int | None = None, draw: int = 0):
    """Digits 0 vs 9, 70/30 split, PCA to ``dim`` fit on the training rows, standardized.

    With ``per_class``, only that many training rows of each class are kept (a random draw,
    ``draw`` selects which), and PCA and scaler are fit on those rows; the test rows are unchanged.
    """
    X, y = load_digits(return_X_y=True)
    keep = np.isin(y, DIGIT_PAIR)
    X, y = X[keep], (y[keep] == DIGIT_PAIR[1]).astype(np.int64)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=TEST_SIZE, random_state=seed, stratify=y)
    if per_class is not None:
        rng = np.random.default_rng([seed, draw])
        rows = np.concatenate([rng.choice(np.flatnonzero(y_train == c), per_class, replace=False)
                               for c in (0, 1)])
        X_train, y_train = X_train[rows], y_train[rows]
    pca = PCA(n_components=dim, random_state=seed).fit(X_train)
    Z_train, Z_test, _ = standardize(pca.transform(X_train), pca.transform(X_test))
    return Z_train, Z_test, y_train, y_test


class DensityClassifier:
    """One density per class; predicts ``argmax_c log p(x | c) + log prior(c)``."""

    def __init__(self, template):
        self.template = template

    def fit(self, X: np.ndarray, y: np.ndarray) -> DensityClassifier:
        self.classes_ = np.unique(y)
        self.densities_ = [fit_estimator(self.template, X[y == c]) for c in self.classes_]
        self.log_prior_ = np.log([np.mean(y == c) for c in self.classes_])
        return self

    def decision(self, X: np.ndarray) -> np.ndarray:
        """Log joint ``log p(x | c) + log prior(c)``, shape (n, n_classes)."""
        return np.stack([log_density(d, X) for d in self.densities_], axis=1) + self.log_prior_

    def predict(self, X: np.ndarray) -> np.ndarray:
        return self.classes_[np.argmax(self.decision(X), axis=1)]


def classifier_outcomes(models: dict, Z_train, Z_test, y_train, y_test, repeats: int):
    """Accuracy, fit time and chosen parameters of every classifier on one split."""
    out, fitted = {}, {}
    for name, template in models.items():
        fit_s, clf = time_callable(
            lambda t=template: DensityClassifier(t).fit(Z_train, y_train), repeats)
        params = [chosen_parameter(d) for d in clf.densities_]
        out[name] = (float(np.mean(clf.predict(Z_test) == y_test)), fit_s, params)
        fitted[name] = clf
    fit_s, logreg = time_callable(
        lambda: LogisticRegression(max_iter=1000).fit(Z_train, y_train), repeats)
    out[LOGREG] = (float(np.mean(logreg.predict(Z_test) == y_test)), fit_s, None)
    return out, fitted


def run_classifier(models: dict, args) -> tuple[list[dict], dict]:
    """Density classifiers and logistic regression on digits 0 vs 9; also the 2-D classifiers.

    Each dimension is run on the whole training part, then on ``SMALL_PER_CLASS`` training rows
    per class (mean ± std over ``SMALL_DRAWS`` random draws), where the task is not saturated.
    """
    rows, plot_data = [], {}
    for dim in CLASSIFIER_DIMS:
        for per_class in (None, SMALL_PER_CLASS):
            draws = 1 if per_class is None else SMALL_DRAWS
            log(f"[digits {DIGIT_PAIR} pca{dim}, {per_class or 'all'} per class] ...")
            results = []
            for draw in range(draws):
                Z_train, Z_test, y_train, y_test = digits_pair(dim, args.seed, per_class, draw)
                out, fitted = classifier_outcomes(models, Z_train, Z_test, y_train, y_test,
                                                  args.repeats)
                results.append(out)
                if dim == 2 and per_class is None:
                    plot_data = {"fitted": fitted, "Z_test": Z_test, "y_test": y_test}
            for name in results[0]:
                accs = [r[name][0] for r in results]
                acc = f"{np.mean(accs):.4f}" + (f" ± {np.std(accs):.4f}" if draws > 1 else "")
                params = None
                if results[0][name][2] is not None:
                    per_density = np.array([r[name][2] for r in results])  # draws x classes
                    params = "; ".join(describe_parameter(name, float(v))
                                       for v in np.median(per_density, axis=0))
                    params += " (median)" if draws > 1 else ""
                rows.append({"dim": dim, "train rows": len(y_train), "test rows": len(y_test),
                             "draws": draws, "model": name, "test accuracy": acc,
                             "fit (s)": float(np.mean([r[name][1] for r in results])),
                             "lifetime / bandwidth (class 0; class 9)": params})
    return rows, plot_data


# --------------------------------------------------------------------------------------------
# Plots
# --------------------------------------------------------------------------------------------


def plot_path(curves: PathCurves, path, plt) -> str:
    """Test and leave-one-out log-likelihood against the lifetime (log axis), chosen λ marked."""
    p = curves.path
    lifetimes = np.asarray(p.lifetimes)
    keep = lifetimes > 0  # the first interval starts at λ = 0, off a log axis
    fig, ax = plt.subplots(figsize=(7, 4.5))
    mondrian_plot().plot_search_curves(
        {"test log-likelihood (full model)":
             (lifetimes[keep], np.asarray(p.metrics["log_likelihood"])[keep]),
         "leave-one-out log-likelihood (training points, forest part)":
             (lifetimes[keep], np.asarray(p.metrics["loo_log_likelihood"])[keep])},
        stars={"_chosen": (curves.lifetime, curves.test_ll_at_lifetime)},
        marks={f"chosen by LOO: λ = {curves.lifetime:.3g}": curves.lifetime,
               f"best on test: λ = {float(p.best_lifetime):.3g}": float(p.best_lifetime)},
        best=None, steps=True, xlabel="lifetime λ (standardized units)",
        ylabel="mean log-likelihood per point", legend=False, ax=ax)
    ax.set_title("mixture2d: MondrianForestDensity lifetime path (default concentration)")
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    return save_figure(fig, path, plt)


class _Scores:
    """A ``score_samples`` for :func:`mondrian.plot.plot_density` from any function."""

    def __init__(self, function):
        self.score_samples = function


def plot_digits(data: dict, path, plt) -> str:
    """Decision regions of the Mondrian and KDE density classifiers on digits 0 vs 9 in 2-D."""
    Z, y = data["Z_test"], data["y_test"]
    lo, hi = Z.min(axis=0) - 0.5, Z.max(axis=0) + 0.5
    g0, g1 = np.meshgrid(np.linspace(lo[0], hi[0], 200), np.linspace(lo[1], hi[1], 200))
    grid = np.column_stack([g0.ravel(), g1.ravel()])
    names = [mondrian_name(CONCENTRATIONS[0]), KDE]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
    for ax, name in zip(axes, names, strict=True):
        clf = data["fitted"][name]
        margin = np.diff(clf.decision(grid), axis=1).reshape(g0.shape)  # log-odds of "9"
        # The log-odds drawn as a "log density" on the grid by mondrian.plot.
        mondrian_plot().plot_density(
            _Scores(lambda Z, clf=clf: np.clip(np.diff(clf.decision(Z), axis=1)[:, 0], -10, 10)),
            bounds=(lo[0], hi[0], lo[1], hi[1]), grid_size=200, log=True, levels=21,
            cmap="RdBu_r", colorbar=False, ax=ax)
        ax.set_ylabel("")
        ax.contour(g0, g1, margin, levels=[0.0], colors="k", linewidths=1.0)
        for c, marker in zip(clf.classes_, ("o", "^"), strict=True):
            ax.scatter(Z[y == c, 0], Z[y == c, 1], s=14, marker=marker, edgecolor="k",
                       linewidth=0.4, c="tab:blue" if c == 0 else "tab:red",
                       label=f"digit {DIGIT_PAIR[c]} (test)")
        acc = float(np.mean(clf.predict(Z) == y))
        ax.set_title(f"{name}: test accuracy {acc:.3f}")
        ax.set_xlabel("PC 1 (standardized)")
    axes[0].set_ylabel("PC 2 (standardized)")
    axes[0].legend(fontsize=8, loc="upper right")
    fig.suptitle("Digits 0 vs 9, PCA to 2-D: log p(x|9) + log prior - (same for 0), "
                 "clipped to ±10; black line = decision boundary")
    fig.tight_layout()
    return save_figure(fig, path, plt)


# --------------------------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------------------------


def method_text(args) -> str:
    """The one-paragraph description at the top of the report."""
    n = QUICK_MIXTURE_ROWS if args.quick else MIXTURE_ROWS
    quick = " --quick" if args.quick else ""
    return (
        f"Mean held-out log-likelihood per point (higher is better) of "
        f"`MondrianForestDensity(n_estimators={args.n_estimators}, lifetime=\"auto\")` with "
        f"concentration {', '.join(_c(c) for c in CONCENTRATIONS)} (lifetime chosen by the "
        f"exact leave-one-out path, included in the fit time) against a Gaussian "
        f"`KernelDensity` whose bandwidth is chosen by `GridSearchCV` ({CV_FOLDS}-fold) over "
        f"`np.logspace(-1.5, 0.5, 20)` (search and refit included in the fit time). Data: "
        f"3-component Gaussian mixtures in 2-D and 5-D ({n} train / {n} test rows; true "
        f"density reported), each iris class alone (4-D, {CV_FOLDS}-fold CV, averaged over the "
        f"15 folds x classes; fit time = mean per fit, parameter = median), and sklearn's digits "
        f"projected by PCA (fit on train, random 70/30 split) to {', '.join(map(str, PCA_DIMS))} "
        f"dimensions. Everything is standardized with a scaler fit on the training part, so "
        f"log-likelihoods are in standardized units (comparable across models, not across "
        f"datasets). Then a density classifier on digits {DIGIT_PAIR[0]} vs {DIGIT_PAIR[1]} "
        f"(70/30 split, PCA to {' and '.join(map(str, CLASSIFIER_DIMS))} dimensions fit on the "
        f"training rows of those classes, standardized): one density per class, prediction "
        f"argmax of log p(x|c) + log prior(c), with logistic regression as a reference; run on "
        f"the whole training part and, since that saturates, on {SMALL_PER_CLASS} training rows "
        f"per class (PCA and scaler refit on them; mean ± std over {SMALL_DRAWS} draws). Seed "
        f"{args.seed}; times are the median of {args.repeats} run(s), single process. "
        f"Rerun with `python benchmarks/bench_density.py{quick}` from the repository root."
    )


def weight_split(name: str, seed: int, quick: bool):
    """Joint (features, target) rows of a UCI set, split 0, dequantized, standardized on
    train; with ``+noise``, ``NOISE_COLUMNS`` uniform columns appended to both parts."""
    base = name.split("+")[0]
    data = subsample_train(load_uci_regression(base, 0), 500 if quick else WEIGHT_TRAIN_ROWS,
                           seed)
    train = np.column_stack([data.X_train, data.y_train])
    test = np.column_stack([data.X_test, data.y_test])
    rng = np.random.default_rng(seed)
    # The sets are rounded (most test values occur in the training rows): a density can gain
    # without bound by sharpening on the atoms. Dequantize: add uniform noise of one rounding
    # step (the smallest gap between a column's distinct values) to every value.
    both = np.vstack([train, test])
    for d in range(both.shape[1]):
        gaps = np.diff(np.unique(both[:, d]))
        step = gaps.min() if gaps.size else 1.0
        train[:, d] += rng.uniform(-0.5, 0.5, size=len(train)) * step
        test[:, d] += rng.uniform(-0.5, 0.5, size=len(test)) * step
    if name.endswith("+noise"):
        train = np.column_stack([train, rng.uniform(size=(len(train), NOISE_COLUMNS))])
        test = np.column_stack([test, rng.uniform(size=(len(test), NOISE_COLUMNS))])
    scaler = StandardScaler().fit(train)
    return scaler.transform(train), scaler.transform(test)


def run_weights(mondrian, args) -> list[dict]:
    """Held-out log-likelihood and fit time of feature_weights None vs "auto" (interleaved)."""
    if not datasets_dir().is_dir():
        log(f"SKIPPED feature weights: no datasets folder at {datasets_dir()}")
        return []
    rows = []
    for name in WEIGHT_SETS:
        train, test = weight_split(name, args.seed, args.quick)
        times = {None: [], "auto": []}
        models = {}
        for _ in range(max(1, args.repeats)):
            for weights in (None, "auto"):
                model = mondrian.MondrianForestDensity(
                    n_estimators=args.n_estimators, feature_weights=weights,
                    random_state=args.seed)
                seconds, models[weights] = time_callable(lambda m=model, t=train: m.fit(t), 1)
                times[weights].append(seconds)
        base = float(models[None].score_samples(test).mean())
        for weights in (None, "auto"):
            model = models[weights]
            ll = float(model.score_samples(test).mean())
            info = getattr(model, "feature_weights_info_", None)
            w = model.feature_weights_
            rows.append({
                "dataset": name, "dim": train.shape[1], "train rows": len(train),
                "test rows": len(test), "weights": str(weights), "held-out log-lik": ll,
                "- None": ll - base,
                "fit / None fit": float(np.median(times[weights]) / np.median(times[None])),
                "power": "—" if info is None else f"{info['power']:g}",
                "weights (min / max)": f"{w.min():.3g} / {w.max():.3g}",
            })
            log(f"{name} weights={weights}: {ll:.4f} (fit {np.median(times[weights]):.2f} s)")
    return rows


def path_lines(curves: PathCurves) -> list[str]:
    """Summary of the 2-D mixture's lifetime path (printed under the plot line)."""
    p = curves.path
    lifetimes = np.asarray(p.lifetimes)
    test = np.asarray(p.metrics["log_likelihood"])
    loo = np.asarray(p.metrics["loo_log_likelihood"])
    at = int(np.searchsorted(lifetimes, curves.lifetime, side="right")) - 1
    return [
        f"- mixture2d lifetime path (c={_c(CONCENTRATIONS[0])}): {len(lifetimes)} intervals; "
        f"LOO-chosen λ = {curves.lifetime:.4g} (test log-lik {curves.test_ll_at_lifetime:.4f}; "
        f"path value there {test[at]:.4f}), best λ on test = {float(p.best_lifetime):.4g} "
        f"(test log-lik {test.max():.4f}); max LOO log-lik {loo.max():.4f}.",
    ]


def main(argv=None) -> None:
    """Run the benchmark: print the report, write it (full runs) with the plots."""
    parser = make_parser(__doc__.splitlines()[0], default_repeats=1)
    add_sized(parser, "--n-estimators", FULL_TREES, QUICK_TREES, "trees of each forest")
    add_output_options(parser, "density.md")
    parser.add_argument("--weights-only", action="store_true",
                        help="run only the feature-weights comparison")
    args = parse_args(parser, argv)
    mondrian, reason = import_mondrian()
    if mondrian is None or not hasattr(mondrian, "MondrianForestDensity"):
        print(f"SKIPPED: mondrian.MondrianForestDensity unavailable {reason}")
        return

    wall = time.perf_counter()
    report = Report()
    report.add("## Density estimation" + (" (QUICK MODE)" if args.quick else ""))
    report.add(f"\n{environment_line()}\n")
    report.add(method_text(args))
    if args.quick:
        report.add(f"\nQuick mode: {args.n_estimators} trees, {QUICK_MIXTURE_ROWS}-row mixtures, "
                   f"no report file unless --output; indicative only.")
    if args.weights_only:
        # Printed; written only where --output says (never over the full report by default).
        report.table(run_weights(mondrian, args), WEIGHT_COLUMNS, WEIGHT_FORMATS,
                     "Feature weights: None vs \"auto\" on real data")
        print("\n".join(report.parts))
        explicit = any(a.startswith("--output") for a in (argv if argv is not None
                                                           else sys.argv[1:]))
        report.write(args.output if explicit else None)
        return
    models = make_models(mondrian, args.n_estimators, args.seed)

    rows, curves = run_density_tasks(models, args)
    report.table(rows, COLUMNS, FORMATS, "Held-out log-likelihood per point")
    clf_rows, plot_data = run_classifier(models, args)
    report.table(clf_rows, CLASSIFIER_COLUMNS, CLASSIFIER_FORMATS,
                 f"Density classifier, digits {DIGIT_PAIR[0]} vs {DIGIT_PAIR[1]}")
    report.table(run_weights(mondrian, args), WEIGHT_COLUMNS, WEIGHT_FORMATS,
                 "Feature weights: None vs \"auto\" on real data")

    report.add("\n### Lifetime path and plots\n")
    if curves is not None:
        for line in path_lines(curves):
            report.add(line)
    if not args.no_plots:
        plt, why = import_pyplot()
        if plt is None:
            report.add(f"- Plots skipped: {why}.")
        else:
            for stem, data, plot in [(PATH_PLOT, curves, plot_path),
                                     (DIGITS_PLOT, plot_data, plot_digits)]:
                if data:
                    report.add(f"- `{plot(data, figure_path(stem, args.quick), plt)}`")
    report.add(f"\nTotal wall time: {time.perf_counter() - wall:.0f} s.")
    report.write(args.output)


if __name__ == "__main__":
    main()
