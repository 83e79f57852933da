# Stand-in for mcr.microsoft.com/dotnet/aspnet:X.Y.Z-noble: this host's .NET
# and ASP.NET Core shared runtimes (no SDK) at the official image's
# /usr/share/dotnet, on Debian bookworm with the libraries .NET needs, the
# official image's environment and its non-root user `app` (APP_UID 1654).
# Built by standins.py; context: ./dotnet-runtime (the host's dotnet root
# without the SDK), host-ca.crt.
ARG BASE_IMAGE=serverlab/standin-debian:bookworm
FROM ${BASE_IMAGE}
ARG DOTNET_VERSION
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates tzdata \
        libc6 libgcc-s1 libicu72 libssl3 libstdc++6 zlib1g \
    && rm -rf /var/lib/apt/lists/*
COPY host-ca.crt /usr/local/share/ca-certificates/serverlab-host-ca.crt
RUN update-ca-certificates \
    && groupadd --system --gid 1654 app \
    && useradd --system --uid 1654 --gid app --no-create-home --shell /bin/false app
COPY dotnet-runtime /usr/share/dotnet/
RUN ln -s /usr/share/dotnet/dotnet /usr/bin/dotnet \
    && dotnet --list-runtimes | grep -q "Microsoft.AspNetCore.App ${DOTNET_VERSION} "
ENV APP_UID=1654 \
    ASPNETCORE_HTTP_PORTS=8080 \
    DOTNET_RUNNING_IN_CONTAINER=true \
    DOTNET_VERSION=${DOTNET_VERSION} \
    ASPNET_VERSION=${DOTNET_VERSION}
