"""`llmdeploy templates check`: errors with file and line, and kinds the controller lacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hooks.settings import Settings
from hooks.tools.templates import check_folder, plural

from tests.conftest import ROOT
from tests.test_customisation import CUSTOM

CLI = str(Path(sys.executable).parent / "llmdeploy")
BASE_CONTROLLER = ROOT / "metacontroller" / "base" / "compositecontroller.yaml"


@pytest.mark.parametrize(("kind", "resource"), [("NetworkPolicy", "networkpolicies"), ("Service", "services"),
                                                ("Ingress", "ingresses"), ("ServiceMonitor", "servicemonitors"),
                                                ("Gateway", "gateways")])
def test_plural(kind: str, resource: str) -> None:
    assert plural(kind) == resource


def test_shipped_templates_fit_the_shipped_controller() -> None:
    report = check_folder(Settings(), None, ROOT / "examples", BASE_CONTROLLER)
    assert report.errors == [] and report.warnings == [] and len(report.rendered) >= 3


def test_an_undeclared_kind_is_a_warning() -> None:
    report = check_folder(Settings(), CUSTOM, ROOT / "examples", BASE_CONTROLLER)
    assert report.errors == []
    assert any("NetworkPolicy (networking.k8s.io/v1)" in w and "networkpolicies" in w for w in report.warnings)


def test_cli_reports_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "hpa.yaml").write_text("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\n{{ view.oops }}\n")
    result = subprocess.run([CLI, "templates", "check", str(tmp_path), "--examples", str(ROOT / "examples"),
                             "--controller", str(BASE_CONTROLLER)], capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "ERROR hpa.yaml:3: UndefinedError" in result.stderr


def test_cli_passes_a_good_folder() -> None:
    result = subprocess.run([CLI, "templates", "check", str(CUSTOM), "--examples", str(ROOT / "examples"),
                             "--controller", str(BASE_CONTROLLER)], capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.count("OK ") >= 3
    assert "WARNING" in result.stderr and "networkpolicies" in result.stderr


def test_the_controller_can_come_from_a_pipe(tmp_path: Path) -> None:
    """As documented: --controller <(kubectl kustomize ...), which is /dev/fd/N, not a file."""
    command = (f"{CLI} templates check {CUSTOM} --examples {ROOT / 'examples'} "
               f"--controller <(kubectl kustomize {ROOT / 'metacontroller/overlays/custom-templates'})")
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "OK kinds against /dev/fd/" in result.stdout
    assert "does not list" not in result.stderr  # the overlay declares networkpolicies


def test_an_unreadable_controller_is_an_error(tmp_path: Path) -> None:
    result = subprocess.run([CLI, "templates", "check", "--controller", str(tmp_path / "nope.yaml")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "cannot read the CompositeController" in result.stderr


def test_outside_the_repository_it_says_what_it_checked(tmp_path: Path) -> None:
    result = subprocess.run([CLI, "templates", "check"], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert result.returncode == 0
    assert "OK the built-in check: every child template, every branch" in result.stdout
    assert "no example resources in examples (pass --examples)" in result.stderr
    assert "no CompositeController at metacontroller/base/compositecontroller.yaml" in result.stderr
