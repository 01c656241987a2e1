"""Draw the gallery of docs/images/ with mondrian.plot (run from the repository root).

    python docs/gallery/make_images.py

Each picture is a few seconds of fitting on synthetic data; every seed is fixed.
"""

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from mondrian import (  # noqa: E402
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    MondrianTreeClassifier,
)
from mondrian.kernel import MondrianKernelRidge  # noqa: E402
from mondrian.plot import (  # noqa: E402
    plot_density,
    plot_lifetime_path,
    plot_partition,
    plot_predictive_bands,
    plot_search_curves,
)

OUT = Path(__file__).resolve().parents[1] / "images"


def save(fig, name):
    OUT.mkdir(exist_ok=True)
    fig.tight_layout()
    fig.savefig(OUT / name, dpi=110)
    plt.close(fig)
    print(OUT / name)


def two_moons(n, rng):
    t = rng.uniform(0, np.pi, n)
    label = rng.integers(0, 2, n)
    X = np.column_stack([np.cos(t) + label, np.sin(t) * (1 - 2 * label) + 0.5 * label])
    return X + 0.12 * rng.normal(size=X.shape), label


def main():
    rng = np.random.default_rng(0)
    X, y = two_moons(300, rng)

    # 1. The partition of one Mondrian tree: cuts by birth time, and cells by class.
    tree = MondrianTreeClassifier(lifetime=8.0, random_state=3).fit(X, y)
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    plot_partition(tree, X=X, y=y, ax=axes[0])
    axes[0].set_title("Mondrian tree partition, cuts coloured by split time")
    plot_partition(tree, color="class", X=X, y=y, show_boxes=True, ax=axes[1])
    axes[1].set_title("cells by majority class, leaf bounding boxes dashed")
    save(fig, "partition.png")

    # 2. The lifetime path of a forest on held-out data, the chosen lifetime marked.
    X_val, y_val = two_moons(300, rng)
    forest = MondrianForestClassifier(20, random_state=0).fit(X, y)
    fig, ax = plt.subplots(figsize=(6, 4))
    plot_lifetime_path(forest.lifetime_path(X_val, y_val), metric="log_loss", ax=ax)
    ax.set_title("lifetime path (held-out log loss)")
    save(fig, "lifetime_path.png")

    # 3. Predictive bands of a 1-D regressor: they widen away from the data.
    x = np.concatenate([rng.uniform(0, 0.35, 40), rng.uniform(0.65, 1, 40)])
    t = np.sin(7 * x) + 0.15 * rng.normal(size=x.size)
    reg = MondrianForestRegressor(50, random_state=0).fit(x[:, None], t)
    fig, ax = plt.subplots(figsize=(6.5, 4))
    plot_predictive_bands(reg, x[:, None], t, ax=ax)
    ax.set_title("MondrianForestRegressor: mean ± 1 and 2 std")
    save(fig, "predictive_bands.png")

    # 4. A density on a grid.
    centres = np.array([[0.0, 0.0], [2.5, 1.0], [0.5, 2.5]])
    Z = centres[rng.integers(0, 3, 1500)] + 0.45 * rng.normal(size=(1500, 2))
    density = MondrianForestDensity(30, random_state=0).fit(Z)
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    plot_density(density, X=Z, grid_size=120, ax=ax)
    ax.set_title("MondrianForestDensity on a mixture of 3 Gaussians")
    save(fig, "density.png")

    # 5. Kernel width search: the Mondrian kernel's lifetime path against a grid of widths.
    Xk = rng.uniform(size=(400, 3))
    yk = np.sin(5 * Xk[:, 0]) * Xk[:, 1] + 0.1 * rng.normal(size=400)
    ridge = MondrianKernelRidge(10, lifetime=20.0, alpha=1e-2, random_state=0).fit(
        Xk[:300], yk[:300])
    path = ridge.lifetime_path(Xk[300:], yk[300:])
    keep = (path.lifetimes > 0) & np.isfinite(path.lifetimes)
    grid = np.geomspace(0.5, 20, 5)
    grid_rmse = [np.sqrt(np.mean((MondrianKernelRidge(10, lifetime=g, alpha=1e-2,
                                                      random_state=0).fit(Xk[:300], yk[:300])
                                  .predict(Xk[300:]) - yk[300:]) ** 2)) for g in grid]
    path_rmse = np.sqrt(path.metrics["validation_error"][keep])
    fig, ax = plt.subplots(figsize=(6, 4.2))
    plot_search_curves(
        {"lifetime path (one fit)": (path.lifetimes[keep], path_rmse),
         "grid search (5 fits)": (grid, grid_rmse)},
        steps=False, xlabel="lifetime λ (kernel width 1/λ)", ylabel="validation RMSE", ax=ax,
        title="Mondrian kernel width search")
    save(fig, "search_curves.png")


if __name__ == "__main__":
    main()
