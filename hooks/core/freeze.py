"""Keeping every observed child exactly as last applied, or refusing to answer.

Metacontroller deletes any observed child a 200 answer leaves out. When the hook must not
change anything (invalid spec, paused resource), it answers each child's last-applied
configuration, which Metacontroller's three-way merge treats as "no change". A child without
one cannot be reproduced, so the only safe answer is a refusal (non-200).
"""

from __future__ import annotations

from typing import Any

from hooks.contract import lastapplied
from hooks.contract.observed import Observed
from hooks.errors import UnsafeToAnswer


def frozen_children(observed: Observed) -> list[dict[str, Any]]:
    """Every observed child as last applied; UnsafeToAnswer if one cannot be reproduced."""
    children = []
    for child in observed.children:
        obj = lastapplied.parse(child.last_applied)
        if not (obj is not None and obj.get("kind") == child.kind and obj.get("apiVersion") == child.api_version
                and isinstance(obj.get("metadata"), dict) and obj["metadata"].get("name") == child.name):
            why = (" (it was server-side applied: run Metacontroller with its default --apply-strategy, "
                   "dynamic-apply, which llmdeploy needs to keep children unchanged)") if child.applied_server_side else ""
            raise UnsafeToAnswer(
                f"{child.kind} {child.name} has no usable {lastapplied.LAST_APPLIED_ANNOTATION} annotation{why}, "
                "so its current state cannot be kept; refusing so that Metacontroller changes nothing"
            )
        children.append(obj)
    return children
