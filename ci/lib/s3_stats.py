#!/usr/bin/env python3
"""StatsD sink for the versitygw S3 server of ci/lib/s3.sh.

versitygw reports its counters only as StatsD metrics (its access log has 0 bytes sent for
GetObject). This process receives them on 127.0.0.1:PORT (UDP) and keeps the running totals of
every counter, summed over all tags, in OUT_FILE as "name total" lines (bytes_read: Content-Length
of the GetObject answers; bytes_written: PutObject and UploadPart bodies; success_count,
failed_count, ...). OUT_FILE is replaced atomically after every packet.

usage: s3_stats.py PORT OUT_FILE
"""
import os
import socket
import sys


def main():
    port, out = int(sys.argv[1]), sys.argv[2]
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.bind(("127.0.0.1", port))
    totals = {}

    def dump():
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            for name in sorted(totals):
                f.write(f"{name} {totals[name]}\n")
        os.replace(tmp, out)

    dump()
    while True:
        data = sock.recv(65536).decode("utf-8", errors="replace")
        # one metric a line: versitygw.NAME,tag=value,...:VALUE|c (InfluxDB tag style)
        for line in data.splitlines():
            head, _, rest = line.rpartition(":")
            fields = rest.split("|")
            if len(fields) < 2 or fields[1] != "c":
                continue
            name = head.split(",", 1)[0].removeprefix("versitygw.")
            try:
                totals[name] = totals.get(name, 0) + int(fields[0])
            except ValueError:
                continue
        dump()


if __name__ == "__main__":
    main()
