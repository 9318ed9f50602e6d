"""The one table writer: a column spec rendered to Markdown and to the terminal (rich), and the
shared cell formats.

A :class:`Table` holds raw rows (mappings of JSON-able values); each :class:`Column` names the row
key it shows and the format that turns the value into text. The formats are the same everywhere:

* a rate (``successes, trials``): ``k/n (p %) [lo, hi]`` with the 95 % Wilson interval as
  fractions, e.g. ``18/20 (90 %) [0.70, 0.97]`` (:func:`rate`);
* statistics: ``mean / min / max`` (:func:`mean_min_max`), or a mean with its 95 % Student-t
  interval and the number of values, ``mean [lo, hi] (n)`` (:func:`mean_interval`, :func:`interval`);
* a missing value (None, no episodes): ``—`` (:data:`MISSING`).

:func:`write_tables` writes a protocol's ``results.json`` (the rows, raw) and ``results.md``.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from upright.envs.conditions import Conditions
from upright.eval.machine import machine, machine_line
from upright.policies.run_folder import write_text_atomically

#: The text of a missing value.
MISSING = "—"

Row = Mapping[str, Any]
Format = Callable[[Any], str]


@functools.lru_cache(maxsize=4096)
def wilson_interval(successes: int, trials: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval (two-sided, ``confidence``) for a success probability from
    ``successes`` out of ``trials``: SciPy's ``binomtest(k, n).proportion_ci(method="wilson")``.
    Cached: ``binomtest`` also computes the exact test's p-value (milliseconds a call), and tables
    and learning-curve bands ask for the same counts many times."""
    from scipy.stats import binomtest  # SciPy's stats load slowly: only when an interval is computed

    if not 0 <= successes <= trials or trials < 1:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1, got {successes} of {trials}")
    ci = binomtest(int(successes), int(trials)).proportion_ci(confidence_level=confidence, method="wilson")
    return float(ci.low), float(ci.high)


def mean_interval(values: Sequence[float], confidence: float = 0.95) -> dict[str, float | int | None]:
    """``mean`` of ``values`` with the two-sided Student-t interval ``low``, ``high`` for it (the
    sample's spread; None for fewer than two values, all None for none) and their number ``n``."""
    from scipy.stats import t  # SciPy's stats load slowly: only when an interval is computed

    n = len(values)
    if n == 0:
        return {"mean": None, "low": None, "high": None, "n": 0}
    mean = float(np.mean(values))
    if n < 2:
        return {"mean": mean, "low": None, "high": None, "n": n}
    half = float(t.ppf(0.5 + confidence / 2, n - 1) * np.std(values, ddof=1) / math.sqrt(n))
    return {"mean": mean, "low": mean - half, "high": mean + half, "n": n}


def text(value: Any) -> str:
    """Any value as text; None as :data:`MISSING`."""
    return MISSING if value is None else str(value)


def number(digits: int = 2, unit: str = "") -> Format:
    """A format for a number with ``digits`` decimals (and `` unit`` after it); None as :data:`MISSING`."""
    suffix = f" {unit}" if unit else ""

    def fmt(value: float | None) -> str:
        return MISSING if value is None else f"{value:.{digits}f}{suffix}"

    return fmt


def rate(value: Sequence[int] | None) -> str:
    """``(successes, trials)`` as ``k/n (p %) [lo, hi]`` with the 95 % Wilson interval; no trials
    (or None) as :data:`MISSING`."""
    if value is None or value[1] == 0:
        return MISSING
    k, n = value
    lo, hi = wilson_interval(k, n)
    return f"{k}/{n} ({100 * k / n:.0f} %) [{lo:.2f}, {hi:.2f}]"


def count(value: Sequence[int] | None) -> str:
    """``(hits, total)`` as ``k/n``; None as :data:`MISSING`."""
    return MISSING if value is None else f"{value[0]}/{value[1]}"


def mean_min_max(digits: int = 2) -> Format:
    """A format for a ``{"mean", "min", "max"}`` mapping as ``mean / min / max``; all None as
    :data:`MISSING`."""
    fmt = number(digits)

    def cell(value: Mapping[str, float | None] | None) -> str:
        if value is None or all(value[k] is None for k in ("mean", "min", "max")):
            return MISSING
        return " / ".join(fmt(value[k]) for k in ("mean", "min", "max"))

    return cell


def interval(digits: int = 2) -> Format:
    """A format for a :func:`mean_interval` mapping as ``mean [low, high] (n)``, without the
    interval when there is none; no values (or None) as :data:`MISSING`."""
    fmt = number(digits)

    def cell(value: Mapping[str, Any] | None) -> str:
        if value is None or value["mean"] is None:
            return MISSING
        bounds = "" if value["low"] is None else f" [{fmt(value['low'])}, {fmt(value['high'])}]"
        return f"{fmt(value['mean'])}{bounds} ({value['n']})"

    return cell


def vector(digits: int = 3) -> Format:
    """A format for a sequence of numbers as ``a, b, c``; None as :data:`MISSING`."""
    fmt = number(digits)

    def cell(value: Sequence[float] | None) -> str:
        return MISSING if value is None else ", ".join(fmt(v) for v in value)

    return cell


@dataclass(frozen=True)
class Column:
    """One column: its ``title``, the row ``key`` it shows and the ``format`` of the value."""

    title: str
    key: str
    format: Format = text

    def cell(self, row: Row) -> str:
        """The text of this column in ``row`` (a missing key is a missing value)."""
        return self.format(row.get(self.key))


