# Stand-in for pypy:3.9-7.3.x-slim-bookworm: Debian bookworm's PyPy for
# Python 3.9 (pypy3, with venv support and the headers C extensions build
# against), `pypy` and `pypy3` on PATH as in the official image.
ARG BASE_IMAGE=serverlab/standin-debian:bookworm
FROM ${BASE_IMAGE}
ARG PYPY_PYTHON=3.9
COPY host-ca.crt /usr/local/share/ca-certificates/serverlab-host-ca.crt
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates netbase tzdata \
        pypy3 pypy3-venv pypy3-dev \
    && rm -rf /var/lib/apt/lists/* \
    && update-ca-certificates \
    && ln -s /usr/bin/pypy3 /usr/local/bin/pypy \
    && test "$(pypy3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')" = "${PYPY_PYTHON}"
ENV LANG=C.UTF-8
CMD ["pypy3"]
