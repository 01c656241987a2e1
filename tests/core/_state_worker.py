"""Child process of the state-fuzzing test: loads edited pickles and uses the loaded models.

Reads requests from stdin (an 8-byte length, then a pickle of ``(payload, X, y)``), answers one
line per request on stdout: ``loaded`` (loaded and every use ran or refused its input with a
ValueError/TypeError), ``refused <type>`` (the load raised a ValueError or TypeError) or
``bad <where> <type>: <message>`` (any other exception). A crash or a hang shows in the parent
as a signal or a timeout.
"""

import os
import pickle
import struct
import sys
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")

READS = ("predict", "predict_proba", "transform", "score_samples", "decision_function")


def _use(model, X, y):
    for name in READS:
        method = getattr(model, name, None)
        if method is not None:
            try:
                method(X)
            except (ValueError, TypeError, NotImplementedError):
                pass
    method = getattr(model, "partial_fit", None)  # (learning on top of the loaded state)
    if method is not None:
        try:
            method(X) if y is None else method(X, y)
        except (ValueError, TypeError):
            pass


def _answer(text):
    sys.stdout.write(text.replace("\n", " ") + "\n")
    sys.stdout.flush()


def main():
    warnings.simplefilter("ignore")
    source = sys.stdin.buffer
    while True:
        head = source.read(8)
        if len(head) < 8:
            return
        (size,) = struct.unpack("<Q", head)
        payload, X, y = pickle.loads(source.read(size))
        try:
            model = pickle.loads(payload)
        except (ValueError, TypeError) as error:
            _answer(f"refused {type(error).__name__}")
            continue
        except Exception as error:  # noqa: BLE001 (reported to the parent)
            _answer(f"bad load {type(error).__name__}: {error}")
            continue
        try:
            _use(model, X, y)
        except Exception as error:  # noqa: BLE001
            _answer(f"bad use {type(error).__name__}: {error}")
            continue
        _answer("loaded")


if __name__ == "__main__":
    main()
