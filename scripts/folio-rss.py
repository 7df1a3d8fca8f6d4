#!/usr/bin/env python3
"""How much of a freshly written file does a mapped read make resident, by write size?

Writes a 4 MiB file in pieces of each size, reads it once (as a page-cache warm-up does), maps it,
touches 3 scattered bytes and prints the mapping's resident KiB from /proc/self/smaps. On Linux
6.x with large folios the written folio follows the write size and a mapped read maps all of it
(bench/results/indexing-2026-11-26.md); FsDirectory therefore writes 64 KiB per call.

    scripts/folio-rss.py [DIR]   (default: the system's temporary directory)
"""
import mmap
import os
import re
import sys
import tempfile

SIZE = 4 << 20


def resident_kib(path):
    inside = False
    with open("/proc/self/smaps") as f:
        for line in f:
            if re.match(r"^[0-9a-f]+-[0-9a-f]+ ", line):
                inside = line.rstrip().endswith(path)
            elif inside and line.startswith("Rss:"):
                return int(line.split()[1])
    return None


def main():
    folder = sys.argv[1] if len(sys.argv) > 1 else tempfile.gettempdir()
    path = os.path.join(folder, "quarry-folio-rss.bin")
    data = os.urandom(SIZE)
    try:
        for piece in (1 << 20, 256 << 10, 64 << 10, 16 << 10, 8 << 10):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            for i in range(0, SIZE, piece):
                os.write(fd, data[i:i + piece])
            os.close(fd)
            with open(path, "rb") as f:
                while f.read(1 << 20):
                    pass
            fd = os.open(path, os.O_RDONLY)
            m = mmap.mmap(fd, 0, prot=mmap.PROT_READ)
            _ = m[100] + m[(1 << 20) + 7 * 4096] + m[3 << 20]
            print(f"write size {piece // 1024:>5} KiB: {resident_kib(path)} KiB resident after 3 touches")
            m.close()
            os.close(fd)
    finally:
        if os.path.exists(path):
            os.remove(path)


if __name__ == "__main__":
    main()
