#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the tar shards TarIndexTest reads, and next to each NAME.tar the members Python itself finds in it.

Run from anywhere: python3 make_fixtures.py  (Python 3.8+, GNU tar 1.28+ for --sort=name). The output is
deterministic: fixed mtimes, owners and modes, contents derived from the member names, so re-running it must leave
`git status` clean.

NAME.expected holds one line per regular member, in archive order: "name<TAB>offset<TAB>size", where offset is
tarfile's offset_data (the first byte of the member's data) and a leading "./" is stripped from the name, as
TarIndex does. A member's data is the SHA-256 of that name, repeated to its size, so a test can check the bytes at
each offset.
"""

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
MTIME = 1_700_000_000


def strip_dot_slash(name):
    while name.startswith("./"):
        name = name[2:]
    return name


def content(name, size):
    """Deterministic bytes for a member: SHA-256 of its name (without leading "./"), repeated."""
    seed = hashlib.sha256(strip_dot_slash(name).encode("utf-8")).digest()
    return (seed * (size // len(seed) + 1))[:size]


def info(name, type_=tarfile.REGTYPE, size=0, linkname=""):
    ti = tarfile.TarInfo(name)
    ti.type = type_
    ti.size = size
    ti.linkname = linkname
    ti.mtime = MTIME
    ti.mode = 0o755 if type_ == tarfile.DIRTYPE else 0o644
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = ""
    return ti


def write_python(fixture, fmt, members, pax_headers=None):
    """members: (name, type, size, linkname); regular members and unknown types get content() as data."""
    path = os.path.join(HERE, fixture + ".tar")
    with tarfile.open(path, "w", format=fmt, pax_headers=pax_headers or {}) as tar:
        for name, type_, size, linkname in members:
            ti = info(name, type_, size, linkname)
            data = io.BytesIO(content(name, size)) if size else None
            tar.addfile(ti, data)
    write_expected(fixture)


def write_expected(fixture):
    path = os.path.join(HERE, fixture + ".tar")
    lines = []
    with tarfile.open(path, "r") as tar:
        for m in tar.getmembers():
            if m.isreg():
                name = strip_dot_slash(m.name)
                assert "\t" not in name and "\n" not in name, name
                lines.append("%s\t%d\t%d\n" % (name, m.offset_data, m.size))
    with open(os.path.join(HERE, fixture + ".expected"), "w", encoding="utf-8", newline="\n") as out:
        out.writelines(lines)
    size = os.path.getsize(path)
    assert size <= 64 * 1024, "%s is %d bytes" % (fixture, size)


REG, DIR, SYM, LNK = tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE, tarfile.LNKTYPE

# Long names: 'é' is two bytes in UTF-8, so these are well over the 100-byte ustar name field.
LONG_UNICODE = "données/" + "é" * 70 + "/échantillon-日本語.txt"
LONG_ASCII = "very/" + "long-directory-name-" * 6 + "/sample-with-a-long-file-name-0001.bin"


def pax():
    # Python's default format; the global header ('g') comes first, the long unicode name gets an 'x' header.
    write_python("pax", tarfile.PAX_FORMAT, [
        ("short.txt", REG, 11, ""),
        (LONG_UNICODE, REG, 1500, ""),
        ("exactly-one-block.bin", REG, 512, ""),
        ("one-more-than-a-block.bin", REG, 513, ""),
        ("with space/and ünïcode.txt", REG, 7, ""),
    ], pax_headers={"comment": "granary fixture: a global header"})


def gnu():
    # GNU long names ('L') for the long paths and a long link name ('K') for the symlink.
    write_python("gnu", tarfile.GNU_FORMAT, [
        ("first.bin", REG, 100, ""),
        (LONG_ASCII, REG, 2000, ""),
        (LONG_UNICODE, REG, 33, ""),
        ("link-with-long-target", SYM, 0, "target/" + "t" * 120),
        ("last.bin", REG, 1, ""),
    ])


def ustar():
    # The 155-byte prefix field carries the directory part of names longer than 100 bytes.
    prefixed = "prefix-" + "p" * 120 + "/name-" + "n" * 80 + ".dat"
    assert 100 < len(prefixed) <= 256
    write_python("ustar", tarfile.USTAR_FORMAT, [
        ("plain.dat", REG, 10, ""),
        (prefixed, REG, 700, ""),
        ("dir/" + "x" * 99, REG, 3, ""),
    ])


def mixed():
    # Directories, links, devices, a fifo and an unknown type carrying data ('D', a GNU dumpdir), none of them
    # samples; "./" prefixes; zero-size members.
    members = [
        ("./", DIR, 0, ""),
        ("./a", DIR, 0, ""),
        ("./a/0001.txt", REG, 300, ""),
        ("./a/link-to-0001", SYM, 0, "0001.txt"),
        ("./a/hard-0001.txt", LNK, 0, "./a/0001.txt"),
        ("./a/empty.txt", REG, 0, ""),
        ("dev/null", tarfile.CHRTYPE, 0, ""),
        ("dev/sda", tarfile.BLKTYPE, 0, ""),
        ("dev/pipe", tarfile.FIFOTYPE, 0, ""),
        ("dumpdir", b"D", 100, ""),
        ("b/", DIR, 0, ""),
        ("b/0002.txt", REG, 1024, ""),
        ("b/empty-last.txt", REG, 0, ""),
    ]
    write_python("mixed", tarfile.GNU_FORMAT, members)


def webdataset():
    # Samples as webdataset's ShardWriter lays them out: consecutive members per key, several fields each.
    members = []
    for i, (jpg, seg) in enumerate([(1200, 700), (0, 513), (2048, 1)], start=1):
        key = "a/%04d" % i
        members += [(key + ".jpg", REG, jpg, ""), (key + ".cls", REG, 2, ""), (key + ".seg.png", REG, seg, "")]
    members += [
        ("a/__init__", REG, 5, ""),
        ("a/.hidden", REG, 6, ""),
        ("b.c/0004.d/x.json", REG, 17, ""),
        ("b.c/0004.d/x.txt", REG, 0, ""),
    ]
    write_python("webdataset", tarfile.PAX_FORMAT, members)


def zero_size():
    write_python("zero_size", tarfile.USTAR_FORMAT, [
        ("z/0001.empty", REG, 0, ""),
        ("z/0001.full", REG, 20, ""),
        ("z/0002.empty", REG, 0, ""),
    ])


def gnu_tar(fixture, fmt):
    """An archive written by GNU tar itself, made reproducible as its manual describes."""
    tar = shutil.which("tar") or "/usr/bin/tar"
    with tempfile.TemporaryDirectory() as tmp:
        root = os.path.join(tmp, "root")
        files = {
            "data/0001.jpg": 900,
            "data/0001.cls": 1,
            "data/0002.jpg": 0,
            "data/0002.cls": 1,
            "data/sub/" + "long-name-" * 11 + ".txt": 40,
            "data/ünïcode/日本語.txt": 9,
        }
        for name, size in files.items():
            path = os.path.join(root, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(content(name, size))
        os.symlink("0001.jpg", os.path.join(root, "data", "a-symlink"))
        os.symlink("x" * 150, os.path.join(root, "data", "a-long-symlink"))
        os.link(os.path.join(root, "data", "0001.cls"), os.path.join(root, "data", "hardlink.cls"))
        for dirpath, dirnames, filenames in os.walk(root):
            for n in dirnames + filenames:
                os.utime(os.path.join(dirpath, n), (MTIME, MTIME), follow_symlinks=False)
        args = [tar, "--format=" + fmt, "--sort=name", "--owner=0", "--group=0", "--numeric-owner",
                "--mtime=@%d" % MTIME, "--mode=u=rwX,go=rX", "-C", root, "-cf", os.path.join(HERE, fixture + ".tar"),
                "."]
        if fmt == "posix":
            args.insert(1, "--pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime")
        subprocess.run(args, check=True, env=dict(os.environ, LC_ALL="C.UTF-8"))
    write_expected(fixture)


if __name__ == "__main__":
    pax()
    gnu()
    ustar()
    mixed()
    webdataset()
    zero_size()
    gnu_tar("gnutar-gnu", "gnu")
    gnu_tar("gnutar-posix", "posix")
