#!/usr/bin/env python3
"""The operator's root file system and OCI image, from this machine's Debian packages.

  oci_image.py rootfs --binary FILE --dir DIR [--epoch N]
  oci_image.py image  --binary FILE --out DIR --tag REF --version V --revision R --epoch N
  oci_image.py static --ref REF --out FILE.tar --entrypoint WORD... PATH_IN_IMAGE=FILE...

Both write the same entries (root_entries): the binary, the shared libraries it loads
(its closure, as the dynamic loader resolves it) and the loader, tzdata's zoneinfo (change
windows name IANA zones), a CA bundle, /etc/passwd and /etc/group with the user 65532,
the copyright file of every Debian package a file comes from, and a list of those files
with their package and version. Nothing is downloaded: every file but the binary and the
few written here comes from an installed package.

`image` writes an OCI image layout (oci-layout, index.json, blobs/sha256/) into DIR/layout
and the same as a tar (an oci-archive) into DIR/image.tar. Every byte is a function of the
inputs: entries sorted, owned by 0:0, modes normalised, every mtime the epoch, JSON with
sorted keys, gzip without a name or time. The same binary, packages and epoch give the
same manifest digest.

`static` writes an image archive of static binaries alone (the test node's pause image and
the tests' probes): nothing can be pulled on the test machines.
"""

import argparse
import gzip
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import tarfile
import tempfile
import time

USER = 65532
BINARY_PATH = "usr/local/bin/gpu-partitioner"
PACKAGES_PATH = "usr/share/gpu-partitioner/packages.txt"
CA_BUNDLE_PATH = "etc/ssl/certs/ca-certificates.crt"
PORTS = ("8080/tcp", "8081/tcp")  # --metrics-addr and --health-addr in the chart
DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

# Debian architecture -> OCI platform (architecture, variant).
PLATFORMS = {
    "amd64": ("amd64", None),
    "arm64": ("arm64", "v8"),
    "armhf": ("arm", "v7"),
    "ppc64el": ("ppc64le", None),
    "s390x": ("s390x", None),
}

MANIFEST_TYPE = "application/vnd.oci.image.manifest.v1+json"
CONFIG_TYPE = "application/vnd.oci.image.config.v1+json"
LAYER_TYPE = "application/vnd.oci.image.layer.v1.tar+gzip"
INDEX_TYPE = "application/vnd.oci.image.index.v1+json"


def die(message):
    sys.exit("oci_image: error: " + message)


def run(*argv):
    env = {k: v for k, v in os.environ.items() if not k.startswith("LD_")}
    env["LC_ALL"] = "C"
    done = subprocess.run(argv, capture_output=True, text=True, env=env)
    if done.returncode != 0:
        die("%s failed: %s" % (" ".join(argv), done.stderr.strip()))
    return done.stdout


# -- entries --


class Entry:
    """One file of the root file system. kind: dir, file (from `source` or `data`), link."""

    def __init__(self, kind, mode, source=None, data=None, target=None):
        self.kind, self.mode, self.source, self.data, self.target = kind, mode, source, data, target

    def content(self):
        if self.data is not None:
            return self.data
        with open(self.source, "rb") as f:
            return f.read()


