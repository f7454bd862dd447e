"""Every error llmdeploy raises on purpose, grouped by who must act on it.

    LLMDeployError
    ├── SpecError        the resource's author: reported in status, children kept as they are
    ├── TemplateError    the platform team: a template fails to load or render; the hook refuses
    ├── ConfigError      the platform team: a setting is wrong; the hook does not start
    ├── RequestError     the caller (Metacontroller, a person with curl): answered with a 4xx
    ├── UnsafeToAnswer   nobody's mistake: any answer would change serving children, so the
    │                    hook refuses (409) and Metacontroller retries without touching anything
    └── Busy             nobody's mistake: the hook is at capacity; answered 429 with Retry-After
"""

from __future__ import annotations


class LLMDeployError(Exception):
    """Base class of llmdeploy's own errors."""


class SpecError(LLMDeployError):
    """The LLMDeployment's spec is invalid; `errors` holds one 'path: message' per problem."""

    def __init__(self, errors: list[str]) -> None:
        self.errors = errors
        super().__init__("; ".join(errors))


class TemplateError(LLMDeployError):
    """A template could not be loaded or rendered; names the file and line where known."""

    def __init__(self, message: str, template: str | None = None, line: int | None = None) -> None:
        self.template = template
        self.line = line
        where = f"{template}:{line}: " if template and line else f"{template}: " if template else ""
        super().__init__(f"{where}{message}")


class ConfigError(LLMDeployError):
    """The hook's own configuration is unusable (a missing token file, half a TLS pair)."""


class RequestError(LLMDeployError):
    """The request cannot be served as sent; `status_code` is the 4xx to answer with."""

    status_code = 400

    def __init__(self, message: str, status_code: int | None = None) -> None:
        if status_code is not None:
            self.status_code = status_code
        super().__init__(message)


class UnsafeToAnswer(LLMDeployError):
    """Any answer would change serving children (Metacontroller applies whatever a 200 says),
    so the hook refuses and Metacontroller retries without touching anything."""

    status_code = 409


class Busy(LLMDeployError):
    """Every render worker stayed busy for as long as a sync may wait; retry shortly."""
