# Stands in for the loadgen Dockerfile's oha-build stage: the same oha
# version built with `cargo install --locked` by scripts/install-oha.sh on
# this host, at the path the loadgen copies it from. Built by standins.py.
ARG BASE_IMAGE=serverlab/standin-debian:bookworm
FROM ${BASE_IMAGE}
COPY oha /opt/oha/bin/oha
RUN /opt/oha/bin/oha --version
