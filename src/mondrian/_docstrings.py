"""Numpydoc fragments of the parameters and attributes that several estimators share.

Each fragment is one or more complete entries, indented by four spaces as in a class
docstring, ending with a newline; a class composes its docstring from them with an f-string
(``__doc__ = f\"\"\"...{FRAGMENT}...\"\"\"``), so that one text describes one behaviour.
A method docstring names its paragraph fragments (``WINDOW`` and the ``ONLINE_`` ones, whose
first line is not indented) as ``{FRAGMENT}`` fields and is decorated with :func:`fill_doc`.
"""

__all__ = [
    "FEATURE_SCALING",
    "FEATURE_WEIGHT_METHODS",
    "FIXED_FEATURE_WEIGHTS",
    "FOREST_FEATURE_WEIGHTS",
    "GRID_FEATURE_SCALING",
    "KERNEL_FEATURE_WEIGHTS",
    "KERNEL_TRANSFORMER_FEATURE_WEIGHTS",
    "LIFETIME_ATTRIBUTES",
    "N_PARTITIONS",
    "ONLINE_PARAMETER_CHANGES",
    "ONLINE_UPDATE",
    "PARTITIONER",
    "WINDOW",
    "fill_doc",
]

# The kernel models' min-max map (the forests describe theirs at more length).
FEATURE_SCALING = """\
    feature_scaling : {"minmax"} or None, default="minmax"
        Min-max map frozen on first sight (see :class:`MondrianForestClassifier`).
"""

# The grid models' min-max map (fitted once, on the training data).
GRID_FEATURE_SCALING = """\
    feature_scaling : {"minmax"} or None, default="minmax"
        ``"minmax"`` maps every feature to [0, 1] on the training data (as every model of the
        package; the lifetimes are then per unit of range); ``None`` uses ``X`` as given (for
        inputs already scaled, e.g. by relevance weights).
"""

# What a fixed weight does to the cuts: the first sentence of every ``feature_weights``.
FIXED_FEATURE_WEIGHTS = """\
        Fixed weights ``w_d >= 0`` multiplying the features after the min-max map: dimension
        ``d`` is cut at rate ``lifetime * w_d`` per unit of its scaled range, never when ``w_d =
        0``"""

# The named methods of ``feature_weights=str`` (``mondrian.estimator.relevance.WEIGHT_METHODS``).
FEATURE_WEIGHT_METHODS = """\
        Another string names a method of ``mondrian.estimator.relevance.WEIGHT_METHODS``
        ("extra_trees", the default, "permutation", "mutual_info", "gp_ard", "laplace_ard":
        marginal-likelihood lifetimes of the model's own limit kernel,
        :func:`mondrian.grid.laplace_ard_lifetimes`). Fitted weights: ``feature_weights_``.
"""

# ``feature_weights`` of the supervised kernel models (ridge, SGD regressor and classifier).
KERNEL_FEATURE_WEIGHTS = f"""\
    feature_weights : None, array-like of shape (n_features,), "auto" or str, default=None
{FIXED_FEATURE_WEIGHTS}; the kernel becomes ``exp(-lifetime * sum_d w_d |u_d - u'_d|)``.
        ``None``: no weights (all 1). ``"auto"``: learned from the labels of the first batch and
        then frozen (extra-trees importances raised to the power 0, 0.5, 1 or 2 that this model,
        fitted on 80% of the batch, scores best on the rest; chosen on the first batch only).
{FEATURE_WEIGHT_METHODS}"""

# ``feature_weights`` of the kernel feature map, which has no labels to learn them from.
KERNEL_TRANSFORMER_FEATURE_WEIGHTS = f"""\
    feature_weights : None or array-like of shape (n_features,), default=None
{FIXED_FEATURE_WEIGHTS}, and the kernel becomes ``exp(-lifetime * sum_d w_d |u_d - u'_d|)``.
        ``None``: no weights. The transformer has no labels, so ``"auto"`` raises: pass a
        fitted model's ``feature_weights_``.
"""