@dataclass(frozen=True)
class Table:
    """A titled table: ``columns`` over raw ``rows``, with ``notes`` (Markdown) printed under it."""

    title: str
    columns: Sequence[Column]
    rows: Sequence[Row]
    notes: str = ""

    def cells(self) -> list[list[str]]:
        """The rows as text, one list of cells per row."""
        return [[column.cell(row) for column in self.columns] for row in self.rows]

    def markdown(self) -> str:
        """The table as Markdown: a ``###`` title, the table, the notes."""
        lines = [f"### {self.title}", "", "| " + " | ".join(c.title for c in self.columns) + " |",
                 "|" + "---|" * len(self.columns)]
        lines += ["| " + " | ".join(cells) + " |" for cells in self.cells()]
        if self.notes:
            lines += ["", self.notes]
        return "\n".join(lines) + "\n"

    def rich(self, width: int | None = None) -> Any:
        """The table as a :class:`rich.table.Table` for a terminal ``width`` columns wide (None: any
        width): one line per row when that fits, else :meth:`stacked`. Cells are never cut: a
        squeezed grid would wrap every row over several lines and truncate its titles."""
        from rich.console import Console  # rich: only when printing to a terminal
        from rich.table import Table as RichTable

        table = RichTable(title=self.title, caption=self.notes or None)
        for column in self.columns:
            table.add_column(column.title)
        for cells in self.cells():
            table.add_row(*cells)
        if width is None:
            return table
        wide = Console(width=100_000)
        return table if wide.measure(table).maximum <= width else self.stacked()

    def stacked(self) -> Any:
        """The table as a narrow :class:`rich.table.Table`: per row a heading line (the first
        column's title and cell, bold), then one line per other column, its title beside its cell."""
        from rich.table import Table as RichTable  # rich: only when printing to a terminal

        table = RichTable(title=self.title, caption=self.notes or None, show_header=False, show_lines=False)
        table.add_column(style="bold")
        table.add_column()
        first, rest = self.columns[0], self.columns[1:]
        for row in self.rows:
            table.add_row(first.title, first.cell(row), style="bold")
            for index, column in enumerate(rest):
                table.add_row(f"  {column.title}", column.cell(row), end_section=index == len(rest) - 1)
        return table

    def to_json(self) -> dict[str, Any]:
        """Title, column titles and keys, raw rows and notes, as JSON types."""
        return {"title": self.title, "columns": [{"title": c.title, "key": c.key} for c in self.columns],
                "rows": jsonable(list(self.rows)), "notes": self.notes}


def print_tables(tables: Sequence[Table]) -> None:
    """Print ``tables`` to the terminal with rich, each in the terminal's width (``COLUMNS`` or
    the terminal's own; 80 when output goes to a file or pipe): a table too wide for it is
    printed stacked (:meth:`Table.stacked`). The Markdown files keep every table whole."""
    from rich.console import Console  # rich: only when printing to a terminal

    console = Console()
    for table in tables:
        console.print(table.rich(console.width))


def jsonable(value: Any) -> Any:
    """``value`` with numpy scalars and arrays, tuples and dataclass instances (their fields)
    turned into JSON types; a :class:`~upright.envs.conditions.Conditions` as its
    :meth:`~upright.envs.conditions.Conditions.to_dict` (with its class, so it reads back)."""
    if isinstance(value, Conditions):
        return value.to_dict()
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [jsonable(v) for v in value]
    if isinstance(value, np.generic):
        return value.item()
    return value


def page_head(name: str, command: str | None = None, host: dict[str, Any] | None = None) -> list[str]:
    """The first lines of a results page: ``# name``, the ``command`` that wrote it (when given) and
    the machine's line (this machine's, or ``host``'s)."""
    head = [f"# {name}", ""]
    if command:
        head += ["Produced by", "", "```", command, "```", ""]
    return head + [machine_line(host), ""]


def write_tables(tables: Sequence[Table], out: Path, name: str, *, command: str | None = None,
                 data: Any = None, docs: Path | None = None) -> list[Path]:
    """Write ``out/results.json`` (``name``, ``command``, the machine, the tables with raw rows,
    ``data``) and ``out/results.md`` (a ``# name`` page with the command, the machine and the
    tables); with ``docs`` (a folder, e.g. ``docs/results``) also ``docs/<name>.md``, the same page.
    Each file is written atomically (a crash or a full disk leaves the earlier file or none, never a
    truncated one). Returns the paths."""
    out.mkdir(parents=True, exist_ok=True)
    host = machine()
    result = {"name": name, "command": command, "machine": host, "tables": [t.to_json() for t in tables],
              "data": jsonable(data)}
    page = page_head(name, command, host) + [t.markdown() for t in tables]
    paths = [out / "results.json", out / "results.md"]
    write_text_atomically(paths[0], json.dumps(result, indent=2) + "\n")
    write_text_atomically(paths[1], "\n".join(page))
    if docs is not None:
        docs.mkdir(parents=True, exist_ok=True)
        paths.append(docs / f"{name}.md")
        write_text_atomically(paths[-1], "\n".join(page))
    return paths


__all__ = ["MISSING", "Column", "Table", "count", "interval", "jsonable", "mean_interval", "mean_min_max",
           "number", "page_head", "print_tables", "rate", "text", "vector", "wilson_interval", "write_tables"]
