"""Inline SVG charts for the HTML report: no JavaScript, no CDN, readable offline.

Two chart shapes cover the report: horizontal before/after bar pairs per group (refusal rates
by category or language) and 100 % stacked bars (strategy distributions).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

BEFORE_COLOUR = "#a0aec0"
AFTER_COLOUR = "#2b6cb0"
STRATEGY_COLOURS = {
    "direct_refusal": "#c53030",
    "explanation_refusal": "#dd6b20",
    "redirection": "#d69e2e",
    "partial_compliance": "#38a169",
    "full_compliance": "#3182ce",
}

_WIDTH = 680
_LABEL_W = 190
_BAR_W = 400
_FONT = 'font-family="system-ui, sans-serif" font-size="11"'


def _pct(value: float) -> str:
    return f"{value * 100:.1f}%"


def _svg(height: int, title: str, body: list[str]) -> str:
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{_WIDTH}" '
        f'height="{height}" viewBox="0 0 {_WIDTH} {height}" {_FONT}>'
        f"<title>{escape(title)}</title>"
        f'<text x="0" y="14" font-size="13" font-weight="600">{escape(title)}</text>'
        + "".join(body)
        + "</svg>"
    )


def paired_bars(
    title: str,
    rows: Sequence[tuple[str, float | None, float | None]],
    legend: tuple[str, str] = ("before", "after"),
) -> str:
    """One row per group with a "before" and an "after" bar; rates are shares in 0..1."""
    top, row_h, bar_h = 44, 28, 10
    height = top + row_h * len(rows) + 24
    body = [
        f'<rect x="{_LABEL_W}" y="22" width="10" height="10" fill="{BEFORE_COLOUR}"/>'
        f'<text x="{_LABEL_W + 14}" y="31">{escape(legend[0])}</text>'
        f'<rect x="{_LABEL_W + 80}" y="22" width="10" height="10" fill="{AFTER_COLOUR}"/>'
        f'<text x="{_LABEL_W + 94}" y="31">{escape(legend[1])}</text>'
    ]
    for tick in (0.0, 0.25, 0.5, 0.75, 1.0):
        x = _LABEL_W + tick * _BAR_W
        body.append(
            f'<line x1="{x:.1f}" y1="{top - 4}" x2="{x:.1f}" y2="{height - 20}" '
            f'stroke="#e2e8f0"/><text x="{x:.1f}" y="{height - 6}" text-anchor="middle" '
            f'fill="#718096">{tick * 100:.0f}%</text>'
        )
    for index, (label, before, after) in enumerate(rows):
        y = top + index * row_h
        body.append(
            f'<text x="{_LABEL_W - 8}" y="{y + bar_h + 4}" text-anchor="end">{escape(label)}</text>'
        )
        for offset, value, colour in ((0, before, BEFORE_COLOUR), (bar_h + 2, after, AFTER_COLOUR)):
            if value is None:
                continue
            width = max(0.0, min(1.0, value)) * _BAR_W
            body.append(
                f'<rect x="{_LABEL_W}" y="{y + offset}" width="{width:.1f}" height="{bar_h}" '
                f'fill="{colour}"><title>{escape(label)}: {_pct(value)}</title></rect>'
                f'<text x="{_LABEL_W + width + 4:.1f}" y="{y + offset + bar_h - 1}" '
                f'fill="#4a5568">{_pct(value)}</text>'
            )
    return _svg(height, title, body)


def stacked_bars(
    title: str,
    rows: Sequence[tuple[str, Mapping[str, float]]],
    colours: Mapping[str, str] = STRATEGY_COLOURS,
) -> str:
    """One 100 % bar per row, split by the shares in ``rows`` (keys and order from ``colours``)."""
    top, row_h, bar_h = 30, 30, 18
    legend_y = top + row_h * len(rows) + 8
    height = legend_y + 22
    body = []
    for index, (label, shares) in enumerate(rows):
        y = top + index * row_h
        body.append(
            f'<text x="{_LABEL_W - 8}" y="{y + bar_h - 5}" text-anchor="end">{escape(label)}</text>'
        )
        x = float(_LABEL_W)
        for key, colour in colours.items():
            share = shares.get(key, 0.0)
            if share <= 0:
                continue
            width = share * _BAR_W
            body.append(
                f'<rect x="{x:.1f}" y="{y}" width="{width:.1f}" height="{bar_h}" fill="{colour}">'
                f"<title>{escape(label)}, {escape(key)}: {_pct(share)}</title></rect>"
            )
            if width > 30:
                body.append(
                    f'<text x="{x + width / 2:.1f}" y="{y + bar_h - 5}" text-anchor="middle" '
                    f'fill="#fff">{share * 100:.0f}%</text>'
                )
            x += width
    x = 0.0
    for key, colour in colours.items():
        body.append(
            f'<rect x="{x:.1f}" y="{legend_y}" width="10" height="10" fill="{colour}"/>'
            f'<text x="{x + 14:.1f}" y="{legend_y + 9}">{escape(key)}</text>'
        )
        x += 14 + 6.3 * len(key) + 16
    return _svg(height, title, body)
