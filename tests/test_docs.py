"""The worked examples of docs/templates.md are real: each renders, and does what it says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from hooks.hookapi import parse_request
from hooks.selfcheck import check_templates
from hooks.settings import Settings
from hooks.sync import sync
from tests import metacontroller as mc
from tests.conftest import ROOT
from tests.manifests import builtin_errors

DOC = ROOT / "docs" / "templates.md"
EXAMPLE = re.compile(r"<!-- example: (?P<name>[\w-]+) -->\n```yaml\n(?P<body>.*?)```", re.S)
FILE = re.compile(r"\{# (?P<file>[\w.-]+) #\}\n")


def examples() -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for match in EXAMPLE.finditer(DOC.read_text()):
        parts = FILE.split(match["body"])
        found[match["name"]] = {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}
    return found


def render(name: str, tmp_path: Path, spec: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    folder = tmp_path / name
    folder.mkdir()
    for file, text in examples()[name].items():
        (folder / file).write_text(text)
    renderer = check_templates(Settings(), folder)
    spec = spec or {"model": {"uri": "hf://org/model"}}
    return sync(parse_request(mc.request(mc.parent(spec))), renderer, Settings()).children


def test_the_doc_has_one_example_per_common_need() -> None:
    assert set(examples()) == {"labels", "sidecar", "affinity", "extra-child"}


def test_labels_example(tmp_path: Path) -> None:
    (deployment,) = [c for c in render("labels", tmp_path) if c["kind"] == "Deployment"]
    metadata = deployment["spec"]["template"]["metadata"]
    assert metadata["labels"]["acme.example.com/team"] == "ml"
    assert metadata["annotations"]["acme.example.com/model"] == "hf://org/model"
    assert builtin_errors(deployment) == []


def test_sidecar_example(tmp_path: Path) -> None:
    (deployment,) = [c for c in render("sidecar", tmp_path) if c["kind"] == "Deployment"]
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["engine", "token-counter"]
    assert containers[1]["args"] == ["--upstream=http://127.0.0.1:8000"]
    assert builtin_errors(deployment) == []


@pytest.mark.parametrize("own_affinity", [False, True])
def test_affinity_example(tmp_path: Path, own_affinity: bool) -> None:
    mine = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]}}}
    spec = {"model": {"uri": "hf://org/model"}, "pod": {"affinity": mine}} if own_affinity else None
    (deployment,) = [c for c in render("affinity", tmp_path, spec) if c["kind"] == "Deployment"]
    affinity = deployment["spec"]["template"]["spec"]["affinity"]
    if own_affinity:
        assert affinity == mine
    else:
        assert "preferredDuringSchedulingIgnoredDuringExecution" in affinity["nodeAffinity"]
    assert builtin_errors(deployment) == []


def test_extra_child_example(tmp_path: Path) -> None:
    children = render("extra-child", tmp_path)
    (monitor,) = [c for c in children if c["kind"] == "ServiceMonitor"]
    (service,) = [c for c in children if c["kind"] == "Service"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["metadata"]["labels"]["controller-uid"] == mc.PARENT_UID
