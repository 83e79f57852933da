# Stand-in for maven:3.9.x-eclipse-temurin-17: Debian bookworm's Maven and
# OpenJDK 17 JDK, with JAVA_HOME at the official image's /opt/java/openjdk.
# Java trusts the host CA too (ca-certificates-java rebuilds its keystore).
ARG BASE_IMAGE=serverlab/standin-debian:bookworm
FROM ${BASE_IMAGE}
ARG JDK_MAJOR=17
COPY host-ca.crt /usr/local/share/ca-certificates/serverlab-host-ca.crt
# hadolint ignore=DL3008
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends ca-certificates ca-certificates-java \
        "openjdk-${JDK_MAJOR}-jdk-headless" maven \
    && rm -rf /var/lib/apt/lists/* \
    && update-ca-certificates \
    && mkdir -p /opt/java \
    && ln -s "/usr/lib/jvm/java-${JDK_MAJOR}-openjdk-amd64" /opt/java/openjdk
ENV JAVA_HOME=/opt/java/openjdk \
    MAVEN_HOME=/usr/share/maven \
    LANG=C.UTF-8
CMD ["mvn"]
