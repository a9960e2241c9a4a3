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
    proxy_model: Annotated[
        str | None,
        typer.Option(help="Model name to send the proxy (default: --model minus its provider/)."),
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
        proxy_model=proxy_model,
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


@app.command()
def detect(
    input_path: Annotated[
        Path, typer.Option("--input", help="JSONL: one object per line with prompt and response.")
    ],
    output_path: Annotated[
        Path, typer.Option("--output", help="JSONL with detection fields added to each line.")
    ],
    batch_size: Annotated[int, typer.Option(help="Replies embedded together.")] = 64,
    embeddings: Annotated[
        bool, typer.Option(help="Use the embedding head for replies the rules are unsure of.")
    ] = True,
) -> None:
    """Label replies: is_refusal, score, strategy, label3, patterns, lang."""
    from guardrail.detection import BatchError, Detector, DetectorConfig, detect_file

    detector = Detector(DetectorConfig(use_embeddings=embeddings))
    try:
        count = detect_file(input_path, output_path, detector=detector, batch_size=batch_size)
    except BatchError as error:
        typer.echo(f"error: {error}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"{count} replies labelled: {output_path}", err=True)


@policies_app.command("check")
def policies_check(
    directory: Annotated[Path, typer.Argument(help="Directory of policy files (*.yaml).")],
) -> None:
    """Validate a policy directory; print every problem as file:line: field: message."""
    from guardrail.policies import PolicyError, load_policies

    try:
        policy_set = load_policies(directory)
    except PolicyError as error:
        for problem in error.problems:
            typer.echo(str(problem), err=True)
        count = len(error.problems)
        typer.echo(f"{count} problem{'s' if count != 1 else ''}", err=True)
        raise typer.Exit(1) from None
    languages = ", ".join(sorted(policy_set.templates))
    typer.echo(
        f"{directory}: {len(policy_set.policies)} policies, {len(policy_set.categories)} "
        f"categories, templates in {languages}: OK"
    )


@app.command("hash-key")
def hash_key(
    key: Annotated[
        str | None,
        typer.Argument(help="The key; read from standard input when omitted (no shell history)."),
    ] = None,
) -> None:
    """Print a key's sha256: form, to list in GUARDRAIL_API_KEYS or metrics_keys instead."""
    import sys

    from proxy.auth import hash_key as digest_form

    if key is None:
        key = typer.prompt("key", hide_input=True) if sys.stdin.isatty() else sys.stdin.readline()
    key = key.strip()
    if not key:
        typer.echo("error: the key is empty", err=True)
        raise typer.Exit(2)
    typer.echo(digest_form(key))


@app.command()
def explain(
    prompt: Annotated[str, typer.Option(help="The user's request.")],
    response: Annotated[str, typer.Option(help="The assistant's reply to review.")],
    policies: Annotated[
        Path | None, typer.Option(help="Policy directory (default: bundled).")
    ] = None,
    model: Annotated[
        str | None, typer.Option(help="The request's model (for model globs and rewrites).")
    ] = None,
    client_key: Annotated[str | None, typer.Option(help="Client key id for matching.")] = None,
    embeddings: Annotated[
        bool, typer.Option(help="Use sentence embeddings for categories.")
    ] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print the decision as JSON.")] = False,
) -> None:
    """Show how one reply is reviewed: detection, categories, the policy and why, the rewrite."""
    import asyncio
    import json

    from rich.console import Console

    from guardrail import Guardrail
    from guardrail.policies import PolicyError
    from guardrail.settings import GuardrailSettings
    from proxy.explain_view import render_trace

    settings = GuardrailSettings(policy_reload_seconds=None, embeddings=embeddings)
    if policies is not None:
        settings = settings.model_copy(update={"policies_dir": policies})
    try:
        guardrail = Guardrail.from_settings(settings)
    except PolicyError as error:
        typer.echo(str(error), err=True)
        raise typer.Exit(1) from None
    messages = [{"role": "user", "content": prompt}]
    trace = asyncio.run(guardrail.trace(messages, response, model=model, client_key=client_key))
    if as_json:
        typer.echo(json.dumps(trace.decision.to_dict(), ensure_ascii=False, indent=2))
        return
    render_trace(Console(), trace)
