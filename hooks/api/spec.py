"""The LLMDeployment API: pydantic models of `spec`, the single source of truth.

The hook validates with these models; `llmdeploy crd` generates the CRD's schema from them, so
descriptions, defaults, enums, bounds and CEL rules are written here once. Field names are the
API's camelCase. Every value that reaches a child carries the syntax rule Kubernetes applies
there (`hooks.api.syntax`, `hooks.api.kube`). The canary's partial overrides (`*Override`)
have exactly the fields of their full models, all optional; a test holds them to it.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, ClassVar, Literal

from pydantic import AfterValidator, ConfigDict, Field, model_validator

from hooks.api import querytemplate
from hooks.api.base import SpecModel
from hooks.api.kube import Affinity, EnvVarSource, LabelSelector, Toleration
from hooks.api.rules import Rule
from hooks.api.syntax import (
    DNS_SUBDOMAIN_PATTERN,
    ENV_NAME_PATTERN,
    EXTENDED_RESOURCE_PATTERN,
    IMAGE_PATTERN,
    INT32_MAX,
    AnnotationMap,
    CanaryReplicas,
    DNSLabel,
    DNSSubdomain,
    DNSSubdomainOrEmpty,
    Int32,
    IntOrPercent,
    IntOrPercentUpTo100,
    LabelMap,
    LabelValue,
    Quantity,
    qualified_keys,
)

# The longest suffix is "-canary" (7) and label values stop at 63 characters; 45 leaves room
# for suffixes platform teams add in their own templates.
MAX_NAME_LENGTH = 45
NAME_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
URI_PATTERN = (
    r"^(hf://[^\s/][^\s]*|s3://[^\s/]+(/[^\s]*)?|gs://[^\s/]+(/[^\s]*)?"
    r"|pvc://[a-z0-9]([-a-z0-9]*[a-z0-9])?(/[^\s]*)?|oci://[^\s]+|models:/[^\s]+|https://[^\s]+)$"
)
# The same in Python's syntax, as the CEL library reads it (Rust's regex crate): \s is Unicode's
# White_Space (not Python's wider \s), and $ the end of the text, not of its last line.
_WHITE_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"
_URI = re.compile(URI_PATTERN.replace(r"\s", _WHITE_SPACE).removesuffix("$") + r"\Z")


def _uri_native(model: Any) -> bool | None:
    uri = model.get("uri", "") if isinstance(model, dict) else None
    return None if not isinstance(uri, str) else "uri" not in model or bool(_URI.search(uri))


URI_RULE = Rule(
    f"!has(self.uri) || self.uri.matches(r'{URI_PATTERN}')",
    "must be hf://<org>/<name>, s3://<bucket>/<path>, gs://<bucket>/<path>, pvc://<claim>/<path>, "
    "oci://<image>, models:/<name>/<version> or https://<url>",
    ".uri",
    _uri_native,  # CEL's regular expressions are compiled on every evaluation: a tenth of a millisecond here
)
# Rules on the whole resource, where CEL can see metadata.name.
RESOURCE_RULES = (
    Rule(f"size(self.metadata.name) <= {MAX_NAME_LENGTH}", f"must be at most {MAX_NAME_LENGTH} characters, to "
         "leave room for the children's names and label values", ".metadata.name"),
    Rule(f"self.metadata.name.matches(r'{NAME_PATTERN}')", "must be a DNS label: lowercase letters, digits and "
         "'-', starting with a letter (it names a Service)", ".metadata.name"),
    Rule("!self.metadata.name.endsWith('-stable') && !self.metadata.name.endsWith('-canary') && "
         "!self.metadata.name.endsWith('-external')",
         "must not end in -stable, -canary or -external: the resource N names its track Services N-stable and "
         "N-canary and its external route N-external, which would be this resource's own Service or route",
         ".metadata.name"),
)
# Generation, requests and retries take minutes; a day bounds what any of them may ask for.
MAX_REQUEST_SECONDS = 86400
MAX_STARTUP_SECONDS = 7 * 86400
MAX_GPUS = 1024
_HOST_LABEL = r"[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?"
# A host Istio routes for: a DNS name, optionally under a wildcard (a bare * is not allowed
# on a route the mesh uses).
HOST_PATTERN = rf"^(\*\.)?{_HOST_LABEL}(\.{_HOST_LABEL})*$"
GATEWAY_PATTERN = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
HEADER_PATTERN = r"^[-_a-z0-9]+$"
_RETRY = (r"(5xx|gateway-error|reset|reset-before-request|connect-failure|envoy-ratelimited|retriable-4xx"
          r"|refused-stream|retriable-status-codes|retriable-headers|http3-post-connect-failure|cancelled"
          r"|deadline-exceeded|internal|resource-exhausted|unavailable|[1-5][0-9][0-9])")
RETRY_ON_PATTERN = rf"^{_RETRY}(,{_RETRY})*$"  # Envoy's retry policies and HTTP status codes
METRIC_NAME_PATTERN = r"^[^/%]+$"

Quantization = Literal["none", "awq", "gptq", "fp8", "int8", "bitsandbytes"]
EngineType = Literal["vllm", "tgi", "sglang", "triton"]
Image = Annotated[str, Field(max_length=1024, pattern=IMAGE_PATTERN)]
Host = Annotated[str, Field(min_length=1, max_length=253, pattern=HOST_PATTERN)]
Gateway = Annotated[str, Field(min_length=1, max_length=317, pattern=GATEWAY_PATTERN)]
ClaimName = Annotated[str, Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)]


class Override(SpecModel):
    """A partial override, for the canary, of the full model `overrides`: every field of it,
    optional; a field left out keeps the stable's value."""

    overrides: ClassVar[type[SpecModel]]


