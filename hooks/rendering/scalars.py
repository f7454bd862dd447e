"""Values into YAML without letting them change its structure.

Every `{{ expression }}` in a template passes through `yaml_scalar`: strings become
double-quoted YAML scalars with everything outside printable ASCII escaped, and mappings and
lists become flow collections built the same way. A resource field can therefore never open
a new key, document or block, whatever characters it holds.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\t": "\\t", "\r": "\\r"}
# YAML allows implicit keys up to 1024 characters; longer ones need the explicit "? " form.
_LONGEST_IMPLICIT_KEY = 512


def _quote(text: str) -> str:
    if text.isascii() and text.isprintable() and '"' not in text and "\\" not in text:
        return f'"{text}"'  # nothing to escape: the common case
    out = ['"']
    for char in text:
        code = ord(char)
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif 0x20 <= code < 0x7F:
            out.append(char)
        elif code <= 0xFFFF:  # \u: the escape YAML and JSON read alike
            out.append(f"\\u{code:04x}")
        else:
            out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


def _key(text: str) -> str:
    quoted = _quote(text)
    return quoted if len(quoted) <= _LONGEST_IMPLICIT_KEY else f"? {quoted}"


def yaml_scalar(value: Any) -> str:
    """`value` as one YAML flow node that reads back as exactly `value`."""
    if isinstance(value, str):
        return _quote(value)
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return repr(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_key(str(k))}: {yaml_scalar(v)}" for k, v in value.items()) + "}"
    if isinstance(value, Sequence):
        return "[" + ", ".join(yaml_scalar(v) for v in value) + "]"
    raise TypeError(f"cannot put a {type(value).__name__} into a template")


def without_nulls(value: Any) -> Any:
    """A copy without null mapping values: Metacontroller never sees a JSON null from us."""
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value if v is not None]
    return value
