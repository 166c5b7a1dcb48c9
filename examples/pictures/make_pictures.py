#!/usr/bin/env python3
"""Writes the example's pictures: four 96 x 64 posters and a persona portrait, as small PNGs (standard library
only; the same bytes on every run). python3 make_pictures.py"""
import struct
import zlib


def png(path, w, h, pixel):
    rows = b"".join(b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(w)) for y in range(h))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0))
                + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


W, H = 96, 64
# A sunrise: a yellow disc over an orange-to-blue sky.
png("sunrise.png", W, H, lambda x, y: (250, 210, 60) if (x - 48) ** 2 + (y - 44) ** 2 < 200
    else (255 - 2 * y, 140 + y, 90 + 2 * y))
# Stripes: bold diagonal red and white bands.
png("stripes.png", W, H, lambda x, y: (200, 30, 40) if (x + y) // 12 % 2 else (245, 245, 245))
# Grid: a calm grey checkerboard.
png("grid.png", W, H, lambda x, y: (120, 120, 130) if (x // 16 + y // 16) % 2 else (200, 200, 205))
# Forest: dark green triangles on pale green.
png("forest.png", W, H, lambda x, y: (30, 100, 50) if abs(x % 24 - 12) < (y % 32) * 12 // 32 else (200, 230, 190))
# The persona's portrait: a round face on blue.
png("portrait.png", 48, 48, lambda x, y: (60, 40, 30) if (x - 18) ** 2 + (y - 18) ** 2 < 6 or (x - 30) ** 2 + (y - 18) ** 2 < 6
    else (230, 190, 150) if (x - 24) ** 2 + (y - 24) ** 2 < 300 else (70, 110, 180))