class Root:
    """The entries by path (relative, no leading slash), and the host paths they came from."""

    def __init__(self):
        self.entries = {}
        self.sources = {}  # image path -> the host files its content comes from

    def _parents(self, path):
        parent = os.path.dirname(path)
        if parent and parent not in self.entries:
            self._parents(parent)
            self.entries[parent] = Entry("dir", 0o755)

    def add_data(self, path, data, mode=0o644):
        self._parents(path)
        self.entries[path] = Entry("file", mode, data=data)

    def add_host_file(self, host, path, mode=None):
        st = os.stat(host)
        self._parents(path)
        self.entries[path] = Entry("file", mode if mode is not None else file_mode(st), source=host)

    def add_host_path(self, host):
        """Adds `host` at the same path, as the loader or a reader reaches it: every
        symbolic link on the way (/lib -> usr/lib, libfoo.so.1 -> libfoo.so.1.2) is added
        as the same link, then what it points at."""
        assert os.path.isabs(host)
        parts = host.strip("/").split("/")
        done = ""
        for i, part in enumerate(parts):
            here = done + "/" + part
            st = os.lstat(here)
            path = here[1:]
            if stat.S_ISLNK(st.st_mode):
                target = os.readlink(here)
                self._parents(path)
                self.entries[path] = Entry("link", 0o777, target=target)
                if not os.path.isdir(here):  # /lib -> usr/lib is layout, not a package's file
                    self.sources[path] = [here]
                rest = "/".join(parts[i + 1 :])
                resolved = os.path.normpath(os.path.join(os.path.dirname(here), target))
                self.add_host_path(resolved + ("/" + rest if rest else ""))
                return
            if stat.S_ISDIR(st.st_mode):
                if path not in self.entries:
                    self._parents(path)
                    self.entries[path] = Entry("dir", 0o755)
            elif stat.S_ISREG(st.st_mode) and i == len(parts) - 1:
                self.add_host_file(here, path)
                self.sources[path] = [here]
            else:
                die("%s: neither a directory, a regular file nor a link" % here)
            done = here

    def add_host_entry(self, host):
        """Adds `host` as it is: a link stays a link, not followed."""
        st = os.lstat(host)
        path = host.lstrip("/")
        self._parents(path)
        if stat.S_ISDIR(st.st_mode):
            self.entries.setdefault(path, Entry("dir", 0o755))
            return
        if stat.S_ISLNK(st.st_mode):
            self.entries[path] = Entry("link", 0o777, target=os.readlink(host))
        elif stat.S_ISREG(st.st_mode):
            self.add_host_file(host, path)
        else:
            die("%s: neither a directory, a regular file nor a link" % host)
        self.sources[path] = [host]


def file_mode(st):
    # Readable by everyone, executable where the package made it so; never setuid/setgid.
    return 0o755 if st.st_mode & 0o111 else 0o644


# -- what the binary needs --


def interpreter(binary):
    for line in run("readelf", "-l", binary).splitlines():
        if "Requesting program interpreter:" in line:
            return line.split(":", 1)[1].strip().rstrip("]").strip()
    die("%s: no program interpreter (a static binary needs no image of this kind)" % binary)


def closure(binary):
    """The shared libraries the loader loads for `binary`, by host path: ldd lists the
    whole closure (NEEDED entries of NEEDED entries), resolved as the loader would."""
    libs = []
    for line in run("ldd", binary).splitlines():
        words = line.split()
        if "=>" in words:
            name, path = words[0], words[2]
            if path == "not":
                die("%s: %s not found" % (binary, name))
            libs.append(path)
    if not libs:
        die("%s: ldd found no shared library" % binary)
    return libs


def aliases(path):
    """The names dpkg may know a file by: with merged /usr, /lib/x is /usr/lib/x."""
    yield path
    if path.startswith("/usr/"):
        yield path[4:]
    else:
        yield "/usr" + path


def owners(host_paths):
    """host path -> Debian package, for each path some installed package ships."""
    host_paths = list(host_paths)
    if not host_paths:
        return {}
    candidates = sorted({a for p in host_paths for a in aliases(p)})
    # Exits non-zero when some name is unknown: the other names are still answered.
    env = {**os.environ, "LC_ALL": "C"}
    done = subprocess.run(["dpkg-query", "-S"] + candidates, capture_output=True, text=True, env=env)
    by_name = {}
    for line in done.stdout.splitlines():
        if line.startswith("diversion ") or ": " not in line:
            continue
        packages, name = line.split(": ", 1)
        by_name[name] = packages.split(", ")[0]
    result = {}
    for p in host_paths:
        for a in aliases(p):
            if a in by_name:
                result[p] = by_name[a]
                break
    return result


def versions(packages):
    out = run("dpkg-query", "-W", "-f=${binary:Package}\t${Version}\n", *sorted(packages))
    found = dict(line.split("\t") for line in out.splitlines())
    # dpkg-query names a multi-arch package with its :arch; the lookup is by plain name too.
    return {**found, **{k.split(":")[0]: v for k, v in found.items()}}


