"""The `llmdeploy` command: serve the hook, or preview what it renders.

    llmdeploy serve [--host H] [--port P]
    llmdeploy render -f CR.yaml [--observed FILE]   children on stdout (YAML), status on stderr
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from hooks.errors import LLMDeployError, RequestError
from hooks.hookapi import parse_request
from hooks.selfcheck import check_templates
from hooks.settings import DEFAULT_HOST, DEFAULT_PORT, Settings
from hooks.sync import sync

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="llmdeploy", description="Serve large language models on Kubernetes.")
    commands = parser.add_subparsers(dest="command", required=True)
    serve = commands.add_parser("serve", help="run the Metacontroller sync hook")
    serve.add_argument("--host", default=DEFAULT_HOST, help="address to listen on (default %(default)s)")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to listen on (default %(default)s)")
    render = commands.add_parser("render", help="print the children a resource renders to, like helm template")
    render.add_argument("-f", "--filename", type=Path, required=True, help="an LLMDeployment YAML file")
    render.add_argument("--observed", type=Path, help="YAML/JSON of observed children (a stream or a List)")
    args = parser.parse_args(argv)
    settings = Settings.from_env()
    try:
        if args.command == "serve":
            return _serve(settings, args.host, args.port)
        return _render(settings, args.filename, args.observed)
    except LLMDeployError as e:
        print(f"llmdeploy: {e}", file=sys.stderr)
        return 1


def _serve(settings: Settings, host: str, port: int) -> int:
    import uvicorn

    from hooks.app import create_app

    check_templates(settings.templates_dir, settings)  # refuse to start with broken templates
    uvicorn.run(create_app(settings), host=host, port=port, log_level="info")
    return 0


def _read_objects(path: Path) -> list[Any]:
    try:
        documents = [d for d in yaml.load_all(path.read_text(), Loader=_LOADER) if d is not None]
    except (OSError, yaml.YAMLError) as e:
        raise RequestError(f"cannot read {path}: {e}") from e
    objects: list[Any] = []
    for doc in documents:
        items = doc.get("items") if isinstance(doc, dict) and str(doc.get("kind", "")).endswith("List") else None
        objects += items if isinstance(items, list) else [doc]
    return objects


def _render(settings: Settings, filename: Path, observed_file: Path | None) -> int:
    resources = _read_objects(filename)
    if len(resources) != 1 or not isinstance(resources[0], dict):
        raise RequestError(f"{filename} must hold exactly one LLMDeployment")
    parent = resources[0]
    metadata = parent.setdefault("metadata", {})
    metadata.setdefault("namespace", "default")
    metadata.setdefault("generation", 1)
    children: dict[str, dict[str, Any]] = {}
    for obj in _read_objects(observed_file) if observed_file else []:
        if isinstance(obj, dict):
            key = f"{obj.get('kind')}.{obj.get('apiVersion')}"
            children.setdefault(key, {})[str((obj.get("metadata") or {}).get("name"))] = obj
    request = parse_request({"parent": parent, "children": children})
    renderer = check_templates(settings.templates_dir, settings)
    result = sync(request, renderer, settings)
    yaml.dump_all(result.children, sys.stdout, Dumper=_DUMPER, sort_keys=False, explicit_start=True)
    sys.stdout.flush()
    status = result.status.as_json()
    yaml.dump({"status": status}, sys.stderr, Dumper=_DUMPER, sort_keys=False)
    if result.outcome == "invalid":
        spec_valid = next(c for c in status["conditions"] if c["type"] == "SpecValid")
        print(f"llmdeploy: invalid LLMDeployment: {spec_valid['message']}", file=sys.stderr)
        return 1
    return 0



