"""Schema checks of rendered objects against the real upstream schemas.

Built-in kinds: kubernetes-validate (strict, Kubernetes 1.34), always available. Istio and
Metacontroller kinds and CRDs: the workplace's ../shared/tools/validate-manifests with the
schemas saved beside it; tests that need it skip, saying why, when ../shared is absent.
"""

from __future__ import annotations

import argparse
import importlib.machinery
import importlib.util
from collections.abc import Sequence
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any

import kubernetes_validate

from tests.prerequisites import missing

KUBERNETES_VERSION = "1.34"
SHARED = Path(__file__).resolve().parent.parent.parent / "shared"
VALIDATOR = SHARED / "tools" / "validate-manifests"
BUILTIN_GROUPS = ("apps/", "v1", "autoscaling/", "policy/", "networking.k8s.io/", "rbac.authorization.k8s.io/")


def builtin_errors(obj: dict[str, Any]) -> list[str]:
    """Strict validation of a built-in Kubernetes object; [] when valid."""
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as e:
        return [f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}: {e.message}"]
    return []


@lru_cache(maxsize=1)
def shared_validator() -> ModuleType | None:
    if not VALIDATOR.is_file():
        return None
    loader = importlib.machinery.SourceFileLoader("validate_manifests", str(VALIDATOR))
    spec = importlib.util.spec_from_loader("validate_manifests", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


@lru_cache(maxsize=1)
def _shared_crds() -> dict[Any, Any]:
    tool = require_shared_validator()
    schemas = SHARED / "schemas"
    docs = [d for f in sorted(schemas.glob("*.y*ml")) for d in tool.read_docs(f)]
    return tool.crd_index(docs)  # type: ignore[no-any-return]


def require_shared_validator() -> ModuleType:
    tool = shared_validator()
    if tool is None:
        missing(f"{VALIDATOR} is not here (no ../shared): Istio/CRD schema checks need it")
    return tool


def schema_errors(objects: Sequence[dict[str, Any]], extra_crds: Sequence[dict[str, Any]] = ()) -> list[str]:
    """Every object checked strictly: built-ins by kubernetes-validate, the rest against the
    CRDs saved in ../shared/schemas (plus `extra_crds`), as the API server would."""
    tool = require_shared_validator()
    crds = {**_shared_crds(), **tool.crd_index(list(extra_crds))}
    args = argparse.Namespace(strict=True, k8s_version=KUBERNETES_VERSION)
    errors = []
    for obj in objects:
        found, _ = tool.check(obj, crds, args)
        errors += [f"{obj.get('kind')}/{obj.get('metadata', {}).get('name')}: {path}: {msg}" for path, msg in found]
    return errors
