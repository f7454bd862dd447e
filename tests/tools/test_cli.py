"""`llmdeploy render`: a local preview whose stdout pipes into other tools."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from hooks.contract.lastapplied import LAST_APPLIED_ANNOTATION
from hooks.tools.cli import main

from tests.conftest import EXAMPLES, ROOT

CLI = str(Path(sys.executable).parent / "llmdeploy")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=60, check=False)


def test_render_prints_children_on_stdout_and_status_on_stderr() -> None:
    result = run("render", "-f", str(ROOT / "examples" / "canary-ab.yaml"))
    assert result.returncode == 0, result.stderr
    children = list(yaml.safe_load_all(result.stdout))
    assert [c["kind"] for c in children] == ["Deployment", "Deployment", "Service", "PodDisruptionBudget",
                                             "DestinationRule", "VirtualService", "NetworkPolicy",
                                             "PeerAuthentication", "AuthorizationPolicy"]
    status = yaml.safe_load("\n".join(line.removeprefix("# ") for line in result.stderr.splitlines()))
    assert status["status"]["phase"] == "Pending"


def test_render_output_with_stderr_merged_is_still_a_valid_stream() -> None:
    merged = subprocess.run(f"{CLI} render -f {ROOT / 'examples' / 'no-istio-pvc.yaml'} 2>&1", shell=True,
                            capture_output=True, text=True, check=True).stdout
    assert [c["kind"] for c in yaml.safe_load_all(merged)] == ["Deployment", "Deployment", "Service", "NetworkPolicy"]
    assert "# status:" in merged


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_render_previews_every_example_offline(path: Path) -> None:
    """A preview is not an install: no router, nor the analysis's Prometheus, is refused for
    being only the cluster's."""
    import os

    env = {k: v for k, v in os.environ.items() if not k.startswith("LLMDEPLOY_")}
    result = subprocess.run([CLI, "render", "-f", str(path)], capture_output=True, text=True, timeout=60,
                            check=False, env=env)
    assert result.returncode == 0, result.stderr
    assert [c["kind"] for c in yaml.safe_load_all(result.stdout)][0] == "Deployment"


def test_render_of_an_invalid_resource_fails_with_the_errors(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: serving.llmdeploy.io/v1alpha1\nkind: LLMDeployment\nmetadata: {name: x}\n"
                   "spec: {model: {uri: 'ftp://x'}, replicas: -1}\n")
    result = run("render", "-f", str(bad))
    assert result.returncode == 1 and result.stdout == ""
    assert "spec.model.uri" in result.stderr and "spec.replicas" in result.stderr


def test_render_with_observed_children_freezes_them(tmp_path: Path) -> None:
    applied: dict[str, Any] = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "x", "namespace": "default"}}
    observed = tmp_path / "observed.yaml"
    observed.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [
        {**applied, "metadata": {**applied["metadata"], "annotations": {LAST_APPLIED_ANNOTATION: json.dumps(applied)}}},
    ]}))
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: serving.llmdeploy.io/v1alpha1\nkind: LLMDeployment\nmetadata: {name: x}\nspec: {}\n")
    result = run("render", "-f", str(bad), "--observed", str(observed))
    assert result.returncode == 1
    assert list(yaml.safe_load_all(result.stdout)) == [applied]


@pytest.mark.parametrize("content", ["", "a: [", "- 1\n- 2\n", "---\na: 1\n---\nb: 2\n"])
def test_unreadable_input_is_a_clear_error(tmp_path: Path, content: str, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "cr.yaml"
    path.write_text(content)
    assert main(["render", "-f", str(path)]) == 1
    assert capsys.readouterr().err.startswith("llmdeploy: ")


def test_missing_file_is_a_clear_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "-f", "/nonexistent.yaml"]) == 1
    assert "cannot read /nonexistent.yaml" in capsys.readouterr().err


