"""Inline SVG charts generated in Python (no JavaScript library, no external files).

Every label passes through :func:`markupsafe.escape`; every function returns
:class:`markupsafe.Markup` ready to be placed in an autoescaped template.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

__all__ = ["STAGE_COLORS", "Bar", "bar_chart", "grouped_bar_chart", "heatmap", "histogram"]

STAGE_COLORS: dict[str, str] = {
    "chunking": "#7b52ab",
    "retrieval": "#2a6fb0",
    "reranking": "#c98a00",
    "generation": "#c0392b",
    "undetermined": "#8a8a8a",
}
_DEFAULT_COLOR = "#2a6fb0"
_FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif" font-size="12"'


@dataclass(frozen=True)
class Bar:
    """One bar: a label, its value, an optional second value and display text."""

    label: str
    value: float
    text: str = ""
    color: str = _DEFAULT_COLOR
    second: float | None = None
    second_text: str = ""


def _num(x: float) -> str:
    return f"{x:.1f}".rstrip("0").rstrip(".")


def _open(width: int, height: int, title: str) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" {_FONT}>'
        f"<title>{escape(title)}</title>"
    )


def bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    label_width: int = 190,
    width: int = 640,
    vmax: float | None = None,
) -> Markup:
    """Horizontal bars; each row shows its label, bar and text. ``vmax`` fixes the
    scale (1.0 for shares); by default the largest bar spans the plot."""
    row_h, pad = 24, 6
    height = max(1, len(bars)) * row_h + 2 * pad
    plot_w = width - label_width - 90
    vmax = vmax or max((b.value for b in bars), default=0.0) or 1.0
    out = [_open(width, height, title)]
    for i, b in enumerate(bars):
        y = pad + i * row_h
        w = plot_w * b.value / vmax
        out.append(
            f'<g class="bar"><title>{escape(b.label)}: {escape(b.text or _num(b.value))}</title>'
            f'<text x="{label_width - 8}" y="{y + 16}" text-anchor="end" fill="#222">'
            f"{escape(b.label)}</text>"
            f'<rect x="{label_width}" y="{y + 3}" width="{_num(max(w, 0.0))}" height="{row_h - 8}" '
            f'rx="2" fill="{escape(b.color)}"/>'
            f'<text x="{_num(label_width + w + 6)}" y="{y + 16}" fill="#333">'
            f"{escape(b.text or _num(b.value))}</text></g>"
        )
    out.append("</svg>")
    return Markup("".join(out))


def grouped_bar_chart(
    bars: Sequence[Bar],
    *,
    title: str,
    legend: tuple[str, str] = ("mode", "2nd mode"),
    label_width: int = 230,
    width: int = 680,
) -> Markup:
    """Horizontal pairs of bars (value solid, second value pale) per label."""
    row_h, pad, legend_h = 30, 6, 22
    height = max(1, len(bars)) * row_h + 2 * pad + legend_h
    plot_w = width - label_width - 60
    vmax = max((max(b.value, b.second or 0.0) for b in bars), default=0.0) or 1.0
    out = [_open(width, height, title)]
    out.append(
        f'<g class="legend"><rect x="{label_width}" y="4" width="12" height="12" fill="#555"/>'
        f'<text x="{label_width + 16}" y="14">{escape(legend[0])}</text>'
        f'<rect x="{label_width + 100}" y="4" width="12" height="12" fill="#555" opacity="0.35"/>'
        f'<text x="{label_width + 116}" y="14">{escape(legend[1])}</text></g>'
    )
    for i, b in enumerate(bars):
        y = legend_h + pad + i * row_h
        w1 = plot_w * b.value / vmax
        w2 = plot_w * (b.second or 0.0) / vmax
        out.append(
            f'<g class="bar"><title>{escape(b.label)}: {escape(legend[0])} '
            f"{escape(b.text or _num(b.value))}, {escape(legend[1])} "
            f"{escape(b.second_text or _num(b.second or 0.0))}</title>"
            f'<text x="{label_width - 8}" y="{y + 18}" text-anchor="end" fill="#222">'
            f"{escape(b.label)}</text>"
            f'<rect x="{label_width}" y="{y + 2}" width="{_num(w1)}" height="12" '
            f'fill="{escape(b.color)}"/>'
            f'<text x="{_num(label_width + w1 + 4)}" y="{y + 12}" font-size="10" fill="#333">'
            f"{escape(b.text or _num(b.value))}</text>"
            f'<rect x="{label_width}" y="{y + 15}" width="{_num(w2)}" height="10" '
            f'fill="{escape(b.color)}" opacity="0.35"/>'
            f'<text x="{_num(label_width + w2 + 4)}" y="{y + 24}" font-size="10" fill="#555">'
            f"{escape(b.second_text or _num(b.second or 0.0))}</text></g>"
        )
    out.append("</svg>")
    return Markup("".join(out))


def histogram(bars: Sequence[Bar], *, title: str, width: int = 640, height: int = 220) -> Markup:
    """Vertical bars with the labels underneath (for the mode-frequency distribution)."""
    pad_l, pad_b, pad_t = 40, 24, 18
    n = max(1, len(bars))
    slot = (width - pad_l - 10) / n
    plot_h = height - pad_b - pad_t
    vmax = max((b.value for b in bars), default=0.0) or 1.0
    out = [_open(width, height, title)]
    out.append(
        f'<line x1="{pad_l}" y1="{pad_t + plot_h}" x2="{width - 10}" y2="{pad_t + plot_h}" '
        f'stroke="#999"/>'
    )
    for i, b in enumerate(bars):
        h = plot_h * b.value / vmax
        x = pad_l + i * slot
        bw = max(slot * 0.7, 1.0)
        cx = x + slot / 2
        out.append(
            f'<g class="bar"><title>{escape(b.label)}: {escape(b.text or _num(b.value))}</title>'
            f'<rect x="{_num(x + (slot - bw) / 2)}" y="{_num(pad_t + plot_h - h)}" '
            f'width="{_num(bw)}" height="{_num(h)}" fill="{escape(b.color)}"/>'
            f'<text x="{_num(cx)}" y="{_num(pad_t + plot_h - h - 4)}" text-anchor="middle" '
            f'font-size="10" fill="#333">{escape(b.text or _num(b.value))}</text>'
            f'<text x="{_num(cx)}" y="{pad_t + plot_h + 14}" text-anchor="middle" '
            f'font-size="10" fill="#222">{escape(b.label)}</text></g>'
        )
    out.append("</svg>")
    return Markup("".join(out))


def heatmap(
    matrix: Sequence[Sequence[int]],
    rows: Sequence[str],
    cols: Sequence[str],
    *,
    title: str,
    row_title: str = "",
    col_title: str = "",
    cell: int = 44,
) -> Markup:
    """A count matrix as coloured cells with the counts written in them."""
    left, top = 70, 48
    width = left + cell * len(cols) + 10
    height = top + cell * len(rows) + 10
    vmax = max((v for r in matrix for v in r), default=0) or 1
    out = [_open(width, height, title)]
    if col_title:
        out.append(
            f'<text x="{left + cell * len(cols) / 2}" y="14" text-anchor="middle" '
            f'font-weight="600">{escape(col_title)}</text>'
        )
    if row_title:
        out.append(f'<text x="4" y="{top - 8}" font-weight="600">{escape(row_title)}</text>')
    for j, c in enumerate(cols):
        out.append(
            f'<text x="{left + j * cell + cell / 2}" y="{top - 8}" text-anchor="middle">'
            f"{escape(c)}</text>"
        )
    for i, r in enumerate(rows):
        y = top + i * cell
        out.append(
            f'<text x="{left - 8}" y="{y + cell / 2 + 4}" text-anchor="end">{escape(r)}</text>'
        )
        for j, _c in enumerate(cols):
            v = matrix[i][j]
            alpha = 0.06 + 0.94 * v / vmax if v else 0.0
            fg = "#fff" if alpha > 0.55 else "#222"
            out.append(
                f'<g class="cell"><title>{escape(r)} × {escape(_c)}: {v}</title>'
                f'<rect x="{left + j * cell}" y="{y}" width="{cell - 2}" height="{cell - 2}" '
                f'fill="#c0392b" fill-opacity="{alpha:.3f}" stroke="#ddd"/>'
                f'<text x="{left + j * cell + cell / 2 - 1}" y="{y + cell / 2 + 4}" '
                f'text-anchor="middle" fill="{fg}">{v if v else ""}</text></g>'
            )
    out.append("</svg>")
    return Markup("".join(out))
