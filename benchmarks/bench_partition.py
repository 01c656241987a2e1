"""Random partition kernels (Davies & Ghahramani, 2014): Figs. 2-6 of the paper, on our data.

uci (Figs. 3-4)
    GP regression on the UCI regression sets with their standard (PBP) splits: test RMSE and
    test Gaussian log-likelihood (predictive variance = latent variance + fitted noise) of
    ``RandomPartitionGPRegressor`` with the random-forest kernel (its default variances, held
    out; and, as "RF kernel GP (ML var.)", the marginal-likelihood variances used before), the
    fast-cluster kernel and the Mondrian partition kernel (random lifetime on [0, L], L chosen
    by marginal likelihood over a grid), all with ``--n-partitions`` partitions; scikit-learn's
    exact GP with an RBF and an ARD-RBF kernel (constant * RBF + white noise, ``normalize_y``, 2
    optimiser restarts) on at most ``--max-exact`` training rows; and ``RandomForestRegressor``
    (``--n-partitions`` trees; its log-likelihood uses the spread of the trees' predictions).
    The partition GPs train on at most ``--max-train`` rows (the CG regime needs one solve per
    test point for the variances). Features are standardised on the training rows for every
    method. ``--max-test`` scores a seeded random subset of the test rows (used for protein: its
    4573 test points would each cost a CG solve per partition GP). Calibration: the mean of
    ``(error / predictive sd)^2`` over the test rows (1 when calibrated). ``--methods`` runs a
    subset (the others print as a dash).
ablation
    The random-forest kernel GP with forests of leaves of at least 1, 3, 5, 10, 20 samples and
    with a forest trained on a held-out half of the rows: test RMSE and log-likelihood, the
    training log marginal likelihood, the fitted noise variance, and the ratio of the median
    test posterior sd to the median test error (why the default forest stops at leaves of 5);
    variances by marginal likelihood.
fig5
    Test RMSE against the number of partitions m on one set.
fig6
    Kernel PCA wall time (fit: partitions + 2 components by Lanczos) against N on synthetic
    data (10 Gaussian features) and on protein (all 45730 rows, standardised, prefixes of a
    random order; when protein is among ``--datasets``), fast-cluster kernel,
    ``--n-partitions`` partitions; log-log slopes; scikit-learn's exact ``KernelPCA`` (RBF)
    where it fits.
digits (Fig. 2)
    2-D kernel PCA of the digits (fast-cluster kernel, and random-forest kernel from a
    ``RandomForestClassifier`` on the digit labels) beside linear PCA.

BLAS runs single-threaded (``OPENBLAS_NUM_THREADS=1`` unless set): on the shared 2-core machine a
threaded dense eigensolver was 15x slower than a single thread.
"""

from __future__ import annotations

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import time  # noqa: E402

import numpy as np  # noqa: E402
from shared.cli import add_datasets, add_output_options, add_sized, make_parser, parse_args  # noqa: E402
from shared.datasets import load_uci_regression, subsample_train  # noqa: E402
from shared.figures import figure_path, import_pyplot, mondrian_plot, save_figure  # noqa: E402
from shared.metrics import gaussian_nll, rmse  # noqa: E402
from shared.optional import import_mondrian  # noqa: E402
from shared.report import Report, environment_line, load_line, log  # noqa: E402
from sklearn.ensemble import RandomForestRegressor  # noqa: E402
from sklearn.gaussian_process import GaussianProcessRegressor  # noqa: E402
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel  # noqa: E402
from sklearn.preprocessing import StandardScaler  # noqa: E402

UCI_ORDER = ("yacht", "energy", "concrete", "wine_red", "kin8nm", "power_plant", "naval",
             "protein")
METHODS = ("RF kernel GP", "RF kernel GP (ML var.)", "fast-cluster GP", "Mondrian GP", "RBF GP",
           "ARD-RBF GP", "RandomForest")


