"""Pictures of Mondrian models (matplotlib, optional: ``pip install matplotlib``).

Every function draws on ``ax`` (a new figure when None) and returns the Axes:

- :func:`plot_partition`: the partition of a 2-D Mondrian tree, each cut coloured by its birth
  time (the papers' Mondrian pictures), or the cells filled by their majority class;
- :func:`plot_lifetime_path`: a metric along a :class:`~mondrian.path.result.LifetimePath`, the
  chosen lifetime marked (``LifetimePath.plot`` calls it);
- :func:`plot_predictive_bands`: mean ± k standard deviations of a 1-D regressor;
- :func:`plot_density`: a 2-D density on a grid;
- :func:`plot_search_curves`: metric-against-parameter curves of a kernel width (lifetime)
  search, each with its best point marked.

The module imports without matplotlib; calling a function without it raises an ``ImportError``
saying what to install.
"""

import numpy as np

__all__ = [
    "plot_partition",
    "plot_lifetime_path",
    "plot_predictive_bands",
    "plot_density",
    "plot_search_curves",
]


def _pyplot():
    try:
        import matplotlib.pyplot as plt
    except ImportError as error:
        raise ImportError(
            "mondrian.plot needs matplotlib: pip install matplotlib"
        ) from error
    return plt


def _new_axes(ax, figsize=None):
    if ax is None:
        _, ax = _pyplot().subplots(figsize=figsize)
    return ax


def _tree_structure(model, tree):
    """The :class:`MondrianTreeStructure` to draw: of a forest's tree, a tree, or itself."""
    if hasattr(model, "children_left") and hasattr(model, "split_time"):
        return model
    if hasattr(model, "tree_") and not hasattr(model, "n_estimators"):
        return model.tree_
    if hasattr(model, "estimators_"):
        return model.estimators_[tree].tree_
    raise TypeError(
        f"plot_partition draws a Mondrian tree or forest, got {type(model).__name__}"
    )


def _partition_cells(structure, bounds, lifetime):
    """Cut segments ``[((x0, y0), (x1, y1)), ...]`` with their times, and the leaf cells
    ``[(node, xlo, xhi, ylo, yhi), ...]`` of the tree restricted to ``lifetime``."""
    left, right = structure.children_left, structure.children_right
    feature, threshold, times = structure.feature, structure.threshold, structure.split_time
    segments, cut_times, leaves = [], [], []
    stack = [(0, *bounds)]
    while stack:
        node, xlo, xhi, ylo, yhi = stack.pop()
        if left[node] == -1 or times[node] >= lifetime:
            leaves.append((node, xlo, xhi, ylo, yhi))
            continue
        # The cut spans the node's cell of the drawn window: points on either side are routed
        # to either child, as in prediction.
        t = threshold[node]
        if feature[node] == 0:
            t = min(max(t, xlo), xhi)
            segments.append(((t, ylo), (t, yhi)))
            stack += [(right[node], t, xhi, ylo, yhi), (left[node], xlo, t, ylo, yhi)]
        else:
            t = min(max(t, ylo), yhi)
            segments.append(((xlo, t), (xhi, t)))
            stack += [(right[node], xlo, xhi, t, yhi), (left[node], xlo, xhi, ylo, t)]
        cut_times.append(times[node])
    return segments, np.asarray(cut_times, dtype=np.float64), leaves


