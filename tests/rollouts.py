"""Driving whole progressive rollouts: the hook, Metacontroller's apply, the Deployment
controller and the parent's status, sync after sync on an injected clock, with the rules that
must hold at every step checked after each sync."""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

from hooks.api.spec import Rollout as RolloutSpec
from hooks.core.facts import Measurement, QueryResult
from hooks.core.naming import REVISION_LABEL
from hooks.core.rollout import MeasurementPlan
from hooks.core.sync import Measure, Resolve, SyncResult
from hooks.rendering.templateset import TemplateSet
from hooks.settings import ChildSettings, Settings

from tests import metacontroller as mc
from tests.syncing import check_replay, run_sync

SETTINGS = Settings.with_prometheus({"default": "http://prometheus.monitoring:9090"})
START = datetime(2026, 9, 1, 12, 0, 0, tzinfo=timezone.utc)
STABLE, CANARY = "llama3-stable", "llama3-canary"
JSON = dict[str, Any]


def canary_spec(revision: str = "1", **rollout: Any) -> JSON:
    return {"model": {"uri": "hf://meta-llama/Llama-3.1-8B-Instruct", "revision": revision}, "replicas": 4,
            "rollout": {"strategy": "Canary", "analysis": {"intervalSeconds": 60}, **rollout}}


def values(canary: Mapping[str, float | None], stable: Mapping[str, float | None] | None = None) -> Measure:
    """A measurement answering each check with a number (None: no data), per track."""
    def measure(plan: MeasurementPlan) -> Measurement:
        results = {}
        for track, queries, numbers in (("canary", plan.canary, canary), ("stable", plan.stable, stable or {})):
            for name, query in queries.items():
                value = numbers.get(name, 0.0 if track == "canary" else 1.0)
                results[query] = QueryResult(() if value is None else (value,))
        return Measurement(plan.key, plan.at, results)
    return measure


def unreachable(plan: MeasurementPlan) -> Measurement:
    return Measurement(plan.key, plan.at, {q: QueryResult(error="Prometheus unreachable: ConnectError")
                                           for q in plan.queries})


HEALTHY = values({"error-rate": 0.001, "ttft-p95": 0.5}, {"ttft-p95": 0.5})


@dataclass
class Step:
    """What one sync answered, and what the cluster then held."""

    at: datetime
    result: SyncResult
    status: JSON
    deployments: dict[str, JSON]  # live, after the apply

    @property
    def rollout(self) -> JSON:
        found: JSON = self.status.get("rollout", {})
        return found

    @property
    def phase(self) -> str:
        return str(self.rollout.get("phase"))

    def weights(self) -> dict[str, int]:
        service = next((c for c in self.result.children if c["kind"] == "VirtualService"), None)
        if service is None:
            return {}
        return {d["destination"]["subset"]: d["weight"] for d in service["spec"]["http"][-1]["route"]}

    def replicas(self, name: str) -> int | None:
        found = self.deployments.get(name)
        return found["spec"].get("replicas") if found else None

    def revision(self, name: str) -> str | None:
        found = self.deployments.get(name)
        return found["spec"]["template"]["metadata"]["labels"].get(REVISION_LABEL) if found else None


