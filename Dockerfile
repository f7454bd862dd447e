# The llmdeploy sync hook. Build where a container engine runs:
#   docker build -t ghcr.io/llmdeploy/llmdeploy-hook:0.1.0 .

FROM python:3.11-slim-bookworm AS build
WORKDIR /src
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
COPY pyproject.toml README.md ./
COPY hooks ./hooks
COPY templates ./templates
RUN python -m venv /opt/llmdeploy \
 && /opt/llmdeploy/bin/pip install --no-cache-dir . \
 && find /opt/llmdeploy -name '__pycache__' -type d -prune -exec rm -rf {} + \
 && rm -rf /opt/llmdeploy/bin/pip* /opt/llmdeploy/lib/python3.11/site-packages/pip

FROM python:3.11-slim-bookworm
LABEL org.opencontainers.image.title="llmdeploy-hook" \
      org.opencontainers.image.description="Metacontroller sync hook for LLMDeployment resources" \
      org.opencontainers.image.licenses="Apache-2.0"
ENV PATH=/opt/llmdeploy/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1
COPY --from=build /opt/llmdeploy /opt/llmdeploy
USER 10001:10001
EXPOSE 8080
ENTRYPOINT ["llmdeploy", "serve"]
CMD ["--host", "0.0.0.0", "--port", "8080"]
