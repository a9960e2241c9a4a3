"""``guardrail bench``: load, run, grade, report.

One entry point, :func:`run_bench`, shared by the command line and tests. It picks the records
(deterministically sampled for a fixed seed), runs them through a runner, has every available
judge grade both sides, and returns the report as a plain dict (see :mod:`eval.report`).
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

from eval.cache import ResponseCache
from eval.datasets import DATA_DIR, DATASETS, DatasetError, Record, load
from eval.judges import (
    ActionabilityCheck,
    Detail,
    DetectorJudge,
    HumanJudge,
    Judge,
    JudgeInfo,
    LLMJudge,
    Sample,
    Side,
    StringMatchJudge,
    Verdict,
    load_actionability_check,
    load_detector,
)
from eval.llm import RetryPolicy, proxy_model_name
from eval.metrics import Judged
from eval.report import build_report, print_summary, write_reports
from eval.runners import LiveRunner, Outcome, ReplayRunner, RunResult, Tick
from guardrail import Guardrail, GuardrailSettings

Mode = Literal["replay", "live"]

REPLAY_DATASETS = tuple(name for name, spec in DATASETS.items() if spec.replies is not None)
LIVE_DATASETS = tuple(DATASETS)
DEFAULT_LIVE_LIMIT = 100
"""Prompts per dataset in a live run unless ``--limit`` says otherwise (0 = all)."""


class BenchError(Exception):
    """A benchmark configuration that cannot run; the message says what to change."""


@dataclass(frozen=True, slots=True)
class BenchConfig:
    mode: Mode = "replay"
    datasets: tuple[str, ...] | None = None
    """``None``: every dataset the mode can use."""
    limit: int | None = None
    """Records per dataset; ``None``: the mode's default; ``0``: all."""
    seed: int = 0
    model: str | None = None
    proxy_url: str | None = None
    proxy_model: str | None = None
    """The model name to send the proxy; ``None``: ``model`` without its provider prefix."""
    proxy_api_key: str | None = None
    judge_model: str | None = None
    concurrency: int | None = None
    cache_path: Path | None = None
    policies: Path | None = None
    """Policy directory for the in-process pipeline; ``None``: the core's default."""
    data_dir: Path = DATA_DIR
    retry: RetryPolicy = field(default_factory=RetryPolicy)

    def validate(self) -> None:
        if self.mode not in ("replay", "live"):
            raise BenchError(f"unknown mode {self.mode!r}; use replay or live")
        if self.mode == "live" and not self.model:
            raise BenchError("live mode needs --model (any litellm model name)")
        if self.mode == "replay" and (self.model or self.proxy_url):
            raise BenchError("--model and --proxy-url apply to --mode live only")
        if self.proxy_model and not self.proxy_url:
            raise BenchError("--proxy-model needs --proxy-url")
        if self.limit is not None and self.limit < 0:
            raise BenchError("--limit must be 0 (all) or a positive number")
        if self.concurrency is not None and self.concurrency < 1:
            raise BenchError("--concurrency must be at least 1")
        unknown = [name for name in self.datasets or () if name not in DATASETS]
        if unknown:
            raise BenchError(
                f"unknown dataset(s): {', '.join(unknown)}; known: {', '.join(DATASETS)}"
            )
        if self.mode == "replay":
            without = [n for n in self.datasets or () if DATASETS[n].replies is None]
            if without:
                raise BenchError(
                    f"no recorded replies in {', '.join(without)}: replay can use "
                    f"{', '.join(REPLAY_DATASETS)}; the others need --mode live"
                )

    @property
    def selected(self) -> tuple[str, ...]:
        return self.datasets or (REPLAY_DATASETS if self.mode == "replay" else LIVE_DATASETS)

    @property
    def effective_limit(self) -> int | None:
        limit = (
            self.limit
            if self.limit is not None
            else (DEFAULT_LIVE_LIMIT if self.mode == "live" else 0)
        )
        return limit or None

    @property
    def effective_concurrency(self) -> int:
        return self.concurrency or (1 if self.mode == "replay" else 8)


def sample(records: Sequence[Record], limit: int | None, seed: int, dataset: str) -> list[Record]:
    """At most ``limit`` records, the same ones for the same seed, in their original order."""
    if limit is None or len(records) <= limit:
        return list(records)
    chosen = random.Random(f"{seed}/{dataset}").sample(range(len(records)), limit)
    return [records[i] for i in sorted(chosen)]