@dataclass
class Rollout:
    """One LLMDeployment in a simulated cluster."""

    templates: TemplateSet
    spec: JSON
    measure: Measure | None = HEALTHY
    settings: ChildSettings = SETTINGS.children
    now: datetime = START
    annotations: dict[str, str] = field(default_factory=dict)
    generation: int = 1
    status: JSON | None = None
    cluster: mc.Cluster = field(default_factory=mc.Cluster)
    history: list[Step] = field(default_factory=list)
    kubernetes: bool = True  # the Deployment controller brings pods up after every sync
    hpa_replicas: int | None = None  # the HPA's choice for the stable, when autoscaling
    resolve: Resolve | None = None  # the model registry, for models:/name@alias

    def sync(self) -> Step:
        parent = mc.parent(self.spec, generation=self.generation, status=self.status)
        parent["metadata"]["annotations"] = dict(self.annotations)
        before = {name: copy.deepcopy(obj) for (kind, name), obj in self.cluster.objects.items()
                  if kind == "Deployment"}
        request = mc.request(parent, self.cluster.observed())
        result = run_sync(request, self.templates, self.settings, self.now, self.measure, self.resolve)
        check_replay(request, result, self.templates, self.settings, self.now)
        assert result.outcome == "ok", result.status
        self.cluster.apply(result.children)
        if self.hpa_replicas is not None and ("Deployment", STABLE) in self.cluster.objects:
            live = self.cluster.objects["Deployment", STABLE]
            if live["spec"].get("replicas") != self.hpa_replicas:
                live["spec"]["replicas"] = self.hpa_replicas
                live["metadata"]["generation"] += 1
        if self.kubernetes:
            self.cluster.roll_out()
        self.status = result.status.as_json()
        step = Step(self.now, result, self.status, {name: copy.deepcopy(obj) for (kind, name), obj
                                                    in self.cluster.objects.items() if kind == "Deployment"})
        auto = self.spec.get("rollout", {}).get("canaryReplicas", "auto") == "auto"
        steps = [s.weight for s in RolloutSpec.model_validate(self.spec.get("rollout", {})).steps]
        check_invariants(before, step, self.history[-1] if self.history else None, steps if auto else None)
        self.history.append(step)
        return step

    def edit(self, **changes: Any) -> None:
        """A new spec (a new generation), e.g. edit(model={...})."""
        self.spec = {**copy.deepcopy(self.spec), **changes}
        self.generation += 1

    def new_revision(self, revision: str) -> None:
        self.edit(model={**self.spec["model"], "revision": revision})

    def run(self, until: Callable[[Step], bool], every: float = 30, limit: int = 400) -> Step:
        """Sync every `every` seconds until `until(step)`; fails after `limit` syncs."""
        for _ in range(limit):
            step = self.sync()
            if until(step):
                return step
            self.now += timedelta(seconds=every)
        raise AssertionError(f"not reached after {limit} syncs; last: {self.history[-1].rollout}")

    def deployed(self) -> Step:
        """The resource created and its stable rolled out (before any rollout)."""
        self.sync()
        return self.sync()

    def canary_at(self, weight: int, revision: str = "2") -> Step:
        """Deployed, then a new revision rolled out until its canary gets `weight` percent."""
        self.deployed()
        self.new_revision(revision)
        return self.run(lambda s: s.rollout.get("weight") == weight)


def check_invariants(before: dict[str, JSON], step: Step, previous: Step | None,
                     auto_steps: list[int] | None = None) -> None:
    """What must hold after every sync of a rollout."""
    rollout = step.rollout
    # The stable is never deleted, and its pod template changes only when promoting (or when
    # no rollout runs: a new resource, a revert, a RollingUpdate).
    if STABLE in before:
        assert STABLE in step.deployments, "the stable Deployment was deleted"
        if before[STABLE]["spec"]["template"] != step.deployments[STABLE]["spec"]["template"]:
            assert step.phase in ("Promoting", "Idle", "Succeeded"), f"stable changed while {step.phase}"
    # The canary goes only once nothing routes to it.
    if CANARY in before and CANARY not in step.deployments and previous is not None:
        assert previous.weights().get("canary", 0) == 0, "the canary was deleted while it had traffic"
        assert step.phase in ("Succeeded", "Idle"), f"the canary was deleted while {step.phase}"
    # The routes give the canary what status says is in force, and always sum to 100.
    weights = step.weights()
    if weights:
        assert sum(weights.values()) == 100
        assert weights.get("canary", 0) == step.status["traffic"]["canary"]
        if rollout:
            assert weights.get("canary", 0) == rollout.get("weight", 0), (weights, rollout)
    # While stepping, the canary has ceil(stable x the step's weight / 100) replicas, at least 1,
    # from the stable's replicas as the hook saw them.
    if (auto_steps and step.phase in ("Progressing", "Paused") and CANARY in step.deployments and STABLE in before
            and rollout.get("step") is not None):
        stable = before[STABLE]["spec"].get("replicas", 1)
        assert step.replicas(CANARY) == max(1, math.ceil(stable * auto_steps[rollout["step"]] / 100))
    # A weight goes up only onto canary pods that were all available, in the number it needs.
    raised = weights.get("canary", 0) > (previous.weights().get("canary", 0) if previous is not None else 0)
    if raised and auto_steps and rollout:
        canary = before[CANARY]
        stable = before[STABLE]["spec"].get("replicas", 1)
        assert canary["status"].get("availableReplicas", 0) >= max(1, math.ceil(stable * weights["canary"] / 100)), \
            f"{weights['canary']}% put on {canary['status'].get('availableReplicas', 0)} available canary replicas"
