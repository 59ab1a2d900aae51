#!/usr/bin/env bash
# Project-local Python virtualenv (.venv, git-ignored) holding the reference tool-service base
# class, trustgraph-base (DynamicToolService), for interop tests against a real Pulsar broker,
# and trustgraph-flow (the config service and the agent's tool loader, test/interop/trustgraph_config.py).
#
#   scripts/python-env.sh          create/update .venv (skips work when the pins are installed)
#
# Environment (optional): PYTHON (interpreter, default python3, needs >= 3.11: the base class
# uses asyncio.TaskGroup), VENV_DIR (default <repo>/.venv).
#
# Run a service with: .venv/bin/python test/interop/joke_service.py --pulsar-host pulsar://127.0.0.1:6650 ...
set -euo pipefail

# Newest trustgraph-base that installs here and whose
# trustgraph.base.dynamic_tool_service.DynamicToolService imports (checked 2.11.1).
TRUSTGRAPH_BASE_VERSION=2.11.1
# The Pulsar Python client it pulls in (manylinux wheels on PyPI); pinned for repeatability.
PULSAR_CLIENT_VERSION=3.13.0
# The reference agent's tool loader and the config service (test/interop/trustgraph_config.py),
# installed without its dependencies: those modules need only trustgraph-base's, and the rest
# (LLM clients, vector stores, scylla-driver, faiss, ...) are hundreds of MB the tests never load.
TRUSTGRAPH_FLOW_VERSION=2.11.1
# What examples/announce_service.py signs its announcements with (Ed25519 JWS, issue 29).
CRYPTOGRAPHY_VERSION=48.0.0

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV_DIR="${VENV_DIR:-$REPO_ROOT/.venv}"
PYTHON="${PYTHON:-python3}"

log() { echo "[python-env.sh] $*" >&2; }
die() { echo "[python-env.sh] ERROR: $*" >&2; exit 1; }

installed_ok() {
  [[ -x "$VENV_DIR/bin/python" ]] || return 1
  "$VENV_DIR/bin/python" - "$TRUSTGRAPH_BASE_VERSION" "$PULSAR_CLIENT_VERSION" "$TRUSTGRAPH_FLOW_VERSION" "$CRYPTOGRAPHY_VERSION" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import files, version
if version("trustgraph-base") != sys.argv[1] or version("pulsar-client") != sys.argv[2] or version("trustgraph-flow") != sys.argv[3]:
    sys.exit(1)
if version("cryptography") != sys.argv[4]:
    sys.exit(1)
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey  # noqa: F401
from trustgraph.base.dynamic_tool_service import DynamicToolService  # noqa: F401
from trustgraph.agent.react.service import Processor  # noqa: F401
import pulsar  # noqa: F401
# Imported by test/interop/trustgraph_config.py with its Cassandra store swapped out first.
if "trustgraph/config/service/service.py" not in {str(f) for f in files("trustgraph-flow") or []}:
    sys.exit(1)
EOF
}

if installed_ok; then
  log "$VENV_DIR already has trustgraph-base==$TRUSTGRAPH_BASE_VERSION, trustgraph-flow==$TRUSTGRAPH_FLOW_VERSION, pulsar-client==$PULSAR_CLIENT_VERSION and cryptography==$CRYPTOGRAPHY_VERSION"
  exit 0
fi

command -v "$PYTHON" >/dev/null || die "$PYTHON not found (set PYTHON to a Python >= 3.11)"
"$PYTHON" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)' \
  || die "$PYTHON is $("$PYTHON" -V 2>&1); trustgraph-base's DynamicToolService needs Python >= 3.11"

if [[ -x "$VENV_DIR/bin/python" ]] && ! "$VENV_DIR/bin/python" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  log "$VENV_DIR has an old interpreter; recreating it"
  rm -rf "$VENV_DIR"
fi
if [[ ! -x "$VENV_DIR/bin/python" ]]; then
  log "creating virtualenv $VENV_DIR with $("$PYTHON" -V 2>&1)"
  "$PYTHON" -m venv "$VENV_DIR"
fi

start=$(date +%s)
log "installing trustgraph-base==$TRUSTGRAPH_BASE_VERSION pulsar-client==$PULSAR_CLIENT_VERSION cryptography==$CRYPTOGRAPHY_VERSION ..."
"$VENV_DIR/bin/python" -m pip install --quiet --disable-pip-version-check \
  "trustgraph-base==$TRUSTGRAPH_BASE_VERSION" "pulsar-client==$PULSAR_CLIENT_VERSION" "cryptography==$CRYPTOGRAPHY_VERSION"
log "installing trustgraph-flow==$TRUSTGRAPH_FLOW_VERSION (without its dependencies) ..."
"$VENV_DIR/bin/python" -m pip install --quiet --disable-pip-version-check --no-deps "trustgraph-flow==$TRUSTGRAPH_FLOW_VERSION"

installed_ok || die "installed, but DynamicToolService, the agent's tool loader (or pulsar) does not import from $VENV_DIR"
log "ready in $(( $(date +%s) - start )) s: $VENV_DIR"