def plot_partition(model, *, tree=0, color="time", lifetime=None, bounds=None, X=None, y=None,
                   show_boxes=False, colorbar=True, cmap=None, ax=None):
    """Draw the partition of a 2-D Mondrian tree, each cut coloured by its birth time.

    Parameters
    ----------
    model : fitted estimator or MondrianTreeStructure
        A 2-D Mondrian forest (``tree`` picks one of its trees), a single tree, or a tree's
        ``tree_``.
    tree : int, default=0
        Which tree of a forest.
    color : {"time", "class"}, default="time"
        ``"time"``: cuts coloured by their split time (early cuts dark). ``"class"``: cuts in
        black and each cell filled with the colour of its majority class (classifiers).
    lifetime : float, default=None
        Draw the tree restricted to this lifetime (cuts born at or after it are left out);
        default: all cuts.
    bounds : (xmin, xmax, ymin, ymax), default=None
        The window; default: the root's bounding box of the data, widened by 5%.
    X : array-like of shape (n_samples, 2), default=None
        Points to scatter on top (``y`` colours them).
    y : array-like of shape (n_samples,), default=None
    show_boxes : bool, default=False
        Also draw the data bounding box of every leaf (dashed), the blocks a Mondrian forest
        keeps and extends online.
    colorbar : bool, default=True
        Add a colour bar of split times (``color="time"``).
    cmap : str or Colormap, default=None
        Colour map of split times (default ``"viridis"``); classes take ``"tab10"``.
    ax : matplotlib Axes, default=None

    Returns
    -------
    matplotlib Axes
        The cuts are one ``LineCollection`` (``ax.collections[0]``) with one segment per cut.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from mondrian import MondrianTreeClassifier
    >>> from mondrian.plot import plot_partition
    >>> X = np.random.default_rng(0).uniform(size=(40, 2))
    >>> clf = MondrianTreeClassifier(lifetime=5.0, random_state=0).fit(X, X[:, 0] > 0.5)
    >>> ax = plot_partition(clf, X=X, y=clf.predict(X))
    >>> n_cuts = int((clf.tree_.children_left != -1).sum())
    >>> len(ax.collections[0].get_segments()) == n_cuts
    True
    """
    plt = _pyplot()
    from matplotlib.collections import LineCollection, PatchCollection
    from matplotlib.patches import Rectangle

    if color not in ("time", "class"):
        raise ValueError(f'color must be "time" or "class", got {color!r}')
    structure = _tree_structure(model, tree)
    if structure.n_features != 2:
        raise ValueError(
            f"plot_partition draws 2-D trees; this one has {structure.n_features} features"
        )
    lifetime = np.inf if lifetime is None else float(lifetime)
    if bounds is None:
        low, high = structure.lower_bounds[0], structure.upper_bounds[0]
        pad = 0.05 * np.where(high > low, high - low, 1.0)
        bounds = (low[0] - pad[0], high[0] + pad[0], low[1] - pad[1], high[1] + pad[1])
    bounds = tuple(float(b) for b in bounds)
    ax = _new_axes(ax, figsize=(5.5, 4.5))
    segments, cut_times, leaves = _partition_cells(structure, bounds, lifetime)

    if color == "class":
        cuts = LineCollection(segments, colors="k", linewidths=1.0, zorder=2)
    else:
        finite = cut_times[np.isfinite(cut_times)]
        cuts = LineCollection(segments, cmap=cmap or "viridis", linewidths=1.5, zorder=2)
        cuts.set_array(cut_times)
        if finite.size:
            cuts.set_clim(0.0, float(finite.max()))
    ax.add_collection(cuts)  # first, so that it is ax.collections[0] on a fresh Axes
    if color == "class":
        value = np.asarray(structure.value)
        colors = plt.get_cmap("tab10")
        cells = [Rectangle((xlo, ylo), xhi - xlo, yhi - ylo,
                           facecolor=colors(int(np.argmax(value[node])) % colors.N))
                 for node, xlo, xhi, ylo, yhi in leaves]
        ax.add_collection(PatchCollection(cells, match_original=True, alpha=0.35,
                                          linewidth=0, zorder=0))
    if show_boxes:
        lower, upper = structure.lower_bounds, structure.upper_bounds
        boxes = [Rectangle(lower[node], *(upper[node] - lower[node]))
                 for node, *_ in leaves if structure.n_node_samples[node] > 0]
        ax.add_collection(PatchCollection(boxes, facecolor="none", edgecolor="0.3",
                                          linestyle="--", linewidth=0.7, zorder=1))
    if X is not None:
        X = np.asarray(X, dtype=np.float64)
        point_colors = "w"
        if y is not None:
            # Classes take the cells' colours: their column in the model, else their rank.
            classes = getattr(model, "classes_", None)
            labels = np.asarray(y)
            codes = (np.searchsorted(classes, labels) if classes is not None
                     else np.unique(labels, return_inverse=True)[1])
            palette = plt.get_cmap("tab10")
            point_colors = [palette(int(code) % palette.N) for code in codes]
        ax.scatter(X[:, 0], X[:, 1], c=point_colors, s=12, edgecolor="k", linewidth=0.4,
                   zorder=3)
    ax.set_xlim(bounds[0], bounds[1])
    ax.set_ylim(bounds[2], bounds[3])
    ax.set_xlabel("feature 0")
    ax.set_ylabel("feature 1")
    if color == "time" and colorbar and segments:
        plt.colorbar(cuts, ax=ax, label="split time")
    return ax


