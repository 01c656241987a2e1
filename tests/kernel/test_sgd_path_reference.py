"""The SGD lifetime path against a NumPy re-implementation with the same random picks.

The reference follows the documented algorithm (section 8.6) step by step in NumPy: columns
are numbered as the path numbers them (tree ``m``'s root is column ``m``; a cut keeps the cell's
column for the left child and gives the next free column to the right one, copying its
weights), every SGD step picks ``train[rng.randint(0, n_train)]`` from
``numpy.random.RandomState(seed)`` (``initial_steps`` draws first, then ``steps_per_cut`` after
every cut) and takes ``W[col] -= learning_rate * (grad / sqrt(M) + alpha * W[col])`` for the
``M`` columns of the point. Weights, losses, error rates and columns must agree to 1e-10.
"""

import numpy as np
import pytest

from mondrian.core._tree import MondrianTree
from mondrian.kernel._sgd_path import SGDPathVisitor
from mondrian.path._engine import TreeCuts, walk_path


def _trees(X, n_trees, lifetime, seed):
    rows = np.zeros((X.shape[0], 1))
    indices = np.arange(X.shape[0], dtype=np.intp)
    return [MondrianTree(X.shape[1], 1, lifetime, seed=seed + m).fit(X, rows, indices)
            for m in range(n_trees)]


def _sgd_path(source, *args):
    """The compiled path on the engine: weights, records, error rates, columns."""
    visitor = SGDPathVisitor(*args)
    rows = walk_path(source, visitor, True)
    rows = rows[~np.isnan(rows[:, 0])]
    return visitor.weights(), rows[:, :3], rows[:, 3:], visitor.columns()


def _in_subtree(tree, node):
    """Whether every point's terminal leaf lies below ``node`` (or is it)."""
    parent = tree.nodes_array["parent"]
    leaves = tree.leaf_sample_assignment()
    below = np.zeros(len(leaves), dtype=bool)
    for i, j in enumerate(leaves):
        while j >= 0:
            if j == node:
                below[i] = True
                break
            j = parent[j] if j != 0 else -1
    return below


def _sgd_path_reference(trees, ev_tree, ev_node, targets, is_train, alpha, learning_rate,
                        steps_per_cut, initial_steps, eval_every, logistic, seed):
    n_trees, (n_points, K) = len(trees), targets.shape
    scale = 1.0 / np.sqrt(n_trees)
    train = np.flatnonzero(is_train)
    rng = np.random.RandomState(seed)
    W = np.zeros((n_trees + len(ev_tree) + 1, K))
    cols = np.repeat(np.arange(n_trees)[:, None], n_points, axis=1)  # roots: column m
    n_cols = n_trees

    def scores(i):
        return W[cols[:, i]].sum(axis=0) * scale

    def loss_grad(s, t):
        if not logistic:
            return ((s - t) ** 2).sum(), s - t
        p = np.exp(s - s.max())
        p /= p.sum()
        return -np.log(p[np.argmax(t)]), p - t

    def sgd(n_steps):
        if n_steps == 0:
            return
        for i in train[rng.randint(0, len(train), size=n_steps)]:
            _, g = loss_grad(scores(i), targets[i])
            c = cols[:, i]
            W[c] -= learning_rate * (g * scale + alpha * W[c])

    def evaluate(n_cuts):
        loss = np.zeros(2)
        wrong = np.zeros(2)
        count = np.zeros(2)
        for i in range(n_points):
            s = scores(i)
            side = 0 if is_train[i] else 1
            loss[side] += loss_grad(s, targets[i])[0]
            wrong[side] += np.argmax(s) != np.argmax(targets[i])
            count[side] += 1
        with np.errstate(invalid="ignore"):
            err = wrong / count if logistic else np.full(2, np.nan)
            return [n_cuts, *(loss / count)], err

    records, errors = [], []
    sgd(initial_steps)
    rec, err = evaluate(0)
    records.append(rec)
    errors.append(err)
    children = [t.nodes_array[["left_child", "right_child"]] for t in trees]
    for e, (m, node) in enumerate(zip(ev_tree, ev_node, strict=True)):
        left, right = children[m][node]
        c = cols[m, _in_subtree(trees[m], node)][0]
        W[n_cols] = W[c]
        cols[m, _in_subtree(trees[m], right)] = n_cols
        cols[m, _in_subtree(trees[m], left)] = c
        n_cols += 1
        sgd(steps_per_cut)
        if (e + 1) % eval_every == 0 or e == len(ev_tree) - 1:
            rec, err = evaluate(e + 1)
            records.append(rec)
            errors.append(err)
    return W[:n_cols], np.array(records), np.array(errors), cols


@pytest.mark.parametrize("logistic", [False, True])
def test_sgd_path_matches_numpy_reference(logistic):
    rng = np.random.RandomState(0)
    n_points, n_trees = 70, 4
    X = rng.uniform(size=(n_points, 3))
    trees = _trees(X, n_trees, lifetime=4.0, seed=11)
    source = TreeCuts.from_trees(trees, max_cells=n_trees + 40)
    events = source.as_tuple()[1]
    ev_tree, ev_node = events[:, 0], events[:, 1]
    assert len(ev_tree) == 40
    is_train = (np.arange(n_points) < 50).astype(np.uint8)
    if logistic:
        labels = (X[:, 0] + X[:, 1] > 1).astype(int) + (X[:, 2] > 0.7)
        targets = np.eye(3)[labels]
    else:
        targets = np.column_stack([np.sin(4 * X[:, 0]) + X[:, 1]])
    # A large L2 constant and learning rate, so that both terms weigh in the weights.
    args = (targets, is_train, 0.05, 0.3, 3, 25, 7, logistic, 5)
    got = _sgd_path(source, *args)
    want = _sgd_path_reference(trees, ev_tree, ev_node, *args)
    for a, b in zip(got, want, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-10)
    assert np.abs(got[0]).max() > 0.1  # the weights moved: the comparison is not vacuous
    assert len(got[1]) == 40 // 7 + 2
