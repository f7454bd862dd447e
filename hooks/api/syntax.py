"""Kubernetes' syntax rules for the values an LLMDeployment passes on to its children, so that
the CRD (and the hook, again) rejects what the API server would reject in a child: names,
label keys and values, annotation keys, percentages, int32 and int64 ranges, quantities.

Every pattern here is also valid RE2 (the CRD's regular expressions) and contains no quote,
so that it can sit in a CEL rule.
"""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, WithJsonSchema

from hooks.api.quantity import QUANTITY_PATTERN, is_quantity
from hooks.api.rules import Rule

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1

_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS_LABEL_PATTERN = rf"^{_LABEL}$"
DNS_SUBDOMAIN_PATTERN = rf"^{_LABEL}(\.{_LABEL})*$"
DNS_SUBDOMAIN_OR_EMPTY_PATTERN = rf"^({_LABEL}(\.{_LABEL})*)?$"
# A qualified name (label and annotation keys): an optional DNS-subdomain prefix and a name of
# at most 63 characters; the second pattern bounds the prefix to 253.
QUALIFIED_NAME_PATTERN = rf"^({_LABEL}(\.{_LABEL})*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?$"
PREFIX_LENGTH_PATTERN = r"^([^/]{1,253}/)?[^/]+$"
LABEL_VALUE_PATTERN = r"^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$"
ENV_NAME_PATTERN = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"
IMAGE_PATTERN = r"^[^\s]*$"  # empty: the default image
# An extended resource: a qualified name with a domain (not kubernetes.io's).
EXTENDED_RESOURCE_PATTERN = rf"^{_LABEL}(\.{_LABEL})+/[A-Za-z0-9]([-A-Za-z0-9_.]{{0,61}}[A-Za-z0-9])?$"
# Percentages without leading zeros, so that "0%" is the only way to write none.
PERCENT_PATTERN = r"^(0|[1-9][0-9]{0,8})%$"
PERCENT_UP_TO_100_PATTERN = r"^(100|[1-9]?[0-9])%$"

MAX_MAP_ENTRIES = 32  # labels, annotations, node selectors: well under the API server's 256 KiB
MAX_ANNOTATION_VALUE = 4096

Int32 = Annotated[int, Field(ge=0, le=INT32_MAX)]
DNSLabel = Annotated[str, Field(min_length=1, max_length=63, pattern=DNS_LABEL_PATTERN)]
DNSSubdomain = Annotated[str, Field(min_length=1, max_length=253, pattern=DNS_SUBDOMAIN_PATTERN)]
LabelKey = Annotated[str, Field(min_length=1, max_length=317, pattern=QUALIFIED_NAME_PATTERN)]
DNSSubdomainOrEmpty = Annotated[str, Field(max_length=253, pattern=DNS_SUBDOMAIN_OR_EMPTY_PATTERN)]
LabelValue = Annotated[str, Field(max_length=63, pattern=LABEL_VALUE_PATTERN)]
LabelMap = Annotated[dict[str, LabelValue], Field(max_length=MAX_MAP_ENTRIES)]
AnnotationMap = Annotated[dict[str, Annotated[str, Field(max_length=MAX_ANNOTATION_VALUE)]],
                          Field(max_length=MAX_MAP_ENTRIES)]


_QUALIFIED = re.compile(QUALIFIED_NAME_PATTERN)
_PREFIX_LENGTH = re.compile(PREFIX_LENGTH_PATTERN)


def qualified_keys(field: str, what: str) -> Rule:
    """Every key of map `field` is a qualified name (as label and annotation keys must be)."""
    def native(obj: Any) -> bool | None:
        keys = obj.get(field, {}) if isinstance(obj, dict) else None
        if not isinstance(keys, dict):
            return None
        return all(isinstance(k, str) and _QUALIFIED.search(k) and _PREFIX_LENGTH.search(k) for k in keys)

    return Rule(f"!has(self.{field}) || self.{field}.all(k, k.matches(r'{QUALIFIED_NAME_PATTERN}') "
                f"&& k.matches(r'{PREFIX_LENGTH_PATTERN}'))",
                f"{what} keys must be qualified names: an optional DNS prefix and '/', then at most 63 letters, "
                "digits, '-', '_' or '.', starting and ending with a letter or digit", f".{field}", native)


def _quantity(value: Any) -> Any:
    if not is_quantity(value):
        raise ValueError("must be a Kubernetes quantity such as 4, 500m or 32Gi")
    if isinstance(value, int) and value > INT64_MAX:
        raise ValueError(f"must be at most {INT64_MAX}")
    return value


def _int_or_percent(pattern: str, message: str) -> Any:
    compiled = re.compile(pattern)

    def check(value: Any) -> Any:
        whole = isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= INT32_MAX
        if not (whole or isinstance(value, str) and compiled.match(value)):
            raise ValueError(message)
        return value

    return check


Quantity = Annotated[
    str | int,
    BeforeValidator(_quantity),
    WithJsonSchema({"x-kubernetes-int-or-string": True, "pattern": QUANTITY_PATTERN}),
]
IntOrPercent = Annotated[
    int | str,
    BeforeValidator(_int_or_percent(PERCENT_PATTERN, "must be a whole number or a percentage such as 25%")),
    WithJsonSchema({"x-kubernetes-int-or-string": True, "pattern": PERCENT_PATTERN, "minimum": 0,
                    "maximum": INT32_MAX}),
]
IntOrPercentUpTo100 = Annotated[
    int | str,
    BeforeValidator(_int_or_percent(PERCENT_UP_TO_100_PATTERN, "must be a whole number or a percentage from 0% "
                                    "to 100%")),
    WithJsonSchema({"x-kubernetes-int-or-string": True, "pattern": PERCENT_UP_TO_100_PATTERN, "minimum": 0,
                    "maximum": INT32_MAX}),
]


def _auto_or_count(value: Any) -> Any:
    if value == "auto" or isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= INT32_MAX:
        return value
    raise ValueError("must be auto or a whole number of at least 1")


CanaryReplicas = Annotated[
    int | str,
    BeforeValidator(_auto_or_count),
    WithJsonSchema({"x-kubernetes-int-or-string": True, "pattern": "^auto$", "minimum": 1, "maximum": INT32_MAX}),
]
