"""A TCP relay in front of a Kafka listener that notes each request's client id, API key
and version, for checks that must know which versions a client really sent.

Usage: kafka_tap.py LISTEN_ADDR UPSTREAM_ADDR RECORD_FILE

Each request frame a client sends is appended to RECORD_FILE as a line
`CLIENT_ID API_KEY API_VERSION`, then relayed whole; answers go back unchanged. The
server must advertise LISTEN_ADDR (`--kafka-advertised-addr`) so that clients come back
through the relay after their first Metadata. Prints `tap listening on LISTEN_ADDR` once
it accepts connections.
"""

import asyncio
import struct
import sys


def parse(addr):
    host, port = addr.rsplit(":", 1)
    return host, int(port)


def describe(frame):
    """`CLIENT_ID API_KEY API_VERSION` of a request frame (header v1 or v2: the client id
    is a classic nullable string in both)."""
    if len(frame) < 10:
        return "- ? ?"
    key, version, _correlation, size = struct.unpack(">hhih", frame[:10])
    client = frame[10:10 + size].decode("utf-8", "replace") if size >= 0 else "-"
    return f"{client or '-'} {key} {version}"


async def relay(listen, upstream, record):
    out = open(record, "a", buffering=1)

    async def answers(reader, writer):
        try:
            while data := await reader.read(65536):
                writer.write(data)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def serve(client_reader, client_writer):
        try:
            server_reader, server_writer = await asyncio.open_connection(*upstream)
        except OSError:
            client_writer.close()
            return
        back = asyncio.create_task(answers(server_reader, client_writer))
        try:
            while True:
                size = await client_reader.readexactly(4)
                frame = await client_reader.readexactly(struct.unpack(">i", size)[0])
                out.write(describe(frame) + "\n")
                server_writer.write(size + frame)
                await server_writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            server_writer.close()
            await back

    server = await asyncio.start_server(serve, *listen)
    print(f"tap listening on {listen[0]}:{listen[1]}", flush=True)
    async with server:
        await server.serve_forever()


if __name__ == "__main__":
    listen, upstream, record = sys.argv[1:4]
    asyncio.run(relay(parse(listen), parse(upstream), record))
