"""Logging set-up: one JSON object per line for log collectors, or readable lines in a
terminal. Called once by the CLI; the rest of the code only uses `logging.getLogger`.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from typing import Any

FIELDS = "fields"  # the `extra` key under which structured fields travel


class JSONFormatter(logging.Formatter):
    converter = time.gmtime  # type: ignore[assignment]  # typeshed models it as a method

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            **getattr(record, FIELDS, {}),
        }
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, default=str)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        fields = " ".join(f"{k}={v}" for k, v in getattr(record, FIELDS, {}).items())
        line = f"{self.formatTime(record, '%H:%M:%S')} {record.levelname:<7} {record.getMessage()}"
        line = f"{line}  {fields}" if fields else line
        return f"{line}\n{self.formatException(record.exc_info)}" if record.exc_info else line


def configure(level: str = "INFO", fmt: str = "auto") -> None:
    """Log to stderr at `level`, as JSON unless `fmt` is text (auto: text in a terminal)."""
    use_json = fmt == "json" or (fmt == "auto" and not sys.stderr.isatty())
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter() if use_json else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    logging.getLogger("uvicorn.access").disabled = True  # one line per sync comes from the hook
