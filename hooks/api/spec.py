"""The LLMDeployment API: pydantic models of `spec`, the single source of truth.

The hook validates with these models; `llmdeploy crd` generates the CRD's schema from them, so
descriptions, defaults, enums, bounds and CEL rules are written here once. Field names are the
API's camelCase. The canary's partial overrides (`*Override`) have exactly the fields of
their full models, all optional; a test holds them to it.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

from pydantic import BeforeValidator, ConfigDict, Field, WithJsonSchema
from pydantic.alias_generators import to_camel

from hooks.api.quantity import QUANTITY_PATTERN, is_quantity
from hooks.api.rules import Rule, RuledModel

# The longest suffix is "-canary" (7) and label values stop at 63 characters; 45 leaves room
# for suffixes platform teams add in their own templates.
MAX_NAME_LENGTH = 45
NAME_PATTERN = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"
URI_PATTERN = (
    r"^(hf://[^\s/][^\s]*|s3://[^\s/]+(/[^\s]*)?|gs://[^\s/]+(/[^\s]*)?"
    r"|pvc://[a-z0-9]([-a-z0-9]*[a-z0-9])?(/[^\s]*)?|oci://[^\s]+|models:/[^\s]+|https://[^\s]+)$"
)
URI_RULE = Rule(
    f"!has(self.uri) || self.uri.matches(r'{URI_PATTERN}')",
    "must be hf://<org>/<name>, s3://<bucket>/<path>, gs://<bucket>/<path>, pvc://<claim>/<path>, "
    "oci://<image>, models:/<name>/<version> or https://<url>",
    ".uri",
)
# Rules on the whole resource, where CEL can see metadata.name.
RESOURCE_RULES = (
    Rule(f"size(self.metadata.name) <= {MAX_NAME_LENGTH}", f"must be at most {MAX_NAME_LENGTH} characters, to "
         "leave room for the children's names and label values", ".metadata.name"),
    Rule(f"self.metadata.name.matches(r'{NAME_PATTERN}')", "must be a DNS label: lowercase letters, digits and "
         "'-', starting with a letter (it names a Service)", ".metadata.name"),
)
PERCENT_PATTERN = r"^[0-9]+%$"
EXTENDED_RESOURCE_PATTERN = r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?/[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"


def _quantity(value: Any) -> Any:
    if not is_quantity(value):
        raise ValueError("must be a Kubernetes quantity such as 4, 500m or 32Gi")
    return value


def _int_or_percent(value: Any) -> Any:
    ok = (isinstance(value, int) and not isinstance(value, bool) and value >= 0) or (
        isinstance(value, str) and value.endswith("%") and value[:-1].isdigit() and value[:-1].isascii()
    )
    if not ok:
        raise ValueError("must be a whole number or a percentage such as 25%")
    return value


Quantity = Annotated[
    str | int,
    BeforeValidator(_quantity),
    WithJsonSchema({"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN}),
]
IntOrPercent = Annotated[
    int | str,
    BeforeValidator(_int_or_percent),
    WithJsonSchema({"x-kubernetes-int-or-string": True, "pattern": PERCENT_PATTERN}),
]
FreeForm = Annotated[
    dict[str, Any],
    WithJsonSchema({"type": "object", "x-kubernetes-preserve-unknown-fields": True}),
]
Quantization = Literal["none", "awq", "gptq", "fp8", "int8", "bitsandbytes"]
EngineType = Literal["vllm", "tgi", "sglang", "triton"]


class SpecModel(RuledModel):
    model_config = ConfigDict(
        alias_generator=to_camel,
        validate_by_alias=True,
        validate_by_name=False,
        serialize_by_alias=True,
        extra="forbid",
        strict=True,
        frozen=True,
    )


class Override(SpecModel):
    """A partial override, for the canary, of the full model `overrides`: every field of it,
    optional; a field left out keeps the stable's value."""

    overrides: ClassVar[type[SpecModel]]


