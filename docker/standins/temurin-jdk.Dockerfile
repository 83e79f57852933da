# Stand-in for eclipse-temurin:17.x (JDK): Debian bookworm's OpenJDK 17 JDK
# (headless), with JAVA_HOME at the official image's /opt/java/openjdk.
ARG BASE_IMAGE=serverlab/standin-debian:bookworm
FROM ${BASE_IMAGE}
ARG JDK_MAJOR=17
COPY host-ca.crt /usr/local/share/ca-certificates/serverlab-host-ca.crt
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates ca-certificates-java \
        "openjdk-${JDK_MAJOR}-jdk-headless" \
    && rm -rf /var/lib/apt/lists/* \
    && update-ca-certificates \
    && mkdir -p /opt/java \
    && ln -s "/usr/lib/jvm/java-${JDK_MAJOR}-openjdk-amd64" /opt/java/openjdk
ENV JAVA_HOME=/opt/java/openjdk \
    LANG=C.UTF-8
