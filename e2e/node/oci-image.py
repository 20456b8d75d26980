#!/usr/bin/env python3
"""Assemble a single-layer container image as a docker-archive tarball, without a container
engine (none runs on the CI machine, and no registry is reachable): `ctr -n k8s.io images
import` reads the result. Standard library only.

  oci-image.py --tag docker.io/library/adze:0.1.0 --out adze.tar --user 65532:65532 \\
      --file /path/adze-agent=/usr/local/bin/adze-agent --libs \\
      --file /etc/ssl/certs/ca-certificates.crt=/etc/ssl/certs/ca-certificates.crt \\
      --text /etc/passwd='nonroot:x:65532:65532::/home/nonroot:/sbin/nologin\\n' \\
      --symlink /bin/sh=busybox --entrypoint '["/usr/local/bin/adze-agent"]'

--libs adds every shared library `ldd` lists for the --file executables (and the dynamic
loader), at the paths ldd resolves, so the binaries run in the otherwise empty rootfs.
The tarball is deterministic for the same inputs (fixed mtimes, sorted entries).
"""
import argparse
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile

MTIME = 0


def die(msg):
    print(f"oci-image.py: {msg}", file=sys.stderr)
    sys.exit(1)


def split_pair(arg, flag):
    if "=" not in arg:
        die(f"{flag} {arg!r}: expected SRC=DEST")
    left, right = arg.split("=", 1)
    if not right:
        die(f"{flag} {arg!r}: empty right-hand side")
    return left, right


def ldd_libs(path):
    """Absolute paths of the shared libraries (and loader) `path` needs; [] for static."""
    out = subprocess.run(["ldd", path], capture_output=True, text=True)
    if out.returncode != 0:
        if "not a dynamic executable" in (out.stdout + out.stderr):
            return []
        die(f"ldd {path} failed: {out.stderr.strip()}")
    libs = []
    for line in out.stdout.splitlines():
        if "not found" in line:
            die(f"ldd {path}: a library is missing: {line.strip()}")
        m = re.search(r"(/\S+)", line)
        if m:
            libs.append(m.group(1))
    return libs


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tag", action="append", required=True, help="full image reference (repeatable)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--user", default="")
    ap.add_argument("--entrypoint", default="null", help="JSON list, or null")
    ap.add_argument("--cmd", default="null", help="JSON list, or null")
    ap.add_argument("--file", action="append", default=[], help="SRC=DEST (mode kept)")
    ap.add_argument("--text", action="append", default=[], help="DEST=CONTENT (\\n escapes)")
    ap.add_argument("--symlink", action="append", default=[], help="DEST=TARGET")
    ap.add_argument("--dir", action="append", default=[], help="DEST directory (mode 1777 for /tmp)")
    ap.add_argument("--libs", action="store_true")
    a = ap.parse_args()

    try:
        entrypoint = json.loads(a.entrypoint)
        cmd = json.loads(a.cmd)
    except json.JSONDecodeError as e:
        die(f"--entrypoint/--cmd must be JSON: {e}")

    entries = {}  # dest -> (kind, payload, mode)

    def add_dirs(dest):
        parts = dest.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/" + "/".join(parts[:i])
            entries.setdefault(d, ("dir", None, 0o1777 if d == "/tmp" else 0o755))

    files = []
    for f in a.file:
        src, dest = split_pair(f, "--file")
        if not os.path.isfile(src):
            die(f"--file {f!r}: {src} is not a file")
        files.append((os.path.realpath(src), dest))
    if a.libs:
        for src, _ in list(files):
            if os.access(src, os.X_OK):
                for lib in ldd_libs(src):
                    files.append((os.path.realpath(lib), lib))
    for src, dest in files:
        add_dirs(dest)
        entries[dest] = ("file", src, os.stat(src).st_mode & 0o7777)
    for t in a.text:
        dest, content = split_pair(t, "--text")[0], t.split("=", 1)[1]
        add_dirs(dest)
        entries[dest] = ("text", content.encode().decode("unicode_escape").encode(), 0o644)
    for s in a.symlink:
        dest, target = split_pair(s, "--symlink")
        add_dirs(dest)
        entries[dest] = ("symlink", target, 0o777)
    for d in a.dir:
        add_dirs(d + "/x")

    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for dest in sorted(entries):
            kind, payload, mode = entries[dest]
            ti = tarfile.TarInfo(dest.lstrip("/"))
            ti.mtime, ti.mode, ti.uid, ti.gid = MTIME, mode, 0, 0
            if kind == "dir":
                ti.type = tarfile.DIRTYPE
                tar.addfile(ti)
            elif kind == "symlink":
                ti.type, ti.linkname = tarfile.SYMTYPE, payload
                tar.addfile(ti)
            else:
                data = open(payload, "rb").read() if kind == "file" else payload
                ti.size = len(data)
                tar.addfile(ti, io.BytesIO(data))
    layer_bytes = layer.getvalue()
    diff_id = hashlib.sha256(layer_bytes).hexdigest()

    config = {
        "architecture": "amd64",
        "os": "linux",
        "created": "1970-01-01T00:00:00Z",
        "config": {
            "User": a.user,
            "Env": ["PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"],
            "Entrypoint": entrypoint,
            "Cmd": cmd,
            "WorkingDir": "/",
        },
        "rootfs": {"type": "layers", "diff_ids": [f"sha256:{diff_id}"]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "e2e/node/oci-image.py"}],
    }
    config_bytes = json.dumps(config, sort_keys=True).encode()
    config_name = hashlib.sha256(config_bytes).hexdigest() + ".json"
    manifest = [{"Config": config_name, "RepoTags": a.tag, "Layers": [f"{diff_id}/layer.tar"]}]

    tmp = a.out + ".tmp"
    with tarfile.open(tmp, mode="w") as out:
        for name, data in [
            (f"{diff_id}/layer.tar", layer_bytes),
            (config_name, config_bytes),
            ("manifest.json", json.dumps(manifest).encode()),
        ]:
            ti = tarfile.TarInfo(name)
            ti.size, ti.mtime, ti.mode = len(data), MTIME, 0o644
            out.addfile(ti, io.BytesIO(data))
    os.replace(tmp, a.out)
    print(f"{a.out}: {', '.join(a.tag)} ({len(layer_bytes) // 1024} KiB layer, {len(entries)} entries)")


if __name__ == "__main__":
    main()