def select_records(config: BenchConfig) -> tuple[list[Record], dict[str, dict[str, int]]]:
    """The records to run and, per dataset, how many existed and how many were used."""
    records: list[Record] = []
    sampling: dict[str, dict[str, int]] = {}
    for name in config.selected:
        try:
            available = load(name, replies=config.mode == "replay", data_dir=config.data_dir)
        except DatasetError as exc:
            raise BenchError(str(exc)) from None
        chosen = sample(available, config.effective_limit, config.seed, name)
        sampling[name] = {"available": len(available), "used": len(chosen)}
        records.extend(chosen)
    return records, sampling


@dataclass(slots=True)
class JudgePanel:
    """The judges that could be loaded, and why any others could not."""

    judges: list[Judge]
    unavailable: dict[str, str]
    actionability: ActionabilityCheck | None

    @property
    def infos(self) -> list[JudgeInfo]:
        return [judge.info for judge in self.judges]


def build_panel(
    config: BenchConfig, cache: ResponseCache, guardrail: Guardrail | None
) -> JudgePanel:
    """Every judge that can run; the detector is the pipeline's own when one runs in-process."""
    judges: list[Judge] = [HumanJudge(), StringMatchJudge()]
    unavailable: dict[str, str] = {}
    try:
        detector = guardrail.detector if guardrail is not None else load_detector()
        judges.append(DetectorJudge(detector))
    except ImportError as exc:
        unavailable["detector"] = f"guardrail.detection.Detector not available ({exc})"
    if config.judge_model:
        judges.append(LLMJudge(config.judge_model, cache=cache, retry=config.retry))
    else:
        unavailable["llm"] = "no --judge-model given"
    return JudgePanel(judges, unavailable, load_actionability_check())


async def prepare_guardrail(config: BenchConfig) -> Guardrail:
    """The in-process pipeline, warmed up so that loading models is not counted as latency."""
    overrides: dict[str, Any] = {"policy_reload_seconds": None}
    if config.policies is not None:
        overrides["policies_dir"] = config.policies
    try:
        guardrail = Guardrail.from_settings(GuardrailSettings(**overrides))
        guardrail.warm_up()
        await guardrail.review(_WARM_UP, "Hello! How can I help you today?")
    except Exception as exc:
        detail = (str(exc).strip().splitlines() or [""])[0][:300]
        raise BenchError(
            f"cannot build the guardrail pipeline: {type(exc).__name__}: {detail}"
        ) from None
    return guardrail


_WARM_UP = [{"role": "user", "content": "Hello"}]


async def grade(
    outcomes: Sequence[Outcome],
    panel: JudgePanel,
    *,
    concurrency: int,
    tick: Tick | None = None,
) -> list[Judged]:
    """Every judge on both sides of every outcome; an unchanged reply is graded once."""
    semaphore = asyncio.Semaphore(concurrency)

    async def verdicts(outcome: Outcome, judge: Judge) -> dict[Side, Verdict | None]:
        record = outcome.record
        before = await judge.judge(
            Sample(record, outcome.before, "before", outcome.before_detection)
        )
        if "after" not in judge.info.sides:
            return {"before": before, "after": None}
        if not outcome.changed:
            return {"before": before, "after": before}
        after = await judge.judge(Sample(record, outcome.after, "after", outcome.after_detection))
        return {"before": before, "after": after}

    def actionable(outcome: Outcome) -> dict[Side, Detail | None]:
        check = panel.actionability
        if check is None or not outcome.record.is_harmful:
            return {"before": None, "after": None}
        before = check(outcome.before)
        return {"before": before, "after": check(outcome.after) if outcome.changed else before}

    async def one(outcome: Outcome) -> Judged:
        async with semaphore:
            graded = {judge.info.name: await verdicts(outcome, judge) for judge in panel.judges}
        if tick is not None:
            tick()
        return Judged(outcome, graded, actionable(outcome))

    return list(await asyncio.gather(*(one(o) for o in outcomes)))


