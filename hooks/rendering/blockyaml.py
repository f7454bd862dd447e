"""The YAML that templates render, read without PyYAML when it is that simple.

A rendered template is block mappings and sequences whose values each fit on their line: a
plain word or number written in the template, or what `yaml_scalar` writes for a value (a
double-quoted string, or a flow collection in JSON's syntax). `read` reads exactly that much
YAML, at a fraction of PyYAML's cost, and answers None for any other text, which PyYAML then
reads (`kubeyaml.load_all`). What it does read, it reads as PyYAML does: tests hold the two
to the same result on generated texts and on the edges where YAML and JSON part.
"""

from __future__ import annotations

import functools
import re
from typing import Any

import orjson
import yaml

from hooks.rendering.yamlloader import INT64, MAX_DEPTH, MAX_NODES, KubernetesLoader

MOST_CHARACTERS = MAX_NODES  # a value takes a character at least: no node count is needed
_LONGEST_KEY = 1000  # PyYAML allows 1024 characters from an implicit key's start to its colon
_LONGEST_WORD = 256  # a longer plain value is left to PyYAML (4096 words read are remembered)

# Printable ASCII and line feeds only: no tabs, no carriage returns, nothing YAML reads as a
# line break or refuses. A \u escape of a UTF-16 surrogate, which JSON pairs and YAML does not.
_UNREADABLE = re.compile(r"[^\n -~]|\\u[dD][89a-fA-F]")
_WORD = r"-?[A-Za-z0-9_/][A-Za-z0-9_./-]*"  # nothing YAML could read as an indicator or a comment
_PLAIN = re.compile(_WORD)
_KEY = re.compile(rf'(?:({_WORD})|("(?:[^"\\]|\\.)*")):(?: +|$)')
_FLOW_KEY = re.compile(r'"(?:[^"\\]|\\.)*" *:')  # in JSON text that orjson has read
_ESCAPE = re.compile(r"\\\\|\\U([0-9a-fA-F]{8})")  # an escaped backslash, or YAML's \U (not JSON's)
_MARKER = "-"  # a sequence entry, on a line of its own (`- x` becomes `-` and `x` two columns on)


class _Unread(Exception):
    """Not simple enough: PyYAML reads it."""


# A line with content, as (indent, key, text): the key of `key: text` (text may be empty),
# else None, for a marker (text `-`) or a value on a line of its own. A plain tuple: a
# rendered template has hundreds.
_Line = tuple[int, str | None, str]


def read(text: str) -> list[Any] | None:
    """The non-empty documents of `text` as JSON values, or None when the text is not made
    only of what this reader knows (then no promise is made about it: it may well be YAML)."""
    if len(text) > MOST_CHARACTERS or _UNREADABLE.search(text):
        return None
    try:
        return [document for lines in _documents(text) if (document := _document(lines)) is not None]
    except _Unread:
        return None


def _documents(text: str) -> list[list[_Line]]:
    """Each document's lines with content, a line `- x` split into a marker and `x`."""
    documents: list[list[_Line]] = [[]]
    for raw in text.split("\n"):
        line = raw.rstrip(" ")
        content = line.lstrip(" ")
        if not content or content[0] == "#":
            continue
        if line == "---":
            documents.append([])
            continue
        lines, indent = documents[-1], len(line) - len(content)
        markers = 0
        while content == _MARKER or content.startswith("- "):
            markers += 1
            if markers > MAX_DEPTH:
                raise _Unread  # too deep anyway; and each marker split off copies the rest
            lines.append((indent, None, _MARKER))
            rest = content[1:].lstrip(" ")
            if not rest:
                break
            indent, content = indent + len(content) - len(rest), rest
        else:
            match = _KEY.match(content)
            if match:
                lines.append((indent, _key(*match.groups()), content[match.end():]))
            else:
                lines.append((indent, None, content))
    return documents


def _document(lines: list[_Line]) -> Any:
    """Lines are taken in order, each by the collection it belongs to; a line that none can
    take (deeper than it may be, or not a key where one must be) ends them all, and leaves
    the document unread."""
    if not lines:
        return None
    value, end = _block(lines, 0, 1)
    if end != len(lines):
        raise _Unread
    return value


def _block(lines: list[_Line], at: int, depth: int) -> tuple[Any, int]:
    """The collection or value starting at line `at`, and the line after it."""
    _, key, text = lines[at]
    if key is not None:
        return _mapping(lines, at, depth)
    if text == _MARKER:
        return _sequence(lines, at, depth)
    return _value(text, depth), at + 1


