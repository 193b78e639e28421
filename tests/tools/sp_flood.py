#!/usr/bin/env python3
"""sp_flood: an attacker's connections at one SP (nng) listener, for the
flood test (tests/integration/flood.sh, docs/security.md "Bounded resources").

    sp_flood.py HOST PORT IDLE HALF FRAME_BYTES HOLD_S [MARK_FILE]

Opens IDLE connections that finish the SP handshake (as a REQ peer) and then
send nothing, and HALF connections that finish it and send the length of a
FRAME_BYTES frame and half of its bytes, then stall. Holds them all HOLD_S
seconds, or until it gets SIGUSR1, counting the connections the server closed, and prints one JSON
object: opened, handshaken, closed_by_server (by kind), refused (connect
failed). With MARK_FILE, writes it (the counts so far, as JSON) once every
connection has finished its SP handshake or failed it, so a test knows when
the server has seen the whole flood."""

import asyncio
import json
import os
import resource
import signal
import struct
import sys

SP_REQ0 = b"\x00SP\x00\x00\x30\x00\x00"  # SP header, protocol REQ v0 (48)


async def one(host, port, frame, stats, kind, settled):
    try:
        r, w = await asyncio.open_connection(host, port)
    except OSError:
        stats["refused"] += 1
        settled()
        return
    stats["opened"] += 1
    handshake = True
    try:
        w.write(SP_REQ0)
        await w.drain()
        await asyncio.wait_for(r.readexactly(8), 15)
        stats["handshaken"] += 1
        handshake = False
        settled()
        if frame:
            w.write(struct.pack(">Q", frame) + b"x" * (frame // 2))
            await w.drain()
        # the server closing the connection ends this read
        await r.read(1)
        stats["closed_" + kind] += 1
    except (OSError, asyncio.IncompleteReadError, asyncio.TimeoutError):
        stats["closed_" + kind] += 1
    finally:
        if handshake:
            settled()
        w.close()


async def main():
    host, port = sys.argv[1], int(sys.argv[2])
    idle, half, frame, hold = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
    mark = sys.argv[7] if len(sys.argv) > 7 else None
    release = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGUSR1, release.set)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = min(hard, idle + half + 256)
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, hard))
    stats = {"opened": 0, "handshaken": 0, "refused": 0, "closed_idle": 0, "closed_half": 0}
    left = [idle + half]

    def settled():
        left[0] -= 1
        if left[0] == 0 and mark:
            with open(mark + ".tmp", "w") as f:
                json.dump(stats, f)
            os.rename(mark + ".tmp", mark)

    tasks = []
    for i in range(idle + half):
        kind = "idle" if i < idle else "half"
        tasks.append(asyncio.ensure_future(one(host, port, frame if kind == "half" else 0,
                                               stats, kind, settled)))
        if i % 200 == 199:
            await asyncio.sleep(0.05)  # a burst, not one syscall storm
    try:
        await asyncio.wait_for(release.wait(), hold)
    except asyncio.TimeoutError:
        pass
    for t in tasks:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    print(json.dumps(stats))


asyncio.run(main())
