"""The Jinja environment templates run in: data access only, strict, and YAML-safe.

Templates are data from platform teams. They see plain data (see `hooks.core.view`) and may
only read it: a dataclass's fields, a mapping's items, and a few string methods that neither
parse, copy nor construct. No Python internal, no other method, no shared object is
reachable; `dict` and `namespace` are plain functions, not types. Undefined names are errors,
every `{{ expression }}` is finalised by `yaml_scalar` (so no value can inject YAML
structure), and `{% filter %}` blocks, whose output would skip that quoting, are refused.

Budgets (time, memory) are not enforced here: rendering runs in a worker process with
operating-system limits (see `hooks.workers`). The operators that build large values
cheaply are bounded here too, so that such a template fails with a clear message.

A name resolves in the override folder first, then in the shipped one; `llmdeploy/<name>`
always means the shipped template, so that an override can `{% extends
"llmdeploy/deployment.yaml" %}` and fill in only the blocks it changes.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
from collections.abc import Callable, Mapping
from typing import Any

import jinja2
from jinja2 import nodes
from jinja2.environment import TemplateModule
from jinja2.exceptions import SecurityError
from jinja2.runtime import LoopContext
from jinja2.sandbox import ImmutableSandboxedEnvironment, safe_range
from jinja2.utils import Namespace

from hooks.rendering.scalars import yaml_scalar

SHIPPED_PREFIX = "llmdeploy"
MAX_VALUE_SIZE = 1 << 20  # items or characters one operator may build
MAX_EXPONENT = 64

# Methods a template may call: they read, and build nothing larger than their input.
MAPPING_METHODS = frozenset({"items", "keys", "values", "get"})
STRING_METHODS = frozenset({
    "lower", "upper", "title", "capitalize", "strip", "lstrip", "rstrip", "startswith", "endswith",
    "split", "rsplit", "splitlines", "partition", "rpartition", "removeprefix", "removesuffix", "count",
    "find", "rfind", "isdigit", "isalnum", "isalpha", "isascii", "islower", "isupper", "isspace",
})
LOOP_ATTRIBUTES = frozenset({"index", "index0", "revindex", "revindex0", "first", "last", "length", "depth",
                             "depth0", "previtem", "nextitem", "cycle", "changed"})
# Filters that make HTML, print Python representations, or are not deterministic.
REMOVED_FILTERS = ("safe", "escape", "e", "forceescape", "urlize", "xmlattr", "pprint", "random", "format")
INTERCEPTED_OPERATORS = frozenset({"*", "**", "%"})


def _finalize(value: Any) -> str:
    if isinstance(value, jinja2.Undefined):
        str(value)  # raises UndefinedError, naming what is undefined
    return yaml_scalar(value)


def build_dict(*args: Any, **kwargs: Any) -> dict[Any, Any]:
    """`dict(...)` for templates: a new mapping, without the type's other methods."""
    return dict(*args, **kwargs)


def build_namespace(**kwargs: Any) -> Namespace:
    """`namespace(...)` for templates: a holder `{% set ns.x = ... %}` can write to."""
    return Namespace(**kwargs)


class FreshModuleTemplate(jinja2.Template):
    """A template whose module (what `{% import %}` gives) is made anew for every import.
    Jinja keeps one per template otherwise, and a `namespace` in it would carry one
    resource's values into the next render."""

    def _get_default_module(self, ctx: jinja2.runtime.Context | None = None) -> TemplateModule:
        if ctx is not None:
            new_globals = ctx.globals_keys - self.globals.keys()
            if new_globals:
                return self.make_module({k: ctx.parent[k] for k in new_globals})
        return self.make_module()


@functools.cache
def _readable(kind: type) -> frozenset[str] | None:
    """What a template may read of an object of type `kind`, where the type alone decides: a
    view record's fields, a mapping's, a string's and a loop's allowed methods. Asked on every
    attribute read, of a few types."""
    if dataclasses.is_dataclass(kind):
        return frozenset(f.name for f in dataclasses.fields(kind))
    for base, allowed in ((Mapping, MAPPING_METHODS), (str, STRING_METHODS), (LoopContext, LOOP_ATTRIBUTES)):
        if issubclass(kind, base):
            return allowed
    return None


