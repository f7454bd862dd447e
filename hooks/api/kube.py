"""Kubernetes core/v1 types an LLMDeployment embeds, typed so that the CRD (and the hook)
check them as the API server would check them in the pods: scheduling affinity, label
selectors, tolerations, environment variable sources.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from hooks.api.base import SpecModel
from hooks.api.rules import Rule

FIELD_PATH_PATTERN = (r"^(metadata\.(name|namespace|uid)|metadata\.(labels|annotations)\['[^']+'\]"
                      r"|spec\.(nodeName|serviceAccountName)|status\.(hostIP|hostIPs|podIP|podIPs))$")
RESOURCE_FIELD_PATTERN = r"^(limits|requests)\.(cpu|memory|ephemeral-storage)$"
from hooks.api.syntax import (
    DNS_LABEL_PATTERN,
    INT64_MAX,
    QUALIFIED_NAME_PATTERN,
    DNSLabel,
    DNSSubdomain,
    LabelKey,
    LabelMap,
    LabelValue,
    Quantity,
    qualified_keys,
)


class LabelSelectorRequirement(SpecModel):
    cel_rules = (Rule("self.operator in ['Exists', 'DoesNotExist'] ? !has(self.values) || size(self.values) == 0 "
                      ": has(self.values) && size(self.values) > 0",
                      "values must be empty with Exists and DoesNotExist, and set with In and NotIn"),)

    key: str = Field(max_length=317, pattern=QUALIFIED_NAME_PATTERN, description="A label key.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(description="How the key relates to values.")
    values: list[LabelValue] | None = Field(None, max_length=64, description="Values, for In and NotIn.")


class LabelSelector(SpecModel):
    cel_rules = (qualified_keys("matchLabels", "label"),)

    match_labels: LabelMap | None = Field(None, description="Labels the objects must carry.")
    match_expressions: list[LabelSelectorRequirement] | None = Field(
        None, max_length=32, description="Requirements the objects' labels must meet.")


class NodeSelectorRequirement(SpecModel):
    cel_rules = (Rule("self.operator in ['Exists', 'DoesNotExist'] ? !has(self.values) || size(self.values) == 0 "
                      ": self.operator in ['Gt', 'Lt'] ? has(self.values) && size(self.values) == 1 "
                      "&& self.values[0].matches(r'^-?[0-9]+$') : has(self.values) && size(self.values) > 0",
                      "values must be empty with Exists and DoesNotExist, one whole number with Gt and Lt, and "
                      "set with In and NotIn"),)

    key: str = Field(min_length=1, max_length=317, pattern=QUALIFIED_NAME_PATTERN, description="A node label key.")
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"] = Field(description="How it relates.")
    values: list[str] | None = Field(None, max_length=64, description="Values.")


class NodeFieldRequirement(SpecModel):
    key: Literal["metadata.name"] = Field(description="The node field: metadata.name.")
    operator: Literal["In", "NotIn"] = Field(description="In or NotIn.")
    values: list[str] = Field(min_length=1, max_length=1, description="One node name.")


class NodeSelectorTerm(SpecModel):
    match_expressions: list[NodeSelectorRequirement] | None = Field(None, max_length=32,
                                                                    description="Requirements on node labels.")
    match_fields: list[NodeFieldRequirement] | None = Field(None, max_length=32,
                                                            description="Requirements on node fields.")


class NodeSelector(SpecModel):
    node_selector_terms: list[NodeSelectorTerm] = Field(min_length=1, max_length=32,
                                                        description="Terms, any of which may match.")


class PreferredSchedulingTerm(SpecModel):
    weight: int = Field(ge=1, le=100, description="Weight of this preference.")
    preference: NodeSelectorTerm = Field(description="The preferred nodes.")


class NodeAffinity(SpecModel):
    required_during_scheduling_ignored_during_execution: NodeSelector | None = Field(
        None, description="Nodes the pods must run on.")
    preferred_during_scheduling_ignored_during_execution: list[PreferredSchedulingTerm] | None = Field(
        None, max_length=32, description="Nodes the pods prefer.")


class PodAffinityTerm(SpecModel):
    cel_rules = (
        Rule("!(has(self.matchLabelKeys) || has(self.mismatchLabelKeys)) || has(self.labelSelector)",
             "matchLabelKeys and mismatchLabelKeys need a labelSelector"),
        Rule("!has(self.matchLabelKeys) || !has(self.mismatchLabelKeys) || "
             "!self.matchLabelKeys.exists(k, k in self.mismatchLabelKeys)",
             "a key cannot be in both matchLabelKeys and mismatchLabelKeys"),
    )

    label_selector: LabelSelector | None = Field(None, description="The pods this term is about.")
    namespace_selector: LabelSelector | None = Field(None, description="Namespaces of those pods.")
    namespaces: list[DNSLabel] | None = Field(None, max_length=32, description="Namespaces of those pods.")
    topology_key: str = Field(min_length=1, max_length=317, pattern=QUALIFIED_NAME_PATTERN,
                              description="The node label that groups nodes into domains.")
    match_label_keys: list[LabelKey] | None = Field(None, max_length=32, description="Label keys matched by value.")
    mismatch_label_keys: list[LabelKey] | None = Field(None, max_length=32, description="Label keys mismatched.")


class WeightedPodAffinityTerm(SpecModel):
    weight: int = Field(ge=1, le=100, description="Weight of this preference.")
    pod_affinity_term: PodAffinityTerm = Field(description="The term.")


class PodAffinity(SpecModel):
    required_during_scheduling_ignored_during_execution: list[PodAffinityTerm] | None = Field(
        None, max_length=32, description="Terms that must hold.")
    preferred_during_scheduling_ignored_during_execution: list[WeightedPodAffinityTerm] | None = Field(
        None, max_length=32, description="Terms preferred.")


class Affinity(SpecModel):
    node_affinity: NodeAffinity | None = Field(None, description="Where pods may run, by node labels.")
    pod_affinity: PodAffinity | None = Field(None, description="Pods to run near.")
    pod_anti_affinity: PodAffinity | None = Field(None, description="Pods to run away from.")


class Toleration(SpecModel):
    cel_rules = (Rule("!has(self.operator) || self.operator != 'Exists' || !has(self.value) || self.value == ''",
                      "value must be empty when operator is Exists", ".value"),
                 Rule("!has(self.tolerationSeconds) || has(self.effect) && self.effect == 'NoExecute'",
                      "tolerationSeconds needs effect NoExecute", ".tolerationSeconds"),
                 Rule("has(self.key) && self.key != '' || has(self.operator) && self.operator == 'Exists'",
                      "a toleration without a key must use operator Exists", ".key"))

    key: str | None = Field(None, max_length=317, pattern=rf"{QUALIFIED_NAME_PATTERN}|^$", description="Taint key.")
    operator: Literal["Exists", "Equal"] | None = Field(None, description="Exists or Equal.")
    value: LabelValue | None = Field(None, description="Taint value, with Equal.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(None, description="Taint effect.")
    toleration_seconds: int | None = Field(None, ge=0, le=INT64_MAX,
                                           description="How long a NoExecute taint is tolerated.")


class KeySelector(SpecModel):
    cel_rules = (Rule("!(self.key in ['.', '..'])", "must not be . or ..", ".key"),)

    name: DNSSubdomain = Field(description="The Secret or ConfigMap.")
    key: str = Field(min_length=1, max_length=253, pattern=r"^[-._a-zA-Z0-9]+$", description="Its key.")
    optional: bool | None = Field(None, description="Whether it may be missing.")


class ObjectFieldSelector(SpecModel):
    field_path: str = Field(max_length=400, pattern=FIELD_PATH_PATTERN,
                            description="A field of the pod: metadata.name, metadata.namespace, metadata.uid, "
                            "metadata.labels['<key>'], metadata.annotations['<key>'], spec.nodeName, "
                            "spec.serviceAccountName, status.hostIP(s) or status.podIP(s).")
    api_version: Literal["v1"] | None = Field(None, description="Version the path is written in: v1.")


class ResourceFieldSelector(SpecModel):
    cel_rules = (Rule("!has(self.divisor) || (self.resource.endsWith('cpu') ? string(self.divisor) in ['1', '1m'] : "
                      "string(self.divisor) in ['1', '1k', '1M', '1G', '1T', '1P', '1E', '1Ki', '1Mi', '1Gi', '1Ti', "
                      "'1Pi', '1Ei'])", "must be 1 or 1m for cpu, and 1, 1k...1E or 1Ki...1Ei for memory and storage",
                      ".divisor"),)

    container_name: str | None = Field(None, max_length=63, pattern=DNS_LABEL_PATTERN,
                                       description="Container, default the engine.")
    resource: str = Field(pattern=RESOURCE_FIELD_PATTERN, description="limits.cpu, limits.memory, "
                          "limits.ephemeral-storage, requests.cpu, requests.memory or requests.ephemeral-storage.")
    divisor: Quantity | None = Field(None, description="Unit of the value.")


class EnvVarSource(SpecModel):
    cel_rules = (Rule("(has(self.secretKeyRef) ? 1 : 0) + (has(self.configMapKeyRef) ? 1 : 0) + "
                      "(has(self.fieldRef) ? 1 : 0) + (has(self.resourceFieldRef) ? 1 : 0) == 1",
                      "set exactly one of secretKeyRef, configMapKeyRef, fieldRef and resourceFieldRef"),)

    secret_key_ref: KeySelector | None = Field(None, description="A key of a Secret.")
    config_map_key_ref: KeySelector | None = Field(None, description="A key of a ConfigMap.")
    field_ref: ObjectFieldSelector | None = Field(None, description="A field of the pod.")
    resource_field_ref: ResourceFieldSelector | None = Field(None, description="A resource of a container.")

