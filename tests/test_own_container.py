"""Finding the container the runner runs in (``pointfail_runner.engine.own_container_id``), which the
served path uses to join its server's internal network when the runner itself is in a container (the
pristine machine of ``make ci-pristine``, a CI job container given the host's socket)."""

from __future__ import annotations

from docker.errors import NotFound

from pointfail_runner import engine

CID = "0763f515edfd1e28939511f231f7a88f597b31af645c1b9605d36021ce1120fc"
# Two lines of a real container's /proc/self/mountinfo (Docker 20.10, data root on /dev/vda).
IN_CONTAINER = (
    "168 140 0:52 / / rw,relatime master:9 - overlay overlay rw,lowerdir=/var/lib/docker/overlay2/l/X\n"
    f"186 169 254:0 /var/lib/docker/containers/{CID}/resolv.conf /etc/resolv.conf rw,relatime - ext4 /dev/vda rw\n"
    f"187 169 254:0 /var/lib/docker/containers/{CID}/hostname /etc/hostname rw,relatime - ext4 /dev/vda rw\n"
)
ON_HOST = (
    "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw,discard\n"
    "25 22 0:22 / /proc rw,nosuid,nodev,noexec,relatime shared:12 - proc proc rw\n"
    f"80 22 0:44 / /var/lib/docker/containers/{CID}/mounts/shm rw - tmpfs shm rw,size=65536k\n"
)


def test_the_id_comes_from_the_hostname_bind_mount(tmp_path):
    p = tmp_path / "mountinfo"
    p.write_text(IN_CONTAINER)
    assert engine.own_container_id(p) == CID


def test_a_host_with_containers_of_its_own_is_not_in_one(tmp_path):
    # The host's mounts name container folders too (each container's /dev/shm), but no hostname file.
    p = tmp_path / "mountinfo"
    p.write_text(ON_HOST)
    assert engine.own_container_id(p) is None


def test_missing_or_capped_mountinfo_is_none(tmp_path):
    assert engine.own_container_id(tmp_path / "absent") is None
    p = tmp_path / "mountinfo"
    filler = "25 22 0:22 / /proc rw - proc proc rw\n" * (engine.MAX_MOUNTINFO_BYTES // 36 + 1)
    p.write_text(filler + IN_CONTAINER)  # beyond the cap: not read
    assert engine.own_container_id(p) is None


class _Containers:
    def __init__(self, known):
        self.known = known

    def get(self, cid):
        if cid not in self.known:
            raise NotFound(f"No such container: {cid}")
        return self.known[cid]


class _Client:
    def __init__(self, known):
        self.containers = _Containers(known)


def test_own_container_is_the_engines_object_or_none(tmp_path):
    p = tmp_path / "mountinfo"
    p.write_text(IN_CONTAINER)
    me = object()
    assert engine.own_container(_Client({CID: me}), p) is me
    assert engine.own_container(_Client({}), p) is None  # another engine's container
    p.write_text(ON_HOST)
    assert engine.own_container(_Client({CID: me}), p) is None
