"""Every child name, label and selector, computed in one place (Helm's `_helpers`).

Templates never build names or labels; they receive them from here. The selector labels are
a fixed subset that never changes, because a Deployment's selector is immutable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# On every pod template (see hooks.core.revision); the observed state reads it back.
from hooks.contract.observed import REVISION_LABEL as REVISION_LABEL

Track = Literal["stable", "canary"]
TRACKS: tuple[Track, ...] = ("stable", "canary")

NAME_LABEL = "serving.llmdeploy.io/llmdeployment"
TRACK_LABEL = "serving.llmdeploy.io/track"
CONTROLLER_UID_LABEL = "controller-uid"
PORT_NAME = "http"  # the engine container's port, which the Service and the probes target


@dataclass(frozen=True)
class Names:
    """The names and labels of one LLMDeployment's children."""

    parent: str
    namespace: str
    controller_uid: str = ""  # set when Metacontroller selects children by controller-uid

    @property
    def service(self) -> str:
        return self.parent

    @property
    def host(self) -> str:
        """The Service's cluster-local DNS name, which Istio routes by."""
        return f"{self.parent}.{self.namespace}.svc.cluster.local"

    def deployment(self, track: Track) -> str:
        return f"{self.parent}-{track}"

    @property
    def autoscaler(self) -> str:
        return self.deployment("stable")

    @property
    def disruption_budget(self) -> str:
        return self.deployment("stable")

    @property
    def routing(self) -> str:
        """The DestinationRule's, the VirtualService's and the mesh HTTPRoute's name."""
        return self.parent

    def track_service(self, track: Track) -> str:
        """A Service that selects one track: what HTTPRoute backends split between."""
        return f"{self.parent}-{track}"

    @property
    def external_route(self) -> str:
        """The HTTPRoute on a Gateway, for callers outside the cluster."""
        return f"{self.parent}-external"

    @property
    def access(self) -> str:
        """The NetworkPolicy's and the mesh policies' name."""
        return self.parent

    @property
    def ingress(self) -> str:
        return self.parent

    def common_labels(self) -> dict[str, str]:
        """Labels on every child and pod."""
        return {
            "app.kubernetes.io/name": "llmdeploy",
            "app.kubernetes.io/instance": self.parent,
            "app.kubernetes.io/managed-by": "llmdeploy",
            NAME_LABEL: self.parent,
        }

    def child_labels(self) -> dict[str, str]:
        """Labels of a child object that belongs to no track (Service, HPA, PDB, Istio)."""
        return self._with_uid(self.common_labels())

    def pod_labels(self, track: Track) -> dict[str, str]:
        """Labels of a track's pods: common, track and Istio's canonical service labels."""
        return {
            **self.common_labels(),
            TRACK_LABEL: track,
            "service.istio.io/canonical-name": self.parent,
            "service.istio.io/canonical-revision": track,
        }

    def deployment_labels(self, track: Track) -> dict[str, str]:
        return self._with_uid(self.pod_labels(track))

    def selector(self, track: Track) -> dict[str, str]:
        """A Deployment's selector: exactly these two labels, forever."""
        return {NAME_LABEL: self.parent, TRACK_LABEL: track}

    def service_selector(self) -> dict[str, str]:
        """The Service selects both tracks."""
        return {NAME_LABEL: self.parent}

    def subset_labels(self, track: Track) -> dict[str, str]:
        """What a DestinationRule subset selects within the Service's pods."""
        return {TRACK_LABEL: track}

    def _with_uid(self, labels: dict[str, str]) -> dict[str, str]:
        # Metacontroller adds this label itself when absent; emitting it keeps what we return
        # identical to what gets applied, so an unchanged child compares equal.
        if self.controller_uid:
            return {**labels, CONTROLLER_UID_LABEL: self.controller_uid}
        return labels
