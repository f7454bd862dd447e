"""Templates to child objects: a sandboxed Jinja environment built once, rendering the view.

Templates are data from platform teams. A template set is the shipped templates with an
optional override folder on top: a file there replaces the shipped one of the same name, and
any other `*.yaml` there renders an extra child per LLMDeployment (`_*` files hold macros).
They run sandboxed, undefined variables are errors, and every `{{ expression }}` is finalised
by `yaml_scalar`, so no resource value can inject YAML structure.
"""

from __future__ import annotations

import traceback
import itertools
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2
import yaml
from jinja2.sandbox import ImmutableSandboxedEnvironment

from hooks.encoding import without_nulls, yaml_scalar
from hooks.errors import TemplateError
from hooks.view import View

_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

TEMPLATE_SUFFIX = ".yaml"
DEPLOYMENT = "deployment.yaml"
SERVICE = "service.yaml"
AUTOSCALER = "hpa.yaml"
DISRUPTION_BUDGET = "pdb.yaml"
DESTINATION_RULE = "destinationrule.yaml"
VIRTUAL_SERVICE = "virtualservice.yaml"
CHILD_TEMPLATES = (DEPLOYMENT, SERVICE, AUTOSCALER, DISRUPTION_BUDGET, DESTINATION_RULE, VIRTUAL_SERVICE)

JSON = dict[str, Any]
# What the child templates render; an extra template may not add another of these.
MANAGED_KINDS = frozenset({"Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget",
                           "DestinationRule", "VirtualService"})


def _finalize(value: Any) -> str:
    if isinstance(value, jinja2.Undefined):
        str(value)  # raises UndefinedError, naming what is undefined
    return yaml_scalar(value)


SHIPPED_PREFIX = "llmdeploy"


def create_environment(shipped: Path, overrides: Path | None) -> ImmutableSandboxedEnvironment:
    """The sandbox. A name resolves in the override folder first, then in the shipped one;
    `llmdeploy/<name>` always means the shipped template, so that an override can
    `{% extends "llmdeploy/deployment.yaml" %}` and fill in only the blocks it changes."""
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


def extra_template_names(folder: Path | None) -> list[str]:
    """The templates of an override folder that render extra children."""
    if folder is None:
        return []
    return sorted(p.name for p in folder.glob(f"*{TEMPLATE_SUFFIX}")
                  if p.name not in CHILD_TEMPLATES and not p.name.startswith(("_", ".")))


_serials = itertools.count(1)


@dataclass(frozen=True)
class Renderer:
    """A loaded template set: the child templates, then the extra ones, compiled. `serial`
    tells template sets apart, so nothing rendered by one is ever taken for another's."""

    templates: dict[str, jinja2.Template]
    extras: tuple[str, ...]
    serial: int = field(default_factory=lambda: next(_serials))

    @classmethod
    def load(cls, shipped: Path, overrides: Path | None = None) -> Renderer:
        """Compile the shipped templates with `overrides` on top; TemplateError names the
        file and line of the first problem."""
        for folder in (shipped, overrides):
            if folder is not None and not folder.is_dir():
                raise TemplateError(f"templates folder {folder} does not exist")
        env = create_environment(shipped, overrides)
        extras = extra_template_names(overrides)
        templates = {}
        for name in [*CHILD_TEMPLATES, *extras]:
            try:
                templates[name] = env.get_template(name)
            except jinja2.TemplateNotFound as e:
                raise TemplateError("template is missing", name) from e
            except jinja2.TemplateSyntaxError as e:
                raise TemplateError(e.message or "syntax error", e.filename and Path(e.filename).name or name,
                                    e.lineno) from e
        return cls(templates, tuple(extras))

    def render_children(self, view: View) -> list[JSON]:
        """The desired children, in a fixed order: Deployments (stable, canary), Service,
        HPA, PDB, DestinationRule, VirtualService; each only when the view calls for it."""
        children: list[JSON] = []
        for track in view.tracks:
            (deployment,) = self.render(DEPLOYMENT, view=view, track=track)
            _check_selector(deployment)
            children.append(deployment)
        children += self.render(SERVICE, view=view)
        if view.autoscaler is not None:
            children += self.render(AUTOSCALER, view=view, autoscaler=view.autoscaler)
        if view.disruption_budget is not None:
            children += self.render(DISRUPTION_BUDGET, view=view)
        if view.routing is not None:
            children += self.render(DESTINATION_RULE, view=view, routing=view.routing)
            children += self.render(VIRTUAL_SERVICE, view=view, routing=view.routing)
        managed = {child["kind"] for child in children} | MANAGED_KINDS
        for name in self.extras:
            for extra in self.render(name, view=view):
                if extra["kind"] in managed:
                    raise TemplateError(
                        f"renders a {extra['kind']} ({extra['metadata']['name']}), a kind llmdeploy already "
                        f"manages: override its template instead of adding a second one", name)
                children.append(extra)
        _check_unique(children)
        return children

    def render(self, name: str, **context: Any) -> list[JSON]:
        """The objects one template renders to, checked to be well-formed children."""
        try:
            text = self.templates[name].render(**context)
        except Exception as e:  # noqa: BLE001 - a template can fail in any way; report where
            raise TemplateError(f"{type(e).__name__}: {e}", name, _template_line(e, name)) from e
        try:
            documents = [d for d in yaml.load_all(text, Loader=_YAML_LOADER) if d is not None]
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" (line {mark.line + 1} of the rendered output)" if mark else ""
            raise TemplateError(f"renders invalid YAML{where}: {getattr(e, 'problem', e)}", name) from e
        namespace = context["view"].namespace
        return [_checked_child(doc, name, namespace) for doc in documents]


def _checked_child(doc: Any, template: str, namespace: str) -> JSON:
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
    child: JSON = without_nulls(doc)
    child["metadata"]["namespace"] = namespace
    return child


def _check_selector(deployment: JSON) -> None:
    """A Deployment whose pods do not carry its selector's labels is one Kubernetes rejects,
    and one a customised template can produce: refuse it here, naming the template."""
    try:
        selector = deployment["spec"]["selector"]["matchLabels"]
        pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
        ok = isinstance(selector, dict) and isinstance(pod_labels, dict) and selector.items() <= pod_labels.items()
    except (KeyError, TypeError):
        ok = False
    if not ok:
        raise TemplateError("the Deployment's pod labels must include its selector's labels", DEPLOYMENT)


def _check_unique(children: list[JSON]) -> None:
    seen: set[tuple[str, str, str]] = set()
    for child in children:
        key = (child["apiVersion"], child["kind"], child["metadata"]["name"])
        if key in seen:
            raise TemplateError(f"{key[1]} {key[2]} is rendered twice")
        seen.add(key)


def _template_line(error: BaseException, name: str) -> int | None:
    """The line of template `name` where rendering failed (Jinja rewrites tracebacks so that
    template frames carry the template's file name and line)."""
    line = getattr(error, "lineno", None)
    for frame in traceback.extract_tb(error.__traceback__):
        if frame.filename.endswith(name):
            line = frame.lineno
    return line if isinstance(line, int) else None
