"""Child process of the state-fuzzing test: loads edited pickles and uses the loaded models.

Reads requests from stdin (an 8-byte length, then a pickle of ``(payload, X, y)``), answers one
line per request on stdout: ``loaded`` (loaded and every use ran or refused its input with a
ValueError/TypeError), ``refused <type>`` (the load raised a ValueError or TypeError),
``bad <where> <type>: <message>`` (any other exception) or ``crash <signal>``. Each request runs
in a forked child (the imports are done once), so a corrupted heap cannot leak into the next
one; a hang shows in the parent as a timeout.
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


def _outcome(payload, X, y):
    try:
        model = pickle.loads(payload)
    except (ValueError, TypeError) as error:
        return f"refused {type(error).__name__}"
    except Exception as error:  # noqa: BLE001 (reported to the parent)
        return f"bad load {type(error).__name__}: {error}"
    try:
        _use(model, X, y)
    except Exception as error:  # noqa: BLE001
        return f"bad use {type(error).__name__}: {error}"
    return "loaded"


def main():
    warnings.simplefilter("ignore")
    import mondrian  # noqa: F401  (imported once, before the children fork)

    source = sys.stdin.buffer
    while True:
        head = source.read(8)
        if len(head) < 8:
            return
        (size,) = struct.unpack("<Q", head)
        payload, X, y = pickle.loads(source.read(size))
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read)
            text = _outcome(payload, X, y).replace("\n", " ")
            os.write(write, text.encode())
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            text = pipe.read().decode()
        _, status = os.waitpid(pid, 0)
        if os.WIFSIGNALED(status):
            text = f"crash signal {os.WTERMSIG(status)} after {text or 'nothing'}"
        _answer(text or f"crash exit status {os.WEXITSTATUS(status)}")


if __name__ == "__main__":
    main()
