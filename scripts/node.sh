#!/usr/bin/env bash
# Fetch an official Node.js build from the npm registry and print the folder it is in.
#
#   scripts/node.sh 26.12.1    the node-linux-<arch> package of that version, unpacked once into
#                              ~/.cache/tool-registry/node-<version> (bin/node and include/node)
#
# The npm registry is the one source of Node builds this project's machines reach. The package
# ships the headers too, which native modules (better-sqlite3) must be built against: with
# `npm_config_nodedir` unset, node-gyp would use the headers of the npm that runs it, and the
# module would fail to load (NODE_MODULE_VERSION 115 against 147). Use it as
#   dir=$(scripts/node.sh 26.12.1); PATH="$dir/bin:$PATH" npm_config_nodedir="$dir" npm ci
set -euo pipefail
version="${1:?usage: scripts/node.sh <version>}"
case "$(uname -m)" in
  x86_64) arch=x64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "scripts/node.sh: no node-linux package for $(uname -m)" >&2; exit 1 ;;
esac
cache="${NODE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tool-registry}"
dir="$cache/node-$version"
if [ ! -x "$dir/bin/node" ]; then
  mkdir -p "$cache"
  tmp=$(mktemp -d "$cache/.node-XXXXXX")
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "node-linux-$arch@$version" >/dev/null && tar xzf ./*.tgz)
  "$tmp/package/bin/node" --version >/dev/null
  rm -rf "$dir"
  mv "$tmp/package" "$dir"
fi
echo "$dir"
