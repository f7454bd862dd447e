"""The fast reader of rendered YAML (`blockyaml.read`): it reads everything the shipped
templates render and everything `yaml_scalar` writes; whatever it reads, it reads as PyYAML
does (the reference of test_kubeyaml); and where YAML and JSON part, or its subset ends, it
answers None and leaves the text to PyYAML."""

from __future__ import annotations

import dataclasses
import json
import random
from typing import Any

import pytest
from hooks.canonical import dumps
from hooks.core.facts import Facts
from hooks.rendering import templateset
from hooks.rendering.blockyaml import read
from hooks.rendering.kubeyaml import load_all
from hooks.rendering.scalars import yaml_scalar
from hooks.rendering.yamlloader import MAX_DEPTH
from hooks.settings import ServerSettings
from hooks.web.hook import Hook
from hooks.web.metrics import Metrics
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests import golden_answer
from tests.golden import load
from tests.rendering.test_kubeyaml import EDGES, outcome, reference


def agrees(text: str) -> bool:
    """What the reader reads, PyYAML reads the same; and load_all, whichever reader it takes."""
    read_text = read(text)
    if read_text is not None and json.dumps(read_text) != outcome(reference, text):
        return False
    return bool(outcome(load_all, text) == outcome(reference, text))


def test_every_text_the_shipped_templates_render_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Over the recorded requests (every example, router and exposure, and the generated corpus
    with its odd characters), no rendered child falls back to PyYAML."""
    rendered: list[str] = []

    def recording(text: str) -> list[Any]:
        rendered.append(text)
        return load_all(text)

    monkeypatch.setattr(templateset, "load_all", recording)
    base = golden_answer.hook()
    hook = Hook(dataclasses.replace(base.settings, server=ServerSettings(cache_size=0)), base.renderer, Metrics())
    assert base.templates is not None
    hook.install(base.templates)
    for case in load("examples") + load("corpus"):
        hook.respond(dumps(case["request"]), Facts(golden_answer.newest_timestamp(case["request"])))
    assert len(rendered) > 1000
    for text in rendered:
        assert read(text) is not None, text
        assert json.dumps(read(text)) == outcome(reference, text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=20), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(json_values)
def test_every_value_yaml_scalar_writes_is_read_back(value: Any) -> None:
    assert read(f"a:\n  value: {yaml_scalar(value)}\n  list:\n    - {yaml_scalar(value)}\n") == [
        {"a": {"value": value, "list": [value]}}]


@pytest.mark.parametrize("text", EDGES)
def test_the_edges_of_yaml_are_read_as_pyyaml_reads_them_or_left_to_it(text: str) -> None:
    assert agrees(text)


def deep(depth: int) -> str:
    """Nested block mappings whose innermost value is at `depth` (the document is at 1)."""
    return "".join("  " * i + f"k{i}:\n" for i in range(depth - 2)) + "  " * (depth - 2) + "v: 1\n"


READ = [
    "a: 1\nb: x\nc:\nd: null\n",
    "a:\n  b:\n    c: 1\n  d: 2\ne: 3\n",
    "a:\n- 1\n- x\nb: 2\n",  # a sequence at its key's column
    "- - a\n  - b\n- - c\n",
    "-   a: 1\n    b: 2\n-\n- c\n",
    "items:\n  - name: a\n    args:\n    - x\n  -\n    name: b\n",
    '"quoted key": 1\n"with \\"escapes\\" \\/ \\n": 2\n"": empty\n',
    "a: 1\na: 2\nb: 3\na: 4\n",  # a key twice: its first place, its last value
    '"a": 1\na: 2\n',  # a quoted and a plain key that are one key
    "# comment\n\na: 1   \n  # indented comment\n\nb: 2\n",
    "---\n---\na: 1\n---\n# nothing\n---\nb: 2\n",
    "a: yes\nb: no\nc: on\nd: off\ne: true\nf: Null\ng: NULL\nh: y\n",
    "a: 0777\nb: -0x1F\nb2: -1\nc: 1_000\nd: 0o17\ne: 1.5\nf: 1e3\ng: 9223372036854775807\nh: 0b101\n",
    "kind: Deployment\napiVersion: apps/v1\npath: /dev/shm\nname: a-b_c.d\n",
    'a: {"b":1,"c" : [1, -0, true, false, null, "x"]}\nb: []\nc: {}\n',
    'a: {"k": 1, "k": 2, "j": 3}\n',  # duplicates in a flow mapping
    'a: "\\u00e9\\u2028"\nb: "\\U0001f600"\nc: "\\\\U0001f600"\nd: "\\b\\f\\t\\r"\n',
    deep(MAX_DEPTH), "a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1) + "\n",  # as deep as may be
    "  a: 1\n  b: 2\n",  # an indented document
    "word\n", '"a string"\n', "[1, 2]\n", "8000\n",  # a document that is one value
    'a: {"' + "\\U0001F600" * 98 + '": 1}\n', 'a: {"k"' + " " * 990 + ': 1}\n',  # long keys, yet short enough
    '"' + "k" * 990 + '": 1\n', "k" * 990 + ": 1\n",
]


@pytest.mark.parametrize("text", READ)
def test_the_simple_yaml_it_knows_is_read(text: str) -> None:
    assert read(text) is not None
    assert agrees(text)


UNREAD = [
    "a: [1e3]\n", "a: [1.5]\n", "a: {\"b\": 1E+3}\n",  # JSON numbers YAML 1.1 reads otherwise (or as floats)
    "a: [9223372036854775808]\n", "a: 9223372036854775808\n",  # beyond 64 bits: an error to PyYAML
    'a: "\\ud83d\\ude00"\n', 'a: "\\U0000d800"\n', 'a: "\\U00110000"\n',  # surrogates, beyond Unicode
    'a: "\\x41"\n', 'a: "\\e"\n', 'a: "\\N"\n',  # YAML's own escapes
    "a:\n\tb: 1\n", "a: 1\r\nb: 2\r\n", "a: caf\u00e9\n", "a: \"\u2028\"\n", "a: \"\x7f\"\n",
    "a: 'single'\n", "a: |\n  block\n", "a: >\n  folded\n", "a: b c\n", "a: b # comment\n", "a:b\n",
    "a: ~\n", "a: .inf\n", "a: -.5\n", "a: +1\n", "a: =\n", "a: @x\n", "a: `x`\n",
    "true: x\n", "1: x\n", "null: x\n", "~: x\n",  # keys that are not strings
    '"' + "k" * 1030 + '": 1\n', "k" * 1030 + ": 1\n", 'a: {"' + "k" * 1030 + '": 1}\n',  # long implicit keys
    "a: [1,\n  2]\n", "a: b\n  c\n", 'a: "x"\n  - y\n', "a: 1\n b: 2\n", "- a\n -b\n", "a:\n  - 1\n - 2\n",
    "a: {}\n  b: 1\n", "- a\n  b: 1\n", "a: 1\n- b\n", "a: 1\nb\n", "a:\n  b: 1\n  c\n",
    "--- a: 1\n", "%YAML 1.1\n---\na: 1\n", "a: 1\n...\n", "---x: 1\n",
    "a: &x 1\nb: *x\n", "a: !!str 1\n", "? a\n: b\n", "<<: {a: 1}\n", "a: 1\n<<: x\n",
    deep(MAX_DEPTH + 1), "a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n",  # deeper than may be
    "".join("  " * i + f"k{i}:\n" for i in range(MAX_DEPTH)),  # a null deeper than may be
    "- " * (MAX_DEPTH - 1) + "-\n", "- " * 100_000 + "a\n",
    "".join("  " * i + f"k{i}:\n" for i in range(MAX_DEPTH - 1)) + "  " * (MAX_DEPTH - 2) + "-\n",
    # Flow keys PyYAML finds too long: 1024 characters from the quote to the colon, as written.
    'a: {"' + "\\U0001F600" * 103 + '": 1}\n', 'a: {"k"' + " " * 1022 + ': 1}\n',
    'a: {"k": {"' + "x" * 1030 + '": 1}, "k": 1}\n',  # overwritten, yet read by PyYAML
    "a: 0x_\n", "a: 0x_\n  b\n", "k:\n    -0x_\n    - null\n", "a: 0x_\nb: [\n",  # no digits: not an integer
]


@pytest.mark.parametrize("text", UNREAD)
def test_what_it_does_not_know_is_left_to_pyyaml(text: str) -> None:
    assert read(text) is None
    assert agrees(text)


# What the generator writes: mostly what the reader knows, now and then what it must leave.
WORDS = ["x", "apps/v1", "yes", "No", "on", "OFF", "true", "null", "Null", "0777", "0x1F", "1_000", "0o17", "1.5",
         "1e3", "9223372036854775807", "8000", "0", "-1", "y", "n", "a-b", "_x", "/dev/shm", "-x"]
JSON_VALUES = ['"x"', '"a: b # c"', '"\\u00e9"', '"\\U0001f600"', "[]", "{}", '{"a": 1}', '{"a": {"b": [null, true]}}',
               '"\\\\U0001f600"', '["a", -2, {"b": "c"}]', '{"a": 1, "a": 2}']
KEYS = ["a", "b", "a", '"a"', '"quoted key"', "apps/v1", '"1"', '"\\u00e9"', "x.y/z", "-k"]
ODD = ["9223372036854775808", "[1, 2.5]", "[1e3]", '"\\ud83d"', "[9223372036854775808]", "~", "'x'", "b c",
       "x # y", "!!str x", "&a x", "|", ".inf", "true:", "1:"]
NOISE = [" ", ":", "-", "#", "\t", "{", "}", "[", "]", ",", "'", '"', "&", "*", "!", "|", ">", "\n", "\r", "?", "~"]


def generated(rng: random.Random) -> str:
    """Block YAML of one-line values, as templates render it, written in the ways YAML allows
    (indent widths, compact and nested sequences, quoted keys, comments, documents), sometimes
    with one character or line spoiled so that it is not."""
    lines: list[str] = []
    odd = 0.1 if rng.random() < 0.3 else 0.0  # how often a word, value or key is one it must leave

    def pick(usual: list[str]) -> str:
        return rng.choice(ODD if rng.random() < odd else usual)

    def value(indent: int, depth: int) -> None:
        kind = rng.random()
        if depth > 3 or kind < 0.2:
            lines[-1] += " " + pick(WORDS + JSON_VALUES)
        elif kind < 0.6:
            step = rng.randint(1, 4)
            for _ in range(rng.randint(1, 3)):
                lines.append(" " * (indent + step) + pick(KEYS) + ":")
                value(indent + step, depth + 1)
        else:
            step = rng.choice([0, 2, 4]) if lines[-1].endswith(":") else rng.randint(1, 4)
            for _ in range(rng.randint(1, 3)):
                if rng.random() < 0.4:  # a mapping starting on the entry's line
                    gap = rng.randint(1, 3)
                    lines.append(" " * (indent + step) + "-" + " " * gap + pick(KEYS) + ":")
                    value(indent + step + 1 + gap, depth + 1)
                    lines.append(" " * (indent + step + 1 + gap) + pick(KEYS) + ":")
                    value(indent + step + 1 + gap, depth + 1)
                else:
                    lines.append(" " * (indent + step) + "-")
                    value(indent + step, depth + 1)

    for document in range(rng.randint(1, 2)):
        if document or rng.random() < 0.3:
            lines.append("---")
        for _ in range(rng.randint(1, 4)):
            lines.append(pick(KEYS) + ":")
            value(0, 1)
            if rng.random() < 0.1:
                lines.append(" " * rng.randint(0, 4) + rng.choice(["# comment", ""]))
    if rng.random() < 0.2:
        at = rng.randrange(len(lines))
        line = lines[at]
        spoil = rng.random()
        if spoil < 0.4:
            cut = rng.randint(0, len(line))
            lines[at] = line[:cut] + rng.choice(NOISE) + line[cut:]
        elif spoil < 0.7:
            lines[at] = line[1:] if line.startswith(" ") and rng.random() < 0.5 else " " + line
        else:
            lines.insert(at, line)
    return "\n".join(lines) + "\n"


@settings(max_examples=600, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.randoms(use_true_random=False))
def test_generated_texts_are_read_as_pyyaml_reads_them_or_left_to_it(rng: random.Random) -> None:
    text = generated(rng)
    assert agrees(text), text


def test_the_generated_texts_are_mostly_read() -> None:
    """The property above is not met by reading nothing: most generated texts are read."""
    texts = [generated(random.Random(seed)) for seed in range(400)]
    read_texts = [text for text in texts if read(text) is not None]
    assert len(read_texts) > len(texts) // 3
    assert all(agrees(text) for text in read_texts)
