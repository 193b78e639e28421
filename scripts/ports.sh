#!/usr/bin/env bash
# Sourced: free_port prints a free loopback TCP port and claims it for the
# caller, so two tests running at once (ctest -j) never draw the same port.
#
# A port is drawn at random below the kernel's ephemeral range (outgoing
# connections take ports from that range, so a port free now could be taken
# before we bind). It must answer no connection (nothing listens on it) and
# be unclaimed: a claim is a directory $SAGAS_PORT_DIR/PORT made with mkdir,
# which only one process can create. A port that is free but drawn by another
# test that has not bound it yet is claimed, so it is skipped. The claims of
# a test are removed by ports_release (stack_stop calls it); claims older
# than 30 minutes are swept, whatever left them.
#
# The owner is $SAGAS_PORT_OWNER (default: the pid of the sourcing shell).

SAGAS_PORT_DIR=${SAGAS_PORT_DIR:-${TMPDIR:-/tmp}/sagas-ports}

port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

free_port() {
  local p lo=32768 owner=${SAGAS_PORT_OWNER:-$$}
  [ -r /proc/sys/net/ipv4/ip_local_port_range ] && read -r lo _ </proc/sys/net/ipv4/ip_local_port_range
  [ "$lo" -gt 12000 ] || lo=32768
  mkdir -p "$SAGAS_PORT_DIR" 2>/dev/null && chmod 1777 "$SAGAS_PORT_DIR" 2>/dev/null
  find "$SAGAS_PORT_DIR" -mindepth 1 -maxdepth 1 -mmin +30 -exec rm -rf {} + 2>/dev/null || true
  for _ in $(seq 1 200); do
    p=$((10000 + (RANDOM * 32768 + RANDOM) % (lo - 10000)))
    port_free "$p" || continue
    mkdir "$SAGAS_PORT_DIR/$p" 2>/dev/null || continue
    echo "$owner" >"$SAGAS_PORT_DIR/$p/owner"
    echo "$p"
    return 0
  done
  echo "free_port: no free port found" >&2
  return 1
}

# ports_release [OWNER]: removes the claims of OWNER (default as above).
ports_release() {
  local owner=${1:-${SAGAS_PORT_OWNER:-$$}} d
  for d in "$SAGAS_PORT_DIR"/*/; do
    [ -f "$d/owner" ] && [ "$(cat "$d/owner" 2>/dev/null)" = "$owner" ] && rm -rf "$d"
  done
  return 0
}
