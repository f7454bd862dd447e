"""The LLMDeployment API: the spec and status models (the one source of the CRD), their CEL
rules, validation as the API server would do it, and the generated CRD."""
