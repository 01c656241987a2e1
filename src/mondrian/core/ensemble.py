"""The tree ensemble shared by every Mondrian model: trees, their data store, feature map, seeds.

:class:`TreeEnsemble` is model-agnostic: the forests, the density and the kernel models hold one
(``self._ensemble``) and add what their model reads on top of the trees. It owns growth and
online extension (in threads over trees, whatever joblib backend the caller configured),
the deterministic chunked accumulation of per-tree quantities, pruning, single-tree views,
growing more trees on the stored points, merging, and pickling.
"""

import copy

import numpy as np

from mondrian.core._forget import forget_trees
from mondrian.core._forget_commit import commit_forget
from mondrian.core._forget_store import attach_trees, relocate_trees
from mondrian.core._online import begin_undo_trees, commit_undo_trees, rollback_undo_trees
from mondrian.core._tree import MondrianTree, extend_trees, set_column_order_trees
from mondrian.core.feature_map import FeatureScaler
from mondrian.core.state_checks import refuse
from mondrian.core.store import DataStore, forget_moves
from mondrian.core.threads import _split, draw_seeds, n_threads, run_threads

__all__ = ["TREES_PER_CHUNK", "TreeEnsemble", "draw_seeds", "fail_after_trees", "n_threads",
           "run_threads"]

# Trees per unit of accumulated work (fixed, so results do not depend on n_jobs).
TREES_PER_CHUNK = 16

# Version of the pickled ensemble state.
ENSEMBLE_STATE_VERSION = 2


# Test hook (issue 11): while set, ``(countdown, exception)``: :meth:`TreeEnsemble.extend` raises
# ``exception`` once ``countdown`` more trees have been extended (see ``fail_after_trees``).
_failure = None


def fail_after_trees(n_trees, exception=MemoryError):
    """Test hook: make the next tree extensions raise ``exception`` after ``n_trees`` trees
    (``None`` disarms it). It stands for a failure inside the core (out of memory, an
    interrupt) part-way through an update, after some trees changed."""
    global _failure
    _failure = None if n_trees is None else [int(n_trees), exception]


def _extend_with_hook(trees, X, rows, indices):
    global _failure
    for tree in trees:
        if _failure is not None:
            if _failure[0] <= 0:
                exception, _failure = _failure[1], None
                raise exception("failure injected by mondrian.core.ensemble.fail_after_trees")
            _failure[0] -= 1
        extend_trees([tree], X, rows, indices)


def _same_map(a, b):
    """Name of the first difference between two feature maps, or None."""
    if a.enabled != b.enabled:
        return "feature scaling (on/off)"
    if a.warm_up != b.warm_up:
        return "warm-up length"
    ka, kb = getattr(a, "knots", None), getattr(b, "knots", None)
    if (ka is None) != (kb is None) or (ka is not None and not (
            len(ka.xs) == len(kb.xs)
            and all(np.array_equal(x, y) for x, y in zip(ka.xs + ka.ls, kb.xs + kb.ls,
                                                         strict=True)))):
        return "quantile map"
    for name in ("offset", "scale", "frozen", "weights"):
        x, y = getattr(a, name, None), getattr(b, name, None)
        if (x is None) != (y is None) or (x is not None and not np.array_equal(x, y)):
            return f"feature map {name}"
    return None


