#!/usr/bin/env python3
"""The kubectl-partitioning archive for krew (tools/plugin-package): the binary, every
shared library the loader loads for it and the loader itself, taken from this machine's
Debian packages, with each package's copyright file; and krew's manifest with the
archive's sha256.

The binary is not patched. `kubectl-partitioning` at the archive's top is a POSIX sh
script that runs the bundled loader on the binary with --library-path set to the bundled
libraries, so neither the host's loader nor its libraries are used: it runs on any x86-64
Linux, whatever its glibc. Entries are sorted, owned by root and dated $SOURCE_DATE_EPOCH,
so one tree gives one archive (one sha256)."""

import argparse
import gzip
import hashlib
import io
import os
import sys
import tarfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oci_image  # noqa: E402  (its closure and package look-ups, shared with tools/image)

LAUNCHER = """#!/bin/sh
# kubectl-partitioning: runs the bundled binary with the bundled loader and libraries
# (lib/), never the host's. krew links this file into its bin folder: follow the link.
here=$(dirname "$(readlink -f "$0")")
exec "$here/lib/{loader}" --library-path "$here/lib" "$here/libexec/kubectl-partitioning" "$@"
"""

LICENSE = """kubectl-partitioning is part of gpu-partitioner
(https://github.com/silogen/gpu-partitioner); see its repository for its licence.

The shared libraries under lib/ and the loader come from Debian's packages, unmodified;
share/doc/PACKAGE/copyright is each package's licence, and share/doc/packages.txt lists
the packages and their versions.
"""


def entries(binary):
    """archive name -> (bytes, mode)"""
    out = {}
    with open(binary, "rb") as f:
        out["libexec/kubectl-partitioning"] = (f.read(), 0o755)
    loader = oci_image.interpreter(binary)
    libs = oci_image.closure(binary) + [loader]
    for lib in libs:
        with open(os.path.realpath(lib), "rb") as f:
            out["lib/" + os.path.basename(lib)] = (f.read(), 0o755)
    out["kubectl-partitioning"] = (
        LAUNCHER.format(loader=os.path.basename(loader)).encode(), 0o755)
    found = oci_image.owners(libs)
    missing = sorted(set(libs) - set(found))
    if missing:
        oci_image.die("no installed Debian package ships " + ", ".join(missing))
    packages = sorted(set(found.values()))
    for package in packages:
        name = package.split(":")[0]
        doc = "/usr/share/doc/%s/copyright" % name
        if not os.path.exists(doc):
            oci_image.die("%s: no copyright file %s" % (package, doc))
        with open(doc, "rb") as f:
            out["share/doc/%s/copyright" % name] = (f.read(), 0o644)
    version = oci_image.versions(packages)
    listing = "".join("%s %s\n" % (p.split(":")[0], version.get(p, version.get(p.split(":")[0], "?")))
                      for p in packages)
    out["share/doc/packages.txt"] = (listing.encode(), 0o644)
    out["LICENSE"] = (LICENSE.encode(), 0o644)
    return out


def write_archive(files, path, epoch):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
        # Every folder, parents before what they hold.
        parents = {os.path.dirname(n) for n in files} - {""}
        all_dirs = sorted({"/".join(d.split("/")[:i + 1])
                           for d in parents for i in range(d.count("/") + 1)})
        for d in all_dirs:
            info = tarfile.TarInfo(d)
            info.type, info.mode, info.mtime = tarfile.DIRTYPE, 0o755, epoch
            tar.addfile(info)
        for name in sorted(files):
            data, mode = files[name]
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, epoch
            tar.addfile(info, io.BytesIO(data))
    with open(path, "wb") as f:
        with gzip.GzipFile(fileobj=f, mode="wb", mtime=epoch, filename="") as gz:
            gz.write(raw.getvalue())
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--version", required=True)
    p.add_argument("--out", required=True, help="the archive to write")
    p.add_argument("--template", required=True, help="deploy/krew/partitioning.yaml.in")
    p.add_argument("--manifest", required=True, help="the krew manifest to write")
    p.add_argument("--uri", required=True, help="where users download the archive from")
    p.add_argument("--epoch", type=int, default=0)
    a = p.parse_args()
    sha = write_archive(entries(a.binary), a.out, a.epoch)
    with open(a.template) as f:
        manifest = f.read()
    manifest = manifest.replace("@VERSION@", a.version).replace("@URI@", a.uri).replace("@SHA256@", sha)
    with open(a.manifest, "w") as f:
        f.write(manifest)
    print("%s  %s" % (sha, a.out))


if __name__ == "__main__":
    main()
