"""The ``guardrail`` command's own small subcommands (serve, detect and bench have their own)."""

from __future__ import annotations

from typer.testing import CliRunner

from proxy.auth import hash_key, key_digests
from proxy.cli import app


def test_hash_key_prints_the_form_the_proxy_accepts() -> None:
    result = CliRunner().invoke(app, ["hash-key", "sk-client-1"])
    assert result.exit_code == 0
    printed = result.stdout.strip()
    assert printed == hash_key("sk-client-1") and "sk-client-1" not in printed
    assert key_digests([printed]) == key_digests(["sk-client-1"])


def test_hash_key_reads_standard_input_when_no_key_is_given() -> None:
    result = CliRunner().invoke(app, ["hash-key"], input="sk-from-stdin\n")
    assert result.exit_code == 0
    assert result.stdout.strip() == hash_key("sk-from-stdin")


def test_an_empty_key_is_refused() -> None:
    result = CliRunner().invoke(app, ["hash-key"], input="\n")
    assert result.exit_code == 2 and "empty" in result.output
