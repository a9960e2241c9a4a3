"""The benchmark report: one dict, written as JSON, Markdown and self-contained HTML.

``report.json`` schema (``schema_version`` 1). A *rate pair* is
``{"before": Rates | null, "after": Rates | null}`` where ``Rates`` is
``{"n", "refusal_rate", "full_refusal_rate", "flat_refusal_rate"}``: ``refusal_rate`` counts full
and partial refusals (XSTest's sense), ``flat_refusal_rate`` counts the strategies direct refusal,
explanation-based refusal and redirection (``null`` for judges that do not name strategies).
Rates are shares in 0..1 over the ``n`` replies that judge graded; a judge that cannot grade a
side (human labels exist only for recorded "before" replies) gives ``null``.

- ``config``: mode, datasets, ``limit_per_dataset``, seed, model, proxy_url, judge_model,
  concurrency, cache, ``sampling`` (per dataset: ``available``, ``used``), ``reply_origin``
  (per dataset: ``recorded`` or ``authored``), ``notes``.
- ``judges``: per judge name: ``title``, ``source``, ``sides``, ``gives_strategy``,
  ``gives_patterns``, ``notes``, ``available`` (and ``reason`` when not), and
  ``agreement_with_human`` (binary precision, recall, F1, accuracy and 3-way accuracy against
  the human labels on the "before" replies that have them).
- ``summary``: ``{judge: rate pair}`` over every reply.
- ``by_expected``, ``by_dataset``, ``by_category``, ``by_language``, ``by_source_model``:
  ``{group: {"n": int, "judges": {judge: rate pair}}}``.
- ``strategies``: ``{judge: {"before"|"after": {"n", "shares": {strategy: share}}}}``.
- ``safety``: on harmful requests: ``n``, ``actionable_detail_rate`` (``before``, ``after``,
  ``rose``, ``check``), ``strategies`` and ``refusals`` per judge.
- ``emotional``: ``n`` and, per judge that reports patterns, per language (and ``all``):
  ``{"before"|"after": {"acknowledgment", "boundary_setting", "emotional_awareness",
  "all_three", "n"}}``.
- ``latency``: ``added`` (``n``, ``median_ms``, ``p95_ms``, ``mean_ms``, ``max_ms``) and
  ``by_action``: the time the guardrail adds per reply.
- ``cost``: ``rewrite_tokens`` (``prompt``, ``completion``, ``total``, ``per_changed_reply``),
  ``changed_replies``, counts of ``actions`` and ``policies``.
- ``failures``: ``count``, ``by_stage``, ``examples``; ``judge_failures`` per judge.
- ``run``: ``duration_s``, ``records`` and ``cache_entries_at_start``; the only part that
  varies between identical runs, together with the latency figures.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from eval import metrics
from eval.judges import JudgeInfo
from eval.metrics import Judged
from eval.runners import Failure
from eval.svg import paired_bars, stacked_bars

SCHEMA_VERSION = 1

_GROUPINGS: dict[str, Callable[[Judged], str]] = {
    "by_expected": lambda item: str(item.outcome.record.expected or "unknown"),
    "by_dataset": lambda item: item.outcome.record.dataset,
    "by_category": lambda item: item.outcome.record.category,
    "by_language": lambda item: item.outcome.record.lang,
    "by_source_model": lambda item: item.outcome.record.source_model or "-",
}


def build_report(
    *,
    config: Mapping[str, Any],
    judged: Sequence[Judged],
    panel_infos: Sequence[JudgeInfo],
    unavailable: Mapping[str, str],
    actionability: bool,
    failures: Sequence[Failure],
    judge_failures: Mapping[str, int],
    run: Mapping[str, Any],
) -> dict[str, Any]:
    """Assemble every figure of one run into the report dict described in this module."""
    names = [info.name for info in panel_infos]
    strategy_judges = [info.name for info in panel_infos if info.gives_strategy]
    pattern_judges = [info.name for info in panel_infos if info.gives_patterns]
    judges: dict[str, Any] = {
        info.name: {
            "title": info.title,
            "source": info.source,
            "sides": list(info.sides),
            "gives_strategy": info.gives_strategy,
            "gives_patterns": info.gives_patterns,
            "notes": list(info.notes),
            "available": True,
            "agreement_with_human": None
            if info.name == "human"
            else metrics.agreement(judged, info.name),
        }
        for info in panel_infos
    }
    for name, reason in unavailable.items():
        judges[name] = {"available": False, "reason": reason}
    report: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "config": dict(config),
        "judges": judges,
        "summary": metrics.compare(judged, names),
    }
    for key, grouping in _GROUPINGS.items():
        report[key] = metrics.group_by(judged, grouping, names)
    report["strategies"] = metrics.strategies(judged, strategy_judges)
    report["safety"] = metrics.safety(
        judged, strategy_judges, "guardrail.rewriting.actionability" if actionability else None
    )
    report["emotional"] = metrics.emotional(judged, pattern_judges)
    report["latency"] = metrics.latency(judged)
    report["cost"] = metrics.cost(judged)
    report["failures"] = {
        "count": len(failures),
        "by_stage": dict(sorted(Counter(f.stage for f in failures).items())),
        "examples": [
            {"dataset": f.record.dataset, "id": f.record.id, "stage": f.stage, "message": f.message}
            for f in failures[:10]
        ],
    }
    report["judge_failures"] = dict(judge_failures)
    report["run"] = {**run, "records": len(judged)}
    return report


# --- shared formatting -----------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value * 100:.1f}%"


def _pair(pair: Mapping[str, Any] | None, field: str) -> str:
    if not pair:
        return "–"
    before, after = pair.get("before"), pair.get("after")
    left = _pct(before.get(field)) if before else "–"
    right = _pct(after.get(field)) if after else "–"
    return f"{left} → {right}"


def _n(pair: Mapping[str, Any] | None) -> str:
    if not pair:
        return "0"
    sides = [pair.get("before"), pair.get("after")]
    return str(max((side["n"] for side in sides if side), default=0))


def _available_judges(report: Mapping[str, Any]) -> list[str]:
    return [name for name, info in report["judges"].items() if info.get("available")]


def _title(report: Mapping[str, Any], judge: str) -> str:
    return str(report["judges"][judge].get("title", judge))


def headline_rows(report: Mapping[str, Any]) -> list[list[str]]:
    """Per judge and request group: refusal, full-refusal and flat-refusal rates before → after."""
    rows = []
    groups = [("all", report["summary"])]
    for expected, label in (
        ("should_comply", "should comply"),
        ("should_refuse", "should decline"),
        ("warm_boundary", "emotional"),
    ):
        group = report["by_expected"].get(expected)
        if group:
            groups.append((label, group["judges"]))
    for judge in _available_judges(report):
        for label, by_judge in groups:
            pair = by_judge.get(judge)
            if not pair or not (pair.get("before") or pair.get("after")):
                continue
            rows.append(
                [
                    judge,
                    label,
                    _n(pair),
                    _pair(pair, "refusal_rate"),
                    _pair(pair, "full_refusal_rate"),
                    _pair(pair, "flat_refusal_rate"),
                ]
            )
    return rows


HEADLINE_COLUMNS = ["judge", "requests", "n", "refusal", "full refusal", "flat refusal"]


def _latency_line(report: Mapping[str, Any]) -> str:
    added = report["latency"]["added"]
    if not added:
        return "no latency measured"
    return (
        f"added latency per reply: median {added['median_ms']:.2f} ms, "
        f"p95 {added['p95_ms']:.2f} ms (n={added['n']})"
    )


def _safety_line(report: Mapping[str, Any]) -> str:
    rate = report["safety"]["actionable_detail_rate"]
    if rate["check"] is None:
        return "actionable-detail rate on harmful requests: not measured (no actionability check)"
    verdict = "did not rise" if rate["rose"] is False else "ROSE" if rate["rose"] else "n/a"
    return (
        f"actionable-detail rate on harmful requests (n={report['safety']['n']}): "
        f"{_pct(rate['before'])} → {_pct(rate['after'])} ({verdict})"
    )


# --- terminal --------------------------------------------------------------------------------


def print_summary(console: Console, report: Mapping[str, Any]) -> None:
    """The headline table and the safety, latency and cost lines."""
    table = Table(title="Refusals before → after the guardrail")
    for column in HEADLINE_COLUMNS:
        table.add_column(column, justify="right" if column == "n" else "left")
    for row in headline_rows(report):
        table.add_row(*row)
    console.print(table)
    for name, info in report["judges"].items():
        if not info.get("available"):
            console.print(f"[dim]judge {name} not used: {info['reason']}[/dim]")
    console.print(_safety_line(report))
    console.print(_latency_line(report))
    cost = report["cost"]
    console.print(f"changed replies: {cost['changed_replies']}; actions: {cost['actions']}")
    if report["failures"]["count"]:
        console.print(f"[yellow]failures: {report['failures']['by_stage']}[/yellow]")


# --- Markdown --------------------------------------------------------------------------------


def _md_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return [*lines, ""]


def _group_rows(report: Mapping[str, Any], key: str) -> list[list[str]]:
    rows = []
    for group, data in report[key].items():
        for judge in _available_judges(report):
            pair = data["judges"].get(judge)
            if pair and (pair.get("before") or pair.get("after")):
                rows.append(
                    [
                        group,
                        judge,
                        _n(pair),
                        _pair(pair, "refusal_rate"),
                        _pair(pair, "full_refusal_rate"),
                        _pair(pair, "flat_refusal_rate"),
                    ]
                )
    return rows


_GROUP_COLUMNS = ["group", "judge", "n", "refusal", "full refusal", "flat refusal"]
_SECTIONS = (
    ("by_dataset", "By dataset"),
    ("by_category", "By request category"),
    ("by_language", "By language"),
    ("by_source_model", "By source model"),
)


def _strategy_rows(strategies: Mapping[str, Any], report: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for judge, sides in strategies.items():
        for side in ("before", "after"):
            dist = sides.get(side)
            if dist:
                rows.append(
                    [judge, side, str(dist["n"])]
                    + [_pct(share) for share in dist["shares"].values()]
                )
    return rows


_STRATEGY_COLUMNS = [
    "judge",
    "side",
    "n",
    "direct refusal",
    "explanation",
    "redirection",
    "partial compliance",
    "full compliance",
]


def _emotional_rows(report: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for judge, by_lang in report["emotional"]["judges"].items():
        for lang, sides in by_lang.items():
            for side in ("before", "after"):
                shares = sides.get(side)
                if shares:
                    rows.append(
                        [judge, lang, side, str(shares["n"])]
                        + [
                            _pct(shares[key])
                            for key in (
                                "acknowledgment",
                                "boundary_setting",
                                "emotional_awareness",
                                "all_three",
                            )
                        ]
                    )
    return rows


_EMOTIONAL_COLUMNS = [
    "judge",
    "language",
    "side",
    "n",
    "acknowledgment",
    "boundary setting",
    "emotional awareness",
    "all three",
]


def _judge_rows(report: Mapping[str, Any]) -> list[list[str]]:
    rows = []
    for name, info in report["judges"].items():
        if not info.get("available"):
            rows.append([name, "not used", info["reason"], "–"])
            continue
        agreement = info.get("agreement_with_human")
        agree = (
            f"F1 {agreement['f1']:.3f}, P {agreement['precision']:.3f}, "
            f"R {agreement['recall']:.3f} (n={agreement['n']})"
            if agreement
            else "–"
        )
        rows.append([name, info["title"], info["source"], agree])
    return rows


def to_markdown(report: Mapping[str, Any]) -> str:
    config = report["config"]
    lines = [
        "# guardrail bench report",
        "",
        f"Mode `{config['mode']}`, seed {config['seed']}, "
        f"datasets: {', '.join(config['datasets'])}.",
        "",
        *[f"- {note}" for note in config["notes"]],
        "",
        "## Headline",
        "",
        *_md_table(HEADLINE_COLUMNS, headline_rows(report)),
        f"- {_safety_line(report)}",
        f"- {_latency_line(report)}",
        "",
        "## Judges",
        "",
        *_md_table(
            ["judge", "title", "source", "agreement with human labels"], _judge_rows(report)
        ),
    ]
    for key, title in _SECTIONS:
        lines += [f"## {title}", "", *_md_table(_GROUP_COLUMNS, _group_rows(report, key))]
    lines += [
        "## Strategy distribution",
        "",
        *_md_table(_STRATEGY_COLUMNS, _strategy_rows(report["strategies"], report)),
        "## Safety: harmful requests",
        "",
        f"{report['safety']['n']} harmful requests. {_safety_line(report)}.",
        "",
        *_md_table(_STRATEGY_COLUMNS, _strategy_rows(report["safety"]["strategies"], report)),
        "## Emotional attachment",
        "",
        *_md_table(_EMOTIONAL_COLUMNS, _emotional_rows(report)),
        "## Cost",
        "",
        f"- {_latency_line(report)}",
        f"- rewrite tokens: {report['cost']['rewrite_tokens']}",
        f"- actions: {report['cost']['actions']}",
        f"- policies: {report['cost']['policies']}",
        "",
        "## Data",
        "",
        *_md_table(
            ["dataset", "available", "used", "reply"],
            [
                [
                    name,
                    str(s["available"]),
                    str(s["used"]),
                    config["reply_origin"].get(name, "live"),
                ]
                for name, s in config["sampling"].items()
            ],
        ),
    ]
    return "\n".join(lines)


# --- HTML ------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;color:#1a202c}
table{border-collapse:collapse;margin:1em 0;font-size:13px}
th,td{border:1px solid #e2e8f0;padding:4px 8px;text-align:left}
th{background:#f7fafc}
svg{display:block;margin:1.5em 0}
.note{color:#4a5568}
"""


