"""The requests the benchmark sends, shaped as Metacontroller sends them."""

from __future__ import annotations

import copy
import functools
from collections.abc import Iterable
from datetime import datetime, timedelta, timezone
from typing import Any

from hooks.canonical import dumps
from hooks.contract.lastapplied import LAST_APPLIED_ANNOTATION, go_json
from hooks.contract.request import parse_request
from hooks.core.desired import desire, desired_inputs
from hooks.core.facts import Facts, Measurement, QueryResult
from hooks.core.rollout import MeasurementPlan
from hooks.core.sync import sync, sync_through
from hooks.edge.templates import load_templates
from hooks.settings import ChildSettings, Settings

JSON = dict[str, Any]
UID = "8c1f5e2a-4b7d-4e0a-9f3c-2d6b1a7e9c44"
CHILD_RULES = [("apps/v1", "Deployment"), ("v1", "Service"), ("autoscaling/v2", "HorizontalPodAutoscaler"),
               ("policy/v1", "PodDisruptionBudget"), ("networking.istio.io/v1", "DestinationRule"),
               ("networking.istio.io/v1", "VirtualService")]
RUNNING_SPEC: JSON = {
    "model": {"uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "credentialsSecret": "hf-token"},
    "resources": {"gpu": {"count": 1, "product": "NVIDIA-L40S"}},
    "autoscaling": {"minReplicas": 2, "maxReplicas": 8, "metrics": [{"type": "queue-length", "target": 5},
                                                                      {"type": "gpu-utilization", "target": 80}]},
    "canary": {"weight": 10, "model": {"revision": "0e9e39f249a16976918f6564b8830bc894c89659"},
               "match": [{"headers": {"x-llm-canary": {"exact": "true"}}}], "mirror": True},
    "traffic": {"hosts": ["llama3.ml.example.com"], "gateways": ["istio-ingress/public-gateway"]},
}


def request(spec: Any, name: str = "llama3", children: list[JSON] | None = None) -> JSON:
    groups: dict[str, dict[str, JSON]] = {f"{kind}.{api}": {} for api, kind in CHILD_RULES}
    for child in children or []:
        groups[f"{child['kind']}.{child['apiVersion']}"][child["metadata"]["name"]] = child
    parent = {"apiVersion": "serving.llmdeploy.io/v1alpha1", "kind": "LLMDeployment",
              "metadata": {"name": name, "namespace": "ml", "uid": UID, "generation": 3,
                           "creationTimestamp": "2026-08-21T14:03:11Z", "resourceVersion": "1243020"},
              "spec": spec}
    return {"controller": {"apiVersion": "metacontroller.k8s.io/v1alpha1", "kind": "CompositeController",
                           "metadata": {"name": "llmdeployment-controller"},
                           "spec": {"generateSelector": True}},
            "parent": parent, "children": groups, "related": {}, "finalizing": False}


def observed(spec: JSON, name: str = "llama3") -> list[JSON]:
    """The children of `spec` as the API server would hold them once rolled out."""
    settings = ChildSettings()
    parsed = parse_request(request(spec, name))
    desired = desire(desired_inputs(parsed, settings), load_templates(None, settings))
    return live(sync(parsed, Facts(datetime.now(timezone.utc)), desired).children, name)


def live(children: Iterable[JSON], name: str = "llama3") -> list[JSON]:
    """`children` as the API server holds them once applied and rolled out."""
    live = []
    for child in children:
        obj = copy.deepcopy(child)
        obj["metadata"]["annotations"] = {**obj["metadata"].get("annotations", {}),
                                          LAST_APPLIED_ANNOTATION: go_json(dumps(child)).decode()}
        obj["metadata"].update(uid=f"uid-{child['metadata']['name']}", generation=2, resourceVersion="1242950",
                               creationTimestamp="2026-08-21T14:03:12Z",
                               ownerReferences=[{"apiVersion": "serving.llmdeploy.io/v1alpha1", "kind": "LLMDeployment",
                                                 "name": name, "uid": UID, "controller": True,
                                                 "blockOwnerDeletion": True}])
        if child["kind"] == "Deployment":
            replicas = obj["spec"].setdefault("replicas", 2)
            obj["status"] = {"observedGeneration": 2, "replicas": replicas, "readyReplicas": replicas,
                             "availableReplicas": replicas, "updatedReplicas": replicas, "conditions": [
                                 {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                  "lastTransitionTime": "2026-08-22T09:24:30Z", "lastUpdateTime": "2026-08-22T09:24:30Z",
                                  "message": "Deployment has minimum availability."}]}
        live.append(obj)
    return live


ROLLOUT_SPEC: JSON = {
    "model": {"uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "revision": "1", "credentialsSecret": "hf-token"},
    "resources": {"gpu": {"count": 1, "product": "NVIDIA-L40S"}}, "replicas": 4,
    "rollout": {"strategy": "Canary", "analysis": {"intervalSeconds": 60}},
}
ROLLOUT_SETTINGS = Settings.with_prometheus({"default": "http://prometheus.monitoring.svc:9090"})
ROLLOUT_START = datetime(2026, 9, 1, 12, 0, tzinfo=timezone.utc)


def rolling_resource() -> tuple[JSON, Facts]:
    """A resource one minute into a canary step at 10% (revision 2 against revision 1), and the
    facts of the sync that takes its next measurement (every check passing), as the edge
    hands them over once Prometheus has answered."""
    templates = load_templates(None, ROLLOUT_SETTINGS.children)
    children: list[JSON] = []
    status: JSON | None = None
    for revision in ("1", "1", "2", "2"):
        spec = {**ROLLOUT_SPEC, "model": {**ROLLOUT_SPEC["model"], "revision": revision}}
        raw = request(spec, children=children)
        if status is not None:
            raw["parent"]["status"] = status
        result = sync_through(parse_request(raw), ROLLOUT_START, ROLLOUT_SETTINGS.children,
                              lambda inputs: desire(inputs, templates))
        children, status = live(result.children), result.status.as_json()
    raw = request(spec, children=children)
    raw["parent"]["status"] = status
    due = ROLLOUT_START + timedelta(seconds=60)
    taken: list[Measurement] = []

    def measure(plan: MeasurementPlan) -> Measurement:
        taken.append(Measurement(plan.key, plan.at, {q: QueryResult((0.001,)) for q in plan.queries}))
        return taken[-1]

    sync_through(parse_request(raw), due, ROLLOUT_SETTINGS.children, lambda inputs: desire(inputs, templates),
                 measure)
    return raw, Facts(due, taken[0])


def new_resource() -> JSON:
    return request({"model": {"uri": "hf://meta-llama/Llama-3.1-8B-Instruct"}})


def running_resource() -> JSON:
    """As Metacontroller sends it on a resync: its children rolled out, and its status as the
    hook last answered it (so nothing changes: the usual sync of a fleet)."""
    raw = request(RUNNING_SPEC, children=observed(RUNNING_SPEC))
    settings = ChildSettings()
    parsed = parse_request(raw)
    desired = desire(desired_inputs(parsed, settings), load_templates(None, settings))
    raw["parent"]["status"] = sync(parsed, Facts(datetime.now(timezone.utc)), desired).status.as_json()
    return raw


def changed(raw: JSON, serial: int) -> JSON:
    """`raw` after a change that changes no answer: the stable Deployment's status was written
    again (a new resourceVersion), so the request is byte for byte new and is synced."""
    changed = copy.deepcopy(raw)
    stable = changed["children"]["Deployment.apps/v1"]["llama3-stable"]
    stable["metadata"]["resourceVersion"] = str(1242950 + serial)
    return changed


def invalid_with_children() -> JSON:
    return request({**RUNNING_SPEC, "canary": {**RUNNING_SPEC["canary"], "weight": 250}},
                   children=observed(RUNNING_SPEC))


def grown(size: int) -> JSON:
    """A spec with `size` engine args, env vars, annotations and hosts, each up to the API's
    limit (256 args, 128 env vars, 32 annotations and hosts): the largest valid resources."""
    spec = copy.deepcopy(RUNNING_SPEC)
    spec["engine"] = {"args": [f"--flag-{i}=value-{i}" for i in range(min(size, 256))],
                      "env": [{"name": f"VAR_{i}", "value": f"value-{i}"} for i in range(min(size, 128))]}
    spec["pod"] = {"annotations": {f"example.com/key-{i}": f"value-{i}" for i in range(min(size, 32))}}
    spec["traffic"] = {"hosts": [f"host-{i}.example.com" for i in range(min(size, 32))]}
    return request(spec)


def fleet_member(i: int) -> bytes:
    """The running resource named model-<i>, as Metacontroller sends it on a resync (its
    children and status renamed with it)."""
    return _running_text().replace(b"llama3", f"model-{i}".encode())


@functools.cache
def _running_text() -> bytes:
    return dumps(running_resource())
