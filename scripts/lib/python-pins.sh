# Sourced by the checks: `install_pins VENV PIN...` makes VENV (a venv, created if
# missing) hold exactly these `name==version` pins, installing only when one differs.
# `pins_hold VENV PIN...` only tells whether they all hold (VENV created if missing).
pins_hold() {
    local venv=$1
    shift
    [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
    "$venv/bin/python" - "$@" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    if version(name) != want:
        sys.exit(1)
PY
}

install_pins() {
    local venv=$1
    shift
    if ! pins_hold "$venv" "$@"; then
        echo "installing $* into $venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"
    fi
}