class ModelCache(SpecModel):
    cel_rules = (Rule("!(has(self.size) && has(self.claimName))", "set size or claimName, not both"),)

    size: Quantity | None = Field(None, description="Size limit of an emptyDir model cache, e.g. 100Gi.")
    claim_name: ClaimName | None = Field(
        None, description="A PersistentVolumeClaim to cache models on, shared across restarts."
    )


class ModelSource(SpecModel):
    cel_rules = (URI_RULE,)

    uri: str = Field(
        max_length=2048,
        description="Where the model comes from: hf://org/name (loaded by the engine), s3://, gs://, "
        "https:// or models:/ (downloaded by an init container), pvc://claim/path (mounted "
        "read-only) or oci://image (an image volume)."
    )
    revision: str | None = Field(
        None, min_length=1, max_length=256, description="Hugging Face revision, registry version or object version."
    )
    served_name: str | None = Field(
        None, min_length=1, max_length=256, description="Model name clients use in the OpenAI API; default: "
        "metadata.name."
    )
    quantization: Quantization = Field("none", description="Quantization the engine loads the weights with.")
    credentials_secret: DNSSubdomain | None = Field(
        None, description="Secret whose keys become environment variables (HF_TOKEN, AWS_*, ...)."
    )
    cache: ModelCache = Field(
        default_factory=lambda: ModelCache(size="100Gi"),
        description="Model cache: an emptyDir of this size, or a PersistentVolumeClaim.",
    )


class ModelOverride(Override):
    overrides = ModelSource

    cel_rules = (URI_RULE,)

    uri: str | None = Field(None, max_length=2048, description="The canary's model URI; default: spec.model.uri.")
    revision: str | None = Field(None, min_length=1, max_length=256, description="The canary's model revision.")
    served_name: str | None = Field(None, min_length=1, max_length=256, description="The canary's served model name.")
    quantization: Quantization | None = Field(None, description="The canary's quantization.")
    credentials_secret: DNSSubdomain | None = Field(None, description="The canary's credentials Secret.")
    cache: ModelCache | None = Field(None, description="The canary's model cache.")


class EnvVar(SpecModel):
    cel_rules = (Rule("!(has(self.value) && has(self.valueFrom))", "set value or valueFrom, not both"),)

    name: str = Field(min_length=1, max_length=256, pattern=ENV_NAME_PATTERN, description="Environment variable name.")
    value: str | None = Field(None, max_length=32768, description="Literal value.")
    value_from: EnvVarSource | None = Field(None, description="Where the value comes from (a core/v1 EnvVarSource).")


class Engine(SpecModel):
    type: EngineType = Field("vllm", description="Serving engine.")
    image: Image = Field("", description="Engine image; empty: the pinned default image of the engine type.")
    args: list[str] = Field(default_factory=list, max_length=256,
                            description="Extra engine arguments, after the generated ones.")
    env: list[EnvVar] = Field(default_factory=list, max_length=128,
                              description="Extra environment variables (core/v1 EnvVar).")
    max_model_len: int | None = Field(None, ge=1, le=INT32_MAX, description="Maximum context length, in tokens.")
    tensor_parallel_size: int | None = Field(
        None, ge=1, le=MAX_GPUS, description="GPUs one model replica is sharded over; default: resources.gpu.count."
    )
    port: int = Field(8000, ge=1, le=65535, description="Port the engine serves HTTP on.")


class EngineOverride(Override):
    overrides = Engine

    type: EngineType | None = Field(None, description="The canary's engine type.")
    image: Image | None = Field(None, min_length=1, description="The canary's engine image.")
    args: list[str] | None = Field(None, max_length=256,
                                   description="The canary's extra engine arguments (replace the stable's).")
    env: list[EnvVar] | None = Field(None, max_length=128,
                                     description="Environment variables merged by name over the stable's.")
    max_model_len: int | None = Field(None, ge=1, le=INT32_MAX, description="The canary's maximum context length.")
    tensor_parallel_size: int | None = Field(None, ge=1, le=MAX_GPUS, description="The canary's tensor parallel size.")
    port: int | None = Field(None, ge=1, le=65535, description="The canary's engine port.")


class Gpu(SpecModel):
    count: int = Field(1, ge=0, le=MAX_GPUS, description="GPUs per replica; 0 runs on CPU.")
    resource_name: str = Field("nvidia.com/gpu", max_length=317, pattern=EXTENDED_RESOURCE_PATTERN,
                               description="Extended resource the GPUs are, e.g. nvidia.com/gpu or amd.com/gpu.")
    product: LabelValue = Field("", description="GPU product (node label nvidia.com/gpu.product), e.g. "
                                "NVIDIA-H100-80GB-HBM3.")


