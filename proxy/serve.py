"""``guardrail serve``: check everything that can be checked, then start uvicorn.

Settings and policies are validated before the server binds its port, so a bad configuration is a
one-line message and a non-zero exit rather than a worker crash loop.
"""

from __future__ import annotations

import copy
import os
from pathlib import Path
from typing import Any

import uvicorn
from rich.console import Console

from guardrail import PolicyError
from proxy.app import build_guardrail, create_app
from proxy.config import CONFIG_ENV, ConfigError, load_settings

EXIT_BAD_CONFIG = 2
LOG_LEVELS = ("critical", "error", "warning", "info", "debug")


def serve(
    config_file: Path | None,
    *,
    host: str | None = None,
    port: int | None = None,
    workers: int = 1,
    log_level: str = "info",
    console: Console | None = None,
) -> int:
    """Run the proxy until it is stopped; the exit code for the command line."""
    console = console or Console(stderr=True)
    if log_level not in LOG_LEVELS:
        _refuse(console, f"unknown log level {log_level!r}; use one of {', '.join(LOG_LEVELS)}")
        return EXIT_BAD_CONFIG
    if workers < 1:
        _refuse(console, "--workers must be at least 1")
        return EXIT_BAD_CONFIG
    if config_file is not None:
        # Workers are separate processes: they find the file through the environment.
        os.environ[CONFIG_ENV] = str(config_file.resolve())
    try:
        settings = load_settings(config_file)
    except ConfigError as exc:
        _refuse(console, f"cannot start: {exc}")
        return EXIT_BAD_CONFIG
    try:
        guardrail = build_guardrail(settings)
    except PolicyError as exc:
        _refuse(console, f"cannot start: invalid policy set: {exc}")
        return EXIT_BAD_CONFIG
    except Exception as exc:  # a pipeline that cannot load is as fatal, whatever the cause
        _refuse(console, f"cannot start: the guardrail failed to load: {type(exc).__name__}: {exc}")
        return EXIT_BAD_CONFIG
    options: dict[str, Any] = {
        "host": host or settings.host,
        "port": port or settings.port,
        "timeout_keep_alive": settings.keep_alive_s,
        "log_level": log_level,
        "log_config": _log_config(log_level),
    }
    if workers == 1:
        uvicorn.run(create_app(settings, guardrail), **options)
    else:
        uvicorn.run("proxy.app:app_from_environment", factory=True, workers=workers, **options)
    return 0


def _refuse(console: Console, message: str) -> None:
    console.print(message, style="red", markup=False, highlight=False, soft_wrap=True)


def _log_config(level: str) -> dict[str, Any]:
    """uvicorn's logging, with the guardrail's own loggers beside it in every worker."""
    config = copy.deepcopy(uvicorn.config.LOGGING_CONFIG)
    config["loggers"]["guardrail"] = {
        "handlers": ["default"],
        "level": level.upper(),
        "propagate": False,
    }
    # Access lines are JSON documents: no level prefix, so each line parses as it stands.
    config["formatters"]["guardrail_access"] = {"format": "%(message)s"}
    config["handlers"]["guardrail_access"] = {
        "formatter": "guardrail_access",
        "class": "logging.StreamHandler",
        "stream": "ext://sys.stdout",
    }
    config["loggers"]["guardrail.access"] = {
        "handlers": ["guardrail_access"],
        "level": level.upper(),
        "propagate": False,
    }
    return config
