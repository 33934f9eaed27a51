"""A UDP server with one SO_REUSEPORT socket per thread, as DNS servers and
proxies run: each thread binds its own socket to ADDR:PORT and answers every
datagram with its own index. Prints "READY inode0 inode1 ..." (the sockets'
inodes, in thread order) once every socket is bound, then serves until
killed. Usage: udp_reuseport_threads.py ADDR PORT THREADS"""

import os
import socket
import sys
import threading

addr, port, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
socks = []
for _ in range(n):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.bind((addr, port))
    socks.append(s)


def serve(i, s):
    while True:
        data, peer = s.recvfrom(2048)
        s.sendto(str(i).encode(), peer)


for i, s in enumerate(socks):
    threading.Thread(target=serve, args=(i, s), daemon=True).start()
print("READY " + " ".join(str(os.fstat(s.fileno()).st_ino) for s in socks), flush=True)
threading.Event().wait()
