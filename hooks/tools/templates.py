"""`llmdeploy templates check`: a platform team's template folder, tried before it ships.

Loads the shipped templates with the folder on top in a render worker (with the hook's
budgets), runs the built-in check (every child template, every branch) and every example
resource through the real sync steps, and compares the kinds the templates emit with the
CompositeController's childResources: Metacontroller fails any sync whose answer holds a
kind it was not told to manage. Says what it checked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from hooks.contract.request import parse_request
from hooks.core.sync import sync_through
from hooks.edge.templates import read_sources
from hooks.errors import LLMDeployError, TemplateError
from hooks.rendering.kubeyaml import load_all
from hooks.settings import Settings
from hooks.workers.pool import worker_pool
from hooks.workers.renderer import Renderer

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


def declared_children(text: str) -> set[tuple[str, str]] | None:
    """(apiVersion, resource) of each childResources rule of the CompositeController in
    `text` (a stream, as `kubectl kustomize` prints it), or None when it holds none."""
    for doc in load_all(text):
        if isinstance(doc, dict) and doc.get("kind") == "CompositeController":
            rules = (doc.get("spec") or {}).get("childResources") or []
            return {(r["apiVersion"], r["resource"]) for r in rules if isinstance(r, dict)}
    return None


def example_requests(examples: Iterable[Path]) -> list[tuple[str, dict[str, Any]]]:
    requests = []
    for path in examples:
        (resource,) = load_all(path.read_text())
        meta = resource.get("metadata", {})
        parent = {**resource, "metadata": {"namespace": "default", "generation": 1, "uid": "check", **meta}}
        canary = {"apiVersion": "apps/v1", "kind": "Deployment",
                  "metadata": {"name": f"{meta.get('name')}-canary", "namespace": parent["metadata"]["namespace"]},
                  "status": {"availableReplicas": 1}}
        requests.append((str(path), {"controller": {"spec": {"generateSelector": True}}, "parent": parent,
                                     "children": {"Deployment.apps/v1": {"canary": canary}}}))
    return requests


def check_folder(settings: Settings, folder: Path | None, examples_dir: Path = DEFAULT_EXAMPLES,
                 controller_file: Path | None = None, renderer: Renderer | None = None) -> CheckReport:
    """Check the override `folder` (or the configured one); `controller_file` None means
    the repository's CompositeController when there is one."""
    report = CheckReport()
    folder = folder or settings.templates.folder
    workers = renderer or worker_pool(settings, size=1)
    try:
        try:
            templates = workers.load(read_sources(folder))
        except TemplateError as e:
            report.errors.append(str(e))
            return report
        report.rendered.append(f"the built-in check: every child template, every branch ({folder or 'shipped only'})")
        _render_examples(report, settings, workers, templates, examples_dir)
    finally:
        if renderer is None:
            workers.close()
    _compare_kinds(report, controller_file)
    return report


def _render_examples(report: CheckReport, settings: Settings, workers: Renderer, templates: str,
                     examples_dir: Path) -> None:
    examples = sorted(examples_dir.glob("*.yaml")) if examples_dir.is_dir() else []
    if not examples:
        report.warnings.append(f"no example resources in {examples_dir} (pass --examples): only the built-in "
                               "check ran")
    # Templates are checked, not the hook's Prometheus settings: the examples' analysis may
    # name the default provider even where none is configured.
    children = dataclasses.replace(settings.children, analysis_providers=tuple(
        sorted({"default", *settings.children.analysis_providers})))
    now = datetime.now(timezone.utc)
    for name, raw in example_requests(examples):
        try:
            result = sync_through(parse_request(raw), now, children, lambda inputs: workers.desire(inputs, templates))
        except (LLMDeployError, yaml.YAMLError) as e:
            report.errors.append(f"{name}: {e}")
            continue
        if result.outcome != "ok":
            report.warnings.append(f"{name} is not a valid LLMDeployment, so it checks nothing")
            continue
        report.rendered.append(f"{name}: {len(result.children)} children")
        report.kinds |= {(c["apiVersion"], c["kind"]) for c in result.children}


def _compare_kinds(report: CheckReport, controller_file: Path | None) -> None:
    path = controller_file or DEFAULT_CONTROLLER
    try:
        text = path.read_text()  # also a pipe, as in --controller <(kubectl kustomize ...)
    except OSError as e:
        if controller_file is not None:
            report.errors.append(f"cannot read the CompositeController {path}: {e}")
        else:
            report.warnings.append(f"no CompositeController at {path}: kinds not compared (pass --controller)")
        return
    declared = declared_children(text)
    if declared is None:
        report.errors.append(f"{path} holds no CompositeController: kinds not compared")
        return
    report.rendered.append(f"kinds against {path}'s childResources")
    for api_version, kind in sorted(report.kinds):
        if (api_version, plural(kind)) not in declared:
            report.warnings.append(
                f"templates emit {kind} ({api_version}) but {path} does not list "
                f"{{apiVersion: {api_version}, resource: {plural(kind)}}} in childResources: "
                "Metacontroller would fail every sync that returns one")
