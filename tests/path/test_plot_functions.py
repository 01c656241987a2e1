"""``mondrian.plot`` draws the right artists, with the Agg backend and without warnings."""

import builtins
import importlib
import warnings

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from mondrian import (  # noqa: E402
    MondrianForestClassifier,
    MondrianForestDensity,
    MondrianForestRegressor,
    MondrianTreeClassifier,
)
from mondrian.plot import (  # noqa: E402
    plot_density,
    plot_lifetime_path,
    plot_partition,
    plot_predictive_bands,
    plot_search_curves,
)

rng = np.random.RandomState(0)
X = rng.rand(120, 2)
Y = (X[:, 0] + X[:, 1] > 1).astype(int)


@pytest.fixture(autouse=True)
def _no_warnings_and_close():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        yield
    plt.close("all")


def _internal(structure, lifetime=np.inf):
    return int(((structure.children_left != -1) & (structure.split_time < lifetime)).sum())


@pytest.mark.parametrize("color", ["time", "class"])
def test_partition_draws_one_segment_per_cut(color):
    tree = MondrianTreeClassifier(lifetime=6.0, random_state=0).fit(X, Y)
    ax = plot_partition(tree, color=color, X=X, y=Y)
    segments = ax.collections[0].get_segments()
    assert len(segments) == _internal(tree.tree_) > 3
    # Every segment is axis-aligned and inside the window.
    x0, x1 = ax.get_xlim()
    y0, y1 = ax.get_ylim()
    for (a, b), (c, d) in segments:
        assert a == c or b == d
        assert x0 <= min(a, c) and max(a, c) <= x1 and y0 <= min(b, d) and max(b, d) <= y1
    if color == "time":
        np.testing.assert_array_equal(
            np.sort(ax.collections[0].get_array()),
            np.sort(tree.tree_.split_time[tree.tree_.children_left != -1]))
        assert len(ax.figure.axes) == 2  # the colour bar
    else:
        leaves = _internal(tree.tree_) + 1
        assert len(ax.collections[1].get_paths()) == leaves


def test_partition_of_a_forest_tree_at_a_smaller_lifetime():
    forest = MondrianForestClassifier(3, lifetime=8.0, random_state=0).fit(X, Y)
    fig, ax = plt.subplots()
    assert plot_partition(forest, tree=2, lifetime=2.0, show_boxes=True, ax=ax) is ax
    structure = forest.estimators_[2].tree_
    assert len(ax.collections[0].get_segments()) == _internal(structure, 2.0)
    with pytest.raises(ValueError, match="2-D"):
        plot_partition(MondrianTreeClassifier(random_state=0).fit(rng.rand(20, 3), Y[:20]))
    with pytest.raises(ValueError, match="color"):
        plot_partition(forest, color="depth")


def test_lifetime_path_is_the_one_implementation():
    forest = MondrianForestClassifier(4, random_state=0).fit(X[:80], Y[:80])
    path = forest.lifetime_path(X[80:], Y[80:])
    ax = plot_lifetime_path(path)
    assert len(ax.lines) == 3  # the steps, the best point, the vertical marker
    assert ax.get_xscale() == "log"
    steps = ax.lines[0].get_ydata()
    np.testing.assert_array_equal(steps[1:], path.metrics[path.criterion])
    fig, other = plt.subplots()
    assert path.plot(ax=other) is other
    np.testing.assert_array_equal(other.lines[0].get_ydata(), steps)


def test_predictive_bands():
    x = np.linspace(0, 1, 40)[:, None]
    reg = MondrianForestRegressor(5, random_state=0).fit(x, np.sin(5 * x[:, 0]))
    ax = plot_predictive_bands(reg, x, np.sin(5 * x[:, 0]), k=(1, 2, 3), n_points=50)
    assert len(ax.lines) == 1
    assert len(ax.collections) == 4  # three bands and the points
    mean, std = reg.predict(ax.lines[0].get_xdata()[:, None], return_std=True)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), mean)
    widest = ax.collections[0].get_paths()[0].vertices[:, 1]
    assert widest.max() == pytest.approx((mean + 3 * std).max())
    with pytest.raises(ValueError, match="1-D"):
        plot_predictive_bands(MondrianForestRegressor(2, random_state=0).fit(X, Y))


def test_density_grid():
    density = MondrianForestDensity(4, random_state=0).fit(X)
    ax = plot_density(density, X=X, grid_size=30)
    assert len(ax.figure.axes) == 2
    filled = [c for c in ax.collections if hasattr(c, "levels")]
    assert len(filled) == 1
    ax = plot_density(density, grid_size=20, log=True, colorbar=False)
    assert len(ax.figure.axes) == 1


def test_search_curves():
    curves = {"path": ([0.1, 1.0, 10.0], [3.0, 1.0, 2.0]), "grid": ([0.1, 10.0], [2.5, 1.5])}
    ax = plot_search_curves(curves, errors={"grid": [0.1, 0.2]}, reference={"exact": 1.2},
                            logy=True)
    assert len(ax.containers) == 1  # the error bars
    stars = [line for line in ax.lines if line.get_marker() == "*"]
    assert sorted((float(s.get_xdata()[0]), float(s.get_ydata()[0])) for s in stars) == [
        (1.0, 1.0), (10.0, 1.5)]
    assert ax.get_yscale() == "log"
    ax = plot_search_curves(curves, best="max")
    stars = [line for line in ax.lines if line.get_marker() == "*"]
    assert sorted(float(s.get_ydata()[0]) for s in stars) == [2.5, 3.0]
    with pytest.raises(ValueError, match="best"):
        plot_search_curves(curves, best="median")


def test_clear_import_error_without_matplotlib(monkeypatch):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    import mondrian.plot as plot_module

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    module = importlib.reload(plot_module)  # the module itself imports without matplotlib
    with pytest.raises(ImportError, match="pip install matplotlib"):
        module.plot_search_curves({"a": ([1], [1])})
