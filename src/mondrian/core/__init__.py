"""The model-agnostic Mondrian tree core.

``_tree`` holds the packed node array and its side buffers (sampling, online extension, paused
leaves, routing, pickling); ``store`` the training points kept once per ensemble;
``feature_map`` the fixed map applied before the process; ``ensemble`` the trees of a model with
their store, feature map and seeds (growth, threads, accumulation, pruning, views, merging);
``state_checks`` the checks of loaded arrays. The core imports nothing from the packages above
it (the estimator layer, the models, the path engine).
"""