def plot_lifetime_path(path, metric=None, ax=None):
    """Plot a metric against the lifetime (log axis), the chosen lifetime marked.

    Each interval's value is drawn as a step ending at its upper lifetime (the first one starts
    at half its upper lifetime: 0 has no place on a log axis); the unbounded last interval of a
    model grown to ``inf`` ends at twice the largest finite lifetime.

    Parameters
    ----------
    path : LifetimePath
        From ``lifetime_path`` of a forest, a kernel model or a density.
    metric : str, default=None
        The metric to draw (default: the path's criterion).
    ax : matplotlib Axes, default=None

    Returns
    -------
    matplotlib Axes
        One step line, one marker at the best lifetime, one dashed vertical line.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from mondrian import MondrianForestClassifier
    >>> from mondrian.plot import plot_lifetime_path
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(size=(200, 2))
    >>> y = X[:, 0] > X[:, 1]
    >>> clf = MondrianForestClassifier(5, random_state=0).fit(X[:150], y[:150])
    >>> ax = plot_lifetime_path(clf.lifetime_path(X[150:], y[150:]))
    >>> ax.get_xscale()
    'log'
    """
    _pyplot()
    metric = path.criterion if metric is None else metric
    if metric not in path.metrics:
        raise ValueError(f"metric must be one of {sorted(path.metrics)}, got {metric!r}")
    ax = _new_axes(ax)
    x = np.array(path.upper_lifetimes, dtype=np.float64)
    lifetimes = np.asarray(path.lifetimes, dtype=np.float64)
    finite = np.concatenate([x[np.isfinite(x) & (x > 0)], lifetimes[lifetimes > 0]])
    top = 2.0 * finite.max() if finite.size else 1.0
    x[~np.isfinite(x)] = top
    x = np.maximum(x, top * 1e-12)  # lifetime 0 has no place on a log axis
    values = np.asarray(path.metrics[metric])
    # Start the first interval half-way to its upper end, so that it shows as a step too.
    ax.plot(np.r_[0.5 * x[0], x], np.r_[values[:1], values], drawstyle="steps-pre",
            label=metric)
    best_x = x[path.best_index] if not np.isfinite(path.best_lifetime) else max(
        path.best_lifetime, top * 1e-12)
    ax.axvline(best_x, color="0.5", linestyle="--", linewidth=1)
    ax.plot([best_x], [values[path.best_index]], "o",
            label=f"best lifetime {path.best_lifetime:.3g}")
    ax.set_xscale("log")
    ax.set_xlabel("lifetime")
    ax.set_ylabel(metric)
    ax.legend()
    return ax


def plot_predictive_bands(model, X=None, y=None, *, k=(1, 2), grid=None, n_points=200,
                          ax=None):
    """The predictive mean of a 1-D regressor with bands of ± k standard deviations.

    Parameters
    ----------
    model : fitted regressor with ``predict(X, return_std=True)``
        A ``MondrianForestRegressor`` or ``MondrianTreeRegressor`` on one feature.
    X, y : array-like, default=None
        Training points to scatter (``X`` of shape (n, 1) or (n,)).
    k : sequence of float, default=(1, 2)
        Widths of the bands in standard deviations (widest drawn lightest).
    grid : array-like of shape (n_points,), default=None
        Where to predict; default: ``n_points`` points spanning the data range widened by 25% on
        each side (the bands widen away from the data).
    n_points : int, default=200
    ax : matplotlib Axes, default=None

    Returns
    -------
    matplotlib Axes
        One mean line and one filled band per ``k``.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from mondrian import MondrianForestRegressor
    >>> from mondrian.plot import plot_predictive_bands
    >>> X = np.linspace(0, 1, 60)[:, None]
    >>> reg = MondrianForestRegressor(10, random_state=0).fit(X, np.sin(6 * X[:, 0]))
    >>> ax = plot_predictive_bands(reg, X, np.sin(6 * X[:, 0]))
    >>> len(ax.lines), len(ax.collections)
    (1, 3)
    """
    _pyplot()
    if getattr(model, "n_features_in_", 1) != 1:
        raise ValueError(
            f"plot_predictive_bands draws 1-D regressors; this one has "
            f"{model.n_features_in_} features"
        )
    if grid is None:
        low, high = model.feature_offset_[0], model.feature_offset_[0] + model.feature_scale_[0]
        if X is not None:
            x = np.asarray(X, dtype=np.float64).ravel()
            low, high = min(low, x.min()), max(high, x.max())
        span = high - low if high > low else 1.0
        grid = np.linspace(low - 0.25 * span, high + 0.25 * span, int(n_points))
    grid = np.asarray(grid, dtype=np.float64).ravel()
    mean, std = model.predict(grid[:, None], return_std=True)
    ax = _new_axes(ax, figsize=(6, 4))
    widths = sorted((float(w) for w in k), reverse=True)
    for j, width in enumerate(widths):
        ax.fill_between(grid, mean - width * std, mean + width * std, color="tab:blue",
                        alpha=0.15 + 0.15 * j, linewidth=0, label=f"± {width:g} std")
    ax.plot(grid, mean, color="tab:blue", label="predictive mean")
    if X is not None and y is not None:
        ax.scatter(np.asarray(X, dtype=np.float64).ravel(), np.asarray(y), s=10, color="k",
                   label="training points", zorder=3)
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.legend(fontsize=8)
    return ax


