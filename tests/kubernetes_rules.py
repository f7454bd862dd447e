"""An independent statement of the API server's rules for the fields llmdeploy writes into its
children (apimachinery's validation: names, labels, annotations, int32 and int64 ranges,
int-or-percent values, probes, tolerations), to check rendered children against. Written from
Kubernetes' validation code and documentation, apart from hooks/api, so that the two are not
the same mistake twice."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

INT32 = (0, 2**31 - 1)
INT64 = (0, 2**63 - 1)
_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_NAME_PART = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")
_PERCENT = re.compile(r"[0-9]+%")
_ENV_NAME = re.compile(r"[-._a-zA-Z][-._a-zA-Z0-9]*")


def dns_subdomain(value: Any) -> bool:
    return (isinstance(value, str) and 0 < len(value) <= 253
            and all(_DNS_LABEL.fullmatch(part) for part in value.split(".")))


def qualified_name(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    prefix, _, name = value.rpartition("/")
    if "/" in value and not dns_subdomain(prefix):
        return False
    return 0 < len(name) <= 63 and _NAME_PART.fullmatch(name) is not None


def label_value(value: Any) -> bool:
    return isinstance(value, str) and len(value) <= 63 and _LABEL_VALUE.fullmatch(value) is not None


def whole(value: Any, bounds: tuple[int, int]) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and bounds[0] <= value <= bounds[1]


def int_or_percent(value: Any, at_most_100: bool = False) -> bool:
    if isinstance(value, str):
        return _PERCENT.fullmatch(value) is not None and (not at_most_100 or int(value[:-1]) <= 100)
    return whole(value, INT32)


def _zero(value: Any) -> bool:
    return value == 0 or (isinstance(value, str) and value.endswith("%") and int(value[:-1]) == 0)


def problems(obj: dict[str, Any]) -> Iterator[str]:
    """What the API server would reject in `obj` (only for what llmdeploy writes)."""
    kind, meta = obj["kind"], obj["metadata"]
    name_ok = _DNS1035.fullmatch(meta["name"]) and len(meta["name"]) <= 63 if kind == "Service" \
        else dns_subdomain(meta["name"])
    if not name_ok:
        yield f"{kind} name {meta['name']!r}"
    yield from _metadata(meta, kind)
    spec = obj.get("spec", {})
    if kind == "Deployment":
        yield from _deployment(spec)
    elif kind == "HorizontalPodAutoscaler":
        if not (whole(spec["maxReplicas"], INT32) and whole(spec.get("minReplicas", 1), INT32)
                and spec.get("minReplicas", 1) <= spec["maxReplicas"]):
            yield "HPA replica bounds"
    elif kind == "PodDisruptionBudget" and not int_or_percent(spec.get("maxUnavailable", 0), at_most_100=True):
        yield f"PDB maxUnavailable {spec.get('maxUnavailable')!r}"
    elif kind == "VirtualService" and not all(isinstance(h, str) and h for h in spec.get("hosts", [])):
        yield "VirtualService hosts"


def _metadata(meta: dict[str, Any], where: str) -> Iterator[str]:
    for key, value in (meta.get("labels") or {}).items():
        if not (qualified_name(key) and label_value(value)):
            yield f"{where} label {key!r}: {value!r}"
    annotations = meta.get("annotations") or {}
    for key in annotations:
        if not qualified_name(key):
            yield f"{where} annotation key {key!r}"
    if sum(len(k) + len(v) for k, v in annotations.items()) > 256 * 1024:
        yield f"{where} annotations larger than 256 KiB"


def _deployment(spec: dict[str, Any]) -> Iterator[str]:
    if "replicas" in spec and not whole(spec["replicas"], INT32):
        yield f"replicas {spec['replicas']!r}"
    if not whole(spec["progressDeadlineSeconds"], INT32):
        yield f"progressDeadlineSeconds {spec['progressDeadlineSeconds']!r}"
    rolling = spec["strategy"]["rollingUpdate"]
    surge, unavailable = rolling["maxSurge"], rolling["maxUnavailable"]
    if not (int_or_percent(surge) and int_or_percent(unavailable, at_most_100=True)):
        yield f"rollingUpdate {surge!r}/{unavailable!r}"
    elif _zero(surge) and _zero(unavailable):
        yield "maxSurge and maxUnavailable both 0"
    template = spec["template"]
    yield from _metadata(template["metadata"], "pod")
    pod = template["spec"]
    if not whole(pod.get("terminationGracePeriodSeconds", 30), INT64):
        yield "terminationGracePeriodSeconds"
    for field in ("serviceAccountName", "priorityClassName"):
        if field in pod and not dns_subdomain(pod[field]):
            yield f"{field} {pod[field]!r}"
    for key, value in (pod.get("nodeSelector") or {}).items():
        if not (qualified_name(key) and label_value(value)):
            yield f"nodeSelector {key!r}: {value!r}"
    for secret in pod.get("imagePullSecrets") or []:
        if not dns_subdomain(secret["name"]):
            yield f"imagePullSecret {secret['name']!r}"
    for toleration in pod.get("tolerations") or []:
        if toleration.get("key") and not qualified_name(toleration["key"]):
            yield f"toleration key {toleration['key']!r}"
        if toleration.get("operator") == "Exists" and toleration.get("value"):
            yield "toleration value with Exists"
        if not toleration.get("key") and toleration.get("operator") != "Exists":
            yield "toleration without key must be Exists"
        if "value" in toleration and not label_value(toleration["value"]):
            yield f"toleration value {toleration['value']!r}"
        if "tolerationSeconds" in toleration and not whole(toleration["tolerationSeconds"], INT64):
            yield "tolerationSeconds"
    for container in [*pod.get("initContainers", []), *pod["containers"]]:
        for env in container.get("env") or []:
            if not _ENV_NAME.fullmatch(env["name"]):
                yield f"env name {env['name']!r}"
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            for field, value in (container.get(probe) or {}).items():
                if field != "httpGet" and not whole(value, INT32):
                    yield f"{probe}.{field} {value!r}"
