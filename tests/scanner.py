"""checkov, the Kubernetes security scanner platform teams run, over objects we render or
install. Installed by `make test-tools` into .venv-checkov (it pins many packages of its own);
without it the tests that need it skip, and fail under CI=true."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from tests.prerequisites import venv_tool


def findings(objects: Sequence[dict[str, Any]]) -> set[tuple[str, str]]:
    """(check id, resource) of every failed check over `objects`, scanned as one manifest
    stream, offline (--skip-download: nothing is fetched from the vendor's API)."""
    with tempfile.TemporaryDirectory() as folder:
        manifest = Path(folder) / "objects.yaml"
        manifest.write_text(yaml.safe_dump_all(list(objects), sort_keys=False))
        result = subprocess.run([venv_tool("checkov"), "--framework", "kubernetes", "-f", str(manifest), "--quiet",
                                 "--skip-download", "--output", "json"], capture_output=True, text=True, timeout=300,
                                check=False, env={**os.environ, "BC_SKIP_MAPPING": "TRUE"})
    if result.returncode not in (0, 1):  # 1: findings
        raise RuntimeError(f"checkov failed ({result.returncode}): {result.stderr[-2000:]}")
    reports = json.loads(result.stdout)
    reports = reports if isinstance(reports, list) else [reports]
    return {(check["check_id"], check["resource"]) for report in reports if "results" in report
            for check in report["results"].get("failed_checks", [])}