def plot_density(model, *, bounds=None, grid_size=100, X=None, log=False, levels=20,
                 cmap="magma", colorbar=True, ax=None):
    """A 2-D density (``score_samples`` gives the log density) on a grid.

    Parameters
    ----------
    model : fitted estimator with ``score_samples``
        A 2-D ``MondrianForestDensity`` (or any scikit-learn density estimator).
    bounds : (xmin, xmax, ymin, ymax), default=None
        The window; default: the range of ``X`` (or of a Mondrian model's domain) widened by
        10%.
    grid_size : int, default=100
        Grid points per axis.
    X : array-like of shape (n_samples, 2), default=None
        Points to scatter on top.
    log : bool, default=False
        Draw the log density instead of the density.
    levels : int, default=20
    cmap : str, default="magma"
    colorbar : bool, default=True
    ax : matplotlib Axes, default=None

    Returns
    -------
    matplotlib Axes
        One filled contour set (and the scattered points, when given).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from mondrian import MondrianForestDensity
    >>> from mondrian.plot import plot_density
    >>> X = np.random.default_rng(0).normal(size=(200, 2))
    >>> ax = plot_density(MondrianForestDensity(5, random_state=0).fit(X), X=X, grid_size=40)
    >>> ax.get_xlabel()
    'feature 0'
    """
    plt = _pyplot()
    if bounds is None:
        if X is not None:
            points = np.asarray(X, dtype=np.float64)
            low, high = points.min(axis=0), points.max(axis=0)
        elif hasattr(model, "_scaler"):  # a Mondrian model: the box of its feature map
            low = np.asarray(model._scaler.offset, dtype=np.float64)
            high = low + np.asarray(model._scaler.scale, dtype=np.float64)
        else:
            raise ValueError("pass bounds= or X= to set the window")
        pad = 0.1 * np.where(high > low, high - low, 1.0)
        bounds = (low[0] - pad[0], high[0] + pad[0], low[1] - pad[1], high[1] + pad[1])
    g0 = np.linspace(bounds[0], bounds[1], int(grid_size))
    g1 = np.linspace(bounds[2], bounds[3], int(grid_size))
    G0, G1 = np.meshgrid(g0, g1)
    values = model.score_samples(np.column_stack([G0.ravel(), G1.ravel()]))
    values = values if log else np.exp(values)
    ax = _new_axes(ax, figsize=(5.5, 4.5))
    filled = ax.contourf(G0, G1, values.reshape(G0.shape), levels=levels, cmap=cmap)
    if X is not None:
        points = np.asarray(X, dtype=np.float64)
        ax.scatter(points[:, 0], points[:, 1], s=4, color="w", alpha=0.6, linewidth=0)
    ax.set_xlabel("feature 0")
    ax.set_ylabel("feature 1")
    if colorbar:
        plt.colorbar(filled, ax=ax, label="log density" if log else "density")
    return ax


