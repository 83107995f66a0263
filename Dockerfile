# aiolbc controller image. Build from the repository root:
#   docker build -t aiolbc:0.1.0 .
# Two stages: the builder installs the package (runtime dependencies only, no test or demo extra,
# so `aiolbc demo` in the image only says how to install it) into a virtualenv; the final stage
# gets that virtualenv and nothing else, and runs as a numeric non-root user so that
# `runAsNonRoot` can be verified by the kubelet.
#
# The base is pinned by its full version tag. To pin the digest as well, resolve it once with
# `docker buildx imagetools inspect python:3.11.13-slim-bookworm` and append `@sha256:...` to
# both FROM lines (the builder and the final stage must use the same Python).

FROM python:3.11.13-slim-bookworm AS builder

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1

RUN python -m venv /opt/aiolbc

WORKDIR /src
COPY pyproject.toml README.md ./
COPY runtime ./runtime
COPY controller ./controller

# A regular (non-editable) install, byte-compiled now because the root filesystem is read-only
# at runtime; pip itself is not needed there.
RUN /opt/aiolbc/bin/pip install . \
 && /opt/aiolbc/bin/python -m compileall -q /opt/aiolbc/lib \
 && /opt/aiolbc/bin/python -m pip uninstall --yes pip

FROM python:3.11.13-slim-bookworm

COPY --from=builder /opt/aiolbc /opt/aiolbc

ENV PATH=/opt/aiolbc/bin:$PATH \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1

# 65532: the conventional "nonroot" UID; no home directory or shell is needed.
USER 65532:65532
WORKDIR /opt/aiolbc

# The ports the installation uses (manifests/, charts/aiolbc): metrics over HTTPS (8443, the
# default there) or plain HTTP (8080, --metrics-secure=false), the admission webhooks (9443) and
# the health probes (61779).
EXPOSE 8443 8080 9443 61779

# Exec form: the controller is PID 1 and receives SIGTERM directly, without a shell.
ENTRYPOINT ["/opt/aiolbc/bin/aiolbc"]
CMD ["run"]