class DataOnlySandbox(ImmutableSandboxedEnvironment):
    """The sandbox with an allow-list: data access only."""

    intercepted_binops = INTERCEPTED_OPERATORS
    template_class = FreshModuleTemplate

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if attr.startswith("_"):
            return False
        kind: type = type(obj)
        readable = _readable(kind)
        if readable is not None:
            return attr in readable
        if isinstance(obj, Namespace):
            return True  # its attributes are what the template itself set
        if isinstance(obj, TemplateModule):
            return attr in vars(obj)  # the macros and variables an imported template exports
        return False

    def wrap_str_format(self, value: Any) -> None:
        """Jinja hands out a wrapped `str.format` before asking `is_safe_attribute`; here
        `format` is simply not allowed (its replacement fields walk attributes)."""
        return None

    def call_binop(self, context: jinja2.runtime.Context, op: str, left: Any, right: Any) -> Any:
        if op == "%" and isinstance(left, str):
            raise SecurityError("%-formatting of strings is not allowed: join values with ~")
        if op == "**" and isinstance(right, int) and abs(right) > MAX_EXPONENT:
            raise SecurityError(f"exponents above {MAX_EXPONENT} are not allowed")
        if op == "*":
            sizes = [len(v) for v in (left, right) if isinstance(v, (str, list, tuple))]
            counts = [v for v in (left, right) if isinstance(v, int) and not isinstance(v, bool)]
            if sizes and counts and sizes[0] * max(counts[0], 0) > MAX_VALUE_SIZE:
                raise SecurityError(f"this would build more than {MAX_VALUE_SIZE} items")
        return _OPERATORS[op](left, right)

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        for block in tree.find_all(nodes.FilterBlock):
            raise jinja2.TemplateSyntaxError(
                "{% filter %} blocks are not allowed: their output would skip the YAML quoting of "
                "values; apply the filter to the expression instead", block.lineno, name, filename)
        return tree


_OPERATORS: dict[str, Callable[[Any, Any], Any]] = {"*": operator.mul, "**": operator.pow, "%": operator.mod}


class SnapshotLoader(jinja2.BaseLoader):
    """Templates from text in memory, each known by its name (so that errors can say where)."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self.sources = dict(sources)

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Callable[[], bool]]:
        if template not in self.sources:
            raise jinja2.TemplateNotFound(template)
        return self.sources[template], template, lambda: True


def create_environment(shipped: Mapping[str, str], overrides: Mapping[str, str]) -> jinja2.Environment:
    """The sandbox over the templates' text (no file system behind it): a name resolves in
    `overrides` first, then in `shipped`; `llmdeploy/<name>` always means the shipped one."""
    env = DataOnlySandbox(
        loader=jinja2.ChoiceLoader([
            jinja2.PrefixLoader({SHIPPED_PREFIX: SnapshotLoader(shipped)}),
            SnapshotLoader({**shipped, **overrides}),
        ]),
        undefined=jinja2.StrictUndefined,
        finalize=_finalize,
        autoescape=False,
        keep_trailing_newline=True,
        auto_reload=False,
    )
    env.globals = {"range": safe_range, "dict": build_dict, "namespace": build_namespace}
    for name in REMOVED_FILTERS:
        env.filters.pop(name, None)
    env.filters = {name: _on_data_only(name, f) for name, f in env.filters.items()}
    return env


def _on_data_only(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    """`f`, refusing to filter anything but data: a function, a type or a template module
    would otherwise be turned into its Python representation."""
    position = 1 if hasattr(f, "jinja_pass_arg") else 0  # after the context it asks for

    @functools.wraps(f)
    def filtered(*args: Any, **kwargs: Any) -> Any:
        value = args[position] if len(args) > position else None
        if callable(value) or isinstance(value, (type, TemplateModule)):
            raise SecurityError(f"the {name} filter takes data, not a {type(value).__name__}")
        return f(*args, **kwargs)

    return filtered