class TreeEnsemble:
    """Mondrian trees that share one store of training points and one feature map.

    Parameters
    ----------
    n_features : int
        Number of input features.
    width : int
        Width of the contribution rows the trees sum (0 for the label-free models).
    lifetime : float
        Lifetime of the trees.
    feature_map : FeatureScaler
        Map from original units to the trees' coordinates.
    seeds : array-like of int64
        One seed per tree.
    min_samples_split : int, default=1
        Leaves holding fewer points pause.
    pause_pure : bool, default=False
        Leaves whose statistics have a single non-zero column pause (classification).
    tree_class : type, default=MondrianTree
        Tree type (``MondrianTree`` or a subclass such as the density's ``FullCellTree``).
    count_columns : int, default=0
        What the trees' ``min_samples_split`` rule counts (``MondrianTree.count_columns``): 0
        the points, else weighted counts read from the contribution rows.
    lean_values : bool, default=False
        The trees store the statistics rows of the nodes holding at least
        ``box_min_samples`` points only, and rebuild the others from the store's rows
        (``MondrianTree.lean_values``): for rows whose sums are exact in any order (class
        counts), so that the rebuilt rows have the bits of stored ones.

    Attributes
    ----------
    trees : list of MondrianTree
    store : DataStore
        The stored points (in the trees' coordinates) and their contribution rows.
    feature_map : FeatureScaler
    seeds : ndarray of int64
    read_only : bool
        True for a view (:meth:`single_tree`): every method that would change it raises.
    column_order : tuple of int or None
        The trees' read columns (:meth:`MondrianTree.set_column_order`): which stored column
        of the contribution rows each model column is; None for all of them in order. A
        classifier keeps its classes in arrival order with spare zero columns
        (:meth:`set_columns`).
    """

    # Keep only the most recent ``window`` points after every addition (None: all of them);
    # set by the estimators (``window`` parameter). Not applied during the map's warm-up.
    window = None

    def __init__(self, n_features, width, lifetime, feature_map, seeds, *, min_samples_split=1,
                 pause_pure=False, tree_class=MondrianTree, count_columns=0, lean_values=False):
        self.n_features = int(n_features)
        self.lifetime = float(lifetime)
        self.min_samples_split = int(min_samples_split)
        self.pause_pure = bool(pause_pure)
        self.tree_class = tree_class
        self.count_columns = int(count_columns)
        self.lean_values = bool(lean_values)
        self.feature_map = feature_map
        self.store = DataStore(self.n_features, int(width))
        self.seeds = np.asarray(seeds, dtype=np.int64).copy()
        self.column_order = None
        self.trees = self._new_trees(self.seeds)
        self.read_only = False

    @classmethod
    def start(cls, X, seeds, *, width, lifetime, feature_scaling=True, weights=None,
              knots=None, **tree_params):
        """An empty ensemble for a first batch ``X`` (original units; validated, not stored).

        ``weights`` (or None) multiply the features after the min-max map; ``knots`` (a
        ``QuantileMap`` or None) maps them before it. Raises a
        ``ValueError`` if ``X`` could not be stored under a fresh feature map.
        """
        feature_map = FeatureScaler(bool(feature_scaling), weights=weights, knots=knots)
        feature_map.check(X)
        return cls(X.shape[1], width, lifetime, feature_map, seeds, **tree_params)

    # ----------------------------------------------------------------- description

    @property
    def width(self):
        """Width of the contribution rows."""
        return self.store.rows.shape[1]

    @property
    def n_trees(self):
        """Number of trees."""
        return len(self.trees)

    def __len__(self):
        return len(self.trees)

    def __repr__(self):
        view = ", read-only view" if self.read_only else ""
        return (f"TreeEnsemble({len(self.trees)} {self.tree_class.__name__}, "
                f"{self.store.n_samples} stored points, {self.n_features} features, "
                f"lifetime={self.lifetime:g}{view})")

    def _new_trees(self, seeds):
        trees = [
            self.tree_class(self.n_features, self.width, self.lifetime, self.min_samples_split,
                            self.pause_pure, int(seed),
                            lean_values=self.__dict__.get("lean_values", False))
            for seed in seeds
        ]
        order = self.__dict__.get("column_order")
        for tree in trees:
            tree.count_columns = self.count_columns
        if order is not None:
            set_column_order_trees(trees, order)
        return trees

    def set_columns(self, order, width=None, column_map=None):
        """Make ``order`` the read columns of every tree (and of the trees made later).

        With ``width`` (default: the current one) and ``column_map`` (default: every stored
        column keeps its index), the contribution rows of the store and the statistics of
        every tree are first rewritten to that width (:meth:`MondrianTree.set_value_columns`,
        :meth:`DataStore.set_row_columns`): the one costly step, which a classifier takes only
        when it outgrows its spare columns (doubling the width) or a merge aligns layouts.
        Otherwise O(len(order)) per tree.
        """
        self._check_writable()
        old = self.width
        width = old if width is None else int(width)
        if column_map is None:
            column_map = np.arange(old, dtype=np.intp)
        column_map = np.asarray(column_map, dtype=np.intp)
        if width != old or not np.array_equal(column_map, np.arange(old)):
            for tree in self.trees:
                tree.set_value_columns(width, column_map)
            self.store.set_row_columns(width, column_map)
            self.attach_points()  # the rows the trees rebuild statistics from were rewritten
        order = np.asarray(order, dtype=np.intp)
        set_column_order_trees(self.trees, order)  # checked once, then copied per tree
        trivial = order.shape[0] == width and np.array_equal(order, np.arange(width))
        # A tuple: no NumPy dtype object whose sharing inside a pickle would depend on history.
        self.column_order = None if trivial else tuple(order.tolist())

    def attach_points(self):
        """Give every tree (read) access to the stored inputs and contribution rows, from
        which it rebuilds the boxes (lean boxes, ``MondrianTree.box_min_samples``) and the
        statistics rows (``lean_values``) it does not store. Extensions attach the store they
        grow on; this covers the trees made otherwise (copies, pickle loads, merges, pruning,
        restores, rewritten rows). A no-op for a tree attached to the same arrays."""
        X, rows = self.store.X, self.store.rows
        for tree in self.trees:
            tree.attach_points(X, rows)

    def _check_writable(self):
        if self.read_only:
            raise ValueError("this tree ensemble is a read-only view; copy it to change it")

    # ----------------------------------------------------------------- growth

    def add_points(self, X, rows, n_jobs=None, verbose=0):
        """Store new points (original units) and extend every tree with them.

        During the warm-up of the feature map a change of map re-samples every tree from its
        seed on all the stored points under the new map (the same law as growing online).

        Returns
        -------
        ndarray of intp
            Store indices of the points added to the trees (all of them after a re-sampling).
        """
        self._check_writable()
        seen = self.feature_map.update(X)
        indices = self.store.append(self.feature_map.transform(X), rows)
        if seen is not None:
            self.store.replace_X(self.feature_map.transform(seen))
            self.trees = self._new_trees(self.seeds)
            indices = np.arange(self.store.n_samples, dtype=np.intp)
        self.extend(indices, n_jobs, verbose)
        self.trim_window()
        return indices

    def reweight(self, weights, originals, n_jobs=None, verbose=0):
        """Set new feature weights: re-map the stored points from ``originals`` (every stored
        point, in original units and order) and re-sample every tree from its seed on them,
        which has the law of trees grown online under the new map. The store gets a new
        buffer (a snapshot taken before still holds the old one)."""
        self._check_writable()
        feature_map = self.feature_map
        U = feature_map._scaled(feature_map._premap(originals), feature_map.offset,
                                feature_map.scale, False, weights)
        feature_map.set_weights(weights)
        store = self.store
        X = np.zeros_like(store._X)
        X[: store.n_samples] = U
        store._X = X
        self.trees = self._new_trees(self.seeds)
        self.extend(np.arange(store.n_samples, dtype=np.intp), n_jobs, verbose)

    def add_scaled(self, U, rows, n_jobs=None, verbose=0):
        """Store points already in the trees' coordinates and extend every tree with them."""
        self._check_writable()
        indices = self.store.append(U, rows)
        self.extend(indices, n_jobs, verbose)
        self.trim_window()
        return indices

    def extend(self, indices, n_jobs=None, verbose=0, trees=None):
        """Extend ``trees`` (default: all) with the stored points ``indices``, in threads."""
        self._check_writable()
        trees = self.trees if trees is None else trees
        X, rows = self.store.X, self.store.rows
        if _failure is not None:
            _extend_with_hook(trees, X, rows, indices)
            return
        n_jobs = n_threads(n_jobs, len(trees))
        if n_jobs == 1:  # the one-point online path: no thread machinery
            extend_trees(trees, X, rows, indices)
            return
        # The Cython extension releases the GIL: threads run the trees in parallel.
        run_threads(lambda chunk: extend_trees(chunk, X, rows, indices),
                    _split(trees, n_jobs), n_jobs, verbose)

    def grow_trees(self, seeds, n_jobs=None, verbose=0):
        """Add trees with ``seeds``, sampled on every stored point.

        A tree sampled on all the points at once has the law of one grown with them online, so
        the ensemble has the law it would have had with these trees from the start.
        """
        self._check_writable()
        seeds = np.asarray(seeds, dtype=np.int64)
        new = self._new_trees(seeds)
        self.extend(np.arange(self.store.n_samples, dtype=np.intp), n_jobs, verbose, new)
        self.trees = self.trees + new
        self.seeds = np.concatenate([self.seeds, seeds])

    def trim_window(self):
        """Forget the oldest points beyond the ``window`` most recent (once the feature map
        is frozen); return whether any was forgotten."""
        window, store, feature_map = self.window, self.store, self.feature_map
        if window is None or store.n_samples <= window or feature_map.n_seen < feature_map.warm_up:
            return False
        indices = np.sort(store.oldest(store.n_samples - window))
        self.forget(indices, store.rows[indices], np.ones(len(indices), dtype=np.uint8))
        return True

    def matching_tree(self):
        """A tree holding every stored point in its leaf lists (to find stored copies of a
        row by routing it: :func:`mondrian.estimator.forgetting.stored_matches`), or None."""
        if self.__dict__.get("sharded") or not self.trees:
            return None
        tree = self.trees[0]
        if tree.node_count == 0 or tree.n_samples_seen != self.store.n_samples:
            return None
        return tree

    def forget(self, indices, deltas, drop, rows=None):
        """Forget stored points exactly (:func:`mondrian.core._forget.forget_trees`): the
        points ``indices`` with ``drop`` leave every tree and the store, the others lose
        ``deltas`` from their statistics (their new contribution rows given in ``rows``, a
        whole new rows array, or None).

        The store stays dense: its last points move into the places of the forgotten ones
        (:meth:`DataStore.move`, copy on write), so the cost is O(depth) per point and tree,
        not a renumbering of every point. The trees' writes go through their undo logs when
        open (an undo snapshot); run it under a snapshot (:meth:`snapshot` or
        :meth:`undo_snapshot`).
        """
        self._check_forget()
        store = self.store
        if rows is not None:
            store._rows = np.ascontiguousarray(rows)
        forget_trees(self.trees, store.X, store.rows, indices, deltas, drop)
        if not drop.any():
            return
        movers, holes, n_kept = forget_moves(indices, drop, store.n_samples)
        relocate_trees(self.trees, store.X, movers, holes, n_kept)
        # What a rollback (restore) needs to put the store back: its stamps and the rows the
        # in-place move overwrites (the snapshot holds the arrays by reference).
        undo = self.__dict__.setdefault("_store_undo", [])
        undo.append(("stamps", store._stamps, store.n_arrived))
        undo.append(store.move(movers, holes, n_kept))
        attach_trees(self.trees, store.X, store.rows)

    def forget_committed(self, indices, deltas, drop, rows=None):
        """:meth:`forget`, atomic by itself: it either raises before changing anything or
        completes (:func:`mondrian.core._forget_commit.commit_forget`: every check and
        allocation first, then writes that cannot fail), so it needs no snapshot or undo log.

        The store's moves are the ones of :meth:`DataStore.move` (in place, or into new
        buffers made here when less than a quarter of them stays in use). Without a snapshot
        or undo log open: nothing records these writes.
        """
        self._check_forget()
        store = self.store
        n = store.n_samples
        X = store.X
        new_rows = None if rows is None else np.ascontiguousarray(rows, dtype=np.float64)
        rows_now = store.rows if new_rows is None else new_rows
        store.stamps  # noqa: B018 (made for a store pickled without them: the same numbers)
        attributes = {} if new_rows is None else {"_rows": new_rows}
        movers, holes, n_kept = forget_moves(indices, drop, n)
        buffers = store.shrunk_buffers(rows_now, movers, holes, n_kept)
        if buffers is not None:  # (memory given back: new buffers, filled already)
            attributes.update(_X=buffers[0], _rows=buffers[1], _stamps=buffers[2])
        else:
            buffers = (store._X, store._rows if new_rows is None else new_rows, store._stamps)
        attributes["n_samples"] = int(n_kept)
        in_place = (None, None, None) if "_X" in attributes else buffers
        commit_forget(self.trees, store, attributes, X, rows_now, indices, deltas, drop,
                      movers, holes, n_kept, *in_place, buffers[0][:n_kept],
                      buffers[1][:n_kept])

    def _check_forget(self):
        self._check_writable()
        if self.__dict__.get("sharded"):
            raise ValueError(
                "forget and window need every tree to hold every stored point, but this "
                "ensemble was merged from parts fitted on different rows (merge_forests): each "
                "tree holds its own part's rows only. Forget from the parts before merging "
                "them, or refit on the rows to keep"
            )

    # ----------------------------------------------------------------- transactions

    def snapshot(self):
        """What :meth:`restore` needs to put the ensemble back as it is now.

        Trees are copied with ``memcpy`` (time and memory linear in their size); the store
        and the feature map only append or replace arrays, so references (plus the stored
        inputs during the warm-up, which a change of map rewrites in place) suffice.
        """
        store, feature_map = self.store, self.feature_map
        warm = feature_map.n_seen < feature_map.warm_up
        self._reset_store_undo()
        return {
            "ensemble": dict(self.__dict__),
            "trees": [tree._copy() for tree in self.trees],
            "store": (store._X, store._rows, store.n_samples,
                      store.X.copy() if warm else None),
            "stamps": store.arrival_state(),
            "feature_map": dict(feature_map.__dict__),
        }

    def undo_snapshot(self):
        """A snapshot for a small online update: like :meth:`snapshot`, but the trees are not
        copied; each opens an undo log (:meth:`MondrianTree.begin_undo`) of what the update
        writes, which :meth:`restore` rolls back and :meth:`commit` closes (every tree class
        logs its extensions: :class:`MondrianTree` and the density's ``FullCellTree``)."""
        store, feature_map = self.store, self.feature_map
        warm = feature_map.n_seen < feature_map.warm_up
        opened = []
        self._reset_store_undo()
        begin_undo_trees(self.trees, opened)  # one call: no interrupt between two trees
        return {
            "ensemble": dict(self.__dict__),
            "trees": None,
            "undo": opened,
            "store": (store._X, store._rows, store.n_samples,
                      store.X.copy() if warm else None),
            "stamps": store.arrival_state(),
            "feature_map": dict(feature_map.__dict__),
        }

    def commit(self, snapshot):
        """Keep the changes made since ``snapshot`` (closes the undo logs it opened)."""
        commit_undo_trees(snapshot.get("undo", []))
        self._reset_store_undo()

    def _reset_store_undo(self):
        """Drop the records of in-place store moves (:meth:`forget`) since the last snapshot."""
        self.__dict__.pop("_store_undo", None)

    def _undo_store_moves(self):
        """Put the store's arrays back as they were before the forgets since the last
        snapshot (after its references were restored)."""
        store = self.store
        for record in reversed(self.__dict__.pop("_store_undo", [])):
            if record is not None and isinstance(record[0], str):
                store._stamps, store.n_arrived = record[1], record[2]
            else:
                store.undo_move(record)

    def add_scaled_logged(self, U, rows, after=None):
        """Store a few points already in the trees' coordinates and extend every tree with
        them, as one atomic online update once the feature map is frozen (the one-row fast
        path of ``learn_one``).

        Like :meth:`add_points` it counts the points in the feature map (a frozen map changes
        nothing else); unlike the general :meth:`undo_snapshot` it saves no dictionaries: on
        any exception (``MemoryError``, ``KeyboardInterrupt``) the trees' undo logs roll back
        and the store and the map's count are put back, bit for bit, then it re-raises. Every
        tree must be a :class:`MondrianTree` (the class that logs its extensions). ``after``
        (a callable, or None) runs once the trees are extended, inside the logged update: if
        it raises, the trees and the store are rolled back too (the caller restores its own
        state).
        """
        self._check_writable()
        store, feature_map = self.store, self.feature_map
        saved = (store._X, store._rows, store.n_samples, feature_map.n_seen)
        arrival = store.arrival_state()
        opened = []
        self._reset_store_undo()
        try:
            begin_undo_trees(self.trees, opened)
            feature_map.n_seen += U.shape[0]
            self.extend(store.append(U, rows), 1)
            self.trim_window()
            if after is not None:
                after()
        except BaseException:
            rollback_undo_trees(opened)
            store._X, store._rows, store.n_samples, feature_map.n_seen = saved
            store.set_arrival_state(arrival)
            self._undo_store_moves()
            self.attach_points()  # the trees may hold a grown store's array
            raise
        commit_undo_trees(opened)
        self._reset_store_undo()

    def restore(self, snapshot):
        """Put the ensemble back in the state of ``snapshot`` (after a failed update).

        The trees become the snapshot's copies (the changed ones are dropped, so a thread
        still extending them cannot touch the restored model).
        """
        rollback_undo_trees(snapshot.get("undo", []))
        moves = self.__dict__.get("_store_undo")
        self.__dict__.clear()
        self.__dict__.update(snapshot["ensemble"])
        if moves is not None:
            self._store_undo = moves
        if snapshot["trees"] is not None:
            self.trees = snapshot["trees"]
        store = self.store
        store._X, store._rows, store.n_samples, X = snapshot["store"]
        if "stamps" in snapshot:
            store.set_arrival_state(snapshot["stamps"])
        if X is not None:
            store._X[: store.n_samples] = X
        self._undo_store_moves()
        self.attach_points()
        self.feature_map.__dict__.clear()
        self.feature_map.__dict__.update(snapshot["feature_map"])

    # ----------------------------------------------------------------- reading

    def chunks(self):
        """The trees in fixed chunks of ``TREES_PER_CHUNK`` (independent of any n_jobs)."""
        return [self.trees[i : i + TREES_PER_CHUNK]
                for i in range(0, len(self.trees), TREES_PER_CHUNK)]

    def accumulate(self, function, shape, n_jobs=None, combine=None, whole=False):
        """Combine ``function(trees, out)`` over fixed chunks of trees, in order.

        ``out`` starts at zeros of ``shape``. By default ``function`` adds into it and the
        chunks' results are summed; ``combine(total, part)`` combines them otherwise (e.g.
        ``np.logaddexp``). With ``whole=True``, or at most ``TREES_PER_CHUNK`` trees, one call
        covers every tree. Chunks do not depend on ``n_jobs`` and are combined in order, so the
        output is bit-identical for any number of threads.
        """
        if whole or len(self.trees) <= TREES_PER_CHUNK:
            out = np.zeros(shape, dtype=np.float64)
            function(self.trees, out)
            return out

        def run(chunk):
            part = np.zeros(shape, dtype=np.float64)
            function(chunk, part)
            return part

        parts = run_threads(run, self.chunks(), n_jobs)
        if combine is None:
            total = np.zeros(shape, dtype=np.float64)
            for part in parts:
                total += part
            return total
        total = parts[0]
        for part in parts[1:]:
            total = combine(total, part)
        return total

    # ----------------------------------------------------------------- derived ensembles

    def _like(self, trees, seeds, store, feature_map, lifetime=None):
        out = copy.copy(self)
        out.trees = list(trees)
        out.seeds = np.asarray(seeds, dtype=np.int64).copy()
        out.store = store
        out.feature_map = feature_map
        out.read_only = False
        if lifetime is not None:
            out.lifetime = float(lifetime)
        out.attach_points()
        return out

    def with_points(self, U, n_jobs=None):
        """An independent copy whose store and trees also hold the points ``U``.

        ``U`` is in the trees' coordinates and gets zero contribution rows (inputs without
        labels). The trees are extended, never re-sampled, and the feature map does not move,
        so by projectivity the copy has the law of trees sampled on all the points together.
        This is the transductive ensemble that the lifetime paths read. Its pause rule counts
        points (``count_columns = 0``), so that the unlabelled points count.

        Returns
        -------
        ensemble : TreeEnsemble
        indices : ndarray of intp
            Store indices of ``U`` in the copy (after the points already stored).
        """
        out = self._like([copy.deepcopy(tree) for tree in self.trees], self.seeds,
                         copy.deepcopy(self.store), copy.deepcopy(self.feature_map))
        out.window = None  # the transductive copy keeps every point
        # The copy's pause rule counts points: the unlabelled points (zero rows, so zero
        # weight) shape it as labelled ones do. Unweighted fits count the same either way.
        out.count_columns = 0
        for tree in out.trees:
            tree.count_columns = 0
        indices = out.add_scaled(np.ascontiguousarray(U, dtype=np.float64),
                                 np.zeros((U.shape[0], self.width)), n_jobs)
        return out, indices

    def pruned(self, lifetime):
        """An independent ensemble: every tree restricted to ``lifetime`` (<= the lifetime)."""
        return self._like([tree.pruned(float(lifetime)) for tree in self.trees], self.seeds,
                          copy.deepcopy(self.store), copy.deepcopy(self.feature_map), lifetime)

    def subset(self, index, read_only=True):
        """The trees ``index`` (a slice or list of positions) over this ensemble's store.

        The trees, store and feature map are shared, not copied: the result is read-only unless
        ``read_only=False`` (then the caller must not change both).
        """
        positions = np.arange(len(self.trees))[index]
        positions = np.atleast_1d(positions)
        out = self._like([self.trees[k] for k in positions], self.seeds[positions], self.store,
                         self.feature_map)
        out.read_only = read_only
        return out

    def single_tree(self, k):
        """A read-only view of tree ``k`` over the shared store and feature map."""
        return self.subset([k])

    def merge(self, other):
        """One ensemble holding the trees of ``self`` then those of ``other``.

        Both must use the same feature map and tree parameters. Fitted on the same stored
        points, the trees share one store; otherwise the stores are concatenated and the points
        held by ``other``'s trees are renumbered: each tree then holds its own part's points
        only, and the merged ensemble cannot forget (:meth:`forget` raises). The inputs are
        left unchanged.

        Raises
        ------
        ValueError
            Naming the first difference that makes the ensembles incompatible.
        """
        for name in ("tree_class", "n_features", "width", "lifetime", "min_samples_split",
                     "pause_pure", "count_columns"):
            a, b = getattr(self, name), getattr(other, name)
            if a != b:
                raise ValueError(f"cannot merge tree ensembles with different {name}: "
                                 f"{a!r} and {b!r}")
        a, b = self.__dict__.get("column_order"), other.__dict__.get("column_order")
        if a != b:
            raise ValueError("cannot merge tree ensembles whose rows order their columns "
                             "differently: align them with set_columns first")
        difference = _same_map(self.feature_map, other.feature_map)
        if difference is not None:
            raise ValueError(
                f"cannot merge tree ensembles fitted with different feature maps ({difference} "
                "differs): fit both with the same fixed feature map"
            )
        trees = [copy.deepcopy(tree) for tree in self.trees]
        other_trees = [copy.deepcopy(tree) for tree in other.trees]
        same_data = (self.store.n_samples == other.store.n_samples
                     and np.array_equal(self.store.X, other.store.X)
                     and np.array_equal(self.store.rows, other.store.rows))
        store = copy.deepcopy(self.store)
        feature_map = copy.deepcopy(self.feature_map)
        if not same_data:
            offset = self.store.n_samples
            for tree in other_trees:
                tree.shift_samples(offset)
            store.append(other.store.X, other.store.rows)
            feature_map.n_seen += other.feature_map.n_seen
            if feature_map.originals is not None and other.feature_map.originals is not None:
                feature_map.originals = np.vstack([feature_map.originals,
                                                   other.feature_map.originals])
            if feature_map.n_seen >= feature_map.warm_up:
                feature_map.originals = None
        merged = self._like(trees + other_trees, np.concatenate([self.seeds, other.seeds]),
                            store, feature_map)
        if not same_data or other.__dict__.get("sharded"):
            merged.sharded = True  # its trees hold different parts of the store
        return merged

    # ----------------------------------------------------------------- pickling

    # Version 2 saves each tree in its compact form (no boxes, statistics, parents or counts
    # when the store determines them bit for bit); version 1 (whole trees) still loads.

    def __copy__(self):
        # Not through __getstate__: a shallow copy shares the trees (views, _like).
        out = type(self).__new__(type(self))
        out.__dict__.update(self.__dict__)
        return out

    def __deepcopy__(self, memo):
        # Whole trees (MondrianTree.__reduce__), not the compact state: no rebuild needed.
        out = type(self).__new__(type(self))
        memo[id(self)] = out
        out.__dict__.update(copy.deepcopy(self.__dict__, memo))
        out.attach_points()  # the copied trees come without their points
        return out

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_store_undo", None)
        X, rows = self.store.X, self.store.rows
        # One tree at a time: the derived buffers it checks against are freed before the next.
        state["trees"] = [_compact_or_whole(tree, X, rows) for tree in self.trees]
        state["version"] = ENSEMBLE_STATE_VERSION
        return state

    def __setstate__(self, state):
        state = dict(state)
        version = state.pop("version", None)
        if version not in (1, ENSEMBLE_STATE_VERSION):
            raise ValueError(
                f"cannot load a TreeEnsemble saved with state version {version}; this version "
                f"of the package reads versions 1 and {ENSEMBLE_STATE_VERSION}"
            )
        state.setdefault("count_columns", 0)  # saved before weighted counts existed
        state.setdefault("column_order", None)  # saved before spare class columns existed
        state.setdefault("lean_values", False)  # saved before lean values existed
        self.__dict__.update(state)
        _check_loaded_ensemble(self)
        X, rows = self.store.X, self.store.rows
        self.trees = [
            tree if isinstance(tree, MondrianTree)
            else MondrianTree.from_compact_state(tree, X, rows)
            for tree in self.trees
        ]
        for tree in self.trees:
            if (tree.n_features, tree.value_stride) != (self.n_features, self.width) or (
                    tree.n_samples_seen > self.store.n_samples):
                refuse("TreeEnsemble", "a tree does not match the stored points")
        self.attach_points()

    def memory_usage(self):
        """Bytes held by the ensemble, by buffer (summed over the trees), plus the store.

        Returns
        -------
        dict
            ``nodes``, ``box_slots``, ``bounds`` (the stored boxes), ``value``,
            ``sample_next`` (see :meth:`MondrianTree.memory_usage`), ``store_X`` and
            ``store_rows`` (the stored
            points, once per forest), ``total`` (their sum) and ``reserved`` (allocated
            growth room, not resident until written).
        """
        out = dict.fromkeys(("nodes", "box_slots", "bounds", "value", "sample_next", "reserved"),
                            0)
        for tree in self.trees:
            usage = tree.memory_usage()
            for key in out:
                out[key] += usage[key]
        reserved = out.pop("reserved")
        out["store_X"] = self.store.X.nbytes
        out["store_rows"] = self.store.rows.nbytes
        out["total"] = sum(out.values())
        out["reserved"] = reserved + self.store._X.nbytes + self.store._rows.nbytes - (
            out["store_X"] + out["store_rows"])
        return out


