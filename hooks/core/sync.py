"""The sync hook's logic: a pure function from Metacontroller's request, the facts the edge
gathered and the desired state to the children and status to answer.

No I/O, no clock, no global state: the same request, facts and desired state always give
the same answer. The desired state is `desire(desired_inputs(request, settings), templates)`;
the web layer computes it in a render worker, or takes it from its cache, which changes how
fast the answer comes, never what it is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from hooks.api.status import LLMDeploymentStatus
from hooks.contract.observed import ObservedDeployment
from hooks.contract.request import SyncRequest
from hooks.core.desired import Desired, DesiredInputs, desired_inputs
from hooks.core.facts import Facts, Measurement
from hooks.core.freeze import frozen_children
from hooks.core.naming import Names
from hooks.core.registry import Resolution, pins, pins_running, references, resolved_condition
from hooks.core.rollout import NO_ROLLOUT, MeasurementPlan, RolloutDecision, decide, measurement_due, previous_rollout
from hooks.core.status import frozen_status, status
from hooks.settings import ChildSettings

Outcome = Literal["ok", "invalid", "paused", "unresolved", "finalizing"]


@dataclass(frozen=True)
class SyncResult:
    children: Sequence[dict[str, Any]]
    status: LLMDeploymentStatus
    outcome: Outcome  # what happened, for logs and metrics
    finalized: bool | None = None  # answered to a finalize call only: whether nothing is left
    resync_after: float | None = None  # seconds: a rollout's next measurement or step end
    replayable: bool = False  # the same request gets this answer at any other time (see `replayable`)


def sync(request: SyncRequest, facts: Facts, desired: Desired | None,
         rollout: RolloutDecision = NO_ROLLOUT) -> SyncResult:
    """The children and status of the LLMDeployment in `request`, given its desired state
    (none is needed to finalize) and, with the Canary strategy, the rollout's move (which
    `desired` was rendered for).

    A finalize call (`finalizing`: the resource is being deleted, and the CompositeController
    has a finalize hook) releases every child, so that Metacontroller deletes them, and says
    `finalized` once none is left. Raises UnsafeToAnswer when children must be kept but
    cannot be reproduced: answer non-200, change nothing.
    """
    parent = request.parent
    names = Names(parent.name, parent.namespace)
    kept_rollout = previous_rollout(request)  # frozen children keep the rollout's memory too
    if request.finalizing:
        return SyncResult((), frozen_status(request.observed, names, request.previous, facts.now, parent.generation,
                                            "Terminating", (), kept_rollout),
                          "finalizing", finalized=not request.observed.children)
    assert desired is not None, "only a finalize call needs no desired state"
    refs = references(parent.spec)
    running = pins_running(request.observed, names)
    registry = resolved_condition(refs, facts.resolutions, pins(refs, facts.resolutions, running),
                                  bool(request.observed.children)) if desired.outcome in ("ok", "unresolved") else None
    resync = _sooner(rollout.resync_after, _registry_resync(refs, facts))
    if desired.outcome == "ok":
        assert desired.plan is not None
        answered = status(request.observed, desired.plan, request.previous, facts.now, parent.generation,
                          rollout.status, registry)
        return SyncResult(desired.children, answered, "ok", resync_after=resync,
                          replayable=replayable(request, facts, refs, rollout, answered, resync))
    children = tuple(frozen_children(request.observed))
    if desired.outcome == "unresolved":  # kept as they are, and said why, until the registry answers
        return SyncResult(children, frozen_status(request.observed, names, request.previous, facts.now,
                                                  parent.generation, None, (), kept_rollout, registry),
                          "unresolved", resync_after=resync)
    why: Literal["Invalid", "Paused"] = "Invalid" if desired.outcome == "invalid" else "Paused"
    frozen = frozen_status(request.observed, names, request.previous, facts.now, parent.generation, why,
                           desired.spec_errors, kept_rollout)
    return SyncResult(children, frozen, desired.outcome,
                      replayable=replayable(request, facts, refs, rollout, frozen, resync))


def replayable(request: SyncRequest, facts: Facts, refs: tuple[str, ...], rollout: RolloutDecision,
               answered: LLMDeploymentStatus, resync: float | None) -> bool:
    """Whether the answer with status `answered` is the answer to the same request at any
    other moment, with no facts gathered: that is, nothing in it read the clock. Each of these
    does: a registry reference (the registry is asked again when its answer expires), a timer
    (`resync`), a rollout in motion, just finished or with a canary left, a Deployment without
    enough replicas available (it may be taking too long to start), and a condition whose
    status changes now (its lastTransitionTime is now). The web layer answers a byte-identical
    request again with such an answer without syncing."""
    if refs or resync is not None or facts.measurement is not None:
        return False
    if rollout.status is not None and not _at_rest(request, rollout):
        return False
    if any(_unavailable(d) for d in request.observed.deployments.values()):
        return False
    before = request.previous.conditions
    return all((kept := before.get(c.type)) is not None and kept.status == c.status
               and kept.last_transition_time == c.last_transition_time for c in answered.conditions)


def _at_rest(request: SyncRequest, rollout: RolloutDecision) -> bool:
    """No canary, nothing to render for one, and the rollout Idle, or Succeeded already before
    this sync (the sync that finishes a rollout stamps the time it did)."""
    assert rollout.status is not None
    canary = Names(request.parent.name, request.parent.namespace).deployment("canary")
    if rollout.render is not None or canary in request.observed.deployments:
        return False
    before = (request.previous.rollout or {}).get("phase")
    return rollout.status.phase == "Idle" or (rollout.status.phase == "Succeeded" and before == "Succeeded")


def _unavailable(deployment: ObservedDeployment) -> bool:
    available = deployment.condition("Available")
    return available is not None and available.status == "False"


def _registry_resync(refs: tuple[str, ...], facts: Facts) -> float | None:
    """Seconds until the first registry answer this sync used must be asked again."""
    expiring = [r.expires_at for uri in refs if (r := facts.resolutions.get(uri)) is not None and r.expires_at]
    return max(1.0, (min(expiring) - facts.now).total_seconds()) if expiring else None


def _sooner(a: float | None, b: float | None) -> float | None:
    return min(a, b) if a is not None and b is not None else a if a is not None else b


Measure = Callable[[MeasurementPlan], Measurement | None]
Resolve = Callable[[tuple[str, ...]], dict[str, Resolution]]


def sync_through(request: SyncRequest, now: datetime, settings: ChildSettings,
                 desire: Callable[[DesiredInputs], Desired], measure: Measure | None = None,
                 resolve: Resolve | None = None) -> SyncResult:
    """Every step of a sync, in this thread: the desired state straight from the spec, a
    measurement from `measure` when one is due, the rollout's move and the desired state
    rendered for it, then `sync`; registry references are resolved by `resolve` first (without
    it, none is). The web layer runs the same steps around its cache, render workers and edge;
    the CLI and the tests run them here."""
    if request.finalizing:
        return sync(request, Facts(now), None)
    resolutions = resolve(references(request.parent.spec)) if resolve is not None else {}
    direct = desire(desired_inputs(request, settings, None, resolutions))
    plan = measurement_due(request, direct, now)
    facts = Facts(now, measure(plan) if plan is not None and measure is not None else None, resolutions)
    decision = decide(request, direct, facts)
    desired = direct if decision.render is None else desire(desired_inputs(request, settings, decision.render,
                                                                           resolutions))
    return sync(request, facts, desired, decision)
