"""The datasets and forest size of the weights benchmark, and its raw rows (JSON lines)."""

from __future__ import annotations

import json

from shared import RESULTS_DIR

RESULTS = RESULTS_DIR
REGRESSION = ("power_plant", "kin8nm", "naval", "concrete", "energy", "wine_red", "yacht",
              "protein")
CLASSIFICATION = ("dna", "satimage", "letter", "usps")
N_TREES = 100


def append_row(path, row):
    """Print ``row`` as JSON and append it to the JSON-lines file ``path``."""
    print(json.dumps(row), flush=True)
    with open(path, "a") as f:
        f.write(json.dumps(row) + "\n")


def read_rows(path):
    """The rows of the JSON-lines file ``path`` (none when it does not exist)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
