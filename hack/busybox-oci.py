#!/usr/bin/env python3
"""busybox-oci.py OUT.tar REF — writes an OCI image archive whose one layer
holds /bin/busybox and a few applet links, for `ctr images import`.
No registry is reachable here, so test images are built locally."""
import hashlib, io, json, sys, tarfile, time

out, ref = sys.argv[1], sys.argv[2]
blobs = {}

def blob(data: bytes) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    blobs[digest] = data
    return {"digest": digest, "size": len(data)}

def layer() -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as t:
        def add(name, data=None, link=None, mode=0o755, dir=False):
            ti = tarfile.TarInfo(name)
            ti.mtime, ti.mode, ti.uid, ti.gid = 0, mode, 0, 0
            if dir:
                ti.type = tarfile.DIRTYPE
            elif link:
                ti.type, ti.linkname = tarfile.SYMTYPE, link
            else:
                ti.size = len(data)
            t.addfile(ti, io.BytesIO(data) if data is not None else None)
        for d in ("bin", "etc", "tmp", "proc", "sys", "dev"):
            add(d, dir=True)
        add("bin/busybox", open("/bin/busybox", "rb").read())
        for a in ("sh", "sleep", "cat", "echo", "true", "false", "ls", "test"):
            add("bin/" + a, link="busybox")
        add("etc/passwd", b"root:x:0:0:root:/:/bin/sh\n", mode=0o644)
    return buf.getvalue()

lay = layer()
diff_id = "sha256:" + hashlib.sha256(lay).hexdigest()
config = blob(json.dumps({"architecture": "amd64", "os": "linux",
    "config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sleep", "2147483647"], "WorkingDir": "/"},
    "rootfs": {"type": "layers", "diff_ids": [diff_id]}}).encode())
manifest = blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": dict(mediaType="application/vnd.oci.image.config.v1+json", **config),
    "layers": [dict(mediaType="application/vnd.oci.image.layer.v1.tar", **blob(lay))]}).encode())
index = {"schemaVersion": 2, "manifests": [dict(mediaType="application/vnd.oci.image.manifest.v1+json",
    annotations={"io.containerd.image.name": ref, "org.opencontainers.image.ref.name": ref.rsplit(":", 1)[-1]},
    platform={"architecture": "amd64", "os": "linux"}, **manifest)]}
with tarfile.open(out, "w") as t:
    def put(name, data):
        ti = tarfile.TarInfo(name); ti.size, ti.mtime = len(data), int(time.time())
        t.addfile(ti, io.BytesIO(data))
    put("oci-layout", b'{"imageLayoutVersion":"1.0.0"}')
    put("index.json", json.dumps(index).encode())
    for d, data in blobs.items():
        put("blobs/sha256/" + d.split(":")[1], data)
