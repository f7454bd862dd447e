"""`llmdeploy render`: what a resource renders to, like `helm template`, through the same
steps as the hook: a render worker with its budget, and the clock for `now`."""

from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import yaml

from hooks.contract.request import parse_request
from hooks.core.sync import sync_through
from hooks.edge.templates import read_sources
from hooks.errors import RequestError
from hooks.rendering.kubeyaml import load_all
from hooks.settings import Settings
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


def render(settings: Settings, filename: Path, observed_file: Path | None) -> int:
    """Children on stdout (YAML), the status on stderr as YAML comments; 1 when invalid."""
    resources = read_objects(filename)
    if len(resources) != 1 or not isinstance(resources[0], dict):
        raise RequestError(f"{filename} must hold exactly one LLMDeployment")
    parent = resources[0]
    metadata = parent.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise RequestError(f"{filename}: metadata must be a mapping with at least a name")
    metadata.setdefault("namespace", "default")
    metadata.setdefault("generation", 1)
    children: dict[str, dict[str, Any]] = {}
    for obj in read_objects(observed_file) if observed_file else []:
        if isinstance(obj, dict):
            key = f"{obj.get('kind')}.{obj.get('apiVersion')}"
            children.setdefault(key, {})[str((obj.get("metadata") or {}).get("name"))] = obj
    request = parse_request({"parent": parent, "children": children})
    with worker_pool(settings, size=1) as workers:
        templates = workers.load(read_sources(settings.templates.folder))
        # No measurement is taken here: a rollout's status shows where it stands, not a new verdict.
        result = sync_through(request, datetime.now(timezone.utc), settings.children,
                              lambda inputs: workers.desire(inputs, templates))
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
