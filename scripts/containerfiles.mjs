// The services' Containerfiles (apps/<service>/Containerfile), written from one template and a table of what
// differs: what the image holds, its native addons, what it compiles and copies, its ports and entry point.
// Written by `npm run specs` (scripts/gen-specs.mjs), checked for drift by `npm run specs:check`; the structure
// every one must keep (two stages, one Node image, production dependencies only, a non-root user, nothing secret)
// is tested by apps/cloud/src/deploy.test.ts.

/** @typedef {{ what: string, addons: string, build?: string[], copy?: string[], expose: string, config: string }} Image */

/** @type {Record<string, Image>} */
export const IMAGES = {
  'wallet-node': {
    what: "the watch-only wallet node (apps/wallet-node); the cloud's Kubernetes driver runs it with `-c /etc/wallet-node/node.toml`",
    addons:
      "rgb-lib's SWIG binding (@rgb-tools/rgb-lib-linux-x64, linked against its prebuilt librgblibcffi.so: glibc x86_64, hence a Debian image, not Alpine) and better-sqlite3",
    expose: '3000',
    config: '/etc/wallet-node/node.toml',
  },
  swap: {
    what: 'the swap service (apps/swap)',
    addons: 'better-sqlite3 (through @rgbx/store)',
    expose: '3100',
    config: '/etc/rgbx/swap.toml',
  },
  cloud: {
    what: 'the cloud hosting service (apps/cloud), with the wallet node its local driver runs (the Kubernetes driver runs the wallet-node image instead)',
    addons:
      "better-sqlite3 and, through @rgbx/wallet-node, rgb-lib's SWIG binding (glibc x86_64: a Debian image, not Alpine)",
    build: ['apps/cloud', 'apps/wallet-node'],
    copy: [
      'apps/cloud/package.json',
      'apps/cloud/dist',
      'apps/cloud/console',
      'apps/cloud/config',
      'apps/wallet-node/package.json',
      'apps/wallet-node/dist',
    ],
    expose: '3200',
    config: '/etc/rgbx/cloud.toml',
  },
  resolver: {
    what: 'the reference resolver (apps/resolver)',
    addons: 'better-sqlite3 (through @rgbx/store)',
    expose: '3300',
    config: '/etc/rgbx/resolver.toml',
  },
  electrum: {
    what: 'the Electrum server (apps/electrum)',
    addons: 'none of its own (the toolchain stays for any dependency that builds from source)',
    expose: '50001 9404',
    config: '/etc/rgbx/electrum.toml',
  },
  'rgb-proxy': {
    what: 'the RGB proxy (apps/rgb-proxy)',
    addons: 'better-sqlite3',
    expose: '3000 9405',
    config: '/etc/rgbx/rgb-proxy.toml',
  },
};

/** The Containerfile of `service` (a key of {@link IMAGES}). */
export function containerfile(service) {
  const i = IMAGES[service];
  if (!i) throw new Error(`no image for ${service}: expected one of ${Object.keys(IMAGES).join(', ')}`);
  const app = `apps/${service}`;
  const build = i.build ?? [app];
  const copy = i.copy ?? [`${app}/package.json`, `${app}/dist`];
  return `# syntax=docker/dockerfile:1
# Image of ${i.what}.
# Build from the repository root (the context must hold every workspace):
#   podman build -f ${app}/Containerfile -t rgbx/${service}:0.1.0 .      (or docker build)
#
# Two stages. \`build\` installs every dependency, compiles the TypeScript and the native addons —
# ${i.addons} — with this image's own Node headers, then keeps the production dependencies of
# this service only (\`npm ci --omit=dev\`). \`runtime\` is the same Node image (so the addons match
# its ABI), without compiler or dev dependencies, running as an unprivileged user (uid 10001).
# Nothing secret is built in: configuration and keys come at run time (a mounted file, the
# environment); .dockerignore keeps local state (.env, keys, data dirs, node_modules) out of the context.
# Written by scripts/containerfiles.mjs (npm run specs): edit the table there, not this file.
ARG NODE_IMAGE=node:20.19-bookworm-slim

FROM \${NODE_IMAGE} AS build
RUN apt-get update \\
 && apt-get install -y --no-install-recommends python3 make g++ \\
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# node-gyp builds against the Node of this image (no header download, same ABI as the runtime stage).
ENV npm_config_nodedir=/usr/local
COPY package.json package-lock.json .npmrc tsconfig.base.json tsconfig.json ./
COPY packages/ packages/
COPY apps/ apps/
RUN npm ci --no-audit --no-fund
RUN npx tsc -b ${build.join(' ')}
RUN npm ci --omit=dev --no-audit --no-fund --workspace @rgbx/${service} \\
 && mkdir /out \\
 && cp -a --parents package.json node_modules ${copy.join(' ')} /out/ \\
 && for p in packages/*; do \\
      cp -a --parents "$p/package.json" /out/; \\
      if [ -d "$p/dist" ]; then cp -a --parents "$p/dist" /out/; fi; \\
    done

FROM \${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
RUN groupadd --system --gid 10001 rgbx \\
 && useradd --system --uid 10001 --gid rgbx --no-create-home --shell /usr/sbin/nologin rgbx \\
 && mkdir -p /data && chown 10001:10001 /data
WORKDIR /app
COPY --from=build /out/ /app/
USER 10001:10001
EXPOSE ${i.expose}
VOLUME ["/data"]
ENTRYPOINT ["node", "/app/${app}/dist/main.js"]
CMD ["-c", "${i.config}"]
`;
}
