# Stand-in for python:3.X.Y-slim-bookworm: the host's CPython build (pyenv,
# --enable-shared) copied to /usr/local, the layout of the official image,
# with the shared libraries it links against from Debian bookworm and pip
# from the interpreter's own ensurepip. Built by standins.py; context:
# ./python (the pyenv prefix without site-packages), host-ca.crt.
ARG BASE_IMAGE=serverlab/standin-debian:bookworm
FROM ${BASE_IMAGE}
ARG PYTHON_MINOR
ARG PYTHON_VERSION
ARG HOST_PREFIX
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates netbase tzdata \
        libbz2-1.0 libexpat1 libffi8 libgdbm6 liblzma5 libncursesw6 libreadline8 \
        libsqlite3-0 libssl3 libuuid1 zlib1g \
    && rm -rf /var/lib/apt/lists/*
COPY host-ca.crt /usr/local/share/ca-certificates/serverlab-host-ca.crt
RUN update-ca-certificates
COPY python /usr/local/
# The pyenv prefix is written into sysconfig data and pkg-config files; point
# them at /usr/local so C extensions (bjoern, uvloop, ...) build against it.
RUN find /usr/local/lib /usr/local/include -type f \
        -exec grep -qI "${HOST_PREFIX}" {} \; -exec sed -i "s#${HOST_PREFIX}#/usr/local#g" {} + \
    && ldconfig \
    && python${PYTHON_MINOR} -m ensurepip --default-pip \
    && ln -s python${PYTHON_MINOR} /usr/local/bin/python3 \
    && ln -s python3 /usr/local/bin/python \
    && ln -sf pip3 /usr/local/bin/pip \
    && find /usr/local -depth -type d -name __pycache__ -exec rm -rf {} + \
    && test "$(python -c 'import platform, ssl, sqlite3, ctypes; print(platform.python_version())')" = "${PYTHON_VERSION}"
ENV PYTHON_VERSION=${PYTHON_VERSION} LANG=C.UTF-8
CMD ["python3"]
