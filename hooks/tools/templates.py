"""`llmdeploy templates check`: a platform team's template folder, tried before it ships.

Loads the shipped templates with the folder on top in a render worker (with the hook's
budgets), runs the built-in check (every child template, every branch) and every example
resource through the real sync steps, and compares the kinds the templates emit with the
CompositeController's childResources: Metacontroller fails any sync whose answer holds a
kind it was not told to manage. The routers are those the controller declares child types
for (without one, LLMDEPLOY_ROUTERS's): an example for another router is skipped, as the hook
would refuse it. Says what it checked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from hooks.api.validation import validate_resource
from hooks.contract.request import parse_request
from hooks.core.desired import router_missing
from hooks.core.sync import sync_through
from hooks.edge.templates import read_sources
from hooks.errors import LLMDeployError, SpecError, TemplateError
from hooks.rendering.kubeyaml import load_all
from hooks.settings import ROUTERS, ChildSettings, Settings
from hooks.workers.pool import worker_pool
from hooks.workers.renderer import Renderer

DEFAULT_EXAMPLES = Path("examples")


@dataclass
class CheckReport:
    errors: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    rendered: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
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


def declared_routers(declared: set[tuple[str, str]], settings: ChildSettings) -> tuple[str, ...]:
    """The routers whose child types, at the configured API versions, are all declared
    (gateway-api and linkerd route with the same HTTPRoutes; linkerd's part adds its policies)."""
    security = settings.istio_security_api_version
    kinds = {"istio": {(settings.istio_api_version, "virtualservices"),
                       (settings.istio_api_version, "destinationrules"),
                       (security, "peerauthentications"), (security, "authorizationpolicies")},
             "gateway-api": {(settings.gateway_api_version, "httproutes")},
             "linkerd": {(settings.gateway_api_version, "httproutes"), ("policy.linkerd.io/v1beta3", "servers"),
                         ("policy.linkerd.io/v1alpha1", "authorizationpolicies"),
                         ("policy.linkerd.io/v1alpha1", "meshtlsauthentications")}}
    return tuple(r for r in ROUTERS if kinds[r] <= declared)


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
    """Check the override `folder` (or the configured one) against the install whose
    CompositeController is `controller_file` (None: kinds are not compared)."""
    report = CheckReport()
    declared = _declared(report, controller_file)
    if report.errors:
        return report
    folder = folder or settings.templates.folder
    children = settings.children
    if declared is not None:
        children = dataclasses.replace(children, routers=declared_routers(declared, children))
    workers = renderer or worker_pool(settings, size=1)
    try:
        try:
            templates = workers.load(read_sources(folder))
        except TemplateError as e:
            report.errors.append(str(e))
            return report
        report.rendered.append(f"the built-in check: every child template, every branch ({folder or 'shipped only'})")
        _render_examples(report, children, workers, templates, examples_dir)
    finally:
        if renderer is None:
            workers.close()
    if declared is not None:
        _compare_kinds(report, declared, controller_file)
    return report


def _declared(report: CheckReport, controller_file: Path | None) -> set[tuple[str, str]] | None:
    if controller_file is None:
        report.warnings.append("no CompositeController given: kinds not compared (pass --controller "
                               "<(kubectl kustomize your-install))")
        return None
    try:
        text = controller_file.read_text()  # also a pipe, as in --controller <(kubectl kustomize ...)
    except OSError as e:
        report.errors.append(f"cannot read the CompositeController {controller_file}: {e}")
        return None
    declared = declared_children(text)
    if declared is None:
        report.errors.append(f"{controller_file} holds no CompositeController: kinds not compared")
    return declared


def _render_examples(report: CheckReport, children: ChildSettings, workers: Renderer, templates: str,
                     examples_dir: Path) -> None:
    examples = sorted(examples_dir.glob("*.yaml")) if examples_dir.is_dir() else []
    if not examples:
        report.warnings.append(f"no example resources in {examples_dir} (pass --examples): only the built-in "
                               "check ran")
    # Templates are checked, not the hook's Prometheus settings: the examples' analysis may
    # name the default provider even where none is configured.
    children = dataclasses.replace(children, analysis_providers=tuple(
        sorted({"default", *children.analysis_providers})))
    now = datetime.now(timezone.utc)

    for name, raw in example_requests(examples):
        try:
            request = parse_request(raw)
            missing = _router_missing(request.parent.name, request.parent.spec, children)
            if missing:
                report.skipped.append(f"{name}: {missing}")
                continue
            result = sync_through(request, now, children, lambda inputs: workers.desire(inputs, templates))
        except (LLMDeployError, yaml.YAMLError) as e:
            report.errors.append(f"{name}: {e}")
            continue
        if result.outcome != "ok":
            report.warnings.append(f"{name} is not a valid LLMDeployment, so it checks nothing")
            continue
        report.rendered.append(f"{name}: {len(result.children)} children")
        report.kinds |= {(c["apiVersion"], c["kind"]) for c in result.children}


def _router_missing(name: str, spec: Any, children: ChildSettings) -> str | None:
    try:
        return router_missing(validate_resource(name, spec), children)
    except SpecError:
        return None


def _compare_kinds(report: CheckReport, declared: set[tuple[str, str]], path: Path | None) -> None:
    report.rendered.append(f"kinds against {path}'s childResources")
    for api_version, kind in sorted(report.kinds):
        if (api_version, plural(kind)) not in declared:
            report.warnings.append(
                f"templates emit {kind} ({api_version}) but {path} does not list "
                f"{{apiVersion: {api_version}, resource: {plural(kind)}}} in childResources: "
                "Metacontroller would fail every sync that returns one")
