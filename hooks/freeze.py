"""Keeping every observed child exactly as last applied, or refusing to answer.

Metacontroller deletes any observed child a 200 answer leaves out. When the hook must not
change anything (invalid spec, paused resource), it returns each child's last-applied
configuration, which Metacontroller's three-way merge treats as "no change". A child without
one cannot be reproduced, so the only safe answer is a refusal (non-200).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from hooks.errors import UnsafeToAnswer
from hooks.hookapi import KubeObject
from hooks.naming import LAST_APPLIED_ANNOTATION


def frozen_children(observed: Sequence[KubeObject]) -> list[dict[str, Any]]:
    """Every observed child as last applied; UnsafeToAnswer if one cannot be reproduced."""
    children = []
    for child in observed:
        last_applied = child.metadata.annotations.get(LAST_APPLIED_ANNOTATION)
        try:
            obj = json.loads(last_applied) if last_applied is not None else None
        except ValueError:
            obj = None
        if not (isinstance(obj, dict) and obj.get("kind") == child.kind
                and obj.get("apiVersion") == child.api_version
                and (obj.get("metadata") or {}).get("name") == child.metadata.name):
            raise UnsafeToAnswer(
                f"{child.kind} {child.metadata.name} has no usable {LAST_APPLIED_ANNOTATION} annotation, "
                "so its current state cannot be kept; refusing so that Metacontroller changes nothing"
            )
        children.append(obj)
    return children