def _check_loaded_ensemble(ensemble):
    """Refuse a loaded ensemble whose parts do not fit together (before any tree is built)."""
    store, trees = ensemble.__dict__.get("store"), ensemble.__dict__.get("trees")
    tree_class = ensemble.__dict__.get("tree_class")
    if not isinstance(store, DataStore) or not isinstance(trees, list) or not (
            isinstance(tree_class, type) and issubclass(tree_class, MondrianTree)):
        refuse("TreeEnsemble", "it needs a DataStore, a list of trees and a tree class")
    if store.X.shape[1] != ensemble.n_features:
        refuse("TreeEnsemble", "the stored points do not have n_features columns")
    if not -1 <= ensemble.count_columns <= ensemble.width:
        refuse("TreeEnsemble", "count_columns outside [-1, width]")
    order = ensemble.column_order
    if order is not None and not (
            len(set(order)) == len(order) and all(0 <= c < ensemble.width for c in order)):
        refuse("TreeEnsemble", "column_order must hold distinct columns below the width")
    for tree in trees:
        if not isinstance(tree, (MondrianTree, dict)):
            refuse("TreeEnsemble", f"a tree is a {type(tree).__name__}")


def _compact_or_whole(tree, X, rows):
    state = tree.compact_state(X, rows)
    return tree if state is None else state
