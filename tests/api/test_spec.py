"""The canary's override models cannot drift from the models they override."""

from __future__ import annotations

import types
import typing
from typing import Any

import pytest
from annotated_types import MinLen
from hooks.api.base import SpecModel
from hooks.api.spec import Override
from pydantic.fields import FieldInfo

OVERRIDES = sorted(Override.__subclasses__(), key=lambda c: c.__name__)


def optional_of(annotation: Any) -> Any:
    """X from X | None."""
    assert typing.get_origin(annotation) in (typing.Union, types.UnionType), annotation
    options = [a for a in typing.get_args(annotation) if a is not type(None)]
    assert len(options) == len(typing.get_args(annotation)) - 1, f"{annotation} is not optional"
    return options[0] if len(options) == 1 else typing.Union[tuple(options)]


def unannotated(annotation: Any) -> tuple[Any, tuple[Any, ...]]:
    """(X, metadata) from Annotated[X, *metadata], which pydantic unpacks only at the top."""
    if typing.get_origin(annotation) is typing.Annotated:
        return typing.get_args(annotation)[0], tuple(annotation.__metadata__)
    return annotation, ()


def flat(metadata: list[Any]) -> list[Any]:
    """Constraints, with those of an Annotated[..., Field(...)] unpacked as pydantic does."""
    return [inner for m in metadata for inner in (m.metadata if isinstance(m, FieldInfo) else [m])]


def test_every_partial_model_is_an_override() -> None:
    assert [c.__name__ for c in OVERRIDES] == ["EngineOverride", "GpuOverride", "ModelOverride", "ResourcesOverride"]


@pytest.mark.parametrize("override", OVERRIDES, ids=lambda c: c.__name__)
def test_an_override_has_every_field_of_its_model_all_optional(override: type[Override]) -> None:
    full: type[SpecModel] = override.overrides
    assert list(override.model_fields) == list(full.model_fields)
    assert override.cel_rules == full.cel_rules, "a rule of the full model must hold for the override too"
    for name, field in override.model_fields.items():
        original: FieldInfo = full.model_fields[name]
        assert not field.is_required() and field.default is None, name
        assert field.alias == original.alias and field.description, name
        inner, annotated = unannotated(optional_of(field.annotation))
        if isinstance(inner, type) and issubclass(inner, Override):
            assert inner.overrides is original.annotation, name
            continue
        optional = original.default is None and not original.is_required()
        base, base_annotated = unannotated(optional_of(original.annotation) if optional else original.annotation)
        assert inner == base, f"{override.__name__}.{name}: {inner} is not {base}"
        # Every bound of the full field holds for the override too; it may only add non-emptiness.
        bounds = {repr(m) for m in flat([*field.metadata, *annotated])}
        full_bounds = {repr(m) for m in flat([*original.metadata, *base_annotated])}
        assert full_bounds <= bounds <= full_bounds | {repr(MinLen(1))}, name
