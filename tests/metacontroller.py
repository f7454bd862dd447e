"""Test doubles of Metacontroller's side of the contract: requests shaped exactly as it sends
them (hook v1 and v2), and its dynamic apply (three-way merge via the last-applied annotation)
against a tiny simulated API server.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Sequence
from typing import Any

from hooks.contract.lastapplied import LAST_APPLIED_ANNOTATION

JSON = dict[str, Any]
PARENT_UID = "8c1f5e2a-4b7d-4e0a-9f3c-2d6b1a7e9c44"
CHILD_RULES = [
    ("apps/v1", "deployments", "Deployment"),
    ("v1", "services", "Service"),
    ("autoscaling/v2", "horizontalpodautoscalers", "HorizontalPodAutoscaler"),
    ("policy/v1", "poddisruptionbudgets", "PodDisruptionBudget"),
    ("networking.istio.io/v1", "destinationrules", "DestinationRule"),
    ("networking.istio.io/v1", "virtualservices", "VirtualService"),
]


def controller(hook_version: str = "v1") -> JSON:
    """The CompositeController as Metacontroller serialises it into every request."""
    return {
        "apiVersion": "metacontroller.k8s.io/v1alpha1",
        "kind": "CompositeController",
        "metadata": {"name": "llmdeployment-controller", "uid": "3e9b7c10-5a2f-4d8e-b1c6-7f0a2e4d8b93",
                     "resourceVersion": "1184523", "generation": 1, "creationTimestamp": "2026-08-20T09:12:44Z"},
        "spec": {
            "parentResource": {"apiVersion": "serving.llmdeploy.io/v1alpha1", "resource": "llmdeployments"},
            "childResources": [{"apiVersion": api, "resource": resource,
                                "updateStrategy": {"method": "InPlace", "statusChecks": {}}}
                               for api, resource, _ in CHILD_RULES],
            "hooks": {"sync": {"version": hook_version, "webhook": {
                "timeout": "10s", "path": "/sync",
                "service": {"name": "llmdeploy-hook", "namespace": "llmdeploy-system"}}}},
            "resyncPeriodSeconds": 300,
            "generateSelector": True,
        },
        "status": {},
    }


def parent(spec: Any, name: str = "llama3", namespace: str = "ml", generation: int = 1,
           status: JSON | None = None) -> JSON:
    obj: JSON = {
        "apiVersion": "serving.llmdeploy.io/v1alpha1",
        "kind": "LLMDeployment",
        "metadata": {"creationTimestamp": "2026-08-21T14:03:11Z", "generation": generation, "name": name,
                     "namespace": namespace, "resourceVersion": "1190027", "uid": PARENT_UID},
        "spec": spec,
    }
    if status is not None:
        obj["status"] = status
    return obj


def child_key(obj: JSON) -> str:
    """The outer map key: Kind.version for the core group, Kind.group/version otherwise."""
    return f"{obj['kind']}.{obj['apiVersion']}"


def request(parent_obj: JSON, children: Iterable[JSON] = (), hook_version: str = "v1") -> JSON:
    """A sync request: every child rule has a key even when empty; inner keys per hook version."""
    groups: dict[str, dict[str, JSON]] = {f"{kind}.{api}": {} for api, _, kind in CHILD_RULES}
    for obj in children:
        meta = obj["metadata"]
        inner = meta["name"] if hook_version == "v1" else f"{meta['namespace']}/{meta['name']}"
        groups.setdefault(child_key(obj), {})[inner] = obj
    return {"controller": controller(hook_version), "parent": parent_obj, "children": groups,
            "related": {}, "finalizing": False}


# --- dynamic apply -------------------------------------------------------------------------

MERGE_KEYS = ("containerPort", "port", "mountPath", "name", "uid", "ip", "path")


def three_way_merge(live: Any, last: Any, desired: Any) -> Any:
    """Metacontroller's merge: fields dropped since last-applied are removed, desired fields
    merged in; lists of objects sharing a known key merge as maps, other lists are replaced."""
    if isinstance(live, dict):
        last_map = last if isinstance(last, dict) else {}
        out = copy.deepcopy(live)
        for key in last_map:
            if key not in desired:
                out.pop(key, None)
        for key, value in desired.items():
            out[key] = three_way_merge(out.get(key), last_map.get(key), value)
        return out
    if isinstance(live, list) and isinstance(desired, list):
        key = _list_key(live, last if isinstance(last, list) else [], desired)
        if key is None:
            return copy.deepcopy(desired)
        live_map = {str(i[key]): i for i in live}
        merged = three_way_merge(live_map, {str(i[key]): i for i in last or []}, {str(i[key]): i for i in desired})
        order = [str(i[key]) for i in live if str(i[key]) in merged]
        order += [str(i[key]) for i in desired if str(i[key]) not in order]
        return [merged[k] for k in order]
    return copy.deepcopy(desired)


def _list_key(*lists: list[Any]) -> str | None:
    common: set[str] | None = None
    for items in lists:
        for item in items:
            if not isinstance(item, dict):
                return None
            common = set(item) if common is None else common & set(item)
    return next((k for k in MERGE_KEYS if common and k in common), None)


SYSTEM_FIELDS = ("uid", "resourceVersion", "generation", "creationTimestamp")


def go_marshal(obj: Any) -> str:
    """What Go's json.Marshal writes for a map, as Metacontroller stores last-applied:
    sorted keys, no spaces, UTF-8, and <, >, & escaped."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


