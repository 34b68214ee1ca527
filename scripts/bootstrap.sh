#!/usr/bin/env bash
# Install everything sitemapcrawl and its tests need on a fresh Debian/Ubuntu machine:
# redis-server (for the distributed-mode tests) and chromium with a font (the HTML report
# is opened in headless Chromium) from the distribution's packages when they are missing,
# and a virtualenv in .venv with the pinned Python dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=()
command -v redis-server >/dev/null 2>&1 || PACKAGES+=(redis-server)
command -v chromium >/dev/null 2>&1 || PACKAGES+=(chromium fonts-dejavu-core)
if [ "${#PACKAGES[@]}" -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null 2>&1 || {
        $SUDO apt-get update -qq
        $SUDO apt-get install -y -qq --no-install-recommends "${PACKAGES[@]}"
    }
fi

VENV=${VENV:-.venv}
[ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check -r requirements-dev.txt