class GpuOverride(Override):
    overrides = Gpu

    count: int | None = Field(None, ge=0, le=MAX_GPUS, description="The canary's GPUs per replica.")
    resource_name: str | None = Field(None, max_length=317, pattern=EXTENDED_RESOURCE_PATTERN,
                                      description="The canary's GPU resource name.")
    product: LabelValue | None = Field(None, description="The canary's GPU product.")


class Resources(SpecModel):
    gpu: Gpu = Field(default_factory=Gpu, description="GPUs per replica.")
    cpu: Quantity = Field("4", description="CPU request per replica.")
    memory: Quantity = Field("32Gi", description="Memory request and limit per replica.")


class ResourcesOverride(Override):
    overrides = Resources

    gpu: GpuOverride | None = Field(None, description="The canary's GPUs.")
    cpu: Quantity | None = Field(None, description="The canary's CPU request.")
    memory: Quantity | None = Field(None, description="The canary's memory request and limit.")


MetricType = Literal["queue-length", "gpu-utilization", "cpu", "memory", "pods", "external"]


class Metric(SpecModel):
    cel_rules = (
        Rule("!(self.type in ['pods', 'external']) || has(self.name)",
             "name is required for pods and external metrics", ".name"),
        Rule("!has(self.name) || !(self.name in ['.', '..'])", "must not be . or ..", ".name"),
        Rule("!has(self.selector) || self.type == 'external'", "selector is for external metrics only", ".selector"),
    )

    type: MetricType = Field(
        description="queue-length (waiting requests per pod), gpu-utilization (DCGM, percent), "
        "cpu or memory (utilization percent), pods or external (any named metric)."
    )
    target: int = Field(gt=0, le=INT32_MAX, description="Target average value (or utilization percent) per pod.")
    name: str | None = Field(None, min_length=1, max_length=253, pattern=METRIC_NAME_PATTERN,
                             description="Metric name, for pods and external metrics.")
    selector: LabelSelector | None = Field(None, description="Label selector of an external metric.")


class Autoscaling(SpecModel):
    cel_rules = (
        Rule("self.minReplicas <= self.maxReplicas", "must be less than or equal to maxReplicas", ".minReplicas"),
    )

    min_replicas: int = Field(1, ge=1, le=INT32_MAX, description="Fewest stable replicas.")
    max_replicas: int = Field(4, ge=1, le=INT32_MAX, description="Most stable replicas.")
    metrics: list[Metric] = Field(
        default_factory=lambda: [Metric(type="queue-length", target=5)],
        min_length=1,
        max_length=10,
        description="What to scale on; the HPA follows whichever asks for the most replicas.",
    )
    scale_down_stabilization_seconds: int = Field(
        600, ge=0, le=3600, description="How long load must stay low before scaling down (GPUs start slowly)."
    )


def _re2(pattern: str | None) -> str | None:
    """A regular expression Envoy (RE2) accepts: it compiles, without lookaround or
    backreferences, which RE2 lacks."""
    if pattern is None:
        return None
    try:
        re.compile(pattern)
    except re.error as e:
        raise ValueError(f"is not a regular expression: {e}") from e
    if re.search(r"\(\?<?[=!]|\\[1-9]|\(\?P=", pattern):
        raise ValueError("must be an RE2 regular expression: no lookaround or backreferences")
    return pattern


class StringMatch(SpecModel):
    cel_rules = (
        Rule("(has(self.exact) ? 1 : 0) + (has(self.prefix) ? 1 : 0) + (has(self.regex) ? 1 : 0) == 1",
             "set exactly one of exact, prefix and regex"),
    )

    exact: str | None = Field(None, max_length=1024, description="Exact string match.")
    prefix: str | None = Field(None, min_length=1, max_length=1024, description="Prefix match.")
    regex: Annotated[str | None, AfterValidator(_re2)] = Field(None, min_length=1, max_length=1024,
                                                             description="RE2 regular expression match.")


class HTTPMatch(SpecModel):
    cel_rules = (
        Rule("(has(self.headers) && size(self.headers) > 0) || has(self.uri) || "
             "(has(self.queryParams) && size(self.queryParams) > 0) || has(self.method)",
             "a match must name headers, uri, queryParams or method (an empty match takes all traffic)"),
        Rule(f"!has(self.headers) || self.headers.all(k, k.matches(r'{HEADER_PATTERN}'))",
             "header names must be lowercase letters, digits, '-' and '_'", ".headers"),
        Rule("!has(self.queryParams) || self.queryParams.all(k, size(k) > 0)",
             "query parameter names must not be empty", ".queryParams"),
    )

    headers: dict[str, StringMatch] | None = Field(None, max_length=16, description="Request headers that must match.")
    uri: StringMatch | None = Field(None, description="URI path that must match.")
    query_params: dict[str, StringMatch] | None = Field(None, max_length=16,
                                                        description="Query parameters that must match.")
    method: StringMatch | None = Field(None, description="HTTP method that must match.")


