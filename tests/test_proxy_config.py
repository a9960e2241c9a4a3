"""Settings: YAML file, environment on top, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from proxy.auth import hash_key, key_digests
from proxy.config import ConfigError, LitellmParams, ProxySettings, load_settings


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch):
    for name in (
        "GUARDRAIL_UPSTREAM_BASE_URL",
        "GUARDRAIL_API_KEYS",
        "GUARDRAIL_METRICS_KEYS",
        "GUARDRAIL_CONFIG",
        "GUARDRAIL_PORT",
        "REDIS_URL",
        "GUARDRAIL_STREAM_WINDOW_MS",
    ):
        monkeypatch.delenv(name, raising=False)


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "guardrail.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_file_gives_values_and_the_environment_overrides_them(tmp_path, monkeypatch):
    path = write(
        tmp_path,
        "upstream_base_url: http://file.test/v1\nport: 9000\nstream_window_ms: 50\n"
        "api_keys: [alpha, beta]\n",
    )
    monkeypatch.setenv("GUARDRAIL_PORT", "9100")
    monkeypatch.setenv("REDIS_URL", "redis://127.0.0.1:6379/0")
    settings = load_settings(path)
    assert settings.upstream_base_url == "http://file.test/v1"
    assert settings.port == 9100
    assert settings.stream_window_ms == 50
    assert settings.redis_url == "redis://127.0.0.1:6379/0"
    assert settings.client_key_digests() == key_digests(["alpha", "beta"])


def test_the_environment_alone_is_enough(monkeypatch):
    monkeypatch.setenv("GUARDRAIL_UPSTREAM_BASE_URL", "http://env.test/v1")
    monkeypatch.setenv("GUARDRAIL_API_KEYS", "one, two ,,three")
    settings = load_settings()
    assert settings.upstream_base_url == "http://env.test/v1"
    assert settings.client_key_digests() == key_digests(["one", "two", "three"])
    assert settings.policies is None


def test_hashed_keys_stand_for_the_keys_they_hash(monkeypatch):
    monkeypatch.setenv("GUARDRAIL_UPSTREAM_BASE_URL", "http://env.test/v1")
    monkeypatch.setenv("GUARDRAIL_API_KEYS", f"plain,{hash_key('hidden')}")
    monkeypatch.setenv("GUARDRAIL_METRICS_KEYS", hash_key("scraper"))
    settings = load_settings()
    assert settings.client_key_digests() == key_digests(["plain", "hidden"])
    assert settings.metrics_key_digests() == key_digests(["scraper"])


def test_a_malformed_hashed_key_is_a_config_error(monkeypatch):
    monkeypatch.setenv("GUARDRAIL_UPSTREAM_BASE_URL", "http://env.test/v1")
    monkeypatch.setenv("GUARDRAIL_API_KEYS", "sha256:abc")
    with pytest.raises(ConfigError, match=r"api_keys.*64 hexadecimal digits"):
        load_settings()


def test_the_config_file_can_be_named_by_the_environment(tmp_path, monkeypatch):
    path = write(tmp_path, "upstream_base_url: http://named.test/v1\n")
    monkeypatch.setenv("GUARDRAIL_CONFIG", str(path))
    assert load_settings().upstream_base_url == "http://named.test/v1"


def test_a_model_list_is_read_like_litellms(tmp_path, monkeypatch):
    path = write(
        tmp_path,
        """
model_list:
  - model_name: fast
    litellm_params:
      model: openai/gpt-4o-mini
      api_key: os.environ/FAST_KEY
  - model_name: local
    litellm_params:
      model: ollama_chat/llama3
      api_base: http://127.0.0.1:11434
      api_key_env: LOCAL_KEY
      keep_alive: 5m
""",
    )
    monkeypatch.setenv("FAST_KEY", "sk-fast")
    monkeypatch.setenv("LOCAL_KEY", "sk-local")
    settings = load_settings(path)
    fast, local = (entry.litellm_params for entry in settings.model_list)
    assert fast.resolved_api_key() == "sk-fast"
    assert local.resolved_api_key() == "sk-local"
    assert local.extra_params() == {"keep_alive": "5m"}


def test_a_literal_key_is_used_as_given():
    assert LitellmParams(model="openai/x", api_key="sk-literal").resolved_api_key() == "sk-literal"
    assert LitellmParams(model="openai/x").resolved_api_key() is None


def test_no_upstream_at_all_is_an_error():
    with pytest.raises(ConfigError, match="no upstream configured"):
        load_settings()


def test_repeated_model_names_are_an_error(tmp_path):
    entry = "  - model_name: a\n    litellm_params: {model: openai/x}\n"
    with pytest.raises(ConfigError, match=r"repeated: \['a'\]"):
        load_settings(write(tmp_path, "model_list:\n" + entry + entry))


def test_invalid_values_name_the_setting(tmp_path):
    path = write(tmp_path, "upstream_base_url: http://x\nport: 70000\nstream_window_chars: 0\n")
    with pytest.raises(ConfigError) as caught:
        load_settings(path)
    message = str(caught.value)
    assert "port: Input should be less than or equal to 65535" in message
    assert "stream_window_chars" in message
    assert str(path) in message


def test_unknown_settings_are_an_error(tmp_path):
    with pytest.raises(ConfigError, match="upstream_base_ulr"):
        load_settings(write(tmp_path, "upstream_base_url: http://x\nupstream_base_ulr: typo\n"))


def test_broken_yaml_gives_its_line(tmp_path):
    text = "upstream_base_url: http://x\nport: 1\n  bad: indentation\nhost: y\n"
    with pytest.raises(ConfigError, match=r"not valid YAML \(line 3, column 6\)"):
        load_settings(write(tmp_path, text))


def test_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_settings(tmp_path / "absent.yaml")


def test_a_file_that_is_not_a_mapping_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="must be a mapping"):
        load_settings(write(tmp_path, "- a\n- b\n"))


def test_an_unparseable_environment_value_is_an_error(monkeypatch):
    monkeypatch.setenv("GUARDRAIL_UPSTREAM_BASE_URL", "http://x")
    monkeypatch.setenv("GUARDRAIL_MODEL_LIST", "[not json")
    with pytest.raises(ConfigError, match="model_list"):
        load_settings()


def test_settings_can_be_built_directly():
    settings = ProxySettings(upstream_base_url="http://x/v1")
    assert settings.api_keys == ()
    assert settings.stream_fast_pass is True