def package_files(package):
    return run("dpkg-query", "-L", package).splitlines()


# -- the root file system --


def root_entries(binary):
    root = Root()
    root.add_host_file(binary, BINARY_PATH, mode=0o755)
    root.add_host_path(interpreter(binary))
    for lib in closure(binary):
        root.add_host_path(lib)

    # Change windows name IANA zones (libdate-tz reads /usr/share/zoneinfo). `localtime`
    # points at the host's /etc/localtime; the operator refuses that name anyway.
    for f in package_files("tzdata"):
        if f.startswith("/usr/share/zoneinfo/") and f != "/usr/share/zoneinfo/localtime":
            root.add_host_entry(f)

    # libcurl checks a server without a CA of its own in the kubeconfig, and any HTTPS
    # proxy, against this bundle. Made from the package's certificates (all of them, as
    # Debian's default configuration enables them), not copied from /etc/ssl/certs, which
    # holds the build machine's local additions too.
    certs = sorted(
        f
        for f in package_files("ca-certificates")
        if f.startswith("/usr/share/ca-certificates/") and f.endswith(".crt")
    )
    bundle = b"".join(ensure_newline(open(c, "rb").read()) for c in certs)
    root.add_data(CA_BUNDLE_PATH, bundle)
    root.sources[CA_BUNDLE_PATH] = certs

    # A numeric user: runAsNonRoot can only verify a numeric UID (the chart runs 65532).
    passwd = "root:x:0:0:root:/root:/usr/sbin/nologin\n"
    passwd += "gpu-partitioner:x:%d:%d::/nonexistent:/usr/sbin/nologin\n" % (USER, USER)
    root.add_data("etc/passwd", passwd.encode())
    root.add_data("etc/group", ("root:x:0:\ngpu-partitioner:x:%d:\n" % USER).encode())
    # Names from /etc/hosts (the pod's hostAliases) before DNS, as on Debian; glibc's
    # default without this file asks DNS first.
    root.add_data("etc/nsswitch.conf", b"hosts: files dns\n")

    # The licence of every package a file comes from, so the image may be redistributed.
    # A copyright file may be reached through another package's doc directory
    # (libstdc++6 -> gcc-12-base): that package's licence is added in turn.
    found = owners(h for hosts in root.sources.values() for h in hosts)
    licensed = set()
    while set(found.values()) - licensed:
        for package in sorted(set(found.values()) - licensed):
            licensed.add(package)
            doc = "/usr/share/doc/%s/copyright" % package.split(":")[0]
            if not os.path.exists(doc):
                die("%s: no copyright file %s" % (package, doc))
            root.add_host_path(doc)
        found.update(owners(h for hosts in root.sources.values() for h in hosts if h not in found))

    unowned = sorted(h for hosts in root.sources.values() for h in hosts if h not in found)
    if unowned:
        die("no installed Debian package ships " + ", ".join(unowned))
    root.add_data(PACKAGES_PATH, packages_list(root, found))
    return root


def ensure_newline(data):
    return data if data.endswith(b"\n") else data + b"\n"


def packages_list(root, found):
    version = versions(set(found.values()))
    lines = [
        "# Every file of this image that comes from a Debian package: path, package, version.",
        "# The package's licence is /usr/share/doc/PACKAGE/copyright.",
    ]
    for path, hosts in sorted(root.sources.items()):
        for package in sorted({found[h] for h in hosts}):
            lines.append("/%s\t%s\t%s" % (path, package, version[package]))
    return ("\n".join(lines) + "\n").encode()


def write_rootfs(root, directory, epoch):
    if os.path.exists(directory) and os.listdir(directory):
        die("%s exists and is not empty" % directory)
    os.makedirs(directory, exist_ok=True)
    for path in sorted(root.entries):
        e = root.entries[path]
        dest = os.path.join(directory, path)
        if e.kind == "dir":
            os.makedirs(dest, exist_ok=True)
        elif e.kind == "link":
            os.symlink(e.target, dest)
        else:
            with open(dest, "wb") as f:
                f.write(e.content())
        if e.kind != "link":
            os.chmod(dest, e.mode)
    # Bottom-up, so that a directory's time is not changed by writing into it afterwards.
    for path in sorted(root.entries, reverse=True):
        os.utime(os.path.join(directory, path), (epoch, epoch), follow_symlinks=False)
    os.utime(directory, (epoch, epoch))


