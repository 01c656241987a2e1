"""Deterministic pickles: the bytes of a model depend on its values, not on its history.

``pickle`` writes an object once and refers back to it wherever the same object appears
again, so its bytes follow which *objects* a model shares, not only which values it holds: a
string or NumPy dtype shared by accident in a fitted model (an interned name, the float64
dtype singleton) but held as separate copies after a reload makes the same model pickle to
other bytes. :func:`canonical_reduce` walks the state a model pickles (its own and that of every
object inside it, through their ``__reduce_ex__``) and hands the pickler an equivalent state in
which equal strings, bytes and dtypes are one object each and every object's attributes come in
sorted order; the objects themselves keep their sharing (one object saved once, as before).
Loading is unchanged: the pickle holds the same classes and states as before.
"""

import copyreg
import sys
import types

import numpy as np

__all__ = ["canonical_reduce"]

# Equal dtypes -> one instance (a module-wide table: the same instance in every pickle).
_DTYPES = {}

# Values pickled by reference or by value without identity: returned as they are.
_ATOMS = (type(None), bool, int, float, complex, type, types.FunctionType,
          types.BuiltinFunctionType, np.generic)


def _dtype(dtype):
    canonical = _DTYPES.get(dtype)
    if canonical is None:
        canonical = _DTYPES.setdefault(
            dtype, np.dtype(dtype.str) if dtype.names is None and dtype.subdtype is None
            else dtype)
    return canonical


class _Reduced:
    """Pickles as the reduce value it holds, in place of the object it stands for (its
    ``__class__``, which the pickler checks against ``copyreg.__newobj__``'s class)."""

    __slots__ = ("value", "cls")

    def __init__(self, cls):
        self.cls = cls
        self.value = None

    @property
    def __class__(self):
        return self.cls

    def __reduce__(self):
        return self.value

    def __reduce_ex__(self, protocol):
        return self.value


class _Canonicaliser:
    def __init__(self, protocol):
        self.protocol = protocol
        self.memo = {}  # id -> canonical stand-in of a mutable object (keeps its sharing)
        self.keep = []  # the originals, alive while their ids are in memo
        self.values = {}  # equal bytes -> one instance

    def __call__(self, obj):
        kind = type(obj)
        if kind is str:
            return sys.intern(obj)
        if isinstance(obj, _ATOMS) or kind is _Reduced:  # (_Reduced: a nested model's)
            return obj
        if kind is bytes:
            return self.values.setdefault(obj, obj)
        if kind is tuple:
            return tuple(self(item) for item in obj)
        if isinstance(obj, np.dtype):
            return _dtype(obj)
        found = self.memo.get(id(obj))
        if found is not None:
            return found
        self.keep.append(obj)
        if kind is list:
            out = self.memo[id(obj)] = []
            out.extend(self(item) for item in obj)
        elif kind is dict:
            out = self.memo[id(obj)] = {}
            for key, value in obj.items():
                out[self(key)] = self(value)
        elif kind is np.ndarray:
            out = self.memo[id(obj)] = self._array(obj)
        else:
            out = self._object(obj)
        return out

    def _array(self, array):
        if array.dtype.hasobject:
            if array.dtype.names is not None:
                return array
            out = np.empty(array.shape, dtype=_dtype(array.dtype))
            for index, item in np.ndenumerate(array):
                out[index] = self(item)
            return out
        if not (array.flags.c_contiguous or array.flags.f_contiguous):
            # (pickle protocol 5 writes contiguous arrays another way, and a strided one
            # loads contiguous: the copy it loads as)
            array = np.ascontiguousarray(array)
        dtype = _dtype(array.dtype)
        return array if array.dtype is dtype else array.view(dtype)

    def _object(self, obj):
        try:
            value = obj.__reduce_ex__(self.protocol)
        except Exception:  # noqa: BLE001 (the pickler raises it again, with its context)
            value = None
        if not isinstance(value, tuple) or len(value) < 2:
            self.memo[id(obj)] = obj  # pickled by name, or left to the pickler
            return obj
        out = self.memo[id(obj)] = _Reduced(type(obj))
        value = list(value) + [None] * (5 - len(value))
        state = value[2]
        if isinstance(state, dict) and value[0] in (copyreg.__newobj__, copyreg._reconstructor):
            state = dict(sorted(state.items(), key=lambda item: str(item[0])))
        out.value = (value[0], self(value[1]), self(state),
                     None if value[3] is None else iter([self(x) for x in value[3]]),
                     None if value[4] is None else iter([(self(k), self(v))
                                                         for k, v in value[4]]))
        return out


def canonical_reduce(obj, protocol):
    """``obj.__reduce_ex__(protocol)`` (the object's own, from its class's ``object`` base)
    with every part canonical (module docstring): the reduce value of a model whose pickle
    is the same bytes whatever its history.

    Examples
    --------
    >>> import pickle
    >>> import numpy as np
    >>> from mondrian import MondrianForestRegressor
    >>> X = np.random.default_rng(0).random((40, 2))
    >>> model = MondrianForestRegressor(n_estimators=2, random_state=0).fit(X, X[:, 0])
    >>> data = pickle.dumps(model)
    >>> pickle.dumps(pickle.loads(data)) == data
    True
    """
    canonical = _Canonicaliser(protocol)
    value = list(object.__reduce_ex__(obj, protocol))
    state = value[2]
    if isinstance(state, dict):
        state = dict(sorted(state.items(), key=lambda item: str(item[0])))
    value[1:3] = canonical(value[1]), canonical(state)
    return tuple(value)
