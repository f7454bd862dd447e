"""The sync hook's logic: a pure function from Metacontroller's request and the facts the
edge gathered to the children and status to answer.

No I/O, no clock, no global state: the same request and facts always give the same answer.
`desire` computes the desired state from its inputs; the web layer passes it wrapped in a
cache, which changes how fast the answer comes, never what it is.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from hooks.api.status import LLMDeploymentStatus
from hooks.contract.request import SyncRequest
from hooks.core.desired import Desire, desired_inputs
from hooks.core.facts import Facts
from hooks.core.freeze import frozen_children
from hooks.core.naming import Names
from hooks.core.status import frozen_status, status
from hooks.settings import ChildSettings

Outcome = Literal["ok", "invalid", "paused"]


@dataclass(frozen=True)
class SyncResult:
    children: tuple[dict[str, Any], ...]
    status: LLMDeploymentStatus
    outcome: Outcome  # what happened, for logs and metrics


def sync(request: SyncRequest, facts: Facts, settings: ChildSettings, desire: Desire) -> SyncResult:
    """The desired children and status of the LLMDeployment in `request`.

    Raises UnsafeToAnswer when children must be kept but cannot be reproduced, and
    TemplateError when the templates fail; both mean "answer non-200, change nothing".
    """
    parent = request.parent
    desired = desire(desired_inputs(request, settings))
    if desired.outcome == "ok":
        assert desired.plan is not None
        return SyncResult(desired.children,
                          status(request.observed, desired.plan, request.previous, facts.now, parent.generation), "ok")
    children = tuple(frozen_children(request.observed))
    why: Literal["Invalid", "Paused"] = "Invalid" if desired.outcome == "invalid" else "Paused"
    return SyncResult(children, frozen_status(request.observed, Names(parent.name, parent.namespace),
                                              request.previous, facts.now, parent.generation, why,
                                              desired.spec_errors), desired.outcome)