def _sequence(lines: list[_Line], at: int, depth: int) -> tuple[list[Any], int]:
    _check_depth(depth + 1)  # of its items: it has one at least
    indent, items, end = lines[at][0], [], len(lines)
    while at < end and lines[at] == (indent, None, _MARKER):
        at += 1
        if at < end and lines[at][0] > indent:
            item, at = _block(lines, at, depth + 1)
        else:
            item = None
        items.append(item)
    return items, at


def _mapping(lines: list[_Line], at: int, depth: int) -> tuple[dict[str, Any], int]:
    _check_depth(depth + 1)  # of its values: it has one at least
    indent, mapping, end = lines[at][0], {}, len(lines)
    while at < end:
        line_indent, key, text = lines[at]
        if line_indent != indent:
            break
        if key is None:
            raise _Unread  # a value or an entry where a key must be
        at += 1
        value: Any = None
        if text:
            value = _value(text, depth + 1)
        elif at < end and lines[at][0] > indent:
            value, at = _block(lines, at, depth + 1)
        elif at < end and lines[at] == (indent, None, _MARKER):
            value, at = _sequence(lines, at, depth + 1)  # a sequence may sit at its key's column
        mapping[key] = value  # a key written twice: its first place, its last value
    return mapping, at


def _key(word: str | None, quoted: str | None) -> str:
    if word is not None:
        if len(word) > _LONGEST_KEY or _word(word) != word:
            raise _Unread  # `true: x`, `1: x`: keys that are not strings
        return word
    assert quoted is not None
    if len(quoted) > _LONGEST_KEY:
        raise _Unread
    key: str = _json(quoted)  # a JSON string literal: a string, or refused
    return key


def _check_depth(depth: int) -> None:
    if depth > MAX_DEPTH:
        raise _Unread


def _value(text: str, depth: int) -> Any:
    """A value on its line, at `depth` (which its collection checked)."""
    if text[0] in '"[{':
        value = _json(text)
        _check(value, depth)
        if len(text) > _LONGEST_KEY and any(len(key) > _LONGEST_KEY for key in _FLOW_KEY.findall(text)):
            raise _Unread  # a key too long for PyYAML, written out (escapes, spaces and all)
        return value
    if not _PLAIN.fullmatch(text) or len(text) > _LONGEST_WORD:
        raise _Unread
    return _word(text)


def _json(text: str) -> Any:
    if "\\U" in text:
        text = _ESCAPE.sub(_as_json_escape, text)
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        raise _Unread from None


def _as_json_escape(match: re.Match[str]) -> str:
    """YAML's `\\U0001f600` as JSON writes it: `\\ud83d\\ude00` (a character beyond 16 bits as
    the UTF-16 surrogates JSON pairs). Anything else stays, for orjson to refuse if wrong."""
    code = int(match[1], 16) if match[1] else 0
    if not 0x10000 <= code <= 0x10FFFF:
        return match[0]
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def _check(value: Any, depth: int) -> None:
    """JSON that YAML reads differently, or refuses: a float (`1e3` is a string to YAML 1.1),
    an integer beyond 64 bits, nesting past the limit."""
    _check_depth(depth)
    if isinstance(value, dict):
        for item in value.values():
            _check(item, depth + 1)
    elif isinstance(value, list):
        for item in value:
            _check(item, depth + 1)
    elif isinstance(value, float) or (isinstance(value, int) and not INT64[0] <= value <= INT64[1]):
        raise _Unread


_REFUSED = object()
_RESOLVER = KubernetesLoader("")  # only its implicit resolvers are asked: they read no state
_STR = "tag:yaml.org,2002:str"


@functools.lru_cache(maxsize=4096)
def _resolved(word: str) -> Any:
    """What PyYAML reads the word as: alone, a word is a document of one plain scalar."""
    if _RESOLVER.resolve(yaml.ScalarNode, word, (True, False)) == _STR:
        return word
    try:
        value = yaml.load(word, Loader=KubernetesLoader)  # noqa: S506 - a safe loader
    except yaml.YAMLError:
        return _REFUSED
    if isinstance(value, int) and not isinstance(value, bool) and not INT64[0] <= value <= INT64[1]:
        return _REFUSED
    return value


def _word(word: str) -> Any:
    """A plain word as YAML resolves it (`8000`, `true`, `0x1F`, `apps/v1`), remembered."""
    value = _resolved(word)
    if value is _REFUSED:
        raise _Unread
    return value
