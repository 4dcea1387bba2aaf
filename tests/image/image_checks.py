#!/usr/bin/env python3
"""Checks of tools/image's output for image_test.sh; each prints what it saw and exits
non-zero, with the reason, on the first thing that is wrong.

  image_checks.py layout LAYOUT DIGEST TAG     descriptors match their blobs
  image_checks.py config LAYOUT USER METRICS HEALTH VERSION REVISION EPOCH
  image_checks.py layer LAYOUT EPOCH           entries sorted, root-owned, never setuid
  image_checks.py needed ROOT                  every ELF file's libraries are in ROOT
  image_checks.py same-tree A B EPOCH          B holds A's files; every time in B is EPOCH
"""

import gzip
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import time


def blob_path(layout, digest):
    algorithm, hexdigest = digest.split(":")
    assert algorithm == "sha256", digest
    return os.path.join(layout, "blobs", "sha256", hexdigest)


def manifest_of(layout):
    index = json.load(open(os.path.join(layout, "index.json")))
    return json.load(open(blob_path(layout, index["manifests"][0]["digest"])))


def check_layout(layout, digest, tag):
    used = set()

    def load(descriptor, media_type):
        assert descriptor["mediaType"] == media_type, descriptor
        path = blob_path(layout, descriptor["digest"])
        data = open(path, "rb").read()
        assert "sha256:" + hashlib.sha256(data).hexdigest() == descriptor["digest"], descriptor
        assert len(data) == descriptor["size"], (len(data), descriptor)
        used.add(os.path.basename(path))
        return data

    assert json.load(open(os.path.join(layout, "oci-layout"))) == {"imageLayoutVersion": "1.0.0"}
    index = json.load(open(os.path.join(layout, "index.json")))
    assert index["schemaVersion"] == 2 and len(index["manifests"]) == 1, index
    entry = index["manifests"][0]
    assert entry["digest"] == digest, (entry["digest"], digest)
    assert entry["annotations"]["org.opencontainers.image.ref.name"] == tag, entry
    assert entry["platform"] == {"architecture": "amd64", "os": "linux"}, entry
    manifest = json.loads(load(entry, "application/vnd.oci.image.manifest.v1+json"))
    assert manifest["schemaVersion"] == 2, manifest
    config = json.loads(load(manifest["config"], "application/vnd.oci.image.config.v1+json"))
    (layer,) = manifest["layers"]
    data = load(layer, "application/vnd.oci.image.layer.v1.tar+gzip")
    diff_id = "sha256:" + hashlib.sha256(gzip.decompress(data)).hexdigest()
    assert config["rootfs"] == {"type": "layers", "diff_ids": [diff_id]}, config["rootfs"]
    assert used == set(os.listdir(os.path.join(layout, "blobs", "sha256"))), "unreferenced blobs"
    print("manifest", digest, "layer", layer["size"], "bytes")


def check_config(layout, user, metrics, health, version, revision, epoch):
    image = json.load(open(blob_path(layout, manifest_of(layout)["config"]["digest"])))
    c = image["config"]
    uid, gid = c["User"].split(":")
    assert uid.isdigit() and int(uid) != 0 and uid == user, (c["User"], user)
    assert gid.isdigit() and int(gid) != 0, c["User"]
    assert c["Entrypoint"] == ["/usr/local/bin/gpu-partitioner"], c["Entrypoint"]
    assert set(c["ExposedPorts"]) == {metrics + "/tcp", health + "/tcp"}, c["ExposedPorts"]
    assert c["Labels"]["org.opencontainers.image.version"] == version, c["Labels"]
    assert c["Labels"]["org.opencontainers.image.revision"] == revision, c["Labels"]
    created = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch)))
    assert image["created"] == created, (image["created"], created)
    print(c["User"], c["Entrypoint"], sorted(c["ExposedPorts"]))


def check_layer(layout, epoch):
    members = tarfile.open(blob_path(layout, manifest_of(layout)["layers"][0]["digest"])).getmembers()
    names = [m.name for m in members]
    assert names == sorted(names), "entries not sorted"
    for m in members:
        assert m.uid == 0 and m.gid == 0, (m.name, m.uid, m.gid)
        assert m.mode & 0o7000 == 0, (m.name, oct(m.mode))
        assert m.isfile() or m.isdir() or m.issym(), (m.name, m.type)
        assert m.issym() or m.mode & 0o444 == 0o444, (m.name, oct(m.mode))
        assert m.mtime == int(epoch), (m.name, m.mtime)
        assert not m.name.startswith("/") and ".." not in m.name.split("/"), m.name
    print(len(members), "entries")


def in_root(root, path):
    """`path` resolved inside `root` as after chroot (absolute links from `root`), or None."""
    parts, done = path.strip("/").split("/"), []
    for _ in range(1000):
        if not parts:
            full = os.path.join(root, *done)
            return full if os.path.exists(full) and not os.path.islink(full) else None
        part = parts.pop(0)
        here = os.path.join(root, *done, part)
        if os.path.islink(here):
            target = os.readlink(here)
            parts = target.strip("/").split("/") + parts
            done = [] if target.startswith("/") else done
        elif part == "..":
            done = done[:-1]
        elif part not in ("", "."):
            done.append(part)
    return None  # a loop of links


def check_needed(root):
    """readelf, not ldd: an independent reading of what the loader needs, from the
    files in the layer only, found where the loader looks without an ld.so.cache."""
    elves = 0
    for base, _, files in os.walk(root):
        for name in files:
            path = os.path.join(base, name)
            with open(path, "rb") as f:
                if f.read(4) != b"\x7fELF":
                    continue
            elves += 1
            dynamic = subprocess.run(["readelf", "-d", path], capture_output=True, text=True).stdout
            for lib in re.findall(r"\(NEEDED\).*\[(.*)\]", dynamic):
                dirs = ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu")
                assert any(in_root(root, d + "/" + lib) for d in dirs), (path, lib)
    binary = os.path.join(root, "usr/local/bin/gpu-partitioner")
    program = subprocess.run(["readelf", "-l", binary], capture_output=True, text=True).stdout
    (loader,) = re.findall(r"interpreter: (.*)\]", program)
    assert in_root(root, loader), loader
    assert elves >= 10, elves
    print(elves, "ELF files, every NEEDED library present; the loader", loader)


def listing(top):
    out = {}
    for base, dirs, files in os.walk(top):
        for name in dirs + files:
            full = os.path.join(base, name)
            if os.path.islink(full):
                what, mode = "-> " + os.readlink(full), None
            elif os.path.isdir(full):
                what, mode = "dir", oct(os.lstat(full).st_mode & 0o7777)
            else:
                what = hashlib.sha256(open(full, "rb").read()).hexdigest()
                mode = oct(os.lstat(full).st_mode & 0o7777)
            out[os.path.relpath(full, top)] = (what, mode)
    return out


def check_same_tree(a, b, epoch):
    left, right = listing(a), listing(b)
    assert left == right, sorted(set(left.items()) ^ set(right.items()))[:10]
    times = {os.lstat(os.path.join(b, p)).st_mtime for p in right}
    assert times == {int(epoch)}, times
    print(len(right), "entries, the same in both")


CHECKS = {
    "layout": check_layout,
    "config": check_config,
    "layer": check_layer,
    "needed": check_needed,
    "same-tree": check_same_tree,
}

if __name__ == "__main__":
    CHECKS[sys.argv[1]](*sys.argv[2:])
