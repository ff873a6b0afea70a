#!/usr/bin/env bash
# Installs the server binaries the tests start themselves (a throwaway PostgreSQL cluster,
# redis-server, headless Chromium for the browser tests) when they are missing. Nothing is
# started here and no system service is used.
set -euo pipefail

missing=()
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
command -v git >/dev/null 2>&1 || missing+=(git)
command -v pgrep >/dev/null 2>&1 || missing+=(procps)
# The fault scenarios hold the embedded database's lock from another process: the sqlite3 shell.
command -v sqlite3 >/dev/null 2>&1 || missing+=(sqlite3)
# test/support/browser.ts drives this path; playwright-core never downloads a browser of its own.
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing test dependencies: ${missing[*]}"
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts a system cluster on install; the tests never use it.
"${sudo_cmd[@]}" service postgresql stop >/dev/null 2>&1 || true
"${sudo_cmd[@]}" service redis-server stop >/dev/null 2>&1 || true
