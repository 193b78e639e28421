# Test stand-in for the postgres:17 image (no registry here): Debian's
# postgresql package with an entrypoint that behaves like the official one
# for what compose.yaml uses (POSTGRES_USER/PASSWORD, PGDATA,
# /docker-entrypoint-initdb.d/*.sh|*.sql run once on a new data directory).
ARG BASE=localhost/debian:bookworm
FROM ${BASE}
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update -q \
 && apt-get install -y -q --no-install-recommends -o Dpkg::Options::=--force-unsafe-io postgresql \
 && rm -rf /var/lib/apt/lists/* \
 && (pg_dropcluster --stop 15 main 2>/dev/null || true) \
 && mkdir -p /var/lib/postgresql/data /docker-entrypoint-initdb.d /var/run/postgresql \
 && chown postgres:postgres /var/lib/postgresql/data /var/run/postgresql \
 && chmod 0700 /var/lib/postgresql/data
COPY pg-entrypoint.sh /usr/local/bin/pg-entrypoint.sh
ENV PATH=/usr/lib/postgresql/15/bin:$PATH \
    PGDATA=/var/lib/postgresql/data
USER postgres
ENTRYPOINT ["/usr/local/bin/pg-entrypoint.sh"]