def test_render_reads_yaml_as_kubectl_does(tmp_path: Path) -> None:
    cr = tmp_path / "cr.yaml"
    cr.write_text("apiVersion: serving.llmdeploy.io/v1alpha1\nkind: LLMDeployment\nmetadata: {name: x}\n"
                  "spec:\n  model: {uri: 'hf://o/m', revision: 2024-01-01}\n"
                  "  pod:\n    affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                  "{nodeSelectorTerms: [{matchExpressions: [{key: since, operator: In, values: [2024-01-01]}]}]}}}\n")
    result = run("render", "-f", str(cr))
    assert result.returncode == 0, result.stderr
    (stable,) = [c for c in yaml.safe_load_all(result.stdout) if c["kind"] == "Deployment"]
    assert "--revision=2024-01-01" in stable["spec"]["template"]["spec"]["containers"][0]["args"]


@pytest.mark.parametrize(("content", "expected"), [
    ("apiVersion: v1\nkind: LLMDeployment\nmetadata: hello\nspec: {}\n", "metadata must be a mapping"),
    ("apiVersion: v1\nkind: LLMDeployment\nmetadata: {name: x}\nspec: {model: {uri: 'hf://o/m'}, "
     "replicas: 123456789012345678901234567890}\n", "does not fit in 64 bits"),
    ("apiVersion: v1\nkind: LLMDeployment\nmetadata: {name: x}\nspec: {model: {uri: 'hf://o/m'}, "
     "pod: {affinity: {a: 1}}}\n", "spec.pod.affinity"),
    ("apiVersion: v1\nkind: LLMDeployment\nmetadata: {name: x}\nspec: {model: {uri: !!binary aGk=}}\n",
     "cannot read"),
])
def test_user_errors_are_one_line_and_a_non_zero_exit(tmp_path: Path, content: str, expected: str) -> None:
    cr = tmp_path / "cr.yaml"
    cr.write_text(content)
    result = run("render", "-f", str(cr))
    assert result.returncode == 1 and expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(("name", "value"), [
    ("LLMDEPLOY_CACHE_SIZE", "1e400"), ("LLMDEPLOY_MAX_IN_FLIGHT", "0.5"), ("LLMDEPLOY_MAX_BODY_BYTES", "0.9"),
    ("LLMDEPLOY_VLLM_IMAGE", ""), ("LLMDEPLOY_RENDER_WORKERS", "0"), ("LLMDEPLOY_METRICS_PORT", "70000"),
    ("LLMDEPLOY_ISTIO_API_VERSION", "v2"), ("LLMDEPLOY_RENDER_TIMEOUT_SECONDS", "-1"),
    ("LLMDEPLOY_PROMETHEUS_URL", "ftp://prometheus:9090"), ("LLMDEPLOY_PROMETHEUS_URL", "http://user:pw@prom:9090"),
    ("LLMDEPLOY_PROMETHEUS_URL_EU", "http://prom:9090/?x=1"), ("LLMDEPLOY_PROMETHEUS_TIMEOUT_SECONDS", "0"),
])
def test_bad_settings_refuse_to_start_with_one_line(name: str, value: str) -> None:
    import os

    result = subprocess.run([CLI, "serve", "--port", "0"], capture_output=True, text=True, timeout=60,
                            env={**os.environ, name: value}, check=False)
    assert result.returncode == 1 and result.stderr.startswith("llmdeploy: ") and name.split("_")[1] in \
        result.stderr.upper(), result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("problem", ["missing", "not a certificate"])
def test_an_unloadable_tls_certificate_refuses_to_start_with_one_line(tmp_path: Path, problem: str) -> None:
    import os

    cert, key = tmp_path / "tls.crt", tmp_path / "tls.key"
    if problem != "missing":
        cert.write_text("-----BEGIN CERTIFICATE-----\nnot base64 at all\n-----END CERTIFICATE-----\n")
        key.write_text("nor a key\n")
    env = {**os.environ, "LLMDEPLOY_TLS_CERT_FILE": str(cert), "LLMDEPLOY_TLS_KEY_FILE": str(key)}
    result = subprocess.run([CLI, "serve", "--port", "0"], capture_output=True, text=True, timeout=60, env=env,
                            check=False)
    assert result.returncode == 1 and result.stderr.startswith("llmdeploy: cannot load the TLS certificate"), \
        result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1