class Canary(SpecModel):
    weight: int = Field(10, ge=0, le=100, description="Percent of traffic to the canary, once it is available.")
    replicas: Int32 = Field(1, description="Canary replicas.")
    model: ModelOverride = Field(default_factory=ModelOverride, description="Overrides of spec.model.")
    engine: EngineOverride = Field(default_factory=EngineOverride, description="Overrides of spec.engine.")
    resources: ResourcesOverride = Field(default_factory=ResourcesOverride, description="Overrides of spec.resources.")
    match: list[HTTPMatch] = Field(
        default_factory=list, max_length=16,
        description="Requests matching any entry always go to the canary (A/B).",
    )
    mirror: bool = Field(False, description="Also mirror stable traffic to the canary; its responses are discarded.")
    mirror_percent: int = Field(100, ge=0, le=100, description="Percent of traffic mirrored.")


class Retries(SpecModel):
    attempts: int = Field(2, ge=0, le=100, description="Retries per request.")
    per_try_timeout_seconds: int = Field(300, ge=1, le=MAX_REQUEST_SECONDS, description="Timeout of each try.")
    retry_on: str = Field(
        "connect-failure,refused-stream,unavailable,503", max_length=512, pattern=RETRY_ON_PATTERN,
        description="Envoy retry conditions, comma-separated."
    )


RouterName = Literal["istio", "gateway-api", "linkerd", "none"]
ROUTER_NAMES: tuple[RouterName, ...] = ("istio", "gateway-api", "linkerd", "none")
HTTP_ROUTE_ROUTERS: tuple[RouterName, ...] = ("gateway-api", "linkerd")  # routers that route with an HTTPRoute


class Traffic(SpecModel):
    cel_rules = (
        Rule("!has(self.router) || self.istio || self.router == 'none'",
             "istio: false means router none: remove it when setting router", ".istio"),
        Rule("!has(self.router) || self.router == 'istio' || ((!has(self.hosts) || size(self.hosts) == 0) && "
             "(!has(self.gateways) || size(self.gateways) == 0))",
             "hosts and gateways are the Istio VirtualService's: with another router, use spec.expose", ".router"),
    )

    router: RouterName | None = Field(
        None, description="istio (VirtualService and DestinationRule), gateway-api (a GAMMA HTTPRoute, for Istio "
        "or Linkerd meshes), linkerd (an HTTPRoute with Linkerd's retries and timeouts), or none (the Service "
        "spreads requests over ready pods). Absent: istio, or none when istio is false.")
    istio: bool = Field(True, description="Before router: false means router none.")
    hosts: list[Host] = Field(default_factory=list, max_length=32, description="Extra hosts for the VirtualService.")
    gateways: list[Gateway] = Field(default_factory=list, max_length=16,
                                    description="Istio gateways (namespace/name); the mesh is always included.")
    timeout_seconds: int = Field(600, ge=1, le=MAX_REQUEST_SECONDS, description="Request timeout (generation can "
                                 "be long); also the pods' termination grace period.")
    retries: Retries = Field(default_factory=Retries, description="Retry policy.")
    load_balancer: Literal["LEAST_REQUEST", "ROUND_ROBIN", "RANDOM", "PASSTHROUGH"] = Field(
        "LEAST_REQUEST", description="Istio load-balancing algorithm."
    )

    @property
    def router_in_use(self) -> RouterName:
        return self.router if self.router is not None else "istio" if self.istio else "none"


# The router in force, in CEL, from the spec's root.
ROUTER_CEL = "(has(self.traffic.router) ? self.traffic.router : (self.traffic.istio ? 'istio' : 'none'))"


class GatewayReference(SpecModel):
    name: DNSSubdomain = Field(description="The Gateway's name.")
    namespace: DNSLabel | None = Field(None, description="The Gateway's namespace; default: the resource's.")
    section_name: DNSSubdomain | None = Field(None, description="The Gateway's listener (Gateway API only).")


class ExposeTLS(SpecModel):
    secret_name: DNSSubdomain = Field(description="Secret with the certificate for host (kubernetes.io/tls).")


class Expose(SpecModel):
    cel_rules = (
        Rule("self.via == 'ingress' ? !has(self.gateway) : has(self.gateway)",
             "via gateway and istio name a gateway; via ingress does not", ".gateway"),
        Rule("self.via == 'ingress' || (!has(self.className) && !has(self.tls))",
             "className and tls are the Ingress's (a Gateway terminates TLS on its listener)", ".via"),
        qualified_keys("annotations", "annotation"),
        Rule("!self.host.matches(r'^[0-9.]+$')", "must be a DNS name, not an IP address", ".host"),
        Rule("!has(self.className) || !has(self.annotations) || !('kubernetes.io/ingress.class' in self.annotations)",
             "className and the kubernetes.io/ingress.class annotation cannot both be set: use className",
             ".annotations"),
        Rule("self.via != 'istio' || ((!has(self.gateway) || !has(self.gateway.sectionName)) && "
             "(!has(self.annotations) || size(self.annotations) == 0))",
             "an Istio Gateway is named on the VirtualService: sectionName and annotations do not apply",
             ".via"),
    )

    host: Host = Field(description="The host callers outside the cluster use.")
    via: Literal["ingress", "gateway", "istio"] = Field(
        "ingress", description="ingress (a networking.k8s.io/v1 Ingress), gateway (an HTTPRoute on a Gateway API "
        "Gateway) or istio (the Gateway and host added to the VirtualService).")
    class_name: DNSSubdomain | None = Field(None, description="The Ingress's ingressClassName.")
    gateway: GatewayReference | None = Field(None, description="The Gateway (via gateway or istio).")
    tls: ExposeTLS | None = Field(None, description="TLS on the Ingress.")
    annotations: AnnotationMap = Field(default_factory=dict, description="Annotations of the Ingress or of the "
                                       "external HTTPRoute.")


