#!/usr/bin/env bash
# Installs what the cloud tests need from Debian: Chromium for the console test
# (apps/cloud/src/console.test.ts drives /usr/bin/chromium with playwright-core) and the openssl
# CLI (self-signed receiver certificates made at test time). Idempotent; needs root (CI runs as
# root) and the Debian mirror. Call it before `npm test`, e.g. from .ci/run:
#   bash apps/cloud/scripts/install-chromium.sh
set -euo pipefail
if [ -x /usr/bin/chromium ] && command -v openssl >/dev/null; then
  echo "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo present)"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-chromium: /usr/bin/chromium is missing and this is not root; run: sudo apt-get install -y chromium" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq chromium openssl >/dev/null
echo "chromium: $(/usr/bin/chromium --version 2>/dev/null || echo installed)"
