# Stand-in for golang:X.Y.Z-bookworm: the exact Go release (the
# golang.org/toolchain module that GOTOOLCHAIN downloads) on Debian bookworm
# with the tools the official image (buildpack-deps:bookworm-scm) provides
# for cgo and module downloads. Built by standins.py; context: ./go, host-ca.crt.
ARG BASE_IMAGE=serverlab/standin-debian:bookworm
FROM ${BASE_IMAGE}
ARG GO_VERSION
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates git gcc libc6-dev make pkg-config \
    && rm -rf /var/lib/apt/lists/*
COPY host-ca.crt /usr/local/share/ca-certificates/serverlab-host-ca.crt
RUN update-ca-certificates
COPY go /usr/local/go
RUN chmod -R a+rX /usr/local/go \
    && chmod a+x /usr/local/go/bin/* /usr/local/go/pkg/tool/linux_amd64/* \
    && mkdir -p /go/src /go/bin && chmod -R 1777 /go \
    && test "$(/usr/local/go/bin/go env GOVERSION)" = "go${GO_VERSION}"
ENV GOLANG_VERSION=${GO_VERSION} \
    GOTOOLCHAIN=local \
    GOPATH=/go \
    PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
WORKDIR /go