# ``feature_weights`` of the forests (classifier and regressor, trees and forests).
FOREST_FEATURE_WEIGHTS = f"""\
    feature_weights : "auto", None, array-like of shape (n_features,) or str, default="auto"
{FIXED_FEATURE_WEIGHTS}. ``"auto"`` (default): label-aware cuts, weights learned from the labels
        of the first batch and then frozen (50-tree extra-trees importances raised to the power
        0, 0.5, 1 or 2 that a 20-tree probe scores best on ``validation_fraction`` of the
        batch, all on a quarter of its rows, at least 2000 and at most 8000,
        ``mondrian.estimator.relevance.search_size``; batches of fewer than 50 rows keep uniform
        weights; a stream keeps uniform weights until 256 rows, 512 for the regressors, then
        chooses and re-samples its trees once). Every Mondrian law holds for the frozen map.
        ``None``: no weights (all 1), the label-blind Mondrian process.
{FEATURE_WEIGHT_METHODS}"""

# The fitted lifetime of the models whose ``lifetime="auto"`` sweeps a lifetime path.
LIFETIME_ATTRIBUTES = """\
    lifetime_ : float
        Lifetime of the fitted model.
    lifetime_path_ : LifetimePath
        The sweep that chose the lifetime, when ``lifetime="auto"`` (also ``path_``).
"""

# The random partitions of the partition kernel models (features, GP regression, kernel PCA).
PARTITIONER = """\
    partitioner : {"fast_cluster", "random_forest", "mondrian"} or partitioner object, \
default="fast_cluster"
        How the partitions are drawn: see :class:`FastClusterPartitioner`,
        :class:`RandomForestPartitioner`, :class:`MondrianPartitioner`. The random forest
        partitions need ``y`` in ``fit``.
"""
N_PARTITIONS = """\
    n_partitions : int, default=200
        Number ``m`` of partitions drawn from the training data: the kernel is estimated by the
        share of them in which two points fall in the same cluster (each entry's variance is
        at most ``1/(4m)``).
"""

# ``window`` of the forests (classifier and regressor, trees and forests).
WINDOW = """window : int or None, default=None
        Keep only the most recent ``window`` training points: after every ``fit``,
        ``partial_fit`` and ``learn_one`` the oldest points beyond them are forgotten exactly
        (:meth:`forget`), so the model is, in law, the model fitted on the last ``window``
        points, and a stream runs in bounded memory. ``None`` keeps every point. The window
        applies once the feature map is frozen (after its warm-up of 64 points, and once a
        stream window of ``feature_weights="auto"`` has chosen the weights)."""

# What every online update of a forest promises (``partial_fit`` and ``learn_one``).
ONLINE_UPDATE = (
    "The update is thread-safe and validated before any change: a rejected input leaves the\n"
    "        model exactly as before, and so does a ``MemoryError`` or ``KeyboardInterrupt``"
    " raised\n"
    """        inside the update (large updates copy the trees first, small ones keep an undo log of
        the nodes they change; see the user guide, "Threads and failed calls"); reads from
        other threads wait for it to finish."""
)

# The parameters a forest's ``partial_fit`` may see changed since fit.
ONLINE_PARAMETER_CHANGES = (
    "A larger ``n_estimators`` set after fit adds trees sampled on the stored points (the law\n"
    """        of a forest that had them from the start); a smaller one, or a changed ``lifetime``,
        ``min_samples_split`` or ``feature_scaling``, raises a ``ValueError`` (call ``fit``)."""
)


def fill_doc(func):
    """Fill the ``{NAME}`` fields of ``func``'s docstring with the fragments of this module.

    For methods, whose docstring cannot be an f-string; returns ``func``.
    """
    if func.__doc__:  # None under ``python -OO``
        func.__doc__ = func.__doc__.format(**{name: globals()[name] for name in __all__
                                              if name.isupper()})
    return func
