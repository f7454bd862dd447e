"""Template sets: loaded from the shipped folder with overrides on top, sandboxed, strict, and
loud about broken templates (file and line)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hooks.core.children import CHILD_TEMPLATES
from hooks.edge.templates import load_templates, read_folder, read_sources
from hooks.errors import TemplateError
from hooks.rendering.templateset import (
    TemplateSet,
    TemplateSources,
    shipped_templates_dir,
)
from hooks.settings import ChildSettings


def copy_templates(tmp_path: Path) -> Path:
    """An override folder holding a copy of every shipped template."""
    target = tmp_path / "templates"
    shutil.copytree(shipped_templates_dir(), target)
    return target


def test_templates_are_sandboxed(tmp_path: Path) -> None:
    folder = copy_templates(tmp_path)
    (folder / "service.yaml").write_text(
        "{{ view.__class__.__mro__[1].__subclasses__() }}\napiVersion: v1\nkind: Service\n")
    with pytest.raises(TemplateError, match="service.yaml:1: SecurityError"):
        load_templates(folder, ChildSettings())


def test_templates_cannot_read_files(tmp_path: Path) -> None:
    folder = copy_templates(tmp_path)
    (tmp_path / "secret.txt").write_text("s3cr3t")
    (folder / "service.yaml").write_text('{% include "../secret.txt" %}')
    with pytest.raises(TemplateError, match="service.yaml"):
        load_templates(folder, ChildSettings())


def test_undefined_variables_are_errors_with_file_and_line(tmp_path: Path) -> None:
    folder = copy_templates(tmp_path)
    text = (folder / "pdb.yaml").read_text().replace("{{ view.disruption_budget.selector }}", "{{ view.nmes.x }}")
    (folder / "pdb.yaml").write_text(text)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if "nmes" in t)
    with pytest.raises(TemplateError, match=f"pdb.yaml:{line}: UndefinedError"):
        load_templates(folder, ChildSettings())


def test_syntax_errors_name_file_and_line(tmp_path: Path) -> None:
    folder = copy_templates(tmp_path)
    (folder / "hpa.yaml").write_text("apiVersion: autoscaling/v2\n{% if %}\n")
    with pytest.raises(TemplateError, match="hpa.yaml:2: "):
        TemplateSet.compile(read_sources(folder), CHILD_TEMPLATES)


def test_missing_template_is_reported(tmp_path: Path) -> None:
    incomplete = copy_templates(tmp_path)
    (incomplete / "virtualservice.yaml").unlink()
    shipped = read_folder(incomplete)
    with pytest.raises(TemplateError, match="virtualservice.yaml: template is missing"):
        TemplateSet.compile(TemplateSources(shipped), CHILD_TEMPLATES)
    with pytest.raises(TemplateError, match="does not exist"):
        read_sources(tmp_path / "absent")


def test_jinja_never_reads_files_beyond_the_snapshot(tmp_path: Path) -> None:
    folder = tmp_path / "templates"
    folder.mkdir()
    (tmp_path / "secret.yaml").write_text("apiVersion: v1\nkind: Secret\nmetadata: {name: s}\n")
    (folder / "cm.yaml").write_text('{% include "../secret.yaml" %}')
    with pytest.raises(TemplateError, match="cm.yaml"):
        load_templates(folder, ChildSettings())
    sources = read_sources(folder)
    assert set(sources.overrides) == {"cm.yaml"} and sources.digest() != read_sources(None).digest()


@pytest.mark.parametrize(("text", "message"), [
    ("- just\n- a list\n", "must be a mapping"),
    ("apiVersion: v1\nkind: Service\n", "needs apiVersion, kind and metadata.name"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: x, namespace: other}\n", "must stay in the LLMDeployment"),
    ("apiVersion: v1\nkind: Service\nmetadata: {name: x}\nspec: [unclosed\n", "invalid YAML"),
])
def test_rendered_documents_must_be_well_formed_children(tmp_path: Path, text: str, message: str) -> None:
    folder = copy_templates(tmp_path)
    (folder / "service.yaml").write_text(text)
    with pytest.raises(TemplateError, match=message):
        load_templates(folder, ChildSettings())


def test_a_child_rendered_twice_is_an_error(tmp_path: Path) -> None:
    folder = copy_templates(tmp_path)
    (folder / "pdb.yaml").write_text((folder / "service.yaml").read_text())
    with pytest.raises(TemplateError, match="Service selfcheck is rendered twice"):
        load_templates(folder, ChildSettings())


def test_a_block_the_extended_template_lacks_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "service.yaml").write_text(
        '{% extends "llmdeploy/service.yaml" %}\n\n{% block labels %}{{ dict(view.labels, team="a") }}{% endblock %}\n')
    with pytest.raises(TemplateError, match=r"service.yaml:3: block 'labels' is not in llmdeploy/service.yaml.*metadata"):
        load_templates(folder, ChildSettings())
    (folder / "service.yaml").write_text('{% extends "llmdeploy/service.yaml" %}{% block metadata %}'
                                         '{% with name=view.service.name, labels=dict(view.labels, team="a") %}'
                                         '{% include "_metadata.yaml" %}{% endwith %}{% endblock %}')
    assert load_templates(folder, ChildSettings())


@pytest.mark.parametrize(("body", "message"), [
    ("data: {big: 100000000000000000000}", "does not fit in 64 bits"),
    ("data: {x: " + "[" * 100 + "]" * 100 + "}", "levels deep"),
    ("data: {a: &a [x, x, x, x, x, x, x, x, x, x]\n  , b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
     "  , c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n  , d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
     "  , e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n  , f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n"
     "  , g: [*f, *f, *f, *f, *f, *f, *f, *f, *f, *f]}", "after expanding aliases"),
])
def test_output_kubernetes_cannot_take_is_a_template_error(tmp_path: Path, body: str, message: str) -> None:
    folder = tmp_path / "templates"
    folder.mkdir()
    (folder / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: {{ view.name }}}\n" + body + "\n")
    with pytest.raises(TemplateError, match=f"cm.yaml: renders invalid YAML.*{message}"):
        load_templates(folder, ChildSettings())
