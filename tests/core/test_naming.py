from __future__ import annotations

from hooks.api.spec import MAX_NAME_LENGTH
from hooks.core.naming import NAME_LABEL, TRACK_LABEL, TRACKS, Names


def test_names_follow_the_api_page() -> None:
    names = Names("llama3", "ml")
    assert names.deployment("stable") == "llama3-stable"
    assert names.deployment("canary") == "llama3-canary"
    assert names.service == names.routing == "llama3"
    assert names.autoscaler == names.disruption_budget == "llama3-stable"
    assert names.host == "llama3.ml.svc.cluster.local"


def test_selectors_are_fixed_subsets_of_pod_labels() -> None:
    names = Names("llama3", "ml", controller_uid="uid-1")
    for track in TRACKS:
        assert names.selector(track) == {NAME_LABEL: "llama3", TRACK_LABEL: track}
        assert names.selector(track).items() <= names.pod_labels(track).items()
        assert names.service_selector().items() <= names.pod_labels(track).items()
        assert "controller-uid" not in names.pod_labels(track)
        assert names.deployment_labels(track)["controller-uid"] == "uid-1"


def test_controller_uid_only_when_metacontroller_selects_by_it() -> None:
    assert "controller-uid" not in Names("a", "b").child_labels()
    assert Names("a", "b", "u").child_labels()["controller-uid"] == "u"


def test_longest_name_fits_label_values_and_dns_labels() -> None:
    names = Names("a" * MAX_NAME_LENGTH, "ml")
    for track in TRACKS:
        assert len(names.deployment(track)) <= 63
        assert all(len(v) <= 63 for v in names.pod_labels(track).values())