class LocalObjectReference(SpecModel):
    name: DNSSubdomain = Field(description="Name of the referenced object.")


UserId = Annotated[int, Field(ge=0, le=2**31 - 1)]


class PodSecurityContext(SpecModel):
    """Overrides of the hardened defaults (a subset of core/v1 PodSecurityContext)."""

    cel_rules = (
        Rule("!has(self.runAsNonRoot) || !self.runAsNonRoot || !has(self.runAsUser) || self.runAsUser != 0",
             "runAsNonRoot with runAsUser 0 never starts: the kubelet refuses it", ".runAsUser"),
    )

    run_as_user: UserId | None = Field(None, description="UID of the containers; default: the engine's (README).")
    run_as_group: UserId | None = Field(None, description="GID of the containers.")
    fs_group: UserId | None = Field(None, description="Group that owns the volumes (the model cache).")
    run_as_non_root: bool | None = Field(None, description="Refuse to start as root; default true where the "
                                         "engine runs as non-root.")
    supplemental_groups: list[UserId] = Field(default_factory=list, max_length=16,
                                              description="More groups for the containers.")


class Pod(SpecModel):
    cel_rules = (qualified_keys("nodeSelector", "node selector"), qualified_keys("labels", "label"),
                 qualified_keys("annotations", "annotation"))

    node_selector: LabelMap = Field(default_factory=dict, description="Extra node selector labels.")
    tolerations: list[Toleration] = Field(default_factory=list, max_length=32,
                                          description="Added to the default GPU toleration.")
    affinity: Affinity = Field(default_factory=Affinity, description="Scheduling affinity (a core/v1 Affinity).")
    labels: LabelMap = Field(default_factory=dict, description="Extra pod labels (llmdeploy's own win).")
    annotations: AnnotationMap = Field(default_factory=dict, description="Extra pod annotations.")
    service_account_name: DNSSubdomainOrEmpty = Field("", description="ServiceAccount of the pods.")
    priority_class_name: DNSSubdomainOrEmpty = Field("", description="PriorityClass of the pods.")
    image_pull_secrets: list[LocalObjectReference] = Field(default_factory=list, max_length=16,
                                                           description="Image pull Secrets.")
    security_context: PodSecurityContext = Field(default_factory=PodSecurityContext,
                                                 description="Overrides of the pods' hardened security context.")
    automount_service_account_token: bool = Field(False, description="Mount the ServiceAccount's API token (the "
                                                  "engines never call the API server).")


class RolloutStep(SpecModel):
    weight: int = Field(ge=1, le=100, description="Percent of traffic to the canary during this step.")
    pause_seconds: int | None = Field(
        None, ge=0, le=MAX_STARTUP_SECONDS,
        description="How long the step lasts once its weight is in force; absent: until the promote annotation.")


CheckMetric = Literal["error-rate", "ttft-p95", "e2e-latency-p95", "queue-length", "kv-cache-usage"]
CHECK_METRICS: tuple[CheckMetric, ...] = ("error-rate", "ttft-p95", "e2e-latency-p95", "queue-length",
                                          "kv-cache-usage")
# The built-in checks each engine's own metrics can answer (hooks.core.analysis has the series);
# with Istio, the mesh answers error-rate for every engine.
ENGINE_CHECKS: dict[EngineType, frozenset[CheckMetric]] = {
    "vllm": frozenset(CHECK_METRICS),
    "sglang": frozenset({"ttft-p95", "e2e-latency-p95", "queue-length", "kv-cache-usage"}),
    "tgi": frozenset({"error-rate", "e2e-latency-p95", "queue-length"}),
    "triton": frozenset({"error-rate", "queue-length"}),
}
MESH_CHECKS: frozenset[CheckMetric] = frozenset({"error-rate"})
CHECK_NAME_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
BOUNDS = ("max", "min", "maxRatioToStable", "minRatioToStable")
MAX_BOUND = 1e15  # a measurement's bound: finite, and exact in JSON


def _query(query: str | None) -> str | None:
    if query is not None:
        querytemplate.parse(query)  # ValueError says where a placeholder may not stand
    return query


class Check(SpecModel):
    cel_rules = (
        Rule("has(self.metric) != has(self.query)", "set metric (a built-in check) or query (PromQL), not both"),
        Rule("!has(self.query) || has(self.name)", "a query check needs a name", ".name"),
        Rule(" || ".join(f"has(self.{b})" for b in BOUNDS), f"set at least one bound: {', '.join(BOUNDS)}"),
    )

    metric: CheckMetric | None = Field(
        None, description="A built-in check: error-rate (share of 5xx answers), ttft-p95 (seconds to the first "
        "token), e2e-latency-p95 (seconds per request), queue-length (waiting requests per pod) or kv-cache-usage "
        "(0 to 1).")
    name: str | None = Field(None, min_length=1, max_length=63, pattern=CHECK_NAME_PATTERN,
                             description="The check's name in status; default: the metric.")
    query: Annotated[str | None, AfterValidator(_query)] = Field(
        None, min_length=1, max_length=4096,
        description="PromQL returning one number, with placeholders {{ namespace }}, {{ name }}, "
        "{{ deployment }}, {{ track }}, {{ model }} inside quoted strings and {{ window }} anywhere.")
    max: float | None = Field(None, ge=-MAX_BOUND, le=MAX_BOUND, description="Fails above this value.")
    min: float | None = Field(None, ge=-MAX_BOUND, le=MAX_BOUND, description="Fails below this value.")
    max_ratio_to_stable: float | None = Field(
        None, gt=0, le=MAX_BOUND, description="Fails above this multiple of the stable track's value, same window.")
    min_ratio_to_stable: float | None = Field(
        None, gt=0, le=MAX_BOUND, description="Fails below this multiple of the stable track's value, same window.")

    @property
    def check_name(self) -> str:
        name = self.name or self.metric
        assert name is not None  # a CEL rule requires one
        return name


