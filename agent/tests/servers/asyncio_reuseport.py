"""One worker of a Python asyncio server that sets SO_REUSEPORT per process,
as people run it (several copies, one listener each). Answers every line
with "ok" and keeps the connection open. argv: HOST PORT (an IPv6 HOST
such as ::1 listens on IPv6)."""
import asyncio
import socket
import sys


async def handle(reader, writer):
    while await reader.readline():
        writer.write(b"ok\n")
        await writer.drain()
    writer.close()


async def main(host, port):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind((host, port))
    server = await asyncio.start_server(handle, sock=sock, backlog=512)
    async with server:
        await server.serve_forever()


asyncio.run(main(sys.argv[1], int(sys.argv[2])))
