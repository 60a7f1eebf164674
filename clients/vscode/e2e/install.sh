#!/bin/sh
# Installs code-server (the real VS Code workbench, served to a browser) and playwright-core from
# npm into this directory, without reaching anything but the npm registry:
#
# - code-server's post-install builds native modules (kerberos, node-pty, ...): Debian's
#   build-essential pkg-config libkrb5-dev libx11-dev libxkbfile-dev libsecret-1-dev (the Makefile
#   installs them), npm_config_unsafe_perm=true as root, npm_config_yes=true so that `npx node-gyp`
#   does not ask;
# - @vscode/ripgrep's post-install downloads ripgrep from GitHub unless its cache holds the asset:
#   $TMPDIR/vscode-ripgrep-cache-<its version>/ripgrep-<rg tag>-<target>.tar.gz with `rg` inside.
#   Debian's ripgrep package provides the binary to put there.
#
# The versions below are those of code-server 4.100.3's lib/vscode/npm-shrinkwrap.json and of
# @vscode/ripgrep 1.15.11's lib/postinstall.js; change them together with code-server.
set -eu

RIPGREP_PACKAGE_VERSION=1.15.11
RIPGREP_TAG=v13.0.0-10
RIPGREP_TARGET=x86_64-unknown-linux-musl

cd "$(dirname "$0")"
rg=$(command -v rg) || { echo "install.sh: rg (Debian's ripgrep package) is required" >&2; exit 1; }

scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cache="$scratch/vscode-ripgrep-cache-$RIPGREP_PACKAGE_VERSION"
mkdir -p "$cache/bin"
cp "$rg" "$cache/bin/rg"
tar -czf "$cache/ripgrep-$RIPGREP_TAG-$RIPGREP_TARGET.tar.gz" -C "$cache/bin" rg

TMPDIR="$scratch" npm_config_unsafe_perm=true npm_config_yes=true \
  npm ci --no-audit --no-fund --loglevel=error

test -x node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg
touch node_modules/.installed
