"""Result files as Python objects: the same JSON, CSV and Markdown the CLI writes, so
``ridge compare`` reads a file written from Python and the other way round."""
from __future__ import annotations

import html
import json
import os
from typing import Iterable, List, Optional

from . import _ridge
from ._paths import PathArg, existing_path, fs_path, suffix
from ._timing import Measurement


class Results:
    """A result set: the run's context and its records (dicts of ridge's result schema)."""

    def __init__(self, records: Iterable[dict] = (), context: Optional[dict] = None):
        skeleton = json.loads(_ridge.new_result_json(context is None))
        self._schema = {k: v for k, v in skeleton.items() if k not in ("context", "records")}
        self.context = context if context is not None else skeleton["context"]
        self.records: List[dict] = list(records)

    @classmethod
    def load(cls, path: PathArg) -> "Results":
        """Reads a result file (or a report folder); raises UsageError naming what is wrong, and
        FileNotFoundError (also a UsageError) when ``path`` does not exist. ``path``: str, bytes
        or os.PathLike, any name the file system allows."""
        data = json.loads(_ridge.load_result_file(existing_path(path, "the result file", folder_ok=True)))
        return cls(data["records"], data["context"])

    def add(self, measurement: Measurement, name: str, *, dtype: str = "", params: Optional[dict] = None,
            bytes: float = 0, flops: float = 0, gate: Optional[dict] = None) -> dict:  # noqa: A002
        """Appends a measurement as a record; returns the record (summary filled in). `dtype` is one of
        fp32, tf32, fp16, bf16, fp8_e4m3, fp64, or "" for none (UsageError otherwise). `gate` says how
        ``compare`` may judge it (docs/results-schema.md): ``{"mode": "informational", "reason": ...}``
        or ``{"mode": "judged", "min_threshold": 0.1, "reason": ...}``."""
        record = measurement.to_record(name, dtype=dtype, params=params, bytes=bytes, flops=flops)
        if gate is not None:
            record["gate"] = dict(gate)
        self.records.append(record)
        try:
            self.records[-1] = self._normalized()["records"][-1]
        except Exception:
            self.records.pop()  # a refused record leaves the results as they were
            raise
        return self.records[-1]

    def _document(self) -> str:
        return json.dumps(dict(self._schema, context=self.context, records=self.records), allow_nan=False)

    def _normalized(self) -> dict:
        return json.loads(self.to_json())

    def to_json(self) -> str:
        """The result file's JSON text, exactly as the CLI writes it (checked by the C++ reader)."""
        return _ridge.normalize_result_json(self._document())

    def to_csv(self) -> str:
        return _ridge.result_csv(self.to_json())

    def to_markdown(self) -> str:
        return _ridge.result_markdown(self.to_json())

    def write(self, path: PathArg, format: Optional[str] = None) -> None:  # noqa: A002
        """Writes JSON, CSV or Markdown (from the suffix, or `format`); '-' is stdout. ``path``:
        str, bytes or os.PathLike, any name the file system allows."""
        encoded = fs_path(path)
        kind = format or {".csv": "csv", ".md": "markdown"}.get(suffix(encoded), "json")
        text = {"json": self.to_json, "csv": self.to_csv, "markdown": self.to_markdown}[kind]()
        _ridge.write_text(encoded, text)

    def to_pandas(self):
        """One row per record; needs pandas. Columns: name, method, dtype, ``param.<key>``, the
        numbers (median_ms, ...), ``verification``, ``warnings`` (a list of strings: an
        "impossible: ..." flag stays with its number), ``l2_flushed``, and the record's objects one
        level down: ``gate.mode``, ``gate.reason``, ``clocks_start.sm_mhz``, ``extra.<key>`` ...
        Only the raw samples (``samples_ms``) are left out."""
        try:
            import pandas as pd  # type: ignore[import-untyped, unused-ignore]
        except ImportError as error:
            raise ImportError("Results.to_pandas needs pandas: pip install pandas") from error
        return pd.DataFrame([_flat_record(r) for r in self._normalized()["records"]])

    def __len__(self) -> int:
        return len(self.records)

    def __repr__(self) -> str:
        return f"Results({len(self.records)} records)"

    def _repr_html_(self) -> str:
        head = "<tr><th>name</th><th>method</th><th>dtype</th><th>params</th><th>median ms</th></tr>"
        rows = "".join(
            f"<tr><td>{html.escape(r['name'])}</td><td>{html.escape(r['method'])}</td>"
            f"<td>{html.escape(r.get('dtype', ''))}</td><td>{html.escape(json.dumps(r.get('params', {})))}</td>"
            f"<td>{r.get('median_ms', float('nan')):.6g}</td></tr>"
            for r in self._normalized()["records"])
        return f"<table>{head}{rows}</table>"


def _flat_record(record: dict) -> dict:
    row = {"name": record["name"], "method": record["method"], "dtype": record.get("dtype", "")}
    for key, value in record.items():
        if key in row or key == "samples_ms":
            continue
        if isinstance(value, dict):
            prefix = "param" if key == "params" else key
            row.update({f"{prefix}.{k}": v for k, v in value.items()})
        else:
            row[key] = value
    return row


