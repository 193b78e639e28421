#!/usr/bin/env bash
# Generates the Python protobuf modules of proto/sagas/v1/*.proto with
# Debian's protoc (protobuf-compiler) into OUT (default: build/python at the
# top of the repository; never committed). Import them as
# `from sagas.v1 import orchestrator_pb2` with OUT on sys.path.
#   clients/python/generate.sh [OUT]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
out=${1:-$root/build/python}
command -v protoc >/dev/null || { echo "generate.sh: protoc not found (apt-get install protobuf-compiler)" >&2; exit 1; }
mkdir -p "$out"
protoc --python_out="$out" -I "$root/proto" "$root"/proto/sagas/v1/*.proto
echo "$out"
