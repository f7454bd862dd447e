"""The sandbox allows data access only: a catalogue of known escapes against the real view,
every object in the context against the methods that do things, and the same refusals in
`templates check`, at start-up and on reload."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import jinja2
import pytest
from hooks.core.exercise import EVERY_BRANCH
from hooks.core.view import View
from hooks.edge.templates import load_templates, read_sources
from hooks.errors import TemplateError
from hooks.rendering.sandbox import create_environment
from hooks.settings import ChildSettings, Settings, TemplateSettings
from hooks.tools.templates import check_folder
from hooks.web.reload import TemplateReloader
from hooks.workers.renderer import LocalRenderer

from tests.core.test_view import view_of
from tests.rendering.escapes import ESCAPES, ISSUE_PAYLOADS

REFUSED = (jinja2.exceptions.SecurityError, jinja2.UndefinedError, jinja2.TemplateSyntaxError,
           jinja2.TemplateNotFound, jinja2.TemplateRuntimeError, TypeError, AttributeError)
# Reprs of objects that are not plain data: a render that shows one has reached too far.
NOT_DATA = ("0x", "<function", "<class", "<bound", "<module", "<built-in", "<generator", "<jinja2", "Macro")


def environment() -> jinja2.Environment:
    return create_environment(read_sources(None).shipped, {})


def the_view() -> View:
    return view_of(EVERY_BRANCH, stable=1, canary=1)


@pytest.mark.parametrize(("name", "template"), [*ISSUE_PAYLOADS, *ESCAPES], ids=[n for n, _ in
                                                                                [*ISSUE_PAYLOADS, *ESCAPES]])
def test_no_known_escape_reaches_anything_but_data(name: str, template: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    view = the_view()
    before = repr(view)
    try:
        output = environment().from_string(template).render(view=view)
    except REFUSED:
        output = None
    assert repr(view) == before, "the template changed the view"
    assert list(tmp_path.iterdir()) == [] and not Path("/tmp/llmdeploy-sandbox-escaped").exists()
    if output is not None:
        assert not any(marker in output for marker in NOT_DATA), output[:200]


def test_a_filter_block_cannot_unquote_a_value() -> None:
    with pytest.raises(jinja2.TemplateSyntaxError, match="filter"):
        environment().from_string("key: {% filter replace('\"', '') %}{{ view.name }}{% endfilter %}")


def objects(value: Any, path: str) -> list[tuple[str, Any]]:
    """An object of every type reachable in the view, with an expression that reaches it."""
    found = [(path, value)]
    if dataclasses.is_dataclass(value):
        for field in dataclasses.fields(value):
            found += objects(getattr(value, field.name), f"{path}.{field.name}")
    elif isinstance(value, dict):
        for key, item in list(value.items())[:2]:
            found += objects(item, f"{path}[{key!r}]")
    elif isinstance(value, tuple):
        for index, item in enumerate(value[:2]):
            found += objects(item, f"{path}[{index}]")
    return found


# Methods and internals a context object's Python type has that parse, copy, construct, or
# reach the interpreter; none may be reached.
FORBIDDEN = ("__class__", "__dict__", "__init__", "__reduce__", "__getattribute__", "__setattr__", "mro",
             "parse_raw", "parse_file", "model_copy", "model_construct", "copy", "fromkeys", "update", "pop",
             "setdefault", "format", "format_map", "join", "replace", "encode", "zfill", "center", "ljust",
             "to_bytes", "from_bytes", "conjugate", "index", "count")
JINJA_OBJECTS = ["range", "dict", "namespace", "namespace()", "self", "loop", "caller", "varargs", "kwargs"]


def test_every_object_in_the_context_gives_data_only() -> None:
    view = the_view()
    env = environment()
    by_type: dict[type, tuple[str, Any]] = {}
    for expression, value in objects(view, "view"):
        by_type.setdefault(type(value), (expression, value))
    assert {View, str, int, type(None), dict, tuple} <= set(by_type) and len(by_type) > 20
    reachable = list(by_type.values()) + [(name, None) for name in JINJA_OBJECTS]
    checked = 0
    for expression, value in reachable:
        for attribute in FORBIDDEN:
            if dataclasses.is_dataclass(value) and attribute in {f.name for f in dataclasses.fields(value)}:
                continue  # a field is data
            if isinstance(value, str) and attribute == "count":
                continue  # reading: allowed
            for form in (f"{expression}.{attribute}", f"{expression}[{attribute!r}]",
                         f"{expression}|attr({attribute!r})"):
                source = ("{% macro m() %}{{ " + form + " }}{% endmacro %}{% for _ in [1] %}"
                          "{% call m(1, a=1) %}x{% endcall %}{% endfor %}") if expression in JINJA_OBJECTS[4:] \
                    else "{% for _ in [1] %}{{ " + form + " }}{% endfor %}"
                with pytest.raises(REFUSED):
                    env.from_string(source).render(view=view)
                checked += 1
    assert checked > 2_500


def test_data_stays_readable() -> None:
    env = environment()
    source = ("{{ view.tracks[0].deployment }} {{ view.labels.items()|list|length > 0 }} "
              "{{ view.labels.get('app.kubernetes.io/name') }} {{ view.name.upper() }} "
              "{{ dict(view.labels, a='b')['a'] }} {% set ns = namespace(n=1) %}{% set ns.n = 2 %}{{ ns.n }} "
              "{% for t in view.tracks %}{{ loop.index }}{% endfor %} {{ range(3)|list }} {{ 2 ** 10 }} "
              "{{ 'ab' * 3 }}")
    assert env.from_string(source).render(view=the_view()) == (
        '"llama3-stable" true "llmdeploy" "LLAMA3" "b" 2 12 [0, 1, 2] 1024 "ababab"')


@pytest.mark.parametrize("bomb", ["{{ 'x' * 3 * 10**9 }}", "{{ [1] * 10**8 }}", "{{ 2 ** 100000 }}",
                                  "{{ '%1000000000s' % 'x' }}"])
def test_operators_that_build_huge_values_are_refused(bomb: str) -> None:
    with pytest.raises(jinja2.exceptions.SecurityError):
        environment().from_string(bomb).render(view=the_view())


SAMPLE = [ISSUE_PAYLOADS[0], *(entry for entry in ESCAPES if entry[0] in (
    "unbound_dict_update", "format_stored_ref", "attr_filter_chain", "finalize_bypass_filter_unquote",
    "cycler_init_globals_os"))]


def with_escape(folder: Path, template: str) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\ndata: {v: " + template
                                    + "}\n")
    return folder


@pytest.mark.parametrize(("name", "template"), SAMPLE, ids=[n for n, _ in SAMPLE])
def test_templates_check_start_up_and_reload_all_refuse(tmp_path: Path, name: str, template: str) -> None:
    folder = with_escape(tmp_path / "templates", template)
    report = check_folder(Settings(), folder)
    assert report.errors and "cm.yaml" in report.errors[0]
    with pytest.raises(TemplateError):
        load_templates(folder, ChildSettings())  # what start-up does before serving
    good = tmp_path / "good"
    good.mkdir()
    installed: list[Any] = []
    reloader = TemplateReloader(TemplateSettings(folder=good), LocalRenderer(ChildSettings()), installed.append)
    with_escape(good, template)
    assert reloader.poll() is False and installed == []


def test_nothing_a_render_sets_outlives_it(tmp_path: Path) -> None:
    from tests import metacontroller as mc
    from tests.rendering.escapes import PERSISTENCE
    from tests.syncing import run_sync

    folder = tmp_path / "templates"
    folder.mkdir()
    for name, text in PERSISTENCE.items():
        (folder / name).write_text(text)
    templates = load_templates(folder, ChildSettings())
    for name in ("alpha", "beta", "alpha"):
        children = run_sync(mc.request(mc.parent({"model": {"uri": "hf://o/m"}}, name=name)), templates).children
        (state,) = [c for c in children if c["kind"] == "ConfigMap"]
        assert state["data"] == {"renders": 1, "previous": ""}, state["data"]


@pytest.mark.parametrize("template", ["{{ range|string }}", "{{ range|upper }}", "{{ dict|join }}",
                                      "{% macro m() %}{% endmacro %}{{ m|string }}", "{{ namespace|trim }}"])
def test_filters_take_data_only(template: str) -> None:
    with pytest.raises(jinja2.exceptions.SecurityError, match="takes data"):
        environment().from_string(template).render(view=the_view())
