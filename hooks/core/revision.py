"""A pod template's revision: a short hash of the template as rendered.

Every Deployment's pod template carries it as the label `serving.llmdeploy.io/revision`.
The Canary strategy compares the revision the current spec renders with the one the stable
Deployment was last applied with: a different one is a rollout. The label itself is left out
of the hash, so the revision of a template read back from a child is the one it was given.
"""

from __future__ import annotations

import hashlib
from typing import Any

from hooks.canonical import dumps
from hooks.core.naming import REVISION_LABEL

JSON = dict[str, Any]


def revision_of(template: JSON) -> str:
    labels = template.get("metadata", {}).get("labels", {})
    if isinstance(labels, dict) and REVISION_LABEL in labels:
        template = {**template, "metadata": {**template["metadata"],
                                             "labels": {k: v for k, v in labels.items() if k != REVISION_LABEL}}}
    return hashlib.blake2b(dumps(template), digest_size=4).hexdigest()


def pod_template(deployment: JSON) -> JSON | None:
    template = deployment.get("spec", {}).get("template") if isinstance(deployment.get("spec"), dict) else None
    return template if isinstance(template, dict) else None


def labelled(deployment: JSON, revision: str) -> JSON:
    """`deployment` with `revision` on its pod template's labels."""
    spec = deployment["spec"]
    template = spec["template"]
    metadata = template.get("metadata") or {}
    labels = {**(metadata.get("labels") or {}), REVISION_LABEL: revision}
    return {**deployment, "spec": {**spec, "template": {**template, "metadata": {**metadata, "labels": labels}}}}
