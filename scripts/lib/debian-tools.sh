# Sourced by the checks: installs from Debian only the tools that are missing, each by its
# own package, so a tool that came from elsewhere (a Node.js not from Debian, say) is left
# as it is and never asked to be replaced.
#   install_missing_tools node:nodejs npm:npm kcat:kcat

install_missing_tools() {
    local want=() pair
    for pair in "$@"; do
        command -v "${pair%%:*}" >/dev/null || want+=("${pair#*:}")
    done
    if [[ ${#want[@]} -gt 0 ]]; then
        echo "installing ${want[*]} (Debian packages)"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${want[@]}" >/dev/null
    fi
}
