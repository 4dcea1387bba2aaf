#!/usr/bin/env python3
"""Writes a one-layer OCI image archive of static binaries, for `ctr images import`.

    pause_image.py --ref REF --out FILE.tar --entrypoint /pause /pause=path/to/pause [...]

Each PATH_IN_IMAGE=FILE argument puts FILE into the layer at PATH_IN_IMAGE, root-owned,
mode 0755. The archive is an OCI image layout (oci-layout, index.json, blobs/sha256/...)
whose index names the image REF (the io.containerd.image.name annotation, which
`ctr images import` uses as the image's name). Nothing can be pulled on the test machines:
the node of `tools/cluster up --with-node` runs its pause image and the tests' images from
archives this script writes.

The output is deterministic (fixed mtimes, uid/gid 0, sorted entries, canonical JSON): the
same inputs give the same bytes and so the same image digest.
"""
import argparse
import hashlib
import io
import json
import os
import platform
import sys
import tarfile

MTIME = 0  # 1970-01-01T00:00:00Z, for every entry and the config's `created`
ARCHES = {"x86_64": "amd64", "aarch64": "arm64"}


def canonical(obj):
    return json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()


def tar_bytes(entries):
    """entries: (name, bytes or None for a directory, mode), in order."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data, mode in entries:
            info = tarfile.TarInfo(name)
            info.mtime = MTIME
            info.uid = info.gid = 0
            info.uname = info.gname = "root"
            info.mode = mode
            if data is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def layer(files):
    """The layer tar: each file with its parent directories, sorted by path."""
    entries = {}
    for path, source in files:
        parts = path.strip("/").split("/")
        for i in range(1, len(parts)):
            entries.setdefault("/".join(parts[:i]) + "/", (None, 0o755))
        with open(source, "rb") as f:
            entries["/".join(parts)] = (f.read(), 0o755)
    return tar_bytes([(name, data, mode) for name, (data, mode) in sorted(entries.items())])


def tag_of(ref):
    last = ref.rsplit("/", 1)[-1]
    return last.rsplit(":", 1)[1] if ":" in last else "latest"


def descriptor(media_type, blob):
    return {"mediaType": media_type, "digest": "sha256:" + hashlib.sha256(blob).hexdigest(),
            "size": len(blob)}


def image_archive(ref, entrypoint, files, arch):
    layer_blob = layer(files)
    config = {
        "architecture": arch,
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {"Entrypoint": entrypoint, "Env": ["PATH=/"], "WorkingDir": "/"},
        "rootfs": {"type": "layers",
                   "diff_ids": ["sha256:" + hashlib.sha256(layer_blob).hexdigest()]},
    }
    config_blob = canonical(config)
    manifest_blob = canonical({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": descriptor("application/vnd.oci.image.config.v1+json", config_blob),
        "layers": [descriptor("application/vnd.oci.image.layer.v1.tar", layer_blob)],
    })
    manifest = descriptor("application/vnd.oci.image.manifest.v1+json", manifest_blob)
    manifest["platform"] = {"architecture": arch, "os": "linux"}
    manifest["annotations"] = {
        "io.containerd.image.name": ref,
        "org.opencontainers.image.ref.name": tag_of(ref),
    }
    index_blob = canonical({"schemaVersion": 2,
                            "mediaType": "application/vnd.oci.image.index.v1+json",
                            "manifests": [manifest]})
    blobs = sorted({hashlib.sha256(b).hexdigest(): b
                    for b in (layer_blob, config_blob, manifest_blob)}.items())
    return tar_bytes(
        [("blobs/", None, 0o755), ("blobs/sha256/", None, 0o755)]
        + [("blobs/sha256/" + digest, blob, 0o644) for digest, blob in blobs]
        + [("index.json", index_blob, 0o644),
           ("oci-layout", canonical({"imageLayoutVersion": "1.0.0"}), 0o644)])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ref", required=True, help="image name, e.g. gpu-partitioner.local/pause:1")
    p.add_argument("--out", required=True, help="archive to write")
    p.add_argument("--entrypoint", required=True, action="append",
                   help="the entrypoint's words, one per flag, e.g. --entrypoint /pause")
    p.add_argument("--arch", default=ARCHES.get(platform.machine(), platform.machine()))
    p.add_argument("files", nargs="+", metavar="PATH_IN_IMAGE=FILE")
    args = p.parse_args()
    files = []
    for spec in args.files:
        path, sep, source = spec.partition("=")
        if not sep or not path.startswith("/") or not source:
            p.error("want PATH_IN_IMAGE=FILE with an absolute PATH_IN_IMAGE, got %r" % spec)
        files.append((path, source))
    data = image_archive(args.ref, args.entrypoint, files, args.arch)
    with open(args.out + ".tmp", "wb") as f:
        f.write(data)
    os.replace(args.out + ".tmp", args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
