"""`llmdeploy templates check`: a platform team's template folder, tried before it ships.

Loads the shipped templates with the folder on top, renders every example resource (and the
built-in start-up check) through the real sync path, and compares the kinds the templates
emit with the CompositeController's childResources: Metacontroller fails any sync whose
answer holds a kind it was not told to manage.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from hooks.contract.request import parse_request
from hooks.core.desired import desire
from hooks.edge.templates import load_templates
from hooks.core.facts import Facts
from hooks.core.sync import sync
from hooks.errors import LLMDeployError, TemplateError
from hooks.settings import Settings

DEFAULT_CONTROLLER = Path("metacontroller/base/compositecontroller.yaml")
DEFAULT_EXAMPLES = Path("examples")


@dataclass
class CheckReport:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rendered: list[str] = field(default_factory=list)
    kinds: set[tuple[str, str]] = field(default_factory=set)


def plural(kind: str) -> str:
    """Kubernetes' default plural of a kind: NetworkPolicy -> networkpolicies."""
    lower = kind.lower()
    if lower.endswith("y") and lower[-2:-1] not in "aeiou":
        return lower[:-1] + "ies"
    if lower.endswith(("s", "x", "ch", "sh")):
        return lower + "es"
    return lower + "s"


def declared_children(controller_file: Path) -> set[tuple[str, str]] | None:
    """(apiVersion, resource) of each childResources rule, or None without a controller file."""
    if not controller_file.is_file():
        return None
    for doc in yaml.safe_load_all(controller_file.read_text()):
        if isinstance(doc, dict) and doc.get("kind") == "CompositeController":
            return {(r["apiVersion"], r["resource"]) for r in doc["spec"].get("childResources", [])}
    return None


def example_requests(examples: Iterable[Path]) -> list[tuple[str, dict[str, Any]]]:
    requests = []
    for path in examples:
        resource = yaml.safe_load(path.read_text())
        meta = resource.get("metadata", {})
        parent = {**resource, "metadata": {"namespace": "default", "generation": 1, "uid": "check", **meta}}
        canary = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": f"{meta.get('name')}-canary", "namespace": parent["metadata"]["namespace"]},
                  "status": {"availableReplicas": 1}}
        requests.append((str(path), {"controller": {"spec": {"generateSelector": True}}, "parent": parent,
                                     "children": {"Deployment.apps/v1": {"canary": canary}}}))
    return requests


def check_folder(settings: Settings, folder: Path | None, examples_dir: Path = DEFAULT_EXAMPLES,
                 controller_file: Path = DEFAULT_CONTROLLER) -> CheckReport:
    report = CheckReport()
    try:
        templates = load_templates(folder or settings.templates.folder, settings.children)
    except TemplateError as e:
        report.errors.append(str(e))
        return report
    facts = Facts(now=datetime.now(timezone.utc))
    for name, raw in example_requests(sorted(examples_dir.glob("*.yaml")) if examples_dir.is_dir() else []):
        try:
            result = sync(parse_request(raw), facts, settings.children, partial(desire, templates=templates))
        except LLMDeployError as e:
            report.errors.append(f"{name}: {e}")
            continue
        if result.outcome != "ok":
            report.warnings.append(f"{name} is not a valid LLMDeployment, so it checks nothing")
            continue
        report.rendered.append(f"{name}: {len(result.children)} children")
        report.kinds |= {(c["apiVersion"], c["kind"]) for c in result.children}
    declared = declared_children(controller_file)
    if declared is None:
        report.warnings.append(f"no CompositeController at {controller_file}: kinds not compared")
        return report
    for api_version, kind in sorted(report.kinds):
        if (api_version, plural(kind)) not in declared:
            report.warnings.append(
                f"templates emit {kind} ({api_version}) but {controller_file} does not list "
                f"{{apiVersion: {api_version}, resource: {plural(kind)}}} in childResources: "
                "Metacontroller would fail every sync that returns one")
    return report