def _partition_gp(mondrian, partitioner, m, seed, X, y, Xt, variances="auto"):
    gp = mondrian.RandomPartitionGPRegressor(partitioner, n_partitions=m, variances=variances,
                                             random_state=seed)
    gp.fit(X, y)
    mean, std = gp.predict(Xt, return_std=True)
    return mean, std**2 + gp.noise_variance_, gp


def _mondrian_gp(mondrian, m, seed, X, y, Xt, grid=(0.3, 1.0, 3.0, 10.0, 30.0)):
    """Random-lifetime Mondrian partition kernel, L by marginal likelihood over ``grid``."""
    from mondrian.partition import MondrianPartitioner

    best = None
    for L in grid:
        gp = mondrian.RandomPartitionGPRegressor(
            MondrianPartitioner(lifetime=L, random_lifetime=True), n_partitions=m,
            random_state=seed).fit(X, y)
        if best is None or gp.log_marginal_likelihood_ > best[1].log_marginal_likelihood_:
            best = (L, gp)
    mean, std = best[1].predict(Xt, return_std=True)
    return mean, std**2 + best[1].noise_variance_, best[0]


def _exact_gp(ard, X, y, Xt, seed):
    d = X.shape[1]
    kernel = ConstantKernel() * RBF(length_scale=np.ones(d) if ard else 1.0) + WhiteKernel()
    gp = GaussianProcessRegressor(kernel, normalize_y=True, n_restarts_optimizer=2,
                                  random_state=seed).fit(X, y)
    mean, std = gp.predict(Xt, return_std=True)  # WhiteKernel in the kernel: includes noise
    return mean, std**2


def _forest(m, seed, X, y, Xt):
    """RandomForestRegressor; its predictive variance is the spread of the trees."""
    rf = RandomForestRegressor(n_estimators=m, random_state=seed, n_jobs=2).fit(X, y)
    per_tree = np.stack([t.predict(Xt) for t in rf.estimators_])
    return per_tree.mean(axis=0), per_tree.var(axis=0) + 1e-12


def _timed(times, key, func, *a):
    t0 = time.perf_counter()
    out = func(*a)
    times[key] = time.perf_counter() - t0
    log(f"  {key}: {times[key]:.0f} s")
    return out


def run_uci(args, mondrian, report):
    rows = []
    for name in args.datasets:
        data = load_uci_regression(name, split=0)
        scaler = StandardScaler().fit(data.X_train)
        Xtr_all, Xte = scaler.transform(data.X_train), scaler.transform(data.X_test)
        ytr_all, yte = data.y_train, data.y_test
        if args.max_test is not None and len(yte) > args.max_test:
            # The CG variances cost one solve per test point: score a random subset of them.
            keep = np.sort(np.random.default_rng(args.seed).choice(len(yte), args.max_test,
                                                                   replace=False))
            Xte, yte = Xte[keep], yte[keep]
        sub = subsample_train(data, args.max_train, args.seed)
        Xtr, ytr = scaler.transform(sub.X_train), sub.y_train
        ex = subsample_train(data, args.max_exact, args.seed)
        Xex, yex = scaler.transform(ex.X_train), ex.y_train
        times = {}
        m, seed = args.n_partitions, args.seed
        jobs = {
            "RF kernel GP": (_partition_gp, mondrian, "random_forest", m, seed, Xtr, ytr, Xte),
            "RF kernel GP (ML var.)": (_partition_gp, mondrian, "random_forest", m, seed, Xtr,
                                       ytr, Xte, "marginal_likelihood"),
            "fast-cluster GP": (_partition_gp, mondrian, "fast_cluster", m, seed, Xtr, ytr, Xte),
            "Mondrian GP": (_mondrian_gp, mondrian, m, seed, Xtr, ytr, Xte),
            "RBF GP": (_exact_gp, False, Xex, yex, Xte, seed),
            "ARD-RBF GP": (_exact_gp, True, Xex, yex, Xte, seed),
            "RandomForest": (_forest, m, seed, Xtr_all, ytr_all, Xte),
        }
        row = {"dataset": name, "N train (GP / exact / RF)": f"{len(ytr)} / {len(yex)} / "
               f"{len(ytr_all)}", "N test": len(yte)}
        for method in METHODS:
            if method not in args.methods:
                continue
            out = _timed(times, method, *jobs[method])
            mean, var = out[:2]
            if method == "Mondrian GP":
                row["Mondrian L"] = out[2]
            row[f"RMSE {method}"] = rmse(yte, mean)
            row[f"LL {method}"] = -gaussian_nll(yte, mean, var)
            row[f"z2 {method}"] = float(np.mean((yte - mean) ** 2 / var))
            row[f"time {method}"] = times[method]
        rows.append(row)
        log(f"{name}: done in {sum(times.values()):.0f} s")
        # Written after every set, so that an interrupted run keeps what it measured.
        _uci_tables(args, rows, report.__class__(), header=report).write(args.uci_output)
    return _uci_tables(args, rows, report, header=None)


