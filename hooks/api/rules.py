"""Cross-field rules, written once in CEL and enforced twice.

The CRD carries each rule as an `x-kubernetes-validations` entry, so `kubectl apply` rejects a
bad resource; the hook evaluates the very same expressions with a CEL library, so a resource
that slipped past (an old CRD, a disabled validation) gets the same message in its status.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import UnionType
from typing import Any, ClassVar, Union, get_args, get_origin

import cel
from pydantic import BaseModel, GetJsonSchemaHandler, ValidationError
from pydantic.json_schema import JsonSchemaValue
from pydantic_core import CoreSchema


@dataclass(frozen=True)
class Rule:
    """One CEL rule: `self` is the object (or value) the rule is attached to. `native`, when
    given, is the same rule in Python, for rules the CEL library evaluates slowly (a regular
    expression per map key); a test holds the two to the same verdicts."""

    rule: str
    message: str
    field_path: str = ""  # Kubernetes' fieldPath, e.g. ".minReplicas"
    native: Callable[[Any], bool | None] | None = dataclasses.field(default=None, compare=False)

    def as_validation(self) -> dict[str, str]:
        """The rule as an `x-kubernetes-validations` entry."""
        entry = {"rule": self.rule, "message": self.message}
        if self.field_path:
            entry["fieldPath"] = self.field_path
        return entry

    def evaluate(self, value: Any) -> bool | None:
        """The rule's verdict on `value`, or None when it cannot be evaluated (a missing or
        mistyped field)."""
        if self.native is not None:
            return self.native(value)
        return self.cel_verdict(value)

    def cel_verdict(self, value: Any, context: cel.Context | None = None) -> bool | None:
        """The verdict of the CEL expression itself (`context`: `value` already converted)."""
        try:
            result = _compiled(self.rule).execute(context if context is not None else {"self": value})
        except Exception:  # noqa: BLE001 - the CEL library raises bare runtime errors
            return None
        return result if isinstance(result, bool) else None


def broken(rules: Sequence[Rule], value: Any) -> list[Rule]:
    """The rules `value` breaks (whose verdict is not True). Converting `value` into CEL's
    values costs more than evaluating a rule: it is converted once for all of them, and of a
    mapping only the fields the rules read."""
    expressions = tuple(r.rule for r in rules if r.native is None)
    context = _context(_read_by(expressions, value)) if expressions else None
    return [r for r in rules if (r.native(value) if r.native is not None else r.cel_verdict(value, context)) is not True]


def _read_by(expressions: tuple[str, ...], value: Any) -> Any:
    """`value` without the fields no expression reads, when they read it only as `self.field`."""
    fields = _fields_read(expressions)
    if fields is None or not isinstance(value, dict):
        return value
    return {key: item for key, item in value.items() if key in fields}


# CEL's string literals (triple-quoted, quoted, raw or bytes): what they hold is not code.
_STRING = re.compile(r"[rRbB]*(?:'''.*?'''" r'|""".*?"""' r"|'(?:[^'\\\n]|\\.)*'" r'|"(?:[^"\\\n]|\\.)*")', re.S)
_SELF = re.compile(r"\bself\b(?:\.([A-Za-z_][A-Za-z0-9_]*)\b(?!\s*\())?")


@lru_cache(maxsize=None)
def _fields_read(expressions: tuple[str, ...]) -> frozenset[str] | None:
    """The fields of `self` the expressions read; None when any reads `self` otherwise (whole,
    by index, or by a method such as `self.all(...)`)."""
    code = [_STRING.sub(" ", expression) for expression in expressions]
    if any("//" in text or "'" in text or '"' in text for text in code):
        return None  # a comment could hide what follows `self.name`; a quote, a string not understood
    fields = [match[1] for text in code for match in _SELF.finditer(text)]
    return None if None in fields else frozenset(fields)


def _context(value: Any) -> cel.Context | None:
    """`self` converted for CEL; None when it cannot be (each rule then fails on its own)."""
    try:
        context = cel.Context()
        context.add_variable("self", value)
    except Exception:  # noqa: BLE001 - the CEL library raises bare runtime errors
        return None
    return context


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
        for rule in broken(model.cel_rules, data):
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


def violations_where_valid(model: type[BaseModel], data: Any, path: str) -> Iterator[str]:
    """The rule violations of every part of raw `data` that passes the schema on its own, so
    that one type error elsewhere does not hide a broken rule."""
    try:
        instance = model.model_validate(data)
    except ValidationError:
        pass
    else:
        yield from violations(instance, path)
        return
    if not isinstance(data, dict):
        return
    for rule in getattr(model, "cel_rules", ()):
        if rule.evaluate(data) is False:
            yield f"{path}{rule.field_path}: {rule.message}"
    for name, field in model.model_fields.items():
        key = field.alias or name
        if key in data:
            yield from _raw_violations(field.annotation, data[key], f"{path}.{key}")


def _raw_violations(annotation: Any, value: Any, path: str) -> Iterator[str]:
    for option in get_args(annotation) if get_origin(annotation) in (Union, UnionType) else (annotation,):
        origin, args = get_origin(option), get_args(option)
        if isinstance(option, type) and issubclass(option, BaseModel) and isinstance(value, dict):
            yield from violations_where_valid(option, value, path)
        elif origin is list and args and isinstance(value, list):
            for i, item in enumerate(value):
                yield from _raw_violations(args[0], item, f"{path}[{i}]")
        elif origin is dict and len(args) == 2 and isinstance(value, dict):
            for key, item in value.items():
                yield from _raw_violations(args[1], item, f"{path}.{key}")