def plot_search_curves(curves, *, points=None, errors=None, best="min", marks=None,
                       stars=None, reference=None, xlabel="lifetime",
                       ylabel="validation error", logx=True, logy=False, title=None,
                       steps=False, legend=True, ax=None):
    """Metric-against-parameter curves of a search, each with its best point marked.

    A kernel width search (the Mondrian kernel's lifetime path against a grid search of a
    Laplace kernel's width, timings of either, errors against a number of features) is a set of
    curves ``y(x)``; this draws them on common (log) axes, with the single evaluations of a
    grid as points, the chosen parameter as a vertical line and baselines as horizontal ones.

    Parameters
    ----------
    curves : dict
        ``{label: (x, y)}``, one line each.
    points : dict, default=None
        ``{label: (x, y)}`` drawn as markers only (the fits of a grid search). A label that is
        also a curve's takes that curve's colour and no legend entry of its own.
    errors : dict, default=None
        ``{label: yerr}`` for the curves that have error bars.
    best : {"min", "max"} or None, default="min"
        Mark each curve's smallest (largest) value with a star; None marks nothing.
    marks : dict, default=None
        ``{label: x}`` vertical lines (a chosen lifetime): black dotted, then red dashed, then
        green dash-dotted.
    stars : dict, default=None
        ``{label: (x, y)}`` single points drawn as black stars (the value at a chosen
        lifetime); labels starting with ``_`` stay out of the legend.
    reference : dict, default=None
        ``{label: y}`` horizontal dashed lines (an exact solution, a baseline).
    xlabel, ylabel : str
    logx, logy : bool, default=True, False
    title : str, default=None
    steps : bool, default=False
        Draw the curves as steps (paths are piecewise constant between their lifetimes).
    legend : bool, default=True
    ax : matplotlib Axes, default=None

    Returns
    -------
    matplotlib Axes
        One line (or error-bar container) per curve, one star per curve when ``best`` is set,
        one marker line per entry of ``points``, one line per mark and per reference.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from mondrian.plot import plot_search_curves
    >>> ax = plot_search_curves({"path": ([0.1, 1, 10], [3.0, 1.0, 2.0]),
    ...                          "grid": ([0.1, 10], [2.5, 1.5])})
    >>> len(ax.lines)
    4
    """
    _pyplot()
    if best not in ("min", "max", None):
        raise ValueError(f'best must be "min", "max" or None, got {best!r}')
    ax = _new_axes(ax, figsize=(6, 4.2))
    errors = errors or {}
    colors = {}
    for label, (x, y) in curves.items():
        x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
        if label in errors:
            container = ax.errorbar(x, y, yerr=errors[label], marker="o", capsize=3,
                                    label=label)
            color = container.lines[0].get_color()
        else:
            # Markers on grids; a path of many lifetimes reads better as a plain line.
            marker = "o" if not steps and x.size <= 50 else None
            (line,) = ax.plot(x, y, marker=marker, markersize=4, label=label,
                              drawstyle="steps-post" if steps else "default")
            color = line.get_color()
        colors[label] = color
        if best is not None and np.isfinite(y).any():
            j = int(np.nanargmin(y) if best == "min" else np.nanargmax(y))
            ax.plot([x[j]], [y[j]], marker="*", markersize=12, color=color, linestyle="none")
    shapes = iter(["s", "^", "D", "v", "o", "P"] * 4)
    for label, (x, y) in (points or {}).items():
        shared = label in colors
        ax.plot(np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64),
                linestyle="none", marker=next(shapes), alpha=0.6 if shared else 1.0,
                color=colors.get(label), label="_" + str(label) if shared else label)
    for label, (x, y) in (stars or {}).items():
        ax.plot([float(x)], [float(y)], marker="*", markersize=12, color="k",
                linestyle="none", label=label)
    mark_styles = [("k", ":"), ("tab:red", "--"), ("tab:green", "-.")]
    for j, (label, value) in enumerate((marks or {}).items()):
        color, style = mark_styles[j % len(mark_styles)]
        ax.axvline(float(value), color=color, linestyle=style, linewidth=1, label=label)
    for label, value in (reference or {}).items():
        ax.axhline(float(value), color="k", linestyle="--", linewidth=1, label=label)
    if logx:
        ax.set_xscale("log")
    if logy:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    if legend:
        ax.legend(fontsize=8)
    return ax