class ModelCache(SpecModel):
    cel_rules = (Rule("!(has(self.size) && has(self.claimName))", "set size or claimName, not both"),)

    size: Quantity | None = Field(None, description="Size limit of an emptyDir model cache, e.g. 100Gi.")
    claim_name: str | None = Field(
        None, min_length=1, description="A PersistentVolumeClaim to cache models on, shared across restarts."
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
        None, min_length=1, description="Hugging Face revision, registry version or object version."
    )
    served_name: str | None = Field(
        None, min_length=1, description="Model name clients use in the OpenAI API; default: metadata.name."
    )
    quantization: Quantization = Field("none", description="Quantization the engine loads the weights with.")
    credentials_secret: str | None = Field(
        None, min_length=1, description="Secret whose keys become environment variables (HF_TOKEN, AWS_*, ...)."
    )
    cache: ModelCache = Field(
        default_factory=lambda: ModelCache(size="100Gi"),
        description="Model cache: an emptyDir of this size, or a PersistentVolumeClaim.",
    )


class ModelOverride(Override):
    overrides = ModelSource

    cel_rules = (URI_RULE,)

    uri: str | None = Field(None, max_length=2048, description="The canary's model URI; default: spec.model.uri.")
    revision: str | None = Field(None, min_length=1, description="The canary's model revision.")
    served_name: str | None = Field(None, min_length=1, description="The canary's served model name.")
    quantization: Quantization | None = Field(None, description="The canary's quantization.")
    credentials_secret: str | None = Field(None, min_length=1, description="The canary's credentials Secret.")
    cache: ModelCache | None = Field(None, description="The canary's model cache.")


class EnvVar(SpecModel):
    cel_rules = (Rule("!(has(self.value) && has(self.valueFrom))", "set value or valueFrom, not both"),)

    name: str = Field(min_length=1, description="Environment variable name.")
    value: str | None = Field(None, description="Literal value.")
    value_from: FreeForm | None = Field(None, description="A core/v1 EnvVarSource (secretKeyRef, ...).")


class Engine(SpecModel):
    type: EngineType = Field("vllm", description="Serving engine.")
    image: str = Field("", description="Engine image; empty: the pinned default image of the engine type.")
    args: list[str] = Field(default_factory=list, description="Extra engine arguments, after the generated ones.")
    env: list[EnvVar] = Field(default_factory=list, max_length=128,
                              description="Extra environment variables (core/v1 EnvVar).")
    max_model_len: int | None = Field(None, ge=1, description="Maximum context length, in tokens.")
    tensor_parallel_size: int | None = Field(
        None, ge=1, description="GPUs one model replica is sharded over; default: resources.gpu.count."
    )
    port: int = Field(8000, ge=1, le=65535, description="Port the engine serves HTTP on.")


class EngineOverride(Override):
    overrides = Engine

    type: EngineType | None = Field(None, description="The canary's engine type.")
    image: str | None = Field(None, min_length=1, description="The canary's engine image.")
    args: list[str] | None = Field(None, description="The canary's extra engine arguments (replace the stable's).")
    env: list[EnvVar] | None = Field(None, max_length=128,
                                     description="Environment variables merged by name over the stable's.")
    max_model_len: int | None = Field(None, ge=1, description="The canary's maximum context length.")
    tensor_parallel_size: int | None = Field(None, ge=1, description="The canary's tensor parallel size.")
    port: int | None = Field(None, ge=1, le=65535, description="The canary's engine port.")


class Gpu(SpecModel):
    count: int = Field(1, ge=0, description="GPUs per replica; 0 runs on CPU.")
    resource_name: str = Field("nvidia.com/gpu", pattern=EXTENDED_RESOURCE_PATTERN,
                               description="Extended resource the GPUs are, e.g. nvidia.com/gpu or amd.com/gpu.")
    product: str = Field("", description="GPU product (node label nvidia.com/gpu.product), e.g. NVIDIA-H100-80GB-HBM3.")


