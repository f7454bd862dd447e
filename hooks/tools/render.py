"""`llmdeploy render`: what a resource renders to, like `helm template`, through the same
steps as the hook: a render worker with its budget, the clock for `now`, and the registry the
environment configures for `models:/name@alias`."""

from __future__ import annotations

import asyncio
import dataclasses
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from hooks.contract.request import parse_request
from hooks.core.registry import Resolution
from hooks.core.sync import Resolve, sync_through
from hooks.edge.registry import MLflowRegistry
from hooks.edge.templates import read_sources
from hooks.errors import RequestError
from hooks.rendering.kubeyaml import load_all
from hooks.settings import ROUTERS, ChildSettings, Settings
from hooks.workers.pool import worker_pool

_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def read_objects(path: Path) -> list[Any]:
    """Every object in a YAML or JSON file, read as kubectl reads it: a stream of documents,
    List kinds unpacked."""
    try:
        documents = load_all(path.read_text())
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise RequestError(f"cannot read {path}: {e}") from e
    objects: list[Any] = []
    for doc in documents:
        items = doc.get("items") if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") else None
        objects += items if isinstance(items, list) else [doc]
    return objects


def render(settings: Settings, filename: Path, observed_file: Path | None, router: str | None = None) -> int:
    """Children on stdout (YAML), the status on stderr as YAML comments; 1 when invalid.
    `router` previews the resource with that router instead of its own."""
    resources = read_objects(filename)
    if len(resources) != 1 or not isinstance(resources[0], dict):
        raise RequestError(f"{filename} must hold exactly one LLMDeployment")
    parent = resources[0]
    metadata = parent.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise RequestError(f"{filename}: metadata must be a mapping with at least a name")
    metadata.setdefault("namespace", "default")
    metadata.setdefault("generation", 1)
    if router is not None:
        spec = parent.get("spec")
        traffic = spec.setdefault("traffic", {}) if isinstance(spec, dict) else None
        if isinstance(traffic, dict):
            traffic.pop("istio", None)
            traffic["router"] = router
    children: dict[str, dict[str, Any]] = {}
    for obj in read_objects(observed_file) if observed_file else []:
        if isinstance(obj, dict):
            key = f"{obj.get('kind')}.{obj.get('apiVersion')}"
            children.setdefault(key, {})[str((obj.get("metadata") or {}).get("name"))] = obj
    request = parse_request({"parent": parent, "children": children})
    with worker_pool(settings, size=1) as workers:
        templates = workers.load(read_sources(settings.templates.folder))
        # No measurement is taken here: a rollout's status shows where it stands, not a new verdict.
        result = sync_through(request, datetime.now(timezone.utc), _previewing(settings.children, parent),
                              lambda inputs: workers.desire(inputs, templates), resolve=_resolver(settings))
    yaml.dump_all(list(result.children), sys.stdout, Dumper=_DUMPER, sort_keys=False, explicit_start=True)
    sys.stdout.flush()
    status = result.status.as_json()
    # As YAML comments: readable, and a stream with stderr merged in (2>&1) stays valid.
    text = yaml.dump({"status": status}, Dumper=_DUMPER, sort_keys=False)
    sys.stderr.write("".join(f"# {line}\n" for line in text.splitlines()))
    if result.outcome == "invalid":
        spec_valid = next(c for c in status["conditions"] if c["type"] == "SpecValid")
        print(f"llmdeploy: invalid LLMDeployment: {spec_valid['message']}", file=sys.stderr)
        return 1
    return 0


def _resolver(settings: Settings) -> Resolve:
    """Registry references resolved as the hook does, with the registry the environment
    configures (without one, a reference says it cannot be resolved)."""
    def resolve(refs: tuple[str, ...]) -> dict[str, Resolution]:
        async def once() -> dict[str, Resolution]:
            registry = MLflowRegistry(settings.registry)
            try:
                return await registry.resolve(refs)
            finally:
                await registry.aclose()
        return asyncio.run(once()) if refs else {}
    return resolve


def _previewing(children: ChildSettings, parent: dict[str, Any]) -> ChildSettings:
    """A preview is not an install: every router counts as installed, and, as it never
    measures, the Prometheus the spec's analysis names counts as configured. A spec is not
    refused offline for what only the cluster's hook is set up with."""
    children = dataclasses.replace(children, routers=ROUTERS)
    spec = parent.get("spec")
    rollout = spec.get("rollout") if isinstance(spec, dict) else None
    analysis = rollout.get("analysis") if isinstance(rollout, dict) else None
    provider = analysis.get("provider", "default") if isinstance(analysis, dict) else None
    if not isinstance(provider, str) or provider in children.analysis_providers:
        return children
    return dataclasses.replace(children, analysis_providers=tuple(sorted({provider, *children.analysis_providers})))
