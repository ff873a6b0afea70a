#!/usr/bin/env bash
# Installs the real ACP agents the tests run (test/reference-agents/package.json: Zed's Claude Code
# and Codex adapters, pinned, with their lockfile) into test/reference-agents/node_modules, when
# missing or older than the lockfile. They are test fixtures, never dependencies of the server;
# the tests run them offline against local fakes of their model providers' APIs.
set -euo pipefail
cd "$(dirname "$0")/../test/reference-agents"
stamp=node_modules/.package-lock.json
if [ -f "$stamp" ] && [ "$stamp" -nt package-lock.json ]; then exit 0; fi
echo "installing the reference agents (test/reference-agents)"
npm ci --no-audit --no-fund --loglevel=error