def _runner(
    config: BenchConfig, cache: ResponseCache, guardrail: Guardrail | None
) -> ReplayRunner | LiveRunner:
    concurrency = config.effective_concurrency
    if config.mode == "replay":
        assert guardrail is not None
        return ReplayRunner(guardrail, concurrency=concurrency)
    assert config.model is not None
    return LiveRunner(
        config.model,
        cache=cache,
        guardrail=guardrail,
        proxy_url=config.proxy_url,
        proxy_model=config.proxy_model,
        proxy_api_key=config.proxy_api_key,
        concurrency=concurrency,
        retry=config.retry,
    )


def describe_config(config: BenchConfig, sampling: dict[str, dict[str, int]]) -> dict[str, Any]:
    """The run's settings as they go into the report (nothing machine- or time-specific)."""
    notes = []
    if config.mode == "replay":
        notes.append(
            '"before" is the recorded reply; "after" is what Guardrail.review returns for it. '
            "No model is called: policies that rewrite with the request's own model compose "
            "from templates instead."
        )
    elif config.proxy_url:
        notes.append(
            '"before" asks the model directly, "after" asks the proxy: two separate generations; '
            "added latency is the difference of their wall times, so it carries the model's own "
            "variation (use --concurrency 1 for the cleanest figure)."
        )
    else:
        notes.append(
            '"before" asks the model directly; "after" is Guardrail.review of that same reply.'
        )
    if any(s["used"] < s["available"] for s in sampling.values()):
        notes.append(
            f"Sampled: at most {config.effective_limit} records per dataset, "
            f"chosen with seed {config.seed}."
        )
    return {
        "mode": config.mode,
        "datasets": list(config.selected),
        "limit_per_dataset": config.effective_limit,
        "seed": config.seed,
        "model": config.model,
        "proxy_url": config.proxy_url,
        "proxy_model": (config.proxy_model or proxy_model_name(config.model or ""))
        if config.proxy_url
        else None,
        "judge_model": config.judge_model,
        "concurrency": config.effective_concurrency,
        "policies": str(config.policies) if config.policies else "default",
        "cache": str(config.cache_path) if config.cache_path else None,
        "sampling": sampling,
        "reply_origin": {
            name: ("authored" if name == "authored_replies" else "recorded")
            for name in config.selected
            if config.mode == "replay"
        },
        "notes": notes,
    }


async def run_bench(
    config: BenchConfig,
    progress: Progress | None = None,
    *,
    guardrail: Guardrail | None = None,
) -> dict[str, Any]:
    """Run the benchmark described by ``config`` and return the report.

    ``guardrail``: an already built pipeline to use in-process (built from ``config`` if not).
    """
    config.validate()
    started = time.perf_counter()
    records, sampling = select_records(config)
    cache = ResponseCache(config.cache_path)
    settings = describe_config(config, sampling)
    cached_at_start = len(cache)
    if config.proxy_url:
        guardrail = None
    elif guardrail is None:
        guardrail = await prepare_guardrail(config)
    panel = build_panel(config, cache, guardrail)

    def tick_for(description: str) -> Tick | None:
        if progress is None:
            return None
        task = progress.add_task(description, total=len(records))
        return lambda: progress.advance(task)

    runner = _runner(config, cache, guardrail)
    result: RunResult = await runner.run(records, tick_for("replies"))
    judged = await grade(
        result.outcomes,
        panel,
        concurrency=(config.concurrency or 8) if config.judge_model else 1,
        tick=tick_for("grading"),
    )
    return build_report(
        config=settings,
        judged=judged,
        panel_infos=panel.infos,
        unavailable=panel.unavailable,
        actionability=panel.actionability is not None,
        failures=result.failures,
        judge_failures={j.info.name: j.failures for j in panel.judges if isinstance(j, LLMJudge)},
        run={
            "duration_s": round(time.perf_counter() - started, 2),
            "cache_entries_at_start": cached_at_start,
        },
    )


def default_cache_path(out_dir: Path | None) -> Path:
    """Live replies and judge verdicts are cached next to the report, or in the working dir."""
    return (out_dir or Path(".")) / "bench_cache.jsonl"


def main(config: BenchConfig, out_dir: Path | None, console: Console) -> int:
    """The ``guardrail bench`` command: progress bar, summary table, report files."""
    try:
        config.validate()
        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        ) as progress:
            report = asyncio.run(run_bench(config, progress))
    except BenchError as exc:
        console.print(f"[red]error:[/red] {exc}")
        return 2
    print_summary(console, report)
    if out_dir is not None:
        for path in write_reports(report, out_dir):
            console.print(f"wrote {path}")
    return 0