def _html_table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(cell)}</td>" for cell in row) + "</tr>" for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _rate_chart(report: Mapping[str, Any], key: str, judge: str, title: str) -> str | None:
    rows = []
    for group, data in report[key].items():
        pair = data["judges"].get(judge) or {}
        before, after = pair.get("before"), pair.get("after")
        if before or after:
            graded = max(side["n"] for side in (before, after) if side)
            rows.append(
                (
                    f"{group} (n={graded})",
                    before["refusal_rate"] if before else None,
                    after["refusal_rate"] if after else None,
                )
            )
    return paired_bars(f"{title}: {_title(report, judge)}", rows) if rows else None


def charts(report: Mapping[str, Any]) -> list[str]:
    """Every chart of the report as inline SVG."""
    out = []
    after_judges = [
        name
        for name in _available_judges(report)
        if "after" in report["judges"][name].get("sides", [])
    ]
    for judge in after_judges:
        for key, title in (
            ("by_category", "Refusal rate by request category"),
            ("by_language", "Refusal rate by language"),
        ):
            chart = _rate_chart(report, key, judge, title)
            if chart:
                out.append(chart)
    for judge, sides in report["strategies"].items():
        rows = [
            (f"{side} (n={dist['n']})", dist["shares"])
            for side in ("before", "after")
            if (dist := sides.get(side))
        ]
        if rows:
            out.append(stacked_bars(f"Strategy distribution: {_title(report, judge)}", rows))
    return out


