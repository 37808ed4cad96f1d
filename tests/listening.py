"""Which addresses a test's processes listen on (from ``/proc``): the suite's servers, Spark
sessions and peer engines must listen on loopback only."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path


def descendants(pid: int) -> set[int]:
    children: dict[int, set[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # a process that ended meanwhile
        children.setdefault(int(fields[1]), set()).add(int(stat.parent.name))
    found: set[int] = set()
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), ()):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found


def listening_addresses(
    pids: set[int],
) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address] | None:
    """The local addresses of the TCP sockets in LISTEN state that ``pids`` hold."""
    tables = [Path("/proc/net/tcp"), Path("/proc/net/tcp6")]
    if not tables[0].exists():
        return None
    inodes: set[str] = set()
    for pid in pids:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        inodes |= {link[8:-1] for link in links if link.startswith("socket:[")}
    found: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for table in tables:
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:  # 0A: LISTEN
                found.append(_address(fields[1].split(":")[0]))
    return found


def _address(hex_address: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    raw = bytes.fromhex(hex_address)  # 32-bit words in host order (little-endian here)
    words = b"".join(raw[i : i + 4][::-1] for i in range(0, len(raw), 4))
    return ipaddress.ip_address(words)


def is_loopback(address: ipaddress.IPv4Address | ipaddress.IPv6Address) -> bool:
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)
