"""The estimator layer: what every Mondrian estimator shares, above the model-agnostic core.

``ensemble`` the base class of the tree-ensemble estimators (warm-start rules, single-tree views,
growth), with ``rows`` (validation of the rows read and learnt, and its one-row fast path) and
``weights`` (the feature weights of the map); ``tree_mixins`` pruning, feature importances and
the single-tree form; ``atomic`` fits and online updates that leave the model unchanged when
they raise; ``inputs`` sample weights and sparse rows; ``params`` parameter rules;
``versioned`` versioned pickles and copies (``pickling`` their canonical bytes,
``state_checks`` the checks of a loaded estimator); ``locking`` the reader-writer lock of every
estimator; ``structure`` the read-only view of one fitted tree; ``conventions`` scikit-learn
and river conventions; ``targets`` target limits and scaling; ``holdout`` the validation
split; ``relevance`` the feature-weight search and its registry of methods; ``forgetting``
the ``forget`` and ``window`` of the forests and the density.
"""
