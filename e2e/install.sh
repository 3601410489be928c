#!/usr/bin/env bash
# Installs what `make e2e` needs, idempotently and without prompts (CI=true, no stdin):
# Debian's chromium (playwright-core drives it), libkrb5-dev and ripgrep (code-server's native
# modules and its search), then code-server 4.100.3 + playwright-core from npm.
set -euo pipefail
cd "$(dirname "$0")"

debs=(chromium libkrb5-dev ripgrep)
missing=()
for deb in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$deb" 2>/dev/null | grep -q "install ok installed" || missing+=("$deb")
done
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then sudo=""; elif sudo -n true 2>/dev/null; then sudo="sudo -n"; else
    echo "e2e: need the Debian packages ${missing[*]} (apt-get install -y ${missing[*]}) and cannot become root" >&2
    exit 1
  fi
  echo "e2e: installing ${missing[*]}"
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" </dev/null
fi

# @vscode/ripgrep (inside code-server) downloads its binary from GitHub at install time, which
# this machine cannot reach: pre-seed its download cache with Debian's rg.
rg_cache="${TMPDIR:-/tmp}/vscode-ripgrep-cache-1.15.11"
rg_tar="$rg_cache/ripgrep-v13.0.0-10-x86_64-unknown-linux-musl.tar.gz"
if [ ! -s "$rg_tar" ]; then
  mkdir -p "$rg_cache"
  tmp=$(mktemp -d)
  cp "$(command -v rg)" "$tmp/rg"
  tar czf "$rg_tar" -C "$tmp" rg
  rm -rf "$tmp"
fi

if [ ! -x node_modules/.bin/code-server ] || [ ! -d node_modules/playwright-core ] || [ package-lock.json -nt node_modules/.package-lock.json ] || ! node_modules/.bin/code-server --version >/dev/null 2>&1; then
  echo "e2e: installing code-server and playwright-core (npm ci)"
  # unsafe_perm: code-server's postinstall refuses to run as root without it;
  # yes: its native modules run `npx node-gyp`, which would otherwise prompt.
  env npm_config_unsafe_perm=true npm_config_yes=true npm ci --no-audit --no-fund </dev/null
fi
node_modules/.bin/code-server --version | head -1
