"""Rich rendering of a review trace for ``guardrail explain``."""

from __future__ import annotations

from rich.console import Console
from rich.panel import Panel
from rich.table import Table

from guardrail.pipeline import Trace

TOP_CATEGORIES = 6


def render_trace(console: Console, trace: Trace) -> None:
    detection, decision = trace.detection, trace.decision
    head = Table.grid(padding=(0, 2))
    head.add_row("refusal", f"{detection.is_refusal} (score {detection.score:.2f})")
    head.add_row("strategy", f"{detection.strategy.value}  label3 {detection.label3.value}")
    head.add_row("language", f"reply {detection.lang}, request {trace.lang}")
    head.add_row("decided by", detection.decided_by)
    for evidence in detection.patterns:
        head.add_row(f"[dim]{evidence.pattern.value}[/]", f"[dim]{evidence.sentence}[/]")
    console.print(Panel(head, title="Detection", expand=False))

    if trace.evidence is not None:
        table = Table(title="Categories", show_edge=False)
        for column in ("category", "score", "embedding", "keywords"):
            table.add_column(column)
        for score in trace.evidence.scores[:TOP_CATEGORIES]:
            embedding = trace.evidence.embedding.get(score.name)
            table.add_row(
                score.name,
                f"{score.score:.2f}",
                f"{embedding:.2f}" if embedding is not None else "-",
                ", ".join(trace.evidence.keywords.get(score.name, ())),
            )
        console.print(table)
    else:
        console.print("[dim]Categories: not needed (the reply is not a refusal).[/]")

    if trace.selection is not None:
        table = Table(title="Policies (in matching order)", show_edge=False)
        for column in ("", "policy", "priority", "why"):
            table.add_column(column)
        for check in trace.selection.checks:
            mark = "[green]✓[/]" if check.matched else "[red]✗[/]"
            table.add_row(mark, check.policy, str(check.priority), "; ".join(check.reasons))
        console.print(table)

    summary = Table.grid(padding=(0, 2))
    summary.add_row("action", f"[bold]{decision.action.value}[/]")
    summary.add_row("policy", decision.policy or "-")
    summary.add_row("source", trace.source or "-")
    summary.add_row("reason", decision.reason)
    for problem in trace.problems:
        summary.add_row("[yellow]rejected[/]", problem)
    if decision.usage.total_tokens:
        summary.add_row("rewrite tokens", str(decision.usage.total_tokens))
    summary.add_row("timings", ", ".join(f"{k} {v:.1f} ms" for k, v in decision.timings_ms.items()))
    console.print(Panel(summary, title="Decision", expand=False))
    if decision.text is not None:
        console.print(Panel(decision.text, title="Rewrite"))
    if decision.after is not None:
        console.print(
            f"[dim]after: refusal {decision.after.is_refusal}, "
            f"strategy {decision.after.strategy.value}[/]"
        )