def _uci_tables(args, rows, report, header):
    if header is not None:
        for part in header.parts:
            report.parts.append(part)
    both = [r for r in rows if "LL RF kernel GP" in r and "LL ARD-RBF GP" in r]
    ll = sum(r["LL RF kernel GP"] > r["LL ARD-RBF GP"] for r in both)
    both_rm = [r for r in rows if "RMSE RF kernel GP" in r and "RMSE RandomForest" in r]
    rm = sum(r["RMSE RF kernel GP"] < r["RMSE RandomForest"] for r in both_rm)
    report.add("\n## GP regression on the UCI sets (Figs. 3-4), standard split 0\n")
    report.table(rows, ["dataset", "N train (GP / exact / RF)", "N test"]
                 + [f"RMSE {m}" for m in METHODS],
                 formats={f"RMSE {m}": ".3f" for m in METHODS}, title="Test RMSE")
    report.table(rows, ["dataset", "Mondrian L"] + [f"LL {m}" for m in METHODS],
                 formats={f"LL {m}": ".3f" for m in METHODS} | {"Mondrian L": "g"},
                 title="Test log-likelihood per point (higher is better)")
    report.table(rows, ["dataset"] + [f"z2 {m}" for m in METHODS],
                 formats={f"z2 {m}": ".2f" for m in METHODS},
                 title="Calibration: mean of (test error / predictive sd)^2 (1 when calibrated; "
                       "above 1 overconfident)")
    report.table(rows, ["dataset"] + [f"time {m}" for m in METHODS],
                 formats={f"time {m}": ".1f" for m in METHODS},
                 title="Wall time per method (s; fit + predict, shared loaded machine)")
    report.checks("Targets (issue 13)", [
        ("RF-kernel GP beats the ARD-RBF GP on test log-likelihood on >= 4 sets",
         ll >= 4 if len(both) >= 4 or ll >= 4 else None, f"{ll} of {len(both)}"),
        ("RF-kernel GP beats RandomForestRegressor's RMSE on >= half of the sets",
         rm >= len(both_rm) / 2 if both_rm else None, f"{rm} of {len(both_rm)}"),
    ])
    return report


