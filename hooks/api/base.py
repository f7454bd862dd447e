"""The pydantic configuration every model of the LLMDeployment spec shares: camelCase as the
API writes it, strict types, unknown fields refused, immutable."""

from __future__ import annotations

from pydantic import ConfigDict
from pydantic.alias_generators import to_camel

from hooks.api.rules import RuledModel


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
