"""guardrail serve: refuse bad configuration before binding, then hand over to uvicorn."""

from __future__ import annotations

from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from proxy_doubles import ScriptedGuardrail
from rich.console import Console
from typer.testing import CliRunner

from proxy import serve as serve_module
from proxy.cli import app
from proxy.config import CONFIG_ENV


@pytest.fixture
def runs(monkeypatch) -> list[tuple[Any, dict[str, Any]]]:
    calls: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(
        serve_module.uvicorn, "run", lambda target, **kw: calls.append((target, kw))
    )
    monkeypatch.delenv("GUARDRAIL_UPSTREAM_BASE_URL", raising=False)
    monkeypatch.delenv(CONFIG_ENV, raising=False)
    return calls


@pytest.fixture
def pipeline(monkeypatch) -> ScriptedGuardrail:
    guardrail = ScriptedGuardrail()
    monkeypatch.setattr(serve_module, "build_guardrail", lambda settings: guardrail)
    return guardrail


def config(
    tmp_path: Path, text: str = "upstream_base_url: http://up.test/v1\nport: 8123\n"
) -> Path:
    path = tmp_path / "proxy.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def run(*args: str) -> Any:
    return CliRunner().invoke(app, ["serve", *args])


def test_a_good_config_starts_one_in_process_server(tmp_path, runs, pipeline, monkeypatch):
    monkeypatch.setenv(CONFIG_ENV, "")
    result = run("--config", str(config(tmp_path)), "--log-level", "warning")
    assert result.exit_code == 0, result.output
    ((target, options),) = runs
    assert not isinstance(target, str)  # the app itself, built once
    assert (options["host"], options["port"], options["log_level"]) == (
        "127.0.0.1",
        8123,
        "warning",
    )
    assert options["log_config"]["loggers"]["guardrail"]["level"] == "WARNING"
    assert options["timeout_keep_alive"] == 75


def test_workers_load_the_same_file_through_the_environment(tmp_path, runs, pipeline, monkeypatch):
    monkeypatch.setenv(CONFIG_ENV, "")
    path = config(tmp_path)
    result = run("--config", str(path), "--workers", "2", "--port", "9001", "--host", "0.0.0.0")
    assert result.exit_code == 0, result.output
    ((target, options),) = runs
    assert target == "proxy.app:app_from_environment"
    assert options["factory"] is True and options["workers"] == 2
    assert (options["host"], options["port"]) == ("0.0.0.0", 9001)
    import os

    assert os.environ[CONFIG_ENV] == str(path.resolve())


def test_no_upstream_is_a_clear_refusal_to_start(runs):
    result = run()
    assert result.exit_code == 2
    assert "no upstream configured" in result.output
    assert "Traceback" not in result.output
    assert runs == []


def test_a_broken_config_file_is_a_clear_refusal_to_start(tmp_path, runs):
    result = run("--config", str(config(tmp_path, "port: [\n")))
    assert result.exit_code == 2
    assert "not valid YAML" in result.output
    assert runs == []


def test_an_invalid_policy_set_refuses_to_start(tmp_path, runs):
    policies = tmp_path / "policies"
    policies.mkdir()
    (policies / "broken.yaml").write_text("policies:\n  - name: [unclosed\n", encoding="utf-8")
    path = config(tmp_path, f"upstream_base_url: http://up.test/v1\npolicies: {policies}\n")
    out = StringIO()
    code = serve_module.serve(path, console=Console(file=out, width=200))
    assert code == 2
    assert "cannot start: invalid policy set" in out.getvalue()
    assert "broken.yaml" in out.getvalue()
    assert runs == []


def test_a_pipeline_that_fails_to_load_refuses_to_start(tmp_path, runs, monkeypatch):
    def broken(settings):
        raise OSError("embedding model files missing")

    monkeypatch.setattr(serve_module, "build_guardrail", broken)
    out = StringIO()
    code = serve_module.serve(config(tmp_path), console=Console(file=out, width=200))
    assert code == 2
    assert "the guardrail failed to load: OSError: embedding model files missing" in out.getvalue()
    assert runs == []


@pytest.mark.parametrize(
    ("args", "message"), [(["--workers", "0"], "--workers"), (["--log-level", "loud"], "log level")]
)
def test_bad_options_are_refused(tmp_path, runs, pipeline, args, message):
    result = run("--config", str(config(tmp_path)), *args)
    assert result.exit_code == 2
    assert message in result.output