class Analysis(SpecModel):
    cel_rules = (
        Rule("!has(self.checks) || self.checks.all(c, self.checks.exists_one(d, "
             "(has(d.name) ? d.name : has(d.metric) ? d.metric : '') == (has(c.name) ? c.name : has(c.metric) ? "
             "c.metric : '')))", "check names must be unique", ".checks"),
        Rule("self.windowSeconds >= self.intervalSeconds", "must be at least intervalSeconds", ".windowSeconds"),
    )

    provider: DNSLabel = Field("default", description="A Prometheus the hook is configured with (never a URL).")
    interval_seconds: int = Field(60, ge=10, le=3600, description="One measurement per interval.")
    window_seconds: int = Field(300, ge=10, le=86400, description="Each measurement covers this many seconds.")
    failure_limit: int = Field(1, ge=0, le=100, description="Failed measurements tolerated; one more rolls back.")
    inconclusive_limit: int = Field(5, ge=1, le=1000, description="Measurements without data in a row before the "
                                    "rollout pauses for a person.")
    checks: list[Check] | None = Field(
        None, min_length=1, max_length=16,
        description="What a measurement checks; default: error-rate max 0.01, and ttft-p95 (else e2e-latency-p95) "
        "maxRatioToStable 1.5 where the engine exports it.")


class Rollout(SpecModel):
    cel_rules = (
        Rule("!(string(self.maxSurge) in ['0', '0%'] && string(self.maxUnavailable) in ['0', '0%'])",
             "maxSurge and maxUnavailable cannot both be 0", ".maxSurge"),
    )

    max_surge: IntOrPercent = Field(1, description="Extra pods during a rollout; 0 on a full GPU pool.")
    max_unavailable: IntOrPercentUpTo100 = Field(0, description="Pods that may be down during a rollout.")
    strategy: Literal["RollingUpdate", "Canary"] = Field(
        "RollingUpdate", description="RollingUpdate: a change rolls the stable Deployment directly. Canary: a change "
        "of the serving pod template runs as N-canary through the steps, judged by the analysis.")
    steps: list[RolloutStep] = Field(
        default_factory=lambda: [RolloutStep.model_validate({"weight": 10, "pauseSeconds": 600}),
                                 RolloutStep.model_validate({"weight": 50, "pauseSeconds": 600})],
        min_length=1, max_length=32, description="The canary's traffic, step by step (Canary strategy).")
    canary_replicas: CanaryReplicas = Field(
        "auto", description="auto: ceil(stable replicas x step weight / 100), at least 1; or a number.")
    analysis: Analysis | None = Field(None, description="Prometheus checks at every interval; absent: steps "
                                      "advance on time alone.")


class DisruptionBudget(SpecModel):
    max_unavailable: IntOrPercentUpTo100 = Field(1, description="Stable pods that voluntary disruptions may take "
                                                 "down.")


_GPU = "(has(self.canary.resources.gpu) && has(self.canary.resources.gpu.count) ? " \
       "self.canary.resources.gpu.count : self.resources.gpu.count)"
_TP = "(has(self.canary.engine.tensorParallelSize) ? self.canary.engine.tensorParallelSize : " \
      "has(self.engine.tensorParallelSize) ? self.engine.tensorParallelSize : 1)"


def _engine_check_rule(engine: EngineType) -> Rule:
    lacking = [m for m in CHECK_METRICS if m not in ENGINE_CHECKS[engine]]
    by_mesh = [m for m in lacking if m in MESH_CHECKS]
    mesh = f" || ({ROUTER_CEL} == 'istio' && c.metric in {by_mesh})" if by_mesh else ""
    note = f" ({', '.join(by_mesh)} needs router istio)" if by_mesh else ""
    return Rule(f"self.engine.type != '{engine}' || !has(self.rollout.analysis) || !has(self.rollout.analysis.checks)"
                f" || self.rollout.analysis.checks.all(c, !has(c.metric) || c.metric in "
                f"{sorted(ENGINE_CHECKS[engine])}{mesh})",
                f"{engine} exports no metric for {', '.join(lacking)}{note}: use a query check",
                ".rollout.analysis.checks")


_ENGINE_CHECK_RULES = tuple(_engine_check_rule(e) for e in ENGINE_CHECKS if ENGINE_CHECKS[e] != set(CHECK_METRICS))

