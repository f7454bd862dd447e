"""The CEL rules judged together (`broken`: the value converted for CEL once) give each rule's
own verdict (the value converted for that rule alone)."""

from __future__ import annotations

from typing import Any, get_args

from hooks.api.rules import Rule, RuledModel, broken
from hooks.api.spec import LLMDeploymentSpec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from tests.strategies import specs


def ruled_models(model: type[BaseModel] = LLMDeploymentSpec, seen: set[type] | None = None) -> set[type[RuledModel]]:
    """Every model with CEL rules reachable from `model`."""
    seen = set() if seen is None else seen
    if model in seen:
        return set()
    seen.add(model)
    found: set[type[RuledModel]] = {model} if issubclass(model, RuledModel) and model.cel_rules else set()
    for field in model.model_fields.values():
        stack: list[Any] = [field.annotation]
        while stack:
            annotation = stack.pop()
            if isinstance(annotation, type) and issubclass(annotation, BaseModel):
                found |= ruled_models(annotation, seen)
            stack.extend(get_args(annotation))
    return found


def one_by_one(rules: tuple[Rule, ...], value: Any) -> list[Rule]:
    return [r for r in rules if r.evaluate(value) is not True]


def test_every_ruled_model_is_found() -> None:
    assert LLMDeploymentSpec in ruled_models() and len(ruled_models()) > 3


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(specs())
def test_judged_together_as_one_by_one_for_generated_specs(spec: dict[str, Any]) -> None:
    assert broken(LLMDeploymentSpec.cel_rules, spec) == one_by_one(LLMDeploymentSpec.cel_rules, spec)


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.sampled_from(sorted(ruled_models(), key=lambda m: m.__name__)),
       st.recursive(st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=5), st.floats()),
                    lambda inner: st.one_of(st.lists(inner, max_size=3),
                                            st.dictionaries(st.text(max_size=8), inner, max_size=4)), max_leaves=12))
def test_judged_together_as_one_by_one_for_any_value(model: type[RuledModel], value: Any) -> None:
    """Values of any shape, which some rules cannot evaluate (their verdict is None)."""
    assert broken(model.cel_rules, value) == one_by_one(model.cel_rules, value)


SHAPES = [  # how an expression may read `self`: only `self.field` lets the value be cut to those fields
    "self.a == 1", "has(self.a) && self.a.all(k, k != 'self.b')", "self.all(k, k.startsWith('a'))",
    "self.all // a comment\n(k, k.startsWith('a'))", "self.exists // c\n(k, k == 'b')", "size(self) == 2",
    "self['a'] == 1", "self.?a.orValue(0) == 1", "self . a == 1", "'self' == 'self' && self.a == 1",
    "self.a == 'x' // self.b == 1", "self.a == r'^\\d//$'", "self.a.size() == 1 && self.map(k, k).size() == 2",
]
VALUES: list[Any] = [{"a": 1, "b": 2}, {"b": 1}, {"a": "x"}, {"a": {"k": 1}}, {}, {"ab": 1, "a": 1}, []]


def test_judged_together_as_one_by_one_for_every_way_of_reading_self() -> None:
    for shape in SHAPES:
        rule = Rule(shape, "message")
        for value in VALUES:
            assert broken((rule,), value) == one_by_one((rule,), value), (shape, value)
