"""`llmdeploy templates check`: errors with file and line, and kinds the controller lacks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from hooks.api.validation import validate_resource
from hooks.settings import Settings
from hooks.tools.templates import check_folder, plural

from tests.conftest import EXAMPLES, ROOT
from tests.test_customisation import CUSTOM
from tests.test_install import INSTALLS, build, hook_settings

CLI = str(Path(sys.executable).parent / "llmdeploy")
VARIANTS = [i for i in INSTALLS if "overlays" not in i]


def built(install: str, into: Path) -> Path:
    """The install as `kubectl kustomize` prints it, in a file."""
    path = into / "install.yaml"
    path.write_text(yaml.safe_dump_all(build(install)))
    return path


@pytest.mark.parametrize(("kind", "resource"), [("NetworkPolicy", "networkpolicies"), ("Service", "services"),
                                                ("Ingress", "ingresses"), ("ServiceMonitor", "servicemonitors"),
                                                ("Gateway", "gateways")])
def test_plural(kind: str, resource: str) -> None:
    assert plural(kind) == resource


@pytest.mark.parametrize("install", VARIANTS)
def test_shipped_templates_fit_every_install(install: str, tmp_path: Path) -> None:
    """Each example renders with the routers the install declares, or is skipped when it asks for another."""
    report = check_folder(hook_settings(build(install)), None, ROOT / "examples", built(install, tmp_path))
    assert report.errors == [] and report.warnings == []
    rendered = {line.split(":")[0] for line in report.rendered if line.startswith(str(ROOT / "examples"))}
    skipped = {line.split(":")[0] for line in report.skipped}
    routers = {str(p): validate_resource("x", yaml.safe_load(p.read_text())["spec"]).traffic.router_in_use
               for p in EXAMPLES}
    assert rendered == {p for p, r in routers.items() if r in INSTALLS[install] | {"none"}}
    assert skipped == set(routers) - rendered
    assert all("is not installed with this hook" in line for line in report.skipped)


def test_without_a_controller_kinds_are_not_compared() -> None:
    report = check_folder(Settings(), None, ROOT / "examples", None)
    assert report.errors == [] and report.warnings == ["no CompositeController given: kinds not compared "
                                                       "(pass --controller <(kubectl kustomize your-install))"]


def test_an_undeclared_kind_is_a_warning(tmp_path: Path) -> None:
    report = check_folder(Settings(), CUSTOM, ROOT / "examples", built("metacontroller", tmp_path))
    assert report.errors == []
    assert any("ConfigMap (v1)" in w and "configmaps" in w for w in report.warnings)


def test_cli_reports_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "hpa.yaml").write_text("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\n{{ view.oops }}\n")
    result = subprocess.run([CLI, "templates", "check", str(tmp_path), "--examples", str(ROOT / "examples"),
                             "--controller", str(built("metacontroller", tmp_path))],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "ERROR hpa.yaml:3: UndefinedError" in result.stderr


def test_cli_passes_a_good_folder(tmp_path: Path) -> None:
    result = subprocess.run([CLI, "templates", "check", str(CUSTOM), "--examples", str(ROOT / "examples"),
                             "--controller", str(built("metacontroller", tmp_path))],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0 and result.stdout.count("OK ") >= 3
    assert "SKIP " in result.stdout and "router linkerd is not installed" in result.stdout
    assert "WARNING" in result.stderr and "configmaps" in result.stderr


def test_the_controller_can_come_from_a_pipe(tmp_path: Path) -> None:
    """As documented: --controller <(kubectl kustomize ...), which is /dev/fd/N, not a file."""
    command = (f"{CLI} templates check {CUSTOM} --examples {ROOT / 'examples'} "
               f"--controller <(kubectl kustomize {ROOT / 'metacontroller/overlays/custom-templates'})")
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert "OK kinds against /dev/fd/" in result.stdout
    assert "does not list" not in result.stderr  # the overlay declares configmaps


def test_an_unreadable_controller_is_an_error(tmp_path: Path) -> None:
    result = subprocess.run([CLI, "templates", "check", "--controller", str(tmp_path / "nope.yaml")],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 1 and "cannot read the CompositeController" in result.stderr


def test_outside_the_repository_it_says_what_it_checked(tmp_path: Path) -> None:
    result = subprocess.run([CLI, "templates", "check"], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert result.returncode == 0
    assert "OK the built-in check: every child template, every branch" in result.stdout
    assert "no example resources in examples (pass --examples)" in result.stderr
    assert "no CompositeController given: kinds not compared" in result.stderr
