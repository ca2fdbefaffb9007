# pyvolcano: one image for every component (the entrypoint is the `pyvolcano` command; the
# Deployments of `pyvolcano install` choose the component with their first argument).
#   docker build -t pyvolcano:0.1.0 .
FROM python:3.12-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    MPLCONFIGDIR=/tmp/matplotlib

WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install . && rm -rf /src

# A numeric user, so that the pods' runAsNonRoot check can verify it.
RUN useradd --system --uid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin pyvolcano
USER 10001:10001
WORKDIR /

ENTRYPOINT ["pyvolcano"]
CMD ["--help"]
