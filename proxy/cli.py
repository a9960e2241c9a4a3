"""The ``guardrail`` command: one typer app, one subcommand per front door."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    name="guardrail",
    help="Detect flat LLM refusals and rewrite them under YAML policies.",
    no_args_is_help=True,
    add_completion=False,
)
policies_app = typer.Typer(help="Work with policy files.", no_args_is_help=True)
app.add_typer(policies_app, name="policies")


@app.command()
def bench(
    mode: Annotated[
        str, typer.Option(help="replay (offline, recorded replies) or live.")
    ] = "replay",
    out: Annotated[
        Path | None, typer.Option(help="Write report.json, report.md and report.html here.")
    ] = None,
    datasets: Annotated[
        list[str] | None,
        typer.Option(
            help="Datasets to use (repeat or comma-separate); default: all the mode can use."
        ),
    ] = None,
    limit: Annotated[
        int | None,
        typer.Option(help="Records per dataset, sampled with --seed (0 = all; live default 100)."),
    ] = None,
    seed: Annotated[
        int, typer.Option(help="Sampling seed; a fixed seed gives the same report.")
    ] = 0,
    model: Annotated[str | None, typer.Option(help="Live mode: any litellm model name.")] = None,
    proxy_url: Annotated[
        str | None, typer.Option(help="Live mode: benchmark a running proxy at this base URL.")
    ] = None,
    proxy_key: Annotated[
        str | None,
        typer.Option(envvar="GUARDRAIL_BENCH_PROXY_KEY", help="API key for --proxy-url."),
    ] = None,
    judge_model: Annotated[
        str | None, typer.Option(help="Add an LLM judge (any litellm model).")
    ] = None,
    concurrency: Annotated[
        int | None, typer.Option(help="Calls in flight (live default 8).")
    ] = None,
    cache: Annotated[
        Path | None,
        typer.Option(
            help="Resumable cache of live replies and judge verdicts (default: in --out)."
        ),
    ] = None,
    policies: Annotated[
        Path | None, typer.Option(help="Policy directory for the pipeline (default: bundled).")
    ] = None,
) -> None:
    """Run the before-and-after benchmark: refusals removed, safety, latency."""
    from rich.console import Console

    from eval.bench import BenchConfig, default_cache_path, main

    names = tuple(n.strip() for item in datasets or () for n in item.split(",") if n.strip())
    config = BenchConfig(
        mode=mode,  # type: ignore[arg-type]  # validated by BenchConfig
        datasets=names or None,
        limit=limit,
        seed=seed,
        model=model,
        proxy_url=proxy_url,
        proxy_api_key=proxy_key,
        judge_model=judge_model,
        concurrency=concurrency,
        cache_path=cache or default_cache_path(out),
        policies=policies,
    )
    raise typer.Exit(main(config, out, Console()))


@app.command()
def serve(
    config: Annotated[
        Path | None,
        typer.Option(
            "--config", help="YAML settings file; GUARDRAIL_* environment variables override it."
        ),
    ] = None,
    host: Annotated[str | None, typer.Option(help="Bind address (default 127.0.0.1).")] = None,
    port: Annotated[int | None, typer.Option(help="Port (default 8000).")] = None,
    workers: Annotated[int, typer.Option(help="uvicorn worker processes.")] = 1,
    log_level: Annotated[
        str, typer.Option(help="critical, error, warning, info or debug.")
    ] = "info",
) -> None:
    """Serve the OpenAI-compatible proxy."""
    from proxy.serve import serve as run

    raise typer.Exit(run(config, host=host, port=port, workers=workers, log_level=log_level))
