"""The benches' plain-text tables, in full for a page and fitted to a terminal's width.

A bench table is fixed-width text (its pages hold it in a code block). :func:`text_table` writes
it from :class:`Column` specs and rows of formatted cells: with no ``width`` in full, every column
its spec's width; with a terminal's ``width`` narrower than that, each column as wide as its
widest cell and the columns after the first ``keys`` (the ones that name a row: algorithm,
environment, ...) split into blocks that fit, each block printed under the key columns, the
blocks one after the other; the notes wrapped at ``width``.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Column:
    """One column: its ``head``, its ``width`` in the full table (characters), ``left``-aligned
    (names) or right-aligned (numbers), and the spaces before it (``gap``)."""

    head: str
    width: int
    left: bool = False
    gap: int = 1


def _line(columns: Sequence[Column], cells: Sequence[str], widths: Sequence[int], first: bool = True) -> str:
    """``cells`` in ``columns`` of ``widths``; the first column's gap only when not ``first``."""
    parts = []
    for i, (column, cell, size) in enumerate(zip(columns, cells, widths)):
        gap = "" if i == 0 and first else " " * column.gap
        parts.append(gap + (f"{cell:<{size}}" if column.left else f"{cell:>{size}}"))
    return "".join(parts)


def text_table(columns: Sequence[Column], rows: Sequence[Sequence[str]], notes: Sequence[str] = (), *,
               keys: int = 1, width: int | None = None) -> list[str]:
    """The lines of the table of ``rows`` (formatted cells, one per column) and ``notes`` (one line
    each in full; wrapped at ``width``), in full or fitted to ``width`` (see the module docstring).
    A block holds at least one column, so a column wider than ``width`` beside the keys still
    shows, over the width."""
    heads = [column.head for column in columns]
    full = [_line(columns, heads, [c.width for c in columns]), *(_line(columns, row, [c.width for c in columns])
                                                                   for row in rows)]
    wrapped = list(notes) if width is None else [line for note in notes for line in textwrap.wrap(note, width)]
    if width is None or max(map(len, full)) <= width:
        return full + wrapped
    sizes = [max(len(cell) for cell in (column.head, *(row[i] for row in rows))) for i, column in enumerate(columns)]
    key_width = len(_line(columns[:keys], heads[:keys], sizes[:keys]))
    blocks: list[list[int]] = []
    used = width
    for i in range(keys, len(columns)):
        size = 1 + sizes[i]  # one space before it in a block
        if not blocks or used + size > width:
            blocks.append([])
            used = key_width
        blocks[-1].append(i)
        used += size
    lines: list[str] = []
    for block in blocks:
        chosen = [*range(keys), *block]
        shown = [Column(c.head, c.width, c.left, 1) for c in (columns[i] for i in chosen)]
        widths = [sizes[i] for i in chosen]
        if lines:
            lines.append("")
        lines.append(_line(shown, [heads[i] for i in chosen], widths).rstrip())
        lines += [_line(shown, [row[i] for i in chosen], widths).rstrip() for row in rows]
    return lines + wrapped


__all__ = ["Column", "text_table"]
