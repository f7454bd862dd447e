"""Cross-field rules, written once in CEL and enforced twice.

The CRD carries each rule as an `x-kubernetes-validations` entry, so `kubectl apply` rejects a
bad resource; the hook evaluates the very same expressions with a CEL library, so a resource
that slipped past (an old CRD, a disabled validation) gets the same message in its status.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar

import cel
from pydantic import BaseModel, GetJsonSchemaHandler
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema


@dataclass(frozen=True)
class Rule:
    """One CEL rule: `self` is the object (or value) the rule is attached to."""

    rule: str
    message: str
    field_path: str = ""  # Kubernetes' fieldPath, e.g. ".minReplicas"

    def as_validation(self) -> dict[str, str]:
        """The rule as an `x-kubernetes-validations` entry."""
        entry = {"rule": self.rule, "message": self.message}
        if self.field_path:
            entry["fieldPath"] = self.field_path
        return entry

    def holds(self, value: Any) -> bool:
        """True when the rule accepts `value`; a rule that cannot be evaluated does not hold."""
        try:
            return _compiled(self.rule).execute({"self": value}) is True
        except Exception:  # noqa: BLE001 - the CEL library raises bare runtime errors
            return False


@lru_cache(maxsize=None)
def _compiled(expression: str) -> Any:
    return cel.compile(expression)


class RuledModel(BaseModel):
    """A model whose instances must satisfy `cel_rules`, which also appear in its JSON schema."""

    cel_rules: ClassVar[tuple[Rule, ...]] = ()

    @classmethod
    def __get_pydantic_json_schema__(
        cls, core_schema: CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        schema = handler(core_schema)
        if cls.cel_rules:
            target = handler.resolve_ref_schema(schema)
            target["x-kubernetes-validations"] = [r.as_validation() for r in cls.cel_rules]
        return schema


def violations(model: BaseModel, path: str) -> Iterator[str]:
    """'path: message' for every rule broken anywhere in `model`'s tree."""
    if isinstance(model, RuledModel) and model.cel_rules:
        data = model.model_dump(by_alias=True, exclude_none=True, mode="json")
        for rule in model.cel_rules:
            if not rule.holds(data):
                yield f"{path}{rule.field_path}: {rule.message}"
    for name, field in type(model).model_fields.items():
        key = field.alias or name
        yield from _violations_in(getattr(model, name), f"{path}.{key}")


def _violations_in(value: Any, path: str) -> Iterator[str]:
    if isinstance(value, BaseModel):
        yield from violations(value, path)
    elif isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            yield from _violations_in(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _violations_in(item, f"{path}.{key}")
