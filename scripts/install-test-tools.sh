#!/usr/bin/env bash
# Installs what the tests need from Debian, beyond npm: Prometheus and promtool (the metrics tests
# scrape every service with a real Prometheus and lint each exposition with `promtool check metrics`),
# then Chromium and openssl for the cloud console test (apps/cloud/scripts/install-chromium.sh).
# Idempotent; installing needs root (CI runs as root) and the Debian mirror. `npm test` runs it first.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
if [ -x /usr/bin/prometheus ] && [ -x /usr/bin/promtool ]; then
  echo "prometheus: $(/usr/bin/prometheus --version 2>&1 | head -1)"
else
  if [ "$(id -u)" != 0 ]; then
    echo "install-test-tools: /usr/bin/prometheus is missing and this is not root; run: sudo apt-get install -y prometheus" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # The package's service is not started here (no systemd); the tests run their own Prometheus.
  apt-get install -y -qq --no-install-recommends prometheus >/dev/null
  echo "prometheus: $(/usr/bin/prometheus --version 2>&1 | head -1)"
fi
bash "$here/../apps/cloud/scripts/install-chromium.sh"
