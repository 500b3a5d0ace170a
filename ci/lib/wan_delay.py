"""The WAN's delay for ci/lib/netns.sh: a delay line between two site routers.

This machine's kernel has no netem (no delay qdisc), so the edge profile's 40 ms
round trip is made here: two TUN devices, one in each site router's namespace,
carry the WAN's routes; every IP packet read from one is written into the other
DELAY_MS later, in order (a constant delay never reorders). The bandwidth is set
by tbf on each TUN device (the kernel → here direction), so packets queue there
as on a real 100 Mbit/s link. One thread per direction reads, one writes.

    python3 wan_delay.py DELAY_MS NS_A DEV_A NS_B DEV_B
"""

import collections
import ctypes
import fcntl
import os
import struct
import sys
import threading
import time

TUNSETIFF = 0x400454CA
IFF_TUN = 0x0001
IFF_NO_PI = 0x1000
CLONE_NEWNET = 0x40000000


def enter_netns(name):
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/var/run/netns/{name}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"setns into {name}: {os.strerror(err)}")
    finally:
        os.close(fd)


def open_tun(dev):
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", dev.encode(), IFF_TUN | IFF_NO_PI))
    return fd


def direction(src, dst, delay_s):
    queue = collections.deque()
    ready = threading.Condition()

    def reader():
        while True:
            pkt = os.read(src, 65536)
            with ready:
                queue.append((time.monotonic() + delay_s, pkt))
                ready.notify()

    def writer():
        while True:
            with ready:
                while not queue:
                    ready.wait()
                due, pkt = queue.popleft()
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            try:
                os.write(dst, pkt)
            except OSError:
                pass  # a packet the other side cannot take is lost, as on a real link

    for fn in (reader, writer):
        threading.Thread(target=fn, daemon=True).start()


def main():
    if len(sys.argv) != 6:
        sys.exit(__doc__)
    delay_s = float(sys.argv[1]) / 1000
    ns_a, dev_a, ns_b, dev_b = sys.argv[2:]
    enter_netns(ns_a)
    fd_a = open_tun(dev_a)
    enter_netns(ns_b)
    fd_b = open_tun(dev_b)
    direction(fd_a, fd_b, delay_s)
    direction(fd_b, fd_a, delay_s)
    print(f"delay line up: {dev_a}@{ns_a} <-> {dev_b}@{ns_b}, {sys.argv[1]} ms each way", flush=True)
    threading.Event().wait()


if __name__ == "__main__":
    main()