# Whether canary.match is written into an HTTPRoute: the mesh route's, or the split of the
# external route on a Gateway (with router none, that route sends everything to the Service).
_HTTP_ROUTER = (f"({ROUTER_CEL} in {list(HTTP_ROUTE_ROUTERS)} || ({ROUTER_CEL} != 'none' && has(self.expose) && "
                "self.expose.via == 'gateway'))")
_GATEWAY_NAME_CHARS = r"^[A-Za-z0-9!#$%&'*+\-.^_`|~]+$"  # Gateway API's HTTPHeaderName
_GATEWAY_PATH_CHARS = r"^(?:[-A-Za-z0-9/._~!$&'()*+,;=:@]|[%][0-9a-fA-F]{2})+$"
HTTP_METHODS = ["GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH"]
# What an HTTPRoute match can say: exact or regex headers and query
# parameters with a value, absolute paths, an exact method. Checked per entry of canary.match.
_HTTP_ROUTE_MATCH_RULES = (
    Rule(f"!has(self.canary) || !has(self.canary.match) || !({_HTTP_ROUTER}) || self.canary.match.all(m, "
         "(!has(m.headers) || m.headers.all(k, !has(m.headers[k].prefix) && "
         "(!has(m.headers[k].exact) || size(m.headers[k].exact) > 0))) && "
         "(!has(m.queryParams) || m.queryParams.all(k, !has(m.queryParams[k].prefix) && "
         "(!has(m.queryParams[k].exact) || size(m.queryParams[k].exact) > 0))))",
         "an HTTPRoute matches headers and query parameters by a non-empty exact value or a regex, not a prefix",
         ".canary.match"),
    Rule(f"!has(self.canary) || !has(self.canary.match) || !({_HTTP_ROUTER}) || self.canary.match.all(m, !has(m.uri) || "
         "(has(m.uri.regex) || [has(m.uri.exact) ? m.uri.exact : m.uri.prefix].all(v, v.startsWith('/') && "
         "!v.contains('//') && !v.contains('/./') && !v.contains('/../') && !v.contains('#') && "
         "!v.contains('%2f') && !v.contains('%2F') && !v.endsWith('/..') && !v.endsWith('/.') && "
         f"v.matches(r\"{_GATEWAY_PATH_CHARS}\"))))",
         "an HTTPRoute matches a uri exact or prefix that is an absolute, normalised path (or a regex)",
         ".canary.match"),
    Rule(f"!has(self.canary) || !has(self.canary.match) || !({_HTTP_ROUTER}) || self.canary.match.all(m, "
         f"(!has(m.headers) || m.headers.all(k, size(k) <= 256)) && (!has(m.queryParams) || "
         f"m.queryParams.all(k, size(k) <= 256 && k.matches(r\"{_GATEWAY_NAME_CHARS}\"))))",
         "an HTTPRoute matches header and query parameter names of at most 256 characters; query parameter names "
         "are letters, digits and !#$%&'*+-.^_`|~", ".canary.match"),
    Rule(f"!has(self.canary) || !has(self.canary.match) || !({_HTTP_ROUTER}) || self.canary.match.all(m, !has(m.method) || "
         f"(has(m.method.exact) && m.method.exact in {HTTP_METHODS}))",
         f"an HTTPRoute matches a method exactly, one of {', '.join(HTTP_METHODS)}", ".canary.match"),
)


_SERVICE_ACCOUNT_PATTERN = r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?/)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"


class Caller(SpecModel):
    """One source `access` admits: a namespace, or one ServiceAccount's identity."""

    # Exactly one of the two. Written as min/maxProperties rather than CEL: `namespace` is a
    # reserved word in CEL, which Kubernetes escapes and the hook's CEL library does not.
    model_config = ConfigDict(**SpecModel.model_config, json_schema_extra={"minProperties": 1, "maxProperties": 1})
    cel_rules = (
        Rule("!has(self.serviceAccount) || self.serviceAccount.matches(r'^([^/]*/)?[^/]{1,253}$')",
             "a ServiceAccount's name is at most 253 characters", ".serviceAccount"),
    )

    namespace: DNSLabel | None = Field(None, description="Every workload in this namespace.")
    service_account: str | None = Field(
        None, max_length=317, pattern=_SERVICE_ACCOUNT_PATTERN,
        description="One identity, <namespace>/<name> (a bare name: the resource's namespace). A NetworkPolicy "
                    "cannot name identities: it admits the namespace; the mesh policies admit the identity alone.")

    @model_validator(mode="after")
    def _exactly_one(self) -> Caller:
        if (self.namespace is None) == (self.service_account is None):
            raise ValueError("set exactly one of namespace and serviceAccount")
        return self


class Access(SpecModel):
    from_: list[Caller] = Field(default_factory=list, alias="from", max_length=64,
                                description="Who may call the model, besides the exposure path and the Prometheus "
                                            "scraper (hook settings); empty: only those.")
    mtls: Literal["STRICT", "PERMISSIVE"] = Field(
        "STRICT", description="STRICT: mesh callers only, by identity. PERMISSIVE: callers outside the mesh are "
                              "admitted too, from the admitted namespaces (Istio), or every denial is only "
                              "audited (Linkerd).")


TRACING_ENGINES: tuple[EngineType, ...] = ("vllm", "tgi")  # engines that export OTLP traces
_CANARY_ENGINE = "(has(self.canary) && has(self.canary.engine.type) ? self.canary.engine.type : self.engine.type)"


