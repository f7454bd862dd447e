"""llmdeploy: a Metacontroller sync hook that turns one LLMDeployment into GPU Deployments,
a Service, autoscaling, a disruption budget and Istio routing."""

__version__ = "0.1.0"
