#!/usr/bin/env bash
# ctest compose_config (label lint): compose.yaml, alone and with the test
# override, is valid for docker-compose (1.29's schema is the stricter one:
# no top-level name:, no depends_on.required). No engine needed.
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$root"
if ! command -v docker-compose >/dev/null; then
  echo "compose_config: SKIPPED: docker-compose not installed (scripts/deps.sh installs it)"
  exit 77
fi
# No .env leaks in: check the file as a user gets it.
empty=$(mktemp)
trap 'rm -f "$empty"' EXIT
env -u DOCKER_HOST docker-compose --env-file "$empty" -f compose.yaml config -q
env -u DOCKER_HOST docker-compose --env-file "$empty" -f compose.yaml -f tests/compose/override.yaml config -q
env -u DOCKER_HOST docker-compose --env-file "$empty" -f compose.yaml -f deploy/publish.yaml config -q
env -u DOCKER_HOST docker-compose --env-file "$empty" -f compose.yaml --profile cli config --services | grep -qx sagactl
echo "compose_config: compose.yaml valid ($(docker-compose version --short))"
