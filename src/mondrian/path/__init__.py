"""Lifetime paths: one engine walks cut events in birth order and hands them to a visitor."""
