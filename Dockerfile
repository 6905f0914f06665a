# The lab_assets image: the code server, webserver, daemon and every run/step pod on Kubernetes
# (k8s/README.md). Same pinned versions as the laptop install (constraints.txt).
#
#   docker build -t ghcr.io/YOUR_ORG/lab-assets:TAG .                     # torch from PyPI
#   docker build --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cu128 \
#                -t ghcr.io/YOUR_ORG/lab-assets:TAG .                     # a chosen CUDA build
#   docker build --build-arg TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu \
#                -t ghcr.io/YOUR_ORG/lab-assets:TAG-cpu .                 # small, CPU only
#
# TORCH_INDEX_URL empty: torch==<pin> comes from PyPI like everything else (on linux/amd64
# PyPI's torch wheel is itself a CUDA build that pulls nvidia-* wheels). Set, the pinned torch
# version is installed from that index first (e.g. 2.13.0+cu128); the main install then keeps
# it, because ==2.13.0 in constraints.txt matches any local build label (PEP 440), and
# installs its dependencies from PyPI.
FROM python:3.11-slim

ARG TORCH_INDEX_URL=""

# PYTHONFAULTHANDLER: a process that dies of a native crash (torch, numba, BLAS) or is sent
# SIGABRT while hung prints every thread's Python stack in the pod's log.
ENV PYTHONUNBUFFERED=1 \
    PYTHONFAULTHANDLER=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DAGSTER_HOME=/opt/dagster/dagster_home \
    LAB_PROJECT_DIR=/opt/lab \
    LAB_HOME=/data/lab \
    HOME=/home/lab \
    MPLCONFIGDIR=/tmp/matplotlib \
    NUMBA_CACHE_DIR=/tmp/numba-cache

# uid/gid 1000, as the pods' securityContext (runAsUser: 1000) expects.
RUN groupadd --gid 1000 lab \
    && useradd --uid 1000 --gid 1000 --home-dir /home/lab --create-home --shell /usr/sbin/nologin lab

WORKDIR /opt/lab

# Dependencies first (a layer that survives code edits): a stub package is enough to resolve
# and install everything pyproject.toml asks for, at the versions constraints.txt pins
# (dagster-postgres and psycopg2-binary among them: the instance's Postgres storage).
COPY constraints.txt pyproject.toml README.md ./
RUN set -eux; \
    if [ -n "$TORCH_INDEX_URL" ]; then \
        torch_version="$(sed -n 's/^torch==//p' constraints.txt)"; \
        test -n "$torch_version"; \
        pip install --no-deps --index-url "$TORCH_INDEX_URL" "torch==${torch_version}"; \
    fi; \
    mkdir -p lab_assets && touch lab_assets/__init__.py; \
    pip install -c constraints.txt .; \
    pip uninstall -y lab_assets; \
    rm -rf lab_assets lab_assets.egg-info build

# The project itself, installed into site-packages (one copy of the code: the source folder is
# removed so imports cannot pick up a second one from the working directory). /opt/lab stays
# the project folder (LAB_PROJECT_DIR): sweeps/, workspace.yaml, the laptop dagster.yaml.
# No git in the image: lineage records the commit as "unknown" here.
COPY lab_assets ./lab_assets
# What `lab cluster up` reads from k8s/base/, as package data (lab_assets/cluster/k8s_base/ links to it).
COPY k8s/base/dagster.yaml k8s/base/workspace.yaml ./k8s/base/
COPY sweeps ./sweeps
COPY workspace.yaml dagster.yaml ./
RUN pip install --no-deps -c constraints.txt . \
    && rm -rf build lab_assets lab_assets.egg-info k8s \
    && mkdir -p "$DAGSTER_HOME" "$LAB_HOME" \
    && chown -R 1000:1000 "$DAGSTER_HOME" "$LAB_HOME" /opt/lab

USER 1000:1000

# A broken install fails the build, not the first pod (and as the user the pods run as): the
# definitions, and the instance's Postgres storage with the driver its URL scheme names
# (k8s/base/dagster.yaml: postgresql+psycopg2; a plain postgresql:// would need psycopg 3).
RUN python -c "import lab_assets.defs.definitions"
RUN python -c "import psycopg2, sqlalchemy, lab_assets.runtime.postgres_storage; sqlalchemy.create_engine('postgresql+psycopg2://u@h/db')"

# The code server (what k8s/base/user-code.yaml and the Helm chart run). The webserver and
# daemon pods override the command with dagster-webserver / dagster-daemon run.
EXPOSE 4000
CMD ["dagster", "api", "grpc", "-m", "lab_assets.defs.definitions", "-h", "0.0.0.0", "-p", "4000"]
