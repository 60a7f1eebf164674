"""Draws media/icon.png, the extension's 128x128 icon: a session tree on a dark tile.

The root's path to the leaf (green, as the view draws the leaf) branches off the main line,
whose other end is dimmed, as entries off the path are. Standard library only:
python3 media/icon.py writes the PNG next to this file.
"""

import itertools
import math
import struct
import zlib
from pathlib import Path

SIZE = 128
SAMPLES = 4  # per axis: each pixel is the mean of 16 points (anti-aliasing)

Color = tuple[int, int, int, int]
TILE: Color = (30, 41, 56, 255)
PATH: Color = (232, 238, 245, 255)
OFF: Color = (120, 134, 152, 255)
LEAF: Color = (78, 201, 120, 255)
CLEAR: Color = (0, 0, 0, 0)


def segment_distance(px: float, py: float, a: tuple[float, float], b: tuple[float, float]) -> float:
    ax, ay = a
    bx, by = b
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((px - ax) * dx + (py - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(px - ax - t * dx, py - ay - t * dy)


def bezier(p0: tuple[float, float], p1: tuple[float, float], p2: tuple[float, float], n: int = 24) -> list[tuple[float, float]]:
    points = []
    for i in range(n + 1):
        t = i / n
        u = 1 - t
        points.append((u * u * p0[0] + 2 * u * t * p1[0] + t * t * p2[0], u * u * p0[1] + 2 * u * t * p1[1] + t * t * p2[1]))
    return points


ROOT, FORK, OFF_END, LEAF_AT = (40.0, 28.0), (40.0, 56.0), (40.0, 100.0), (90.0, 82.0)
CURVE = bezier(FORK, (40.0, 82.0), LEAF_AT)


def in_tile(x: float, y: float) -> bool:
    radius, lo, hi = 24.0, 4.0, SIZE - 4.0
    cx, cy = min(max(x, lo + radius), hi - radius), min(max(y, lo + radius), hi - radius)
    return lo <= x <= hi and lo <= y <= hi and math.hypot(x - cx, y - cy) <= radius


def color_at(x: float, y: float) -> Color:
    """The topmost shape at (x, y), in pixel units."""
    if not in_tile(x, y):
        return CLEAR
    if math.hypot(x - LEAF_AT[0], y - LEAF_AT[1]) <= 13:
        return LEAF
    if math.hypot(x - ROOT[0], y - ROOT[1]) <= 11:
        return PATH
    off_end = math.hypot(x - OFF_END[0], y - OFF_END[1])
    if 6.5 <= off_end <= 10.5:
        return OFF
    if off_end < 6.5:
        return TILE
    if segment_distance(x, y, ROOT, FORK) <= 4.5:
        return PATH
    if any(segment_distance(x, y, a, b) <= 4.5 for a, b in itertools.pairwise(CURVE)):
        return PATH
    if segment_distance(x, y, FORK, (OFF_END[0], OFF_END[1] - 10)) <= 3.5:
        return OFF
    return TILE


def pixels() -> bytes:
    rows = bytearray()
    for py in range(SIZE):
        rows.append(0)  # PNG filter: none
        for px in range(SIZE):
            total = [0, 0, 0, 0]
            for sy in range(SAMPLES):
                for sx in range(SAMPLES):
                    r, g, b, a = color_at(px + (sx + 0.5) / SAMPLES, py + (sy + 0.5) / SAMPLES)
                    total = [total[0] + r * a, total[1] + g * a, total[2] + b * a, total[3] + a]
            alpha = total[3]
            if alpha == 0:
                rows += bytes(4)
            else:  # colours weighted by coverage, so edges against the clear corners do not darken
                rows += bytes([round(total[0] / alpha), round(total[1] / alpha), round(total[2] / alpha), round(alpha / SAMPLES**2)])
    return bytes(rows)


def chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack('>I', len(data)) + kind + data + struct.pack('>I', zlib.crc32(kind + data))


def png() -> bytes:
    header = struct.pack('>IIBBBBB', SIZE, SIZE, 8, 6, 0, 0, 0)  # 8-bit RGBA
    return b'\x89PNG\r\n\x1a\n' + chunk(b'IHDR', header) + chunk(b'IDAT', zlib.compress(pixels(), 9)) + chunk(b'IEND', b'')


if __name__ == '__main__':
    (Path(__file__).parent / 'icon.png').write_bytes(png())
