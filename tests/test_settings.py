"""The hook's configuration as the environment gives it: the Prometheus servers canary
analysis may query, by provider name."""

from __future__ import annotations

import pytest
from hooks.errors import ConfigError
from hooks.settings import AnalysisSettings, ChildSettings, Settings


def test_prometheus_providers_come_from_the_environment() -> None:
    settings = Settings.from_env({"LLMDEPLOY_PROMETHEUS_URL": "http://prometheus.monitoring.svc:9090/",
                                  "LLMDEPLOY_PROMETHEUS_URL_EU_WEST": "https://thanos.example.com/prom",
                                  "LLMDEPLOY_PROMETHEUS_URL_EMPTY": " ",
                                  "LLMDEPLOY_PROMETHEUS_TIMEOUT_SECONDS": "1.5"})
    assert settings.analysis.providers == {"default": "http://prometheus.monitoring.svc:9090",
                                           "eu-west": "https://thanos.example.com/prom"}
    assert settings.children.analysis_providers == ("default", "eu-west")  # names only, for validation
    assert settings.analysis.timeout_seconds == 1.5


def test_without_a_prometheus_no_provider_exists() -> None:
    settings = Settings.from_env({})
    assert settings.analysis.providers == {} and settings.children.analysis_providers == ()


@pytest.mark.parametrize("url", ["prometheus:9090", "ftp://p", "http://u:p@p:9090", "http://p:9090?x=1",
                                 "http://p:9090#f", "http://", "http://p 9090"])
def test_a_prometheus_url_must_be_a_plain_http_address(url: str) -> None:
    with pytest.raises(ConfigError, match="Prometheus URL"):
        AnalysisSettings({"default": url})


def test_provider_names_and_urls_must_agree() -> None:
    with pytest.raises(ConfigError, match="analysis providers"):
        Settings(children=ChildSettings(analysis_providers=("default",)))
    with pytest.raises(ConfigError, match="DNS label"):
        AnalysisSettings({"Eu_West": "http://p:9090"})
