# Stand-in for mcr.microsoft.com/dotnet/sdk:X.Y.Z-noble: this host's .NET SDK
# (with the runtimes it carries) at the official image's /usr/share/dotnet,
# on Debian bookworm with the libraries .NET needs, the official image's
# environment and its non-root user `app` (APP_UID 1654). Built by standins.py;
# context: ./dotnet (the host's dotnet root), host-ca.crt.
ARG BASE_IMAGE=serverlab/standin-debian:bookworm
FROM ${BASE_IMAGE}
ARG DOTNET_SDK_VERSION
ARG DOTNET_VERSION
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates tzdata \
        libc6 libgcc-s1 libicu72 libssl3 libstdc++6 zlib1g git \
    && rm -rf /var/lib/apt/lists/*
COPY host-ca.crt /usr/local/share/ca-certificates/serverlab-host-ca.crt
RUN update-ca-certificates \
    && groupadd --system --gid 1654 app \
    && useradd --system --uid 1654 --gid app --create-home --shell /bin/false app
COPY dotnet /usr/share/dotnet/
RUN ln -s /usr/share/dotnet/dotnet /usr/bin/dotnet \
    && test "$(dotnet --version)" = "${DOTNET_SDK_VERSION}"
ENV APP_UID=1654 \
    DOTNET_RUNNING_IN_CONTAINER=true \
    DOTNET_VERSION=${DOTNET_VERSION} \
    ASPNET_VERSION=${DOTNET_VERSION} \
    DOTNET_SDK_VERSION=${DOTNET_SDK_VERSION} \
    DOTNET_GENERATE_ASPNET_CERTIFICATE=false \
    DOTNET_NOLOGO=true \
    DOTNET_USE_POLLING_FILE_WATCHER=true \
    NUGET_XMLDOC_MODE=skip
