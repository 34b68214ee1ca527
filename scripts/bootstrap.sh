#!/usr/bin/env bash
# Install everything sitemapcrawl and its tests need on a fresh Debian/Ubuntu machine:
# redis-server (for the distributed-mode tests) from the distribution's packages when it is
# missing, and a virtualenv in .venv with the pinned Python dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v redis-server >/dev/null 2>&1; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y -qq --no-install-recommends redis-server >/dev/null 2>&1 || {
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq --no-install-recommends redis-server
    }
fi

VENV=${VENV:-.venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -r requirements-dev.txt