def to_html(report: Mapping[str, Any]) -> str:
    config = report["config"]
    notes = "".join(f"<li>{escape(note)}</li>" for note in config["notes"])
    sections = "".join(
        f"<h2>{escape(title)}</h2>" + _html_table(_GROUP_COLUMNS, _group_rows(report, key))
        for key, title in _SECTIONS
    )
    return (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        f"<title>guardrail bench report</title><style>{_CSS}</style></head><body>"
        "<h1>guardrail bench report</h1>"
        f"<p class='note'>Mode <code>{escape(config['mode'])}</code>, seed {config['seed']}, "
        f"datasets: {escape(', '.join(config['datasets']))}.</p><ul>{notes}</ul>"
        "<h2>Headline</h2>"
        + _html_table(HEADLINE_COLUMNS, headline_rows(report))
        + f"<p>{escape(_safety_line(report))}</p><p>{escape(_latency_line(report))}</p>"
        + "<h2>Charts</h2>"
        + "".join(charts(report))
        + "<h2>Judges</h2>"
        + _html_table(
            ["judge", "title", "source", "agreement with human labels"], _judge_rows(report)
        )
        + sections
        + "<h2>Strategy distribution</h2>"
        + _html_table(_STRATEGY_COLUMNS, _strategy_rows(report["strategies"], report))
        + "<h2>Safety: harmful requests</h2>"
        + _html_table(_STRATEGY_COLUMNS, _strategy_rows(report["safety"]["strategies"], report))
        + "<h2>Emotional attachment</h2>"
        + _html_table(_EMOTIONAL_COLUMNS, _emotional_rows(report))
        + "</body></html>"
    )


def write_reports(report: Mapping[str, Any], out_dir: Path) -> list[Path]:
    """Write ``report.json``, ``report.md`` and ``report.html`` into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {
        "report.json": json.dumps(report, indent=2, ensure_ascii=False) + "\n",
        "report.md": to_markdown(report) + "\n",
        "report.html": to_html(report) + "\n",
    }
    paths = []
    for name, text in files.items():
        path = out_dir / name
        path.write_text(text, encoding="utf-8")
        paths.append(path)
    return paths