# -- the image --


def layer_tar(root, epoch, out):
    """Writes the layer's uncompressed tar to the file object `out`."""
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(root.entries):
            e = root.entries[path]
            info = tarfile.TarInfo(path)
            info.mode, info.mtime = e.mode, epoch
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            if e.kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif e.kind == "link":
                info.type, info.linkname = tarfile.SYMTYPE, e.target
                tar.addfile(info)
            else:
                data = e.content()
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))


def write_blob(blobs, data):
    digest = hashlib.sha256(data).hexdigest()
    with open(os.path.join(blobs, digest), "wb") as f:
        f.write(data)
    return "sha256:" + digest, len(data)


def canonical_json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def rfc3339(epoch):
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(epoch))


def write_image(root, out, archive, tag, config, annotations, epoch):
    """Writes `root` as a one-layer image: the layout into the directory `out` (replaced)
    and its oci-archive into the file `archive`. `config` is the image config's "config"
    (user, entrypoint, ...); `annotations` go on the manifest. Returns the manifest digest."""
    if os.path.exists(out):
        shutil.rmtree(out)
    blobs = os.path.join(out, "blobs", "sha256")
    os.makedirs(blobs)

    with tempfile.TemporaryFile() as raw:
        layer_tar(root, epoch, raw)
        raw.seek(0)
        diff_id = hashlib.sha256()
        packed = io.BytesIO()
        # No file name and time 0 in the gzip header: the same tar gives the same bytes.
        with gzip.GzipFile(filename="", mode="wb", fileobj=packed, mtime=0, compresslevel=9) as gz:
            for chunk in iter(lambda: raw.read(1 << 20), b""):
                diff_id.update(chunk)
                gz.write(chunk)
    layer_digest, layer_size = write_blob(blobs, packed.getvalue())

    arch, variant = PLATFORMS.get(run("dpkg", "--print-architecture").strip(), (None, None))
    if arch is None:
        die("no OCI platform known for this Debian architecture")
    platform = {"architecture": arch, "os": "linux", **({"variant": variant} if variant else {})}
    created = rfc3339(epoch)
    image_config = {
        **platform,
        "created": created,
        "config": config,
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + diff_id.hexdigest()]},
        "history": [{"created": created, "created_by": "tools/lib/oci_image.py"}],
    }
    config_digest, config_size = write_blob(blobs, canonical_json(image_config))
    manifest = {
        "schemaVersion": 2,
        "mediaType": MANIFEST_TYPE,
        "config": {"mediaType": CONFIG_TYPE, "digest": config_digest, "size": config_size},
        "layers": [{"mediaType": LAYER_TYPE, "digest": layer_digest, "size": layer_size}],
        "annotations": {"org.opencontainers.image.created": created, **annotations},
    }
    manifest_digest, manifest_size = write_blob(blobs, canonical_json(manifest))
    index = {
        "schemaVersion": 2,
        "mediaType": INDEX_TYPE,
        "manifests": [
            {
                "mediaType": MANIFEST_TYPE,
                "digest": manifest_digest,
                "size": manifest_size,
                "platform": platform,
                "annotations": {
                    "org.opencontainers.image.ref.name": tag,
                    # containerd names an imported image by this; by ref.name alone it
                    # would be "gpu-partitioner:TAG", which the kubelet, looking for
                    # docker.io/library/gpu-partitioner:TAG, does not find.
                    "io.containerd.image.name": normalized_reference(tag),
                },
            }
        ],
    }
    with open(os.path.join(out, "index.json"), "wb") as f:
        f.write(canonical_json(index))
    with open(os.path.join(out, "oci-layout"), "wb") as f:
        f.write(canonical_json({"imageLayoutVersion": "1.0.0"}))
    write_archive(out, archive, epoch)
    return manifest_digest


