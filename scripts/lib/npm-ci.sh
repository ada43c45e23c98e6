# Sourced by the checks: `npm_ci_if_changed DIR WHAT` runs `npm ci` in DIR only when its
# package-lock.json changed since the last install there (its hash in node_modules).
npm_ci_if_changed() {
    local dir=$1 what=$2 sum
    sum=$(sha256sum "$dir/package-lock.json" | cut -d' ' -f1)
    if [[ "$(cat "$dir/node_modules/.lock-sum" 2>/dev/null)" != "$sum" ]]; then
        echo "installing $what (npm ci in $dir)"
        (cd "$dir" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
        echo "$sum" >"$dir/node_modules/.lock-sum"
    fi
}
