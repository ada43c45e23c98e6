#!/usr/bin/env bash
# The web console end to end: Playwright (pinned, from PyPI, into .venv-test/; its wheel
# carries its own driver) drives Debian's Chromium (installed with apt-get when missing;
# no browser download) against the real debug binary. The suite is
# kafko/tests/ui/; screenshots and the first load's measured size go to
# target/ui-artifacts/ (KAFKO_UI_ARTIFACTS to change it).
set -euo pipefail
cd "$(dirname "$0")/../.."

PLAYWRIGHT_VERSION=1.65.2
PYTEST_VERSION=9.0.1
VENV=.venv-test

if [[ ! -x /usr/bin/chromium ]]; then
    echo "installing chromium (Debian package)"
    SUDO=(); [[ $(id -u) -eq 0 ]] || SUDO=(sudo)
    "${SUDO[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${SUDO[@]}" apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
[[ -x "$VENV/bin/python" ]] || python3 -m venv "$VENV"
if ! "$VENV/bin/python" -c "import importlib.metadata as m, sys; sys.exit(not (m.version('playwright') == '$PLAYWRIGHT_VERSION' and m.version('pytest') == '$PYTEST_VERSION'))" 2>/dev/null; then
    echo "installing playwright $PLAYWRIGHT_VERSION and pytest $PYTEST_VERSION into $VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        "playwright==$PLAYWRIGHT_VERSION" "pytest==$PYTEST_VERSION"
fi

cargo build --quiet -p kafko
export KAFKO_BIN="$PWD/target/debug/kafko"
export KAFKO_UI_ARTIFACTS="${KAFKO_UI_ARTIFACTS:-$PWD/target/ui-artifacts}"
export CHROMIUM=/usr/bin/chromium
# Playwright must not fetch a browser of its own.
export PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1
rm -rf "$KAFKO_UI_ARTIFACTS"
mkdir -p "$KAFKO_UI_ARTIFACTS"
"$VENV/bin/python" -m pytest -q -p no:cacheprovider kafko/tests/ui
echo "ui: first load $(sed -n 's/.*"bytes": \([0-9]*\).*/\1/p' "$KAFKO_UI_ARTIFACTS/first-load.json") bytes; screenshots in $KAFKO_UI_ARTIFACTS"
