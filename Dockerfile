# syntax=docker/dockerfile:1
# The episodic image: `episodic controller` (the Deployment of charts/episodic) and `episodic episode`
# (the runner in every episode pod; agent images in images/ build FROM this one).
#
#   docker build -t episodic/episodic:0.1.0 .
#
# test/install/dockerfile.test.ts replays this file's steps (same context, flags and paths) without a
# Docker engine. Keep every RUN either an npm/ln command or one of the system steps that test knows.
ARG NODE_IMAGE=node:24-bookworm-slim

# ---- build: bundle the TypeScript into dist/ (esbuild) ----------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: `prepare` would build before the sources are here, and the `node` devDependency's
# install script would download a second Node; the base image has Node already.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY scripts/build.mjs scripts/build-stamp.mjs ./scripts/
COPY controller ./controller
RUN npm run build

# ---- runtime: compiled output and production dependencies only ---------------------------------------
FROM ${NODE_IMAGE} AS runtime
# git: git workspaces (clone before an episode, commit and push after it); openssh-client: ssh remotes.
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates git openssh-client \
 && rm -rf /var/lib/apt/lists/*
# A named user for uid 65532 (the "nonroot" uid the chart and episode pods run as): git and ssh look
# the user up; its home matches the HOME the controller gives episode pods.
RUN groupadd --gid 65532 episodic \
 && useradd --uid 65532 --gid 65532 --home-dir /home/episodic --create-home --shell /usr/sbin/nologin episodic
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY bin ./bin
COPY --from=build /src/dist ./dist
RUN ln -s /app/bin/episodic.js /usr/local/bin/episodic \
 && ln -s /app/bin/episodic.js /app/node_modules/.bin/episodic
USER 65532:65532
# The controller Deployment passes only args (controller ...); episode pods set command to
# [episodic, episode, --, <agent argv>]. Both handle SIGTERM themselves.
ENTRYPOINT ["episodic"]
CMD ["--help"]
