"""A loaded template set: the shipped templates with an optional override folder on top.

A file in the override folder replaces the shipped one of the same name; any other `*.yaml`
there is an extra template (`_*` files hold macros and partials and are not rendered).
`render` turns one template and its context into objects, each checked to be a
well-formed namespaced object.
"""

from __future__ import annotations

import hashlib
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import yaml

from hooks.errors import TemplateError
from hooks.rendering.kubeyaml import load_all
from hooks.rendering.sandbox import create_environment
from hooks.rendering.scalars import without_nulls

TEMPLATE_SUFFIX = ".yaml"

JSON = dict[str, Any]


def shipped_templates_dir() -> Path:
    """The templates that come with llmdeploy: inside the installed package, or the
    repository's `templates/` folder in a development checkout."""
    package = Path(__file__).resolve().parent.parent
    packaged = package / "templates"
    return packaged if packaged.is_dir() else package.parent / "templates"


@dataclass(frozen=True)
class TemplateSources:
    """The text of a template set, read once (see `hooks.edge.templates`): the shipped
    templates and a platform team's override folder, by file name. Compiling from a snapshot
    means Jinja never touches the file system, and every process that compiles the same
    snapshot renders the same way."""

    shipped: dict[str, str]
    overrides: dict[str, str] = field(default_factory=dict)

    def digest(self) -> str:
        """Identifies the set by content: equal sources render equally."""
        hasher = hashlib.sha256()
        for group in (self.shipped, self.overrides):
            for name in sorted(group):
                hasher.update(name.encode() + b"\0" + group[name].encode() + b"\0")
            hasher.update(b"\1")
        return hasher.hexdigest()


@dataclass(frozen=True)
class TemplateSet:
    """Compiled templates: the required ones, then the override folder's extra ones."""

    templates: dict[str, jinja2.Template]
    extras: tuple[str, ...]
    digest: str

    @classmethod
    def compile(cls, sources: TemplateSources, required: Sequence[str]) -> TemplateSet:
        """Compile `required` and every extra template; TemplateError names the file and
        line of the first problem."""
        env = create_environment(sources.shipped, sources.overrides)
        extras = sorted(name for name in sources.overrides if name.endswith(TEMPLATE_SUFFIX)
                        and name not in required and not name.startswith(("_", ".")))
        templates = {}
        for name in [*required, *extras]:
            try:
                templates[name] = env.get_template(name)
                _check_blocks(env, name)
            except jinja2.TemplateNotFound as e:
                raise TemplateError("template is missing", name) from e
            except jinja2.TemplateSyntaxError as e:
                raise TemplateError(e.message or "syntax error", e.name or name, e.lineno) from e
        return cls(templates, tuple(extras), sources.digest())

    def render(self, name: str, namespace: str, **context: Any) -> list[JSON]:
        """The objects template `name` renders to, each a mapping with apiVersion, kind and
        metadata.name, in `namespace`, without nulls."""
        try:
            text = self.templates[name].render(**context)
        except MemoryError:
            raise  # the process that ran out is the one to deal with it
        except Exception as e:  # noqa: BLE001 - a template can fail in any way; report where
            raise TemplateError(f"{type(e).__name__}: {e}", name, _template_line(e, name)) from e
        try:
            documents = load_all(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" (line {mark.line + 1} of the rendered output)" if mark else ""
            raise TemplateError(f"renders invalid YAML{where}: {getattr(e, 'problem', e)}", name) from e
        return [_checked_object(doc, name, namespace) for doc in documents]


def _check_blocks(env: jinja2.Environment, name: str) -> None:
    """A template that extends another may only fill blocks the other has: Jinja silently
    drops any other block, and with it whatever the override meant to add."""
    tree, parent = _parsed(env, name)
    if parent is None:
        return
    available = _blocks(env, parent)
    for block in tree.find_all(jinja2.nodes.Block):
        if block.name not in available:
            raise TemplateError(
                f"block {block.name!r} is not in {parent}, so it would never render; its blocks are "
                f"{', '.join(sorted(available)) or 'none'} (docs/templates.md lists them)", name, block.lineno)


def _blocks(env: jinja2.Environment, name: str) -> set[str]:
    """Every block template `name` and the templates it extends define."""
    tree, parent = _parsed(env, name)
    own = {block.name for block in tree.find_all(jinja2.nodes.Block)}
    return own | (_blocks(env, parent) if parent else set())


def _parsed(env: jinja2.Environment, name: str) -> tuple[jinja2.nodes.Template, str | None]:
    """The template's syntax tree, and the name of the template it extends (when constant)."""
    assert env.loader is not None
    source, filename, _ = env.loader.get_source(env, name)
    tree = env.parse(source, name, filename)
    extends = next(tree.find_all(jinja2.nodes.Extends), None)
    parent = extends.template.value if extends and isinstance(extends.template, jinja2.nodes.Const) else None
    return tree, parent if isinstance(parent, str) else None


def _checked_object(doc: Any, template: str, namespace: str) -> JSON:
    if not isinstance(doc, dict):
        raise TemplateError("every rendered document must be a mapping", template)
    meta = doc.get("metadata")
    if not (isinstance(doc.get("apiVersion"), str) and isinstance(doc.get("kind"), str)
            and isinstance(meta, dict) and isinstance(meta.get("name"), str) and meta["name"]):
        raise TemplateError("every rendered object needs apiVersion, kind and metadata.name", template)
    if meta.get("namespace", namespace) != namespace:
        raise TemplateError(
            f"{doc['kind']} {meta['name']} is in namespace {meta['namespace']!r}; "
            f"children must stay in the LLMDeployment's namespace {namespace!r}", template)
    obj: JSON = without_nulls(doc)
    obj["metadata"]["namespace"] = namespace
    return obj


def _template_line(error: BaseException, name: str) -> int | None:
    """The line of template `name` where rendering failed (Jinja rewrites tracebacks so that
    template frames carry the template's file name and line)."""
    line = getattr(error, "lineno", None)
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename.endswith(name):
            line = frame.lineno
    return line if isinstance(line, int) else None