def operator_config(version, revision):
    return {
        "User": "%d:%d" % (USER, USER),
        "Entrypoint": ["/" + BINARY_PATH],
        "Env": [DEFAULT_PATH],
        "ExposedPorts": {p: {} for p in PORTS},
        "Labels": {
            "org.opencontainers.image.version": version,
            "org.opencontainers.image.revision": revision,
            "org.opencontainers.image.title": "gpu-partitioner",
        },
        "WorkingDir": "/",
    }


def static_root(specs):
    """PATH_IN_IMAGE=FILE specs (static binaries, for the test node's images): each file
    root-owned, mode 0755, and nothing else."""
    root = Root()
    for spec in specs:
        path, sep, host = spec.partition("=")
        if not sep or not path.startswith("/") or not host:
            die("want PATH_IN_IMAGE=FILE with an absolute PATH_IN_IMAGE, got %r" % spec)
        root.add_host_file(host, path.lstrip("/"), mode=0o755)
    return root


def normalized_reference(tag):
    """docker.io/library/NAME:TAG for a short name, as kubelet and crictl look it up."""
    first = tag.split("/")[0]
    has_registry = "/" in tag and ("." in first or ":" in first or first == "localhost")
    if has_registry:
        return tag
    return "docker.io/" + (tag if "/" in tag else "library/" + tag)


def write_archive(layout, archive, epoch):
    """The layout as a tar (oci-archive): the same rules as the layer."""
    paths = []
    for base, dirs, files in os.walk(layout):
        dirs.sort()
        for name in dirs + sorted(files):
            paths.append(os.path.relpath(os.path.join(base, name), layout))
    with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as tar:
        for path in sorted(paths):
            full = os.path.join(layout, path)
            info = tarfile.TarInfo(path)
            info.mtime, info.uid, info.gid, info.uname, info.gname = epoch, 0, 0, "", ""
            if os.path.isdir(full):
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            else:
                info.mode, info.size = 0o644, os.path.getsize(full)
                with open(full, "rb") as f:
                    tar.addfile(info, f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rootfs = sub.add_parser("rootfs", help="write the root file system into a directory")
    rootfs.add_argument("--binary", required=True)
    rootfs.add_argument("--dir", required=True)
    rootfs.add_argument("--epoch", type=int, default=0, help="every file's mtime")
    image = sub.add_parser("image", help="write an OCI image layout and its archive")
    image.add_argument("--binary", required=True)
    image.add_argument("--out", required=True)
    image.add_argument("--tag", required=True)
    image.add_argument("--version", required=True)
    image.add_argument("--revision", required=True)
    image.add_argument("--epoch", type=int, required=True)
    static = sub.add_parser("static", help="write an image archive of static binaries")
    static.add_argument("--ref", required=True, help="e.g. gpu-partitioner.local/pause:1")
    static.add_argument("--out", required=True, help="the oci-archive to write")
    static.add_argument("--entrypoint", required=True, action="append",
                        help="the entrypoint's words, one per flag")
    static.add_argument("files", nargs="+", metavar="PATH_IN_IMAGE=FILE")
    args = parser.parse_args()

    if args.command == "static":
        with tempfile.TemporaryDirectory() as tmp:
            write_image(static_root(args.files), os.path.join(tmp, "layout"), args.out + ".tmp",
                        args.ref, {"Entrypoint": args.entrypoint, "Env": ["PATH=/"],
                                   "WorkingDir": "/"}, {}, 0)
        os.replace(args.out + ".tmp", args.out)
        return
    root = root_entries(args.binary)
    if args.command == "rootfs":
        write_rootfs(root, args.dir, args.epoch)
    else:
        annotations = {"org.opencontainers.image.version": args.version,
                       "org.opencontainers.image.revision": args.revision}
        digest = write_image(root, os.path.join(args.out, "layout"),
                             os.path.join(args.out, "image.tar"), args.tag,
                             operator_config(args.version, args.revision), annotations, args.epoch)
        print(digest)


if __name__ == "__main__":
    main()
