"""The CEL rules the CRD carries and the Python the hook runs for them (where CEL is slow) agree."""

from __future__ import annotations

from typing import Any

from hooks.api.spec import URI_RULE
from hooks.api.syntax import qualified_keys
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.kubernetes_rules import qualified_name

RULE = qualified_keys("labels", "label")
KEYS = ["app", "a", "A", "a.b/c", "example.com/team", "x" * 63, "x" * 64, "a" * 253 + "/b", "a" * 254 + "/b",
        "a/b/c", "/a", "a/", "-a", "a-", "a_b", "a b", "é", "UP.per/x", "a..b/c", "a.b-/c", "", "1", "_x"]


def test_cel_and_python_agree_on_known_keys() -> None:
    for key in KEYS:
        cel, native = RULE.cel_verdict({"labels": {key: "v"}}), RULE.evaluate({"labels": {key: "v"}})
        assert cel == native == qualified_name(key), key


@settings(max_examples=300, deadline=None)
@given(st.text(st.sampled_from("ab.-_/Z9é "), max_size=12))
def test_cel_and_python_agree_on_generated_keys(key: str) -> None:
    assert RULE.cel_verdict({"labels": {key: "v"}}) == RULE.evaluate({"labels": {key: "v"}}) == qualified_name(key)


def test_a_missing_map_holds() -> None:
    assert RULE.evaluate({}) is True and RULE.cel_verdict({}) is True


URIS = ["hf://org/name", "hf:///x", "hf://", "s3://bucket", "s3://bucket/path/x", "s3:///x", "gs://b/p",
        "pvc://claim/p", "pvc://Claim/p", "pvc://-c/p", "oci://image:tag", "models:/name/3", "https://x/y",
        "http://x", "hf://org/name\n", "hf://org/na me", "hf://org/na\tme", "hf://org/na\vme", "hf://org/na\x85me",
        "hf://org/na\u00a0me", "hf://org/na\u2028me", "hf://org/na\x1cme", "hf://org/na\u3000me", "hf://\u200a", "", "HF://org/name", "s3://b\r/p", "models:/", "oci://\f"]


def test_cel_and_python_agree_on_model_uris() -> None:
    spaces = [chr(code) for code in range(0x10000) if chr(code).isspace()]  # Python's, wider than Unicode's
    for uri in URIS + [f"hf://org/na{space}me" for space in spaces]:
        assert URI_RULE.cel_verdict({"uri": uri}) == URI_RULE.evaluate({"uri": uri}), repr(uri)
    values: list[Any] = [{}, {"uri": None}, {"uri": 3}, [], "hf://org/name"]
    for value in values:
        assert URI_RULE.cel_verdict(value) == URI_RULE.evaluate(value), value


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["hf://", "s3://", "gs://", "pvc://", "oci://", "models:/", "https://", "ftp://", ""]),
       st.text(st.sampled_from("ab/-Z9 \t\n\v\f\r\x1c\x85\u00a0\u2028\u3000\u200bé."), max_size=10))
def test_cel_and_python_agree_on_generated_uris(scheme: str, rest: str) -> None:
    assert URI_RULE.cel_verdict({"uri": scheme + rest}) == URI_RULE.evaluate({"uri": scheme + rest})