class GpuOverride(Override):
    overrides = Gpu

    count: int | None = Field(None, ge=0, description="The canary's GPUs per replica.")
    resource_name: str | None = Field(None, pattern=EXTENDED_RESOURCE_PATTERN,
                                      description="The canary's GPU resource name.")
    product: str | None = Field(None, description="The canary's GPU product.")


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
    )

    type: MetricType = Field(
        description="queue-length (waiting requests per pod), gpu-utilization (DCGM, percent), "
        "cpu or memory (utilization percent), pods or external (any named metric)."
    )
    target: int = Field(gt=0, description="Target average value (or utilization percent) per pod.")
    name: str | None = Field(None, min_length=1, description="Metric name, for pods and external metrics.")
    selector: FreeForm | None = Field(None, description="Label selector of an external metric.")


class Autoscaling(SpecModel):
    cel_rules = (
        Rule("self.minReplicas <= self.maxReplicas", "must be less than or equal to maxReplicas", ".minReplicas"),
    )

    min_replicas: int = Field(1, ge=1, description="Fewest stable replicas.")
    max_replicas: int = Field(4, ge=1, description="Most stable replicas.")
    metrics: list[Metric] = Field(
        default_factory=lambda: [Metric(type="queue-length", target=5)],
        min_length=1,
        max_length=10,
        description="What to scale on; the HPA follows whichever asks for the most replicas.",
    )
    scale_down_stabilization_seconds: int = Field(
        600, ge=0, le=3600, description="How long load must stay low before scaling down (GPUs start slowly)."
    )


class StringMatch(SpecModel):
    cel_rules = (
        Rule("(has(self.exact) ? 1 : 0) + (has(self.prefix) ? 1 : 0) + (has(self.regex) ? 1 : 0) == 1",
             "set exactly one of exact, prefix and regex"),
    )

    exact: str | None = Field(None, description="Exact string match.")
    prefix: str | None = Field(None, description="Prefix match.")
    regex: str | None = Field(None, description="RE2 regular expression match.")


class HTTPMatch(SpecModel):
    cel_rules = (
        Rule("has(self.headers) || has(self.uri) || has(self.queryParams) || has(self.method)",
             "a match must name headers, uri, queryParams or method (an empty match takes all traffic)"),
    )

    headers: dict[str, StringMatch] | None = Field(None, max_length=16, description="Request headers that must match.")
    uri: StringMatch | None = Field(None, description="URI path that must match.")
    query_params: dict[str, StringMatch] | None = Field(None, max_length=16,
                                                        description="Query parameters that must match.")
    method: StringMatch | None = Field(None, description="HTTP method that must match.")


class Canary(SpecModel):
    weight: int = Field(10, ge=0, le=100, description="Percent of traffic to the canary, once it is available.")
    replicas: int = Field(1, ge=0, description="Canary replicas.")
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
    attempts: int = Field(2, ge=0, description="Retries per request.")
    per_try_timeout_seconds: int = Field(300, ge=1, description="Timeout of each try.")
    retry_on: str = Field(
        "connect-failure,refused-stream,unavailable,503", min_length=1, description="Envoy retry conditions."
    )


class Traffic(SpecModel):
    istio: bool = Field(True, description="Route with Istio; false: no VirtualService/DestinationRule, "
                        "traffic splits by ready replicas.")
    hosts: list[str] = Field(default_factory=list, description="Extra hosts for the VirtualService.")
    gateways: list[str] = Field(default_factory=list, description="Istio gateways; the mesh is always included.")
    timeout_seconds: int = Field(600, ge=1, description="Request timeout (generation can be long).")
    retries: Retries = Field(default_factory=Retries, description="Retry policy.")
    load_balancer: Literal["LEAST_REQUEST", "ROUND_ROBIN", "RANDOM", "PASSTHROUGH"] = Field(
        "LEAST_REQUEST", description="Istio load-balancing algorithm."
    )