class Tracing(SpecModel):
    endpoint: str = Field(max_length=253, pattern=r"^https?://[^\s/?#@]+/?$",
                          description="The OpenTelemetry collector's OTLP gRPC endpoint, http(s)://host:port.")
    sample_ratio: float = Field(1.0, ge=0, le=1, description="Share of requests traced (vLLM; TGI traces every "
                                "request).")


class Observability(SpecModel):
    tracing: Tracing | None = Field(None, description="Present: the engine exports traces (vLLM and TGI).")


class LLMDeploymentSpec(SpecModel):
    cel_rules = (
        Rule("!has(self.engine.tensorParallelSize) || self.engine.tensorParallelSize <= "
             "(self.resources.gpu.count == 0 ? 1 : self.resources.gpu.count)",
             "must not exceed resources.gpu.count (1 on CPU)", ".engine.tensorParallelSize"),
        Rule(f"!has(self.canary) || {_TP} <= ({_GPU} == 0 ? 1 : {_GPU})",
             "the canary's tensorParallelSize must not exceed its GPU count (1 on CPU)", ".canary"),
        Rule("!(self.engine.type == 'triton' && self.model.uri.startsWith('hf://'))",
             "triton serves a model repository: use an s3://, gs://, https://, models:/, pvc:// or oci:// uri",
             ".model.uri"),
        Rule("!(self.rollout.strategy == 'Canary' && has(self.canary))",
             "the Canary rollout strategy runs its own canary: remove spec.canary, or use strategy RollingUpdate",
             ".canary"),
        *_ENGINE_CHECK_RULES,
        *_HTTP_ROUTE_MATCH_RULES,
        Rule(f"!has(self.canary) || !self.canary.mirror || {ROUTER_CEL} != 'linkerd'",
             "Linkerd does not mirror requests: remove canary.mirror, or use router gateway-api or istio",
             ".canary.mirror"),
        Rule(f"!has(self.observability.tracing) || (self.engine.type in {list(TRACING_ENGINES)} && "
             f"{_CANARY_ENGINE} in {list(TRACING_ENGINES)})",
             f"only {' and '.join(TRACING_ENGINES)} export traces: remove observability.tracing, or serve with one of them",
             ".observability.tracing"),
        Rule("!has(self.observability.tracing) || !has(self.observability.tracing.sampleRatio) || "
             f"self.observability.tracing.sampleRatio == 1.0 || (self.engine.type == 'vllm' && {_CANARY_ENGINE} == 'vllm')",
             "TGI traces every request: sampleRatio below 1 needs vllm", ".observability.tracing.sampleRatio"),
        Rule(f"!has(self.access) || !has(self.access.mtls) || self.access.mtls == 'STRICT' || "
             f"{ROUTER_CEL} in ['istio', 'linkerd']",
             "mtls PERMISSIVE relaxes the mesh policies of router istio or linkerd; other routers have none (the "
             "NetworkPolicy admits by namespace, with or without TLS)", ".access.mtls"),
        Rule(f"!has(self.expose) || self.expose.via != 'istio' || {ROUTER_CEL} == 'istio'",
             "expose via istio adds a Gateway to the VirtualService: it needs router istio", ".expose.via"),
        Rule("!has(self.canary) || !((has(self.canary.engine.type) ? self.canary.engine.type : self.engine.type)"
             " == 'triton' && (has(self.canary.model.uri) ? self.canary.model.uri : self.model.uri)"
             ".startsWith('hf://'))",
             "triton serves a model repository: use an s3://, gs://, https://, models:/, pvc:// or oci:// uri",
             ".canary.model.uri"),
    )

    model: ModelSource = Field(description="The model to serve.")
    engine: Engine = Field(default_factory=Engine, description="The engine that serves it.")
    resources: Resources = Field(default_factory=Resources, description="Resources of each replica.")
    replicas: Int32 = Field(1, description="Stable replicas, when autoscaling is off.")
    autoscaling: Autoscaling | None = Field(None, description="Present: an HPA scales the stable Deployment.")
    canary: Canary | None = Field(None, description="Present: a canary Deployment gets part of the traffic.")
    traffic: Traffic = Field(default_factory=Traffic, description="How traffic reaches the model.")
    expose: Expose | None = Field(None, description="Reach the model from outside the cluster.")
    observability: Observability = Field(default_factory=Observability, description="Traces.")
    access: Access | None = Field(None, description="Present: only the listed callers, the exposure path and the "
                                  "Prometheus scraper reach the model (a NetworkPolicy, and the router's mesh "
                                  "policies).")
    pod: Pod = Field(default_factory=Pod, description="Passed through to both Deployments' pod templates.")
    startup_timeout_seconds: int = Field(
        1800, ge=1, le=MAX_STARTUP_SECONDS,
        description="Model download and load time; sizes the startup probe and progress deadline."
    )
    rollout: Rollout = Field(default_factory=Rollout, description="Rolling update of the Deployments.")
    disruption_budget: DisruptionBudget | None = Field(
        default_factory=DisruptionBudget, description="PodDisruptionBudget of the stable Deployment; null: none."
    )
    paused: bool = Field(False, description="Freeze every child exactly as last applied.")

