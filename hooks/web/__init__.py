"""The web layer: FastAPI routes, admission and limits, the desired-state cache, metrics,
logs, template reloads and the uvicorn server. The only package that imports FastAPI or
uvicorn."""
