"""The worked examples of docs/templates.md are real: each renders, and does what it says."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from hooks.edge.templates import load_templates
from hooks.settings import ChildSettings

from tests import metacontroller as mc
from tests.conftest import ROOT
from tests.manifests import builtin_errors
from tests.syncing import run_sync

DOC = ROOT / "docs" / "templates.md"
EXAMPLE = re.compile(r"<!-- example: (?P<name>[\w-]+) -->\n```yaml\n(?P<body>.*?)```", re.S)
FILE = re.compile(r"\{# (?P<file>[\w.-]+) #\}\n")


def examples() -> dict[str, dict[str, str]]:
    found: dict[str, dict[str, str]] = {}
    for match in EXAMPLE.finditer(DOC.read_text()):
        parts = FILE.split(match["body"])
        found[match["name"]] = {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}
    return found


def render(name: str, tmp_path: Path, spec: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    folder = tmp_path / name
    folder.mkdir()
    for file, text in examples()[name].items():
        (folder / file).write_text(text)
    templates = load_templates(folder, ChildSettings())
    spec = spec or {"model": {"uri": "hf://org/model"}}
    return list(run_sync(mc.request(mc.parent(spec)), templates).children)


def test_the_doc_has_one_example_per_common_need() -> None:
    assert set(examples()) == {"labels", "sidecar", "affinity", "extra-child"}


def test_labels_example(tmp_path: Path) -> None:
    (deployment,) = [c for c in render("labels", tmp_path) if c["kind"] == "Deployment"]
    metadata = deployment["spec"]["template"]["metadata"]
    assert metadata["labels"]["acme.example.com/team"] == "ml"
    assert metadata["annotations"]["acme.example.com/model"] == "hf://org/model"
    assert builtin_errors(deployment) == []


def test_sidecar_example(tmp_path: Path) -> None:
    (deployment,) = [c for c in render("sidecar", tmp_path) if c["kind"] == "Deployment"]
    containers = deployment["spec"]["template"]["spec"]["containers"]
    assert [c["name"] for c in containers] == ["engine", "token-counter"]
    assert containers[1]["args"] == ["--upstream=http://127.0.0.1:8000"]
    assert builtin_errors(deployment) == []


@pytest.mark.parametrize("own_affinity", [False, True])
def test_affinity_example(tmp_path: Path, own_affinity: bool) -> None:
    mine = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "pool", "operator": "In", "values": ["a"]}]}]}}}
    spec = {"model": {"uri": "hf://org/model"}, "pod": {"affinity": mine}} if own_affinity else None
    (deployment,) = [c for c in render("affinity", tmp_path, spec) if c["kind"] == "Deployment"]
    affinity = deployment["spec"]["template"]["spec"]["affinity"]
    if own_affinity:
        assert affinity == mine
    else:
        assert "preferredDuringSchedulingIgnoredDuringExecution" in affinity["nodeAffinity"]
    assert builtin_errors(deployment) == []


def test_extra_child_example(tmp_path: Path) -> None:
    children = render("extra-child", tmp_path)
    (monitor,) = [c for c in children if c["kind"] == "ServiceMonitor"]
    (service,) = [c for c in children if c["kind"] == "Service"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    assert monitor["metadata"]["labels"]["controller-uid"] == mc.PARENT_UID


CONTEXT_TABLE = re.compile(r"<!-- context: (?P<type>\w+) -->\n(?P<table>(?:\|.*\n)+)")
NAME = re.compile(r"`([a-z_]+)`")


def documented() -> dict[str, list[tuple[set[str], set[str]]]]:
    """Per view type documented in a table: (names in the first column, names in the second)."""
    tables: dict[str, list[tuple[set[str], set[str]]]] = {}
    for match in CONTEXT_TABLE.finditer(DOC.read_text()):
        rows = [r.strip("|").split("|", 1) for r in match["table"].splitlines()[2:]]
        tables[match["type"]] = [(set(NAME.findall(a)), set(NAME.findall(b))) for a, b in rows]
    return tables


def nested_record(annotation: Any) -> type | None:
    """The view dataclass inside X, X | None or tuple[X, ...], if any."""
    import dataclasses
    import typing

    if dataclasses.is_dataclass(annotation):
        return annotation  # type: ignore[return-value]
    for arg in typing.get_args(annotation):
        found = nested_record(arg)
        if found is not None:
            return found
    return None


def test_the_context_reference_lists_every_field_of_the_view() -> None:
    import dataclasses
    import typing

    from hooks.core import view

    tables = documented()
    assert set(tables) == {"View", "TrackView", "AutoscalerView", "DisruptionBudgetView", "RoutingView",
                           "HTTPRouteView", "IngressView", "AccessView"}
    seen: set[str] = set()

    def check(record: type, names: set[str], where: str) -> None:
        seen.add(record.__name__)
        hints = typing.get_type_hints(record, vars(view))
        assert names >= set(hints), f"{where} does not mention {sorted(set(hints) - names)}"

    for type_name, rows in tables.items():
        record = getattr(view, type_name)
        fields = {f.name for f in dataclasses.fields(record)}
        listed = set().union(*(first for first, _ in rows))
        assert listed == fields, f"{type_name}: documented {sorted(listed - fields)}, missing {sorted(fields - listed)}"
        seen.add(type_name)
        hints = typing.get_type_hints(record, vars(view))
        for first, second in rows:
            for field in first:
                inner = nested_record(hints[field])
                if inner is not None and inner.__name__ not in tables:
                    check(inner, second, f"{type_name}.{field}")
                    for name, hint in typing.get_type_hints(inner, vars(view)).items():
                        deeper = nested_record(hint)
                        if deeper is not None:
                            check(deeper, second, f"{type_name}.{field}.{name}")
    records = {name for name, obj in vars(view).items()
               if dataclasses.is_dataclass(obj) and obj.__module__ == view.__name__}
    assert seen == records
