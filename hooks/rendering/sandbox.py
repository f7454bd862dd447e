"""The Jinja environment templates run in: sandboxed, strict, and YAML-safe.

Templates are data from platform teams. A name resolves in the override folder first, then
in the shipped one; `llmdeploy/<name>` always means the shipped template, so that an
override can `{% extends "llmdeploy/deployment.yaml" %}` and fill in only the blocks it
changes. Undefined names are errors, and every `{{ expression }}` is finalised by
`yaml_scalar`, so no value can inject YAML structure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

from hooks.rendering.scalars import yaml_scalar

SHIPPED_PREFIX = "llmdeploy"


def _finalize(value: Any) -> str:
    if isinstance(value, jinja2.Undefined):
        str(value)  # raises UndefinedError, naming what is undefined
    return yaml_scalar(value)


def create_environment(shipped: Path, overrides: Path | None) -> jinja2.Environment:
    folders = [str(overrides), str(shipped)] if overrides else [str(shipped)]
    return ImmutableSandboxedEnvironment(
        loader=jinja2.ChoiceLoader([
            jinja2.PrefixLoader({SHIPPED_PREFIX: jinja2.FileSystemLoader(str(shipped))}),
            jinja2.FileSystemLoader(folders),
        ]),
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        autoescape=False,
        keep_trailing_newline=True,
        auto_reload=False,
    )
