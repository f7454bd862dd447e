"""Hypothesis strategies for valid LLMDeployment specs (and the observed state around them)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=12)
dns_label = st.from_regex(r"[a-z]([-a-z0-9]{0,10}[a-z0-9])?", fullmatch=True)
quantity = st.sampled_from(["1", "4", "500m", "1500m", "4000m", "16Gi", "32768Mi", "1.5Gi", "100G", "2e3", 8])
uri = st.one_of(
    st.builds(lambda o, n: f"hf://{o}/{n}", dns_label, dns_label),
    st.builds(lambda b, p: f"s3://{b}/{p}", dns_label, dns_label),
    st.builds(lambda b, p: f"gs://{b}/{p}", dns_label, dns_label),
    st.builds(lambda c, p: f"pvc://{c}/{p}", dns_label, dns_label),
    st.builds(lambda r: f"oci://registry.example.com/{r}:1", dns_label),
    st.builds(lambda n: f"models:/{n}/3", dns_label),
    st.builds(lambda h, f: f"https://{h}.example.com/{f}.gguf", dns_label, dns_label),
)


def optional(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.one_of(st.none(), strategy)


def drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@st.composite
def specs(draw: st.DrawFn) -> dict[str, Any]:
    gpus = draw(st.integers(0, 8))
    engine = draw(st.sampled_from(["vllm", "tgi", "sglang", "triton"]))
    model_uri = draw(uri.filter(lambda u: not (engine == "triton" and u.startswith("hf://"))))
    spec: dict[str, Any] = {
        "model": drop_none({
            "uri": model_uri, "revision": draw(optional(dns_label)), "servedName": draw(optional(text)),
            "quantization": draw(optional(st.sampled_from(["none", "awq", "gptq", "fp8", "int8", "bitsandbytes"]))),
            "credentialsSecret": draw(optional(dns_label)),
            "cache": draw(optional(st.one_of(st.builds(lambda s: {"size": s}, quantity),
                                             st.builds(lambda c: {"claimName": c}, dns_label)))),
        }),
        "engine": drop_none({
            "type": engine, "image": draw(optional(st.just("registry.example.com/engine:1"))),
            "args": draw(st.lists(text, max_size=3)),
            "env": draw(st.lists(st.builds(lambda n, v: {"name": n, "value": v},
                                           st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True), text),
                                 max_size=3, unique_by=lambda e: e["name"])),
            "maxModelLen": draw(optional(st.integers(1, 131072))),
            "tensorParallelSize": draw(optional(st.integers(1, max(gpus, 1)))) if gpus else None,
            "port": draw(st.integers(1024, 65535)),
        }),
        "resources": {"gpu": drop_none({"count": gpus, "product": draw(optional(dns_label))}),
                      "cpu": draw(quantity), "memory": draw(quantity)},
        "replicas": draw(st.integers(0, 10)),
        "traffic": {"istio": draw(st.booleans()), "hosts": draw(st.lists(dns_label, max_size=2)),
                    "gateways": draw(st.lists(st.builds(lambda a, b: f"{a}/{b}", dns_label, dns_label), max_size=2)),
                    "timeoutSeconds": draw(st.integers(1, 3600))},
        "pod": {"labels": draw(st.dictionaries(dns_label, dns_label, max_size=2)),
                "annotations": draw(st.dictionaries(dns_label, text, max_size=2)),
                "nodeSelector": draw(st.dictionaries(dns_label, dns_label, max_size=2))},
        "startupTimeoutSeconds": draw(st.integers(1, 7200)),
        "disruptionBudget": draw(st.one_of(st.none(), st.builds(lambda m: {"maxUnavailable": m},
                                                                 st.sampled_from([1, 2, "25%"])))),
    }
    if draw(st.booleans()):
        low = draw(st.integers(1, 5))
        spec["autoscaling"] = {
            "minReplicas": low, "maxReplicas": draw(st.integers(low, 10)),
            "metrics": draw(st.lists(st.one_of(
                st.builds(lambda t, n: {"type": t, "target": n},
                          st.sampled_from(["queue-length", "gpu-utilization", "cpu", "memory"]), st.integers(1, 1000)),
                st.builds(lambda t, m, n: {"type": t, "name": m, "target": n},
                          st.sampled_from(["pods", "external"]), dns_label, st.integers(1, 1000)),
            ), min_size=1, max_size=3)),
        }
    if draw(st.booleans()):
        canary_gpus = draw(optional(st.integers(0, 8)))
        spec["canary"] = {
            "weight": draw(st.integers(0, 100)), "replicas": draw(st.integers(0, 3)),
            "model": drop_none({"revision": draw(optional(dns_label))}),
            "engine": drop_none({"args": draw(optional(st.lists(text, max_size=2)))}),
            "resources": {"gpu": {"count": canary_gpus}} if canary_gpus is not None else {},
            "match": draw(st.lists(st.builds(lambda h, v: {"headers": {h: {"exact": v}}}, dns_label, text),
                                   max_size=2)),
            "mirror": draw(st.booleans()), "mirrorPercent": draw(st.integers(0, 100)),
        }
        if canary_gpus is not None and spec["engine"].get("tensorParallelSize", 0) > max(canary_gpus, 1):
            spec["canary"]["engine"]["tensorParallelSize"] = 1
    return spec
