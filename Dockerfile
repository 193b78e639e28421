# One image for the four daemons and sagactl (compose.yaml picks the command
# per service). Multi-stage: the build stage has the -dev packages and CMake,
# the runtime stage only the shared libraries, the five binaries and a
# non-root user. No configuration and no secrets in the image: everything
# comes from SAGA_* environment variables (docs/operations.md).
#
#   docker build -t sagas .                                  # debian:bookworm-slim
#   docker build --build-arg BASE=localhost/debian:bookworm -t sagas .
ARG BASE=debian:bookworm-slim

FROM ${BASE} AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io build-essential cmake pkg-config \
      libnng-dev libmbedtls-dev libprotobuf-c-dev protobuf-c-compiler libpq-dev uuid-dev \
      libjansson-dev libfyaml-dev libcmocka-dev uthash-dev libmicrohttpd-dev libgnutls28-dev libunistring-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# The whole tree minus .dockerignore (docs, git, build folders, deployment
# files): edits to those keep the compile layer cached.
COPY . .
RUN cmake -S . -B /build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSAGA_WERROR=OFF -DSAGA_TESTS=OFF >/dev/null \
 && cmake --build /build -j "$(nproc)" --target orchestratord stockd paymentd shippingd gatewayd sagactl \
 && mkdir -p /out \
 && install -s -m 0755 /build/bin/orchestratord /build/bin/stockd /build/bin/paymentd \
      /build/bin/shippingd /build/bin/gatewayd /build/bin/sagactl /out/

FROM ${BASE} AS runtime
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io \
      libnng1 libprotobuf-c1 libpq5 libuuid1 libjansson4 libfyaml0 libmicrohttpd12 libgnutls30 libunistring2 openssl \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --system --gid 10001 saga \
 && useradd --system --uid 10001 --gid saga --no-create-home --home-dir /nonexistent \
      --shell /usr/sbin/nologin saga \
 && mkdir -p /certs/ca /certs/stock /certs/payment /certs/shipping /certs/orchestrator /certs/cli \
      /certs/prometheus \
 && chown -R saga:saga /certs && chmod -R 0750 /certs
COPY --from=build /out/ /usr/local/bin/
# compose.yaml's certs service: the CAs and certificates (docs/security.md),
# then one volume per program with only its files
COPY scripts/make-certs.sh /usr/local/bin/sagas-make-certs
COPY deploy/certs-init.sh /usr/local/bin/sagas-certs-init
COPY deploy/check-env.sh /usr/local/bin/sagas-check-env
USER saga:saga
# The listeners come from compose.yaml (SAGA_*_LISTEN): mutual TLS on every
# interface, Health alone in plain TCP. Left unset, a daemon listens on the
# container's loopback only.
# (and GET /metrics in https on 9470..9473, SAGA_*_METRICS_LISTEN)
EXPOSE 7101 7102 7103 7104 7111 7112 7113 7114 7121 7122 7123 7124 9470 9471 9472 9473
CMD ["orchestratord"]
