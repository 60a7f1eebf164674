"""Storages that fail the way disks and machines do, driven by seeds."""

from __future__ import annotations

import errno
import random

from sessiontree.store import Durability, MemoryStorage


class CrashingStorage(MemoryStorage):
    """Remembers how much of the file is synced, to produce what a crash could leave on disk.

    With durability "fsync" every append is synced before it returns (as FileStorage does);
    with "os" data reaches the disk only at an explicit `sync()` (the kernel's writeback).
    """

    def __init__(self, data: bytes, durability: Durability) -> None:
        super().__init__(data)
        self.durability = durability
        self.synced = len(data)

    def append(self, data: bytes) -> int:
        start = super().append(data)
        if self.durability == "fsync":
            self.synced = len(self.data)
        return start

    def sync(self) -> None:
        self.synced = len(self.data)

    def after_process_kill(self) -> bytes:
        """A killed process loses nothing the kernel has: every completed write survives."""
        return bytes(self.data)

    def after_power_loss(self, rng: random.Random) -> bytes:
        """Synced bytes survive; of the rest, any prefix may (the last write torn anywhere)."""
        unsynced = len(self.data) - self.synced
        return bytes(self.data[: self.synced + rng.randint(0, unsynced)])


class FailingStorage(MemoryStorage):
    """Refuses writes (disk full, I/O error) at seeded moments, writing nothing, as the contract says."""

    def __init__(self, data: bytes, rng: random.Random, failure_rate: float) -> None:
        super().__init__(data)
        self.rng = rng
        self.failure_rate = failure_rate
        self.failures = 0

    def append(self, data: bytes) -> int:
        if self.rng.random() < self.failure_rate:
            self.failures += 1
            raise OSError(self.rng.choice([errno.ENOSPC, errno.EIO, errno.EDQUOT]), "injected failure")
        return super().append(data)
