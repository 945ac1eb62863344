"""The result of a sweep, in grid order, as a table (pandas), an array set (xarray) or a file
(Parquet)."""

from __future__ import annotations

import json
import numbers
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping

import numpy as np

from ._grid import SweepError

__all__ = ["SweepResult", "load_sweep"]

_META_KEY = b"nhcontrol.sweep"
_FORMAT_VERSION = 1


def _leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Flatten nested mappings into ``(column name, leaf)`` pairs; a plain value is ``value``."""
    if isinstance(value, Mapping):
        for k, v in value.items():
            yield from _leaves(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield (prefix or "value"), value


def _is_scalar(x: Any) -> bool:
    return x is None or isinstance(x, (numbers.Number, str, bytes, np.generic)) or (
        isinstance(x, np.ndarray) and x.ndim == 0)


def _as_python(x: Any) -> Any:
    if isinstance(x, np.ndarray) and x.ndim == 0:
        x = x[()]
    return x.item() if isinstance(x, np.generic) else x


def _jsonable_axis(vals: list[Any]) -> list[Any] | None:
    out = [_as_python(v) for v in vals]
    try:
        json.dumps(out)
    except TypeError:
        return None
    return out


@dataclass(frozen=True)
class SweepResult:
    """Results of [`nhcontrol.sweep.sweep()`][nhcontrol.sweep.sweep], in grid order.

    Attributes
    ----------
    points : tuple of dict
        The keyword arguments of every call.
    values : tuple
        What the function returned for each point (``None`` where it failed and errors were
        captured).
    backend : str
        Back-end actually used.
    names : tuple of str
        Parameter names of the grid.
    errors : tuple of (str or None)
        ``"ExceptionType: message"`` of the points that failed, ``None`` elsewhere
        (all ``None`` unless the sweep ran with ``errors="capture"``).
    axes : dict or None
        The axes of a Cartesian grid (``None`` for an explicit list of points); needed by
        `to_xarray()`.
    cluster : str
        For ``backend="dask"``: which cluster ran it (``"client"``, ``"address"``,
        ``"current"``, ``"local"``); ``""`` otherwise.
    """

    points: tuple[dict[str, Any], ...]
    values: tuple[Any, ...]
    backend: str
    names: tuple[str, ...]
    errors: tuple[str | None, ...] = ()
    axes: dict[str, list[Any]] | None = field(default=None, compare=False)
    cluster: str = ""

    def __post_init__(self) -> None:
        if not self.errors:
            object.__setattr__(self, "errors", (None,) * len(self.values))

    def __len__(self) -> int:
        return len(self.values)

    @property
    def ok(self) -> np.ndarray:
        """Boolean mask of the points that succeeded."""
        return np.array([e is None for e in self.errors], dtype=bool)

    @property
    def failures(self) -> list[tuple[int, dict[str, Any], str]]:
        """``(index, point, error)`` of every failed point."""
        return [(i, self.points[i], e) for i, e in enumerate(self.errors) if e is not None]

    def column(self, name: str) -> tuple[Any, ...]:
        """Values of parameter ``name`` over the grid.

        Raises
        ------
        SweepError
            If ``name`` is not a grid parameter.
        """
        if name not in self.names:
            raise SweepError(f"{name!r} is not a parameter of this sweep; parameters are "
                             f"{list(self.names)}")
        return tuple(pt[name] for pt in self.points)

    # ------------------------------------------------------------------ tables
    def _leaf_columns(self) -> dict[str, list[Any]]:
        cols: dict[str, list[Any]] = {}
        for i, v in enumerate(self.values):
            if v is None and self.errors[i] is not None:
                continue
            for name, leaf in _leaves(v):
                cols.setdefault(name, [None] * len(self.values))[i] = leaf
        clash = sorted(set(cols) & (set(self.names) | {"error"}))
        if clash:
            raise SweepError(f"result keys {clash} have the names of grid parameters (or 'error'); "
                             f"rename them in the function's returned mapping")
        return cols

    def to_dataframe(self, *, expand: bool = False) -> Any:
        """One row per grid point: the grid's columns, the results, and ``error``.

        A function that returns a mapping gives one column per key (nested mappings as
        ``"outer.inner"``); any other return value is the column ``value``. Arrays stay as
        objects in one column, or, with ``expand=True``, become one column per entry
        (``"eig[0]"``, ``"A[1,2]"``). Failed points have ``None``/NaN results and their message
        in ``error``.

        Returns
        -------
        pandas.DataFrame
        """
        pd = _import("pandas", "to_dataframe")
        data: dict[str, Any] = {n: [p[n] for p in self.points] for n in self.names}
        for name, col in self._leaf_columns().items():
            if expand and any(isinstance(c, (np.ndarray, list, tuple)) and not _is_scalar(c)
                              for c in col):
                data.update(_expanded(name, col))
            else:
                data[name] = [_as_python(c) if _is_scalar(c) else c for c in col]
        data["error"] = list(self.errors)
        return pd.DataFrame(data)

    def to_xarray(self) -> Any:
        """The results on the grid's axes as an ``xarray.Dataset`` (Cartesian grids only).

        Scalars become variables over the grid's dimensions; an array result adds dimensions
        ``<name>_dim0, ...``. Failed points are NaN, and ``error`` holds their messages.

        Raises
        ------
        SweepError
            The sweep ran over an explicit list of points, or results differ in shape.
        ImportError
            xarray is not installed.
        """
        xr = _import("xarray", "to_xarray")
        if self.axes is None:
            raise SweepError("to_xarray needs a Cartesian grid (a mapping name -> values); this "
                             "sweep ran over an explicit list of points: use to_dataframe()")
        dims = tuple(self.axes)
        shape = tuple(len(v) for v in self.axes.values())
        coords = {k: np.asarray(v) for k, v in self.axes.items()}
        data_vars: dict[str, Any] = {}
        for name, col in self._leaf_columns().items():
            present = [np.asarray(c) for c in col if c is not None]
            shapes = {a.shape for a in present}
            if len(shapes) != 1:
                raise SweepError(f"results {name!r} have different shapes {sorted(shapes)}; "
                                 f"to_xarray needs one shape per result")
            (leaf_shape,) = shapes
            dtype = np.result_type(*present) if present else np.dtype(np.float64)
            if dtype.kind in "biu":
                dtype = np.dtype(np.float64)  # room for NaN at failed points
            if dtype.kind not in "fc":
                dtype = np.dtype(object)
            arr = np.full((len(col),) + leaf_shape, np.nan, dtype=dtype)
            for i, c in enumerate(col):
                if c is not None:
                    arr[i] = np.asarray(c)
            extra = tuple(f"{name}_dim{k}" for k in range(len(leaf_shape)))
            data_vars[name] = (dims + extra, arr.reshape(shape + leaf_shape))
        errs = np.array([e if e is not None else "" for e in self.errors], dtype=object)
        data_vars["error"] = (dims, errs.reshape(shape))
        return xr.Dataset(data_vars, coords=coords, attrs={"backend": self.backend})

    # ------------------------------------------------------------------ files
    def save(self, path: str | Path) -> Path:
        """Write the sweep to a Parquet file (needs pyarrow); [`load_sweep()`][nhcontrol.sweep.load_sweep] reads it back.

        Grid values must be scalars; results may be scalars (real or complex), strings, arrays
        of numbers of any shape, or mappings of those.

        Raises
        ------
        SweepError
            A grid value or a result cannot be stored (its name, type and what to return instead).
        """
        pa = _import("pyarrow", "save")
        import pyarrow.parquet as pq

        path = Path(path)
        arrays: dict[str, Any] = {}
        kinds: dict[str, dict[str, Any]] = {}
        for n in self.names:
            col = [p[n] for p in self.points]
            if not all(_is_scalar(c) for c in col):
                raise SweepError(f"grid parameter {n!r} has non-scalar values (e.g. "
                                 f"{type(next(c for c in col if not _is_scalar(c))).__name__}); "
                                 f"save() stores scalar grids only")
            arrays[f"grid.{n}"] = pa.array([_as_python(c) for c in col])
        for name, col in self._leaf_columns().items():
            kinds[name] = _store_leaf(pa, name, col, arrays)
        arrays["error"] = pa.array(list(self.errors), type=pa.string())
        meta = {"version": _FORMAT_VERSION, "names": list(self.names), "backend": self.backend,
                "cluster": self.cluster, "leaves": kinds,
                "mapping": any(isinstance(v, Mapping) for v in self.values),
                "axes": None if self.axes is None else
                {k: _jsonable_axis(v) for k, v in self.axes.items()}}
        if meta["axes"] is not None and any(v is None for v in meta["axes"].values()):
            meta["axes"] = None
        table = pa.table(arrays).replace_schema_metadata({_META_KEY: json.dumps(meta).encode()})
        from .._util.staging import write_file

        write_file(path, lambda fh: pq.write_table(table, fh), what="SweepResult.save")
        return path


def _expanded(name: str, col: list[Any]) -> dict[str, list[Any]]:
    present = [np.asarray(c) for c in col if c is not None]
    shape = present[0].shape
    if any(a.shape != shape for a in present):
        raise SweepError(f"results {name!r} have different shapes; expand=True needs one shape")
    out: dict[str, list[Any]] = {}
    for idx in np.ndindex(*shape):
        key = f"{name}[{','.join(map(str, idx))}]"
        out[key] = [np.nan if c is None else _as_python(np.asarray(c)[idx]) for c in col]
    return out


def _store_leaf(pa: Any, name: str, col: list[Any], arrays: dict[str, Any]) -> dict[str, Any]:
    present = [c for c in col if c is not None]
    if all(_is_scalar(c) for c in present):
        vals = [_as_python(c) for c in col]
        if any(isinstance(v, complex) for v in vals):
            arrays[f"value.{name}.real"] = pa.array([None if v is None else complex(v).real for v in vals])
            arrays[f"value.{name}.imag"] = pa.array([None if v is None else complex(v).imag for v in vals])
            return {"kind": "complex"}
        try:
            arrays[f"value.{name}"] = pa.array(vals)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            raise SweepError(f"result {name!r} mixes types that cannot share a column ({exc}); "
                             f"return one type per key") from exc
        return {"kind": "scalar"}
    arrs = []
    for c in col:
        a = None if c is None else np.asarray(c)
        if a is not None and a.dtype.kind not in "biufc":
            raise SweepError(f"result {name!r} holds {type(c).__name__} values of dtype {a.dtype}; "
                             f"save() stores numbers, strings and arrays of numbers: return those "
                             f"(e.g. a dict of floats) from the sweep function")
        arrs.append(a)
    is_complex = any(a is not None and a.dtype.kind == "c" for a in arrs)
    flat = [None if a is None else a.ravel() for a in arrs]
    arrays[f"value.{name}.shape"] = pa.array([None if a is None else list(a.shape) for a in arrs],
                                             type=pa.list_(pa.int64()))
    if is_complex:
        arrays[f"value.{name}.real"] = pa.array([None if f is None else f.real.astype(float)
                                                 for f in flat], type=pa.list_(pa.float64()))
        arrays[f"value.{name}.imag"] = pa.array([None if f is None else f.imag.astype(float)
                                                 for f in flat], type=pa.list_(pa.float64()))
        return {"kind": "complex_array"}
    arrays[f"value.{name}"] = pa.array([None if f is None else f.astype(float) for f in flat],
                                       type=pa.list_(pa.float64()))
    dt = np.result_type(*[a for a in arrs if a is not None]).str
    return {"kind": "array", "dtype": dt}


class _SweepFile:
    """Checked access to the columns and metadata of a saved sweep (errors name file and field)."""

    def __init__(self, path: Path, table: Any, meta: Any) -> None:
        self.path, self.table, self.meta = path, table, meta

    def fail(self, field: str, why: str) -> SweepError:
        return SweepError(f"{str(self.path)!r}: {field} {why}; the file is damaged or its metadata was "
                          f"edited by hand: save the sweep again")

    def column(self, name: str) -> list[Any]:
        if name not in self.table.column_names:
            raise self.fail(f"column {name!r}", "is missing")
        return self.table.column(name).to_pylist()

    def field(self, key: str, types: type | tuple[type, ...], default: Any = KeyError) -> Any:
        if key not in self.meta:
            if default is not KeyError:
                return default
            raise self.fail(f"metadata field {key!r}", "is missing")
        v = self.meta[key]
        allowed = types if isinstance(types, tuple) else (types,)
        if not isinstance(v, allowed) or (isinstance(v, bool) and bool not in allowed):
            raise self.fail(f"metadata field {key!r}", f"is {str(v)[:80]!r} ({type(v).__name__})")
        return v

    def floats(self, name: str) -> list[Any]:
        col = self.column(name)
        for i, a in enumerate(col):
            if a is not None and not (isinstance(a, list) and all(isinstance(q, (int, float)) and
                                                                  not isinstance(q, bool) for q in a)):
                raise self.fail(f"column {name!r}", f"row {i} holds {str(a)[:60]!r}, not a list of numbers")
        return col


def _cast_exact(f: _SweepFile, name: str, values: np.ndarray, dtype: Any, row: int) -> np.ndarray:
    """``values`` (float64 as stored) as the recorded ``dtype`` - only when that loses nothing:
    the dtype in the metadata is never trusted (int8 would turn 300.7 into 44)."""
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        raise f.fail(f"metadata dtype of result {name!r}", f"is {dtype!r}, not a numpy dtype") from None
    if dt.kind not in "biuf":
        raise f.fail(f"metadata dtype of result {name!r}", f"is {dt} (expected a real numeric dtype)")
    with np.errstate(all="ignore"):
        cast = values.astype(dt)
        back = cast.astype(float)
    same = (back == values) | (np.isnan(back) & np.isnan(values))
    if not np.all(same):
        k = int(np.argmin(same))
        raise f.fail(f"metadata dtype of result {name!r}",
                     f"is {dt}, but the stored value {float(values.ravel()[k])!r} (row {row}) is not a {dt} "
                     f"(it would become {cast.ravel()[k].item()!r})")
    return cast


def _rebuild(f: _SweepFile, meta: dict[str, Any], table: Any) -> list[Any]:
    n = table.num_rows
    cols: dict[str, list[Any]] = {}
    leaves = f.field("leaves", dict)
    for name, kind in leaves.items():
        k = kind.get("kind") if isinstance(kind, dict) else None
        if k not in ("scalar", "complex", "array", "complex_array"):
            raise f.fail(f"metadata of result {name!r}", f"has kind {kind!r} (expected scalar, complex, array "
                                                         f"or complex_array)")
        if k == "scalar":
            cols[name] = f.column(f"value.{name}")
        elif k == "complex":
            re = f.column(f"value.{name}.real")
            im = f.column(f"value.{name}.imag")
            cols[name] = [None if a is None else complex(a, b) for a, b in zip(re, im)]
        else:
            shapes = f.column(f"value.{name}.shape")
            if k == "complex_array":
                re = f.floats(f"value.{name}.real")
                im = f.floats(f"value.{name}.imag")
                flat = [None if a is None else np.asarray(a, dtype=float) + 1j * np.asarray(b, dtype=float)
                        for a, b in zip(re, im)]
            else:
                stored = f.floats(f"value.{name}")
                flat = [None if a is None else _cast_exact(f, name, np.asarray(a, dtype=float),
                                                           kind.get("dtype", "float64"), i)
                        for i, a in enumerate(stored)]
            out = []
            for i, (fl, shp) in enumerate(zip(flat, shapes)):
                if fl is None:
                    out.append(None)
                    continue
                if not (isinstance(shp, list) and all(isinstance(q, int) and q >= 0 for q in shp)
                        and int(np.prod(shp)) == fl.size):
                    raise f.fail(f"column 'value.{name}.shape'", f"row {i} is {shp!r}, which does not fit "
                                                                 f"the {fl.size} stored values")
                out.append(fl.reshape(shp))
            cols[name] = out
    for name, col in cols.items():
        if len(col) != n:
            raise f.fail(f"result {name!r}", f"has {len(col)} rows, the grid has {n}")
    values: list[Any] = []
    mapping = f.field("mapping", bool)
    for i in range(n):
        if not mapping:
            values.append(cols["value"][i] if "value" in cols else None)
            continue
        row: dict[str, Any] = {}
        for name, col in cols.items():
            parts = name.split(".")
            d = row
            for p in parts[:-1]:
                d = d.setdefault(p, {})
            d[parts[-1]] = col[i]
        values.append(row)
    return values


def load_sweep(path: str | Path) -> SweepResult:
    """Read a sweep written by [`SweepResult.save()`][nhcontrol.sweep.SweepResult.save].

    Nothing in the file is trusted: the columns must exist and hold numbers where numbers are
    expected, the shapes must fit the stored values, and the dtype recorded in the metadata is
    applied only when it represents the stored values exactly.

    Raises
    ------
    SweepError
        The file was not written by [`SweepResult.save()`][nhcontrol.sweep.SweepResult.save] (or by
        a newer format), cannot be read, or a column or metadata field is missing or inconsistent
        (the message names the file and the field).
    """
    _import("pyarrow", "load_sweep")
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    try:
        table = pq.read_table(path)
    except FileNotFoundError as exc:
        raise SweepError(f"cannot read {str(path)!r}: no such file") from exc
    except (OSError, pa.ArrowException, ValueError) as exc:
        raise SweepError(f"{str(path)!r} is not a readable Parquet file ({type(exc).__name__}: {exc}); it was "
                         f"not written by SweepResult.save or is damaged") from exc
    raw = (table.schema.metadata or {}).get(_META_KEY)
    if raw is None:
        raise SweepError(f"{str(path)!r} is a Parquet file without nhcontrol sweep metadata; "
                         f"it was not written by SweepResult.save")
    try:
        meta = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise SweepError(f"{str(path)!r}: the nhcontrol sweep metadata is not valid JSON ({exc}); the file is "
                         f"damaged or was edited by hand: save the sweep again") from exc
    if not isinstance(meta, dict):
        raise SweepError(f"{str(path)!r}: the nhcontrol sweep metadata is {str(meta)[:60]!r}, not an object")
    f = _SweepFile(path, table, meta)
    version = f.field("version", int, 0)
    if version > _FORMAT_VERSION:
        raise SweepError(f"{str(path)!r} was written by a newer nhcontrol (format "
                         f"{version} > {_FORMAT_VERSION}); upgrade nhcontrol to read it")
    names = f.field("names", list)
    if not all(isinstance(nm, str) for nm in names):
        raise f.fail("metadata field 'names'", f"is {names!r}, not a list of parameter names")
    grid = {n: f.column(f"grid.{n}") for n in names}
    points = tuple({n: grid[n][i] for n in names} for i in range(table.num_rows))
    errors = tuple(f.column("error"))
    if not all(e is None or isinstance(e, str) for e in errors):
        raise f.fail("column 'error'", "holds values that are not strings")
    values = _rebuild(f, meta, table)
    values = [None if e is not None else v for v, e in zip(values, errors)]
    axes = f.field("axes", (dict, type(None)), None)
    return SweepResult(points, tuple(values), f.field("backend", str), tuple(names), errors,
                       axes, f.field("cluster", str, ""))


def _import(module: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(f"SweepResult.{what} needs {module}; install it with "
                          f"pip install {module}") from exc