class Cluster:
    """Just enough API server for the hook's children: stores objects, defaults a few fields
    the way Kubernetes does, bumps generation on spec changes, and applies like Metacontroller."""

    def __init__(self) -> None:
        # By (kind, name); a kind two groups share is qualified: AuthorizationPolicy.<group>.
        self.objects: dict[tuple[str, str], JSON] = {}
        self.writes = 0

    def observed(self) -> list[JSON]:
        return [copy.deepcopy(o) for o in self.objects.values()]

    def roll_out(self) -> None:
        """What the Deployment controller does: every Deployment's pods up to date and available."""
        for (kind, _), obj in self.objects.items():
            if kind == "Deployment":
                n = obj["spec"].get("replicas", 1)
                obj["status"] = {"observedGeneration": obj["metadata"]["generation"], "replicas": n,
                                 "readyReplicas": n, "availableReplicas": n, "updatedReplicas": n}

    def apply(self, desired: Sequence[JSON]) -> None:
        """One reconcile: delete what is not desired, create or update the rest."""
        wanted = {object_key(d): d for d in desired}
        for key in list(self.objects):
            if key not in wanted:
                del self.objects[key]
                self.writes += 1
        for key, obj in wanted.items():
            obj = copy.deepcopy(obj)
            obj["metadata"].setdefault("labels", {}).setdefault("controller-uid", PARENT_UID)
            live = self.objects.get(key)
            if live is None:
                created = copy.deepcopy(obj)
                created["metadata"].setdefault("annotations", {})[LAST_APPLIED_ANNOTATION] = go_marshal(obj)
                created["metadata"].update(uid=f"uid-{key[1]}", generation=1, resourceVersion="1",
                                           creationTimestamp="2026-08-21T14:03:12Z")
                self.objects[key] = _server_defaults(created)
                self.writes += 1
                continue
            annotations = live["metadata"].get("annotations", {})
            last = json.loads(annotations.get(LAST_APPLIED_ANNOTATION, "{}"))
            merged = three_way_merge(live, last, obj)
            for field in SYSTEM_FIELDS:
                merged["metadata"][field] = live["metadata"][field]
            merged.pop("status", None)
            if "status" in live:
                merged["status"] = live["status"]
            merged["metadata"].setdefault("annotations", {})[LAST_APPLIED_ANNOTATION] = go_marshal(obj)
            merged = _server_defaults(merged)
            if merged != live:
                if merged.get("spec") != live.get("spec"):
                    merged["metadata"]["generation"] = live["metadata"]["generation"] + 1
                self.objects[key] = merged
                self.writes += 1


SHARED_KINDS = frozenset({"AuthorizationPolicy"})  # Istio's (security.istio.io) and Linkerd's


def object_key(obj: JSON) -> tuple[str, str]:
    kind = obj["kind"]
    if kind in SHARED_KINDS:
        kind = f"{kind}.{obj['apiVersion'].split('/')[0]}"
    return kind, obj["metadata"]["name"]


def _server_defaults(obj: JSON) -> JSON:
    """A few of the defaults the API server fills in, so live objects differ from desired ones
    the way they do in a cluster."""
    spec = obj.get("spec", {})
    if obj["kind"] == "Deployment":
        spec.setdefault("replicas", 1)
        spec.setdefault("revisionHistoryLimit", 10)
        pod = spec["template"]["spec"]
        pod.setdefault("restartPolicy", "Always")
        pod.setdefault("dnsPolicy", "ClusterFirst")
        for container in pod.get("containers", []):
            container.setdefault("imagePullPolicy", "IfNotPresent")
            container.setdefault("terminationMessagePath", "/dev/termination-log")
            for port in container.get("ports", []):
                port.setdefault("protocol", "TCP")
    if obj["kind"] == "Service":
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("clusterIP", "10.0.0.10")
        for port in spec.get("ports", []):
            port.setdefault("protocol", "TCP")
    return obj