def run_forest_ablation(args, mondrian, report):
    """The random-forest kernel GP under forest variants: leaf size, a held-out half."""
    from mondrian.partition import RandomForestPartitioner

    names = [n for n in args.ablation_datasets.split(",") if n]
    rows = []
    for name in names:
        data = load_uci_regression(name, split=0)
        data = subsample_train(data, args.max_train, args.seed)
        scaler = StandardScaler().fit(data.X_train)
        X, Xt = scaler.transform(data.X_train), scaler.transform(data.X_test)
        y, yt = data.y_train, data.y_test
        half = np.random.default_rng(args.seed + 1).permutation(len(y))[: len(y) // 2]
        variants = [(f"leaves >= {k}", k, None) for k in (1, 3, 5, 10, 20)]
        variants += [("leaves >= 1, forest on a held-out half", 1, half),
                     ("leaves >= 5, forest on a held-out half", 5, half)]
        for label, leaf, rows_fit in variants:
            forest = RandomForestRegressor(n_estimators=args.n_partitions, max_features=1 / 3,
                                           min_samples_leaf=leaf, random_state=args.seed)
            if rows_fit is not None:
                forest.fit(X[rows_fit], y[rows_fit])
            # Marginal-likelihood variances: a forest fitted here has seen every row (or a
            # chosen half), so the held-out rule of the default would not hold rows out of it.
            gp = mondrian.RandomPartitionGPRegressor(
                RandomForestPartitioner(forest), n_partitions=args.n_partitions,
                variances="marginal_likelihood", random_state=args.seed).fit(X, y)
            mean, std = gp.predict(Xt, return_std=True)
            var = std**2 + gp.noise_variance_
            rows.append({"dataset": name, "forest": label, "RMSE": rmse(yt, mean),
                         "test LL": -gaussian_nll(yt, mean, var),
                         "train log ML / N": gp.log_marginal_likelihood_ / len(y),
                         "noise var / var(y)": gp.noise_variance_ / y.var(),
                         "median test sd / median abs error":
                             float(np.median(std) / np.median(np.abs(yt - mean)))})
        log(f"ablation: {name} done")
    report.table(rows, ["dataset", "forest", "RMSE", "test LL", "train log ML / N",
                        "noise var / var(y)", "median test sd / median abs error"],
                 formats={"RMSE": ".4g", "test LL": ".3f", "train log ML / N": ".3f",
                          "noise var / var(y)": ".2e", "median test sd / median abs error": ".2f"},
                 title="Random-forest kernel GP: forest variants (m trees, max_features=1/3; "
                       "the GP conditions on every training row)")


def run_fig5(args, mondrian, report, plt):
    from mondrian.partition import MondrianPartitioner

    data = load_uci_regression(args.fig5_dataset, split=0)
    data = subsample_train(data, args.max_train, args.seed)
    scaler = StandardScaler().fit(data.X_train)
    X, Xt = scaler.transform(data.X_train), scaler.transform(data.X_test)
    ms = [2, 5, 10, 25, 50, 100, 200] if not args.quick else [2, 10, 50]
    kernels = {"random forest": "random_forest", "fast cluster": "fast_cluster",
               "Mondrian (L=10, random)": MondrianPartitioner(10.0, random_lifetime=True)}
    rows, curves = [], {k: [] for k in kernels}
    for m in ms:
        row = {"m": m}
        for label, part in kernels.items():
            gp = mondrian.RandomPartitionGPRegressor(part, n_partitions=m,
                                                     random_state=args.seed).fit(X, data.y_train)
            row[label] = rmse(data.y_test, gp.predict(Xt))
            curves[label].append(row[label])
        rows.append(row)
        log(f"fig5: m={m} done")
    report.table(rows, ["m", *kernels], formats={k: ".3f" for k in kernels},
                 title=f"Fig. 5: test RMSE against m ({args.fig5_dataset}, split 0)")
    if plt is not None and not args.no_plots:
        fig, ax = plt.subplots(figsize=(5, 3.5))
        mondrian_plot().plot_search_curves(
            {label: (ms, ys) for label, ys in curves.items()}, best=None,
            xlabel="partitions m", ylabel="test RMSE",
            title=f"{args.fig5_dataset}: error against m", ax=ax)
        fig.tight_layout()
        report.add(f"\n![fig5]({save_figure(fig, figure_path('partition_fig5', args.quick), plt)})")


def _time_kpca(mondrian, args, X):
    """Seconds of the fast-cluster kernel PCA fit on ``X`` (and of the exact one where it fits)."""
    from sklearn.decomposition import KernelPCA

    t0 = time.perf_counter()
    mondrian.RandomPartitionKernelPCA("fast_cluster", n_components=2,
                                      n_partitions=args.n_partitions, tol=1e-6,
                                      random_state=args.seed).fit(X)
    t = time.perf_counter() - t0
    exact = None
    if X.shape[0] <= args.max_exact_pca:
        t0 = time.perf_counter()
        KernelPCA(n_components=2, kernel="rbf", eigen_solver="arpack").fit(X)
        exact = time.perf_counter() - t0
    return t, exact


def _slope(sizes, times):
    big = [i for i, n in enumerate(sizes) if n >= 10000]
    if len(big) < 2:
        return float("nan")
    return float(np.polyfit(np.log(np.array(sizes)[big]), np.log(np.array(times)[big]), 1)[0])


def run_fig6(args, mondrian, report, plt):
    rng = np.random.default_rng(args.seed)
    series = {"synthetic": [n for n in (1000, 3000, 10000, 30000, 100000, 300000, 1000000)
                            if n <= args.max_pca]}
    protein = None
    if "protein" in args.datasets:
        data = load_uci_regression("protein", split=0)
        protein = StandardScaler().fit_transform(np.vstack([data.X_train, data.X_test]))
        perm = rng.permutation(protein.shape[0])
        protein = protein[perm]
        series["protein"] = [n for n in (1000, 3000, 10000, 30000) if n < protein.shape[0]]
        series["protein"].append(protein.shape[0])
    rows, curves = [], {}
    for name, sizes in series.items():
        times, exact = [], []
        for n in sizes:
            X = rng.normal(size=(n, 10)) if name == "synthetic" else protein[:n]
            t, te = _time_kpca(mondrian, args, X)
            rows.append({"data": name, "N": n, "fast-cluster KPCA (s)": t,
                         "points per minute": n / t * 60, "exact RBF KernelPCA (s)": te})
            times.append(t)
            if te is not None:
                exact.append((n, te))
            log(f"fig6: {name} N={n}: {t:.1f} s")
        curves[name] = (sizes, times, exact, _slope(sizes, times))
    report.table(rows, ["data", "N", "fast-cluster KPCA (s)", "points per minute",
                        "exact RBF KernelPCA (s)"],
                 formats={"fast-cluster KPCA (s)": ".2f", "points per minute": ".3g",
                          "exact RBF KernelPCA (s)": ".2f"},
                 title=f"Fig. 6: kernel PCA wall time (m={args.n_partitions}, 2 components; "
                       "synthetic: 10 Gaussian features; protein: 9 standardised features, "
                       "rows in random order)")
    sizes, times, _, slope = curves["synthetic"]
    rate = sizes[-1] / times[-1] * 60
    checks = [
        (">= 100k points per minute at the largest N (synthetic)", rate >= 1e5,
         f"{rate:.3g} at N={sizes[-1]}"),
        ("log-log slope (synthetic, N >= 10^4) within 1 +/- 0.15",
         abs(slope - 1) <= 0.15 if np.isfinite(slope) else None, f"{slope:.3f}"),
    ]
    if "protein" in curves:
        psizes, ptimes, _, pslope = curves["protein"]
        prate = psizes[-1] / ptimes[-1] * 60
        checks += [
            (">= 100k points per minute on the whole of protein", prate >= 1e5,
             f"{prate:.3g} at N={psizes[-1]}"),
            ("log-log slope (protein, N >= 10^4) within 1 +/- 0.15",
             abs(pslope - 1) <= 0.15 if np.isfinite(pslope) else None, f"{pslope:.3f}"),
        ]
    report.checks("Targets (issue 13)", checks)
    if plt is not None and not args.no_plots:
        fig, ax = plt.subplots(figsize=(5.5, 3.8))
        timings = {}
        for name, (sz, ts, ex, sl) in curves.items():
            timings[f"fast-cluster KPCA, {name} (slope {sl:.2f})"] = (sz, ts)
            if ex:
                timings[f"exact RBF KernelPCA, {name}"] = tuple(zip(*ex, strict=True))
        mondrian_plot().plot_search_curves(timings, best=None, logy=True, xlabel="N",
                                           ylabel="wall time (s)", ax=ax)
        fig.tight_layout()
        report.add(f"\n![fig6]({save_figure(fig, figure_path('partition_fig6', args.quick), plt)})")


def run_digits(args, mondrian, report, plt):
    from sklearn.datasets import load_digits
    from sklearn.decomposition import PCA
    from sklearn.ensemble import RandomForestClassifier

    from mondrian.partition import RandomForestPartitioner

    X, y = load_digits(return_X_y=True)
    panels = {
        "linear PCA": PCA(n_components=2).fit_transform(X),
        "fast-cluster kernel PCA": mondrian.RandomPartitionKernelPCA(
            "fast_cluster", 2, n_partitions=args.n_partitions,
            random_state=args.seed).fit_transform(X),
        "random-forest kernel PCA": mondrian.RandomPartitionKernelPCA(
            RandomForestPartitioner(RandomForestClassifier(
                n_estimators=args.n_partitions, max_features="sqrt", random_state=args.seed)),
            2, n_partitions=args.n_partitions, random_state=args.seed).fit_transform(X, y),
    }
    if plt is None or args.no_plots:
        return
    fig, axes = plt.subplots(1, 3, figsize=(13, 4))
    for ax, (title, T) in zip(axes, panels.items(), strict=True):
        sc = ax.scatter(T[:, 0], T[:, 1], c=y, cmap="tab10", s=4)
        ax.set_title(title)
    fig.colorbar(sc, ax=axes, label="digit")
    report.add("\n## Digits in 2-D (Fig. 2)\n")
    report.add(f"![digits]({save_figure(fig, figure_path('partition_digits', args.quick), plt)})")


def main(argv=None) -> None:
    parser = make_parser(__doc__.splitlines()[0], default_repeats=1)
    add_datasets(parser, UCI_ORDER, quick=("yacht", "energy"))
    add_sized(parser, "--n-partitions", 200, 50, "partitions m (trees of the forests)")
    add_sized(parser, "--max-train", 2000, 500, "training rows of the partition GPs")
    add_sized(parser, "--max-exact", 1000, 300, "training rows of the exact scikit-learn GPs")
    add_sized(parser, "--max-pca", 1000000, 30000, "largest N of the kernel PCA timing")
    add_sized(parser, "--max-exact-pca", 5000, 3000, "largest N of scikit-learn's KernelPCA")
    parser.add_argument("--max-test", type=int, default=None,
                        help="score at most this many test rows (a seeded random subset)")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help="comma-separated subset of the uci methods: " + ", ".join(METHODS))
    parser.add_argument("--fig5-dataset", default="concrete")
    parser.add_argument("--uci-output", default=None,
                        help="also write the UCI tables here after every dataset")
    parser.add_argument("--parts", default="uci,fig5,fig6,digits",
                        help="comma-separated subset of uci,ablation,fig5,fig6,digits")
    parser.add_argument("--ablation-datasets", default="yacht,energy,concrete",
                        help="sets of the forest ablation of the random-forest kernel")
    add_output_options(parser, "partition.md")
    args = parse_args(parser, argv)
    args.methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    unknown = sorted(set(args.methods) - set(METHODS))
    if unknown:
        parser.error(f"unknown methods {unknown}; choose from {list(METHODS)}")
    mondrian, why_not = import_mondrian()
    if mondrian is None:
        raise SystemExit(why_not)
    plt, why = import_pyplot()
    start = os.getloadavg()
    report = Report()
    report.add("# Random partition kernels (Davies & Ghahramani, 2014)\n")
    report.add(f"{environment_line()}\n\nmode: {'quick' if args.quick else 'full'}; "
               f"m={args.n_partitions}; datasets: {', '.join(args.datasets)}")
    if why:
        report.add(why)
    parts = args.parts.split(",")
    if "uci" in parts:
        run_uci(args, mondrian, report)
    if "ablation" in parts:
        run_forest_ablation(args, mondrian, report)
    if "fig5" in parts:
        run_fig5(args, mondrian, report, plt)
    if "fig6" in parts:
        run_fig6(args, mondrian, report, plt)
    if "digits" in parts:
        run_digits(args, mondrian, report, plt)
    report.add(f"\n{load_line(start)}")
    report.write(args.output)


if __name__ == "__main__":
    main()