class Toleration(SpecModel):
    key: str | None = Field(None, description="Taint key.")
    operator: Literal["Exists", "Equal"] | None = Field(None, description="Exists or Equal.")
    value: str | None = Field(None, description="Taint value, with Equal.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"] | None = Field(None, description="Taint effect.")
    toleration_seconds: int | None = Field(None, description="How long a NoExecute taint is tolerated.")


class LocalObjectReference(SpecModel):
    name: str = Field(min_length=1, description="Name of the referenced object.")


class Pod(SpecModel):
    node_selector: dict[str, str] = Field(default_factory=dict, description="Extra node selector labels.")
    tolerations: list[Toleration] = Field(default_factory=list, description="Added to the default GPU toleration.")
    affinity: FreeForm = Field(default_factory=dict, description="A core/v1 Affinity.")
    labels: dict[str, str] = Field(default_factory=dict, description="Extra pod labels (llmdeploy's own win).")
    annotations: dict[str, str] = Field(default_factory=dict, description="Extra pod annotations.")
    service_account_name: str = Field("", description="ServiceAccount of the pods.")
    priority_class_name: str = Field("", description="PriorityClass of the pods.")
    image_pull_secrets: list[LocalObjectReference] = Field(default_factory=list, description="Image pull Secrets.")


class Rollout(SpecModel):
    cel_rules = (
        Rule("!(string(self.maxSurge) in ['0', '0%'] && string(self.maxUnavailable) in ['0', '0%'])",
             "maxSurge and maxUnavailable cannot both be 0", ".maxSurge"),
    )

    max_surge: IntOrPercent = Field(1, description="Extra pods during a rollout; 0 on a full GPU pool.")
    max_unavailable: IntOrPercent = Field(0, description="Pods that may be down during a rollout.")


class DisruptionBudget(SpecModel):
    max_unavailable: IntOrPercent = Field(1, description="Stable pods that voluntary disruptions may take down.")


_GPU = "(has(self.canary.resources.gpu) && has(self.canary.resources.gpu.count) ? " \
       "self.canary.resources.gpu.count : self.resources.gpu.count)"
_TP = "(has(self.canary.engine.tensorParallelSize) ? self.canary.engine.tensorParallelSize : " \
      "has(self.engine.tensorParallelSize) ? self.engine.tensorParallelSize : 1)"


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
        Rule("!has(self.canary) || !((has(self.canary.engine.type) ? self.canary.engine.type : self.engine.type)"
             " == 'triton' && (has(self.canary.model.uri) ? self.canary.model.uri : self.model.uri)"
             ".startsWith('hf://'))",
             "triton serves a model repository: use an s3://, gs://, https://, models:/, pvc:// or oci:// uri",
             ".canary.model.uri"),
    )

    model: ModelSource = Field(description="The model to serve.")
    engine: Engine = Field(default_factory=Engine, description="The engine that serves it.")
    resources: Resources = Field(default_factory=Resources, description="Resources of each replica.")
    replicas: int = Field(1, ge=0, description="Stable replicas, when autoscaling is off.")
    autoscaling: Autoscaling | None = Field(None, description="Present: an HPA scales the stable Deployment.")
    canary: Canary | None = Field(None, description="Present: a canary Deployment gets part of the traffic.")
    traffic: Traffic = Field(default_factory=Traffic, description="How traffic reaches the model.")
    pod: Pod = Field(default_factory=Pod, description="Passed through to both Deployments' pod templates.")
    startup_timeout_seconds: int = Field(
        1800, ge=1, description="Model download and load time; sizes the startup probe and progress deadline."
    )
    rollout: Rollout = Field(default_factory=Rollout, description="Rolling update of the Deployments.")
    disruption_budget: DisruptionBudget | None = Field(
        default_factory=DisruptionBudget, description="PodDisruptionBudget of the stable Deployment; null: none."
    )
    paused: bool = Field(False, description="Freeze every child exactly as last applied.")
