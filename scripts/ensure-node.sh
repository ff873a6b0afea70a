#!/usr/bin/env bash
# Prints the bin folder of the Node.js the project supports (the major version in .nvmrc): the
# machine's own when it is that version, otherwise one installed once from the npm registry
# (node-linux-<arch>: the official binary, published as a package) into a cache folder. CI runs on
# it; nothing else on the machine changes.
set -euo pipefail
cd "$(dirname "$0")/.."
want=$(tr -d ' v\n\r' < .nvmrc)
have=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo none)
if [ "$have" = "$want" ]; then
  dirname "$(command -v node)"
  exit 0
fi
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "ensure-node: no Node.js $want package for $(uname -m); install Node.js $want yourself" >&2; exit 1 ;;
esac
prefix="${XDG_CACHE_HOME:-$HOME/.cache}/task-status-server/node-$want-linux-$arch"
bin="$prefix/node_modules/node-linux-$arch/bin"
if [ ! -x "$bin/node" ]; then
  echo "ensure-node: installing Node.js $want (node-linux-$arch from the npm registry) into $prefix" >&2
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-save --no-audit --no-fund --loglevel=error "node-linux-$arch@$want" >&2
fi
echo "$bin"