class NothingComparedError(_ridge.Error):
    """:func:`compare` matched no record it could judge (none matched by name, method, dtype and
    params, or only informational ones did): there is no verdict, and a CI gate must not pass (the
    CLI exits 6). ``.comparison`` holds the :class:`Comparison` (its rows say what was missing)."""

    def __init__(self, message: str, comparison: "Comparison"):
        super().__init__(message)
        self.comparison = comparison


class Comparison:
    """The verdict table of two result sets (see ``ridge compare``). The CI idiom is
    ``assert ridge.compare(base, new).ok`` (compared something, found no regression);
    :func:`compare` raises :class:`NothingComparedError` when nothing was compared."""

    def __init__(self, json_text: str, markdown: str, text: str):
        self.data = json.loads(json_text)
        self.markdown = markdown
        self.text = text

    @property
    def nothing_compared(self) -> bool:
        """True when no record was judged: then there is no verdict (the library's decision)."""
        return bool(self.data["nothing_compared"])

    @property
    def ok(self) -> bool:
        """True when some record was compared and none regressed: what a CI gate asserts."""
        return not self.nothing_compared and not self.regressions and not (self.missing and not self.allow_missing)

    passed = ok

    @property
    def rows(self) -> list:
        """One dict per matched (or missing) record: medians, ratio, interval, p-value, verdict."""
        return self.data.get("rows", [])

    @property
    def missing(self) -> list[dict]:
        """Rows the base judges that the new run lacks (verdict "missing in new"). Unless the comparison
        was made with ``allow_missing=True``, any of them makes ``.ok`` False (the CLI exits 9)."""
        return [r for r in self.rows if r.get("missing_judged")]

    @property
    def allow_missing(self) -> bool:
        return bool(self.data.get("allow_missing", False))

    @property
    def suspects(self) -> list[dict]:
        """Rows beyond their band but within the 0.5 us one process can jump: not regressions yet.
        Measure those records again in a fresh process and compare that run too (the CLI's --confirm)."""
        return [r for r in self.rows if r.get("verdict") == "suspect: re-measure"]

    @property
    def regressions(self) -> list:
        return [r for r in self.rows if r.get("verdict") == "REGRESSION"]

    @property
    def baselines(self) -> int:
        """How many baseline result sets the new run was compared against."""
        return self.data.get("baselines", 1)

    @property
    def geomean_ratio(self) -> float:
        """Geometric mean of the judged records' time ratios (new/base); NaN when none was judged."""
        value = self.data.get("geomean_ratio")
        return float("nan") if value is None else value

    def __repr__(self) -> str:
        return self.text

    def _repr_markdown_(self) -> str:
        return self.markdown


def _as_json(results) -> str:
    if isinstance(results, Results):
        return results.to_json()
    if isinstance(results, (str, bytes, os.PathLike)):
        return _ridge.load_result_file(existing_path(results, "the result file", folder_ok=True))
    raise TypeError(f"expected Results or a path to a result file, got {type(results).__name__}")


def compare(base, new, threshold: float = 0.05, alpha: float = 0.01, spread_factor: float = 3.0,
            allow_missing: bool = False, per_method_resolution: bool = True,
            detector: Optional[str] = None) -> Comparison:
    """Compares two result sets (Results objects or paths): ratio of medians, Mann-Whitney U,
    bootstrap interval, a verdict per record. `threshold` is the relative change that matters.

    `base` may also be a list of baselines: repeated runs of the same code. Their samples are pooled,
    and a change must also exceed `spread_factor` times the spread of their medians. Records their
    producer marked informational, or carried over from a cache, are never judged (see each row's
    ``noise_band``). A record the base judges that `new` lacks makes ``.ok`` False (``.missing``
    lists them) unless `allow_missing`.

    A record's band also has an absolute term, the resolution between processes: its timing method's,
    measured on its GPU family (graph replay and spin hold on Hopper), or 0.5 us where none was
    measured (`per_method_resolution=False`: always 0.5 us). A change beyond a band narrower than
    0.5 us but within 0.5 us is a suspect (``.suspects``): measure it again in a fresh process.

    ``detector`` names the level detector that judges each record (None: the rank test compare uses;
    ``ridge compare --help`` lists the names); an unknown name is a ridge.UsageError.

    Raises :class:`NothingComparedError` when no record could be judged (the CLI's exit 6), so
    ``assert not c.regressions`` can never pass on two unrelated files; ``c.ok`` is the CI check.
    Raises FileNotFoundError (also a ridge.UsageError) for a path that does not exist."""
    baselines = list(base) if isinstance(base, (list, tuple)) else [base]
    *texts, nothing_compared_reason = _ridge.compare_results([_as_json(b) for b in baselines], _as_json(new),
                                                             threshold, alpha, spread_factor, allow_missing,
                                                             per_method_resolution, detector)
    comparison = Comparison(*texts)
    if nothing_compared_reason:
        raise NothingComparedError(nothing_compared_reason, comparison)
    return comparison
