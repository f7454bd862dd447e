"""Templates to objects: the sandboxed Jinja environment, the YAML-safe scalars every
expression is written as, and a loaded template set. The only package that imports Jinja;
it knows nothing of LLMDeployments (the core decides what to render with which context)."""
