"""``tools/fingerprint.py compare`` with the forest regressor's ``debias`` switched off.

Run it after setting ``debias=None`` as the default of ``MondrianForestRegressor`` (the
fingerprint fits every estimator with its defaults)::

    python tools/fingerprint_debias_off.py /work/notes/fp_deadf0f.json

The pickle bytes are hashed without the new parameter's attribute (``debias``, which a pickle
made before it could not hold); every other read is hashed as by ``fingerprint.py``. "all 78
fingerprints identical" shows that the off state changes nothing else.
"""

import pickle
import runpy
import sys

sys.path.insert(0, "src")

from mondrian import MondrianForestRegressor  # noqa: E402

_dumps = pickle.dumps


def _dumps_without_debias(obj, *args, **kwargs):
    if isinstance(obj, MondrianForestRegressor) and "debias" in obj.__dict__:
        if obj.__dict__["debias"] is not None:
            raise SystemExit("set debias=None as the default first")
        value = obj.__dict__.pop("debias")
        try:
            return _dumps(obj, *args, **kwargs)
        finally:
            obj.__dict__["debias"] = value
    return _dumps(obj, *args, **kwargs)


if __name__ == "__main__":
    pickle.dumps = _dumps_without_debias
    sys.argv = ["tools/fingerprint.py", "compare", sys.argv[1]]
    runpy.run_path("tools/fingerprint.py", run_name="__main__")
