"""The ``guardrail`` command: one typer app, one subcommand per front door."""

from __future__ import annotations

import typer

app = typer.Typer(
    name="guardrail",
    help="Detect flat LLM refusals and rewrite them under YAML policies.",
    no_args_is_help=True,
    add_completion=False,
)
policies_app = typer.Typer(help="Work with policy files.", no_args_is_help=True)
app.add_typer(policies_app, name="policies")
