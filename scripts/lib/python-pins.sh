# Sourced by the checks: `install_pins VENV PIN...` makes VENV (a venv, created if
# missing) hold exactly these `name==version` pins, installing only when one differs.
install_pins() {
    local venv=$1
    shift
    [[ -x "$venv/bin/python" ]] || python3 -m venv "$venv"
    if ! "$venv/bin/python" - "$@" <<'PY' 2>/dev/null
import sys
from importlib.metadata import version
for pin in sys.argv[1:]:
    name, want = pin.split("==")
    if version(name) != want:
        sys.exit(1)
PY
    then
        echo "installing $* into $venv"
        "$venv/bin/pip" install --quiet --disable-pip-version-check "$@"
    fi
}
