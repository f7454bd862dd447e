"""llmdeploy's benchmark: `python -m bench [--short] [--json]` (make bench)."""
