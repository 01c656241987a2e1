"""Fingerprint with debias=None, the pickle bytes hashed without the new parameter's attribute:
shows that the only change of the off state is that attribute."""
import pickle, runpy, sys
sys.path.insert(0, "src")
from mondrian import MondrianForestRegressor
dumps = pickle.dumps
def dumps_without(obj, *a, **k):
    if isinstance(obj, MondrianForestRegressor) and "debias" in obj.__dict__:
        assert obj.__dict__["debias"] is None
        value = obj.__dict__.pop("debias")
        try:
            return dumps(obj, *a, **k)
        finally:
            obj.__dict__["debias"] = value
    return dumps(obj, *a, **k)
pickle.dumps = dumps_without
sys.argv = ["tools/fingerprint.py", "compare", "/work/notes/fp_deadf0f.json"]
runpy.run_path("tools/fingerprint.py", run_name="__main__")
