"""Direct networks: tori and meshes, hypercubes, dragonflies.

In all three every host hangs off a router; routers are the fabric's switches.

3D torus (Blue Gene/P 8x8x16, Cray XT3 11x12x16), mesh, or a mix (Red Storm:
mesh in X and Y, torus in Z)::

      r(0,1)--r(1,1)--r(2,1)--     each router: its hosts, and one cable to the
        |       |       |          next router along each dimension; a torus
      r(0,0)--r(1,0)--r(2,0)--     also joins the last to the first
"""

from __future__ import annotations

from itertools import product
from math import prod
from typing import Sequence

import numpy as np

from fabscope.errors import FabricError
from fabscope.fabric.generators.size import Size
from fabscope.fabric.model import Fabric, Level

#: Blue Gene/P torus link, seed 002 (0.425 GB/s)
BGP_LINK = 425e6
#: Cray XT3 SeaStar link, seed 002 (3.8 GB/s)
XT3_LINK = 3.8e9
#: Red Storm MPI inter-node bandwidth, seed 004 (2.04 GB/s)
RED_STORM_LINK = 2.04e9
ROUTER_LATENCY_S = 50e-9


def torus(dims: Sequence[int], *, periodic: bool | Sequence[bool] = True, hosts_per_router: int = 1,
          capacity: float = BGP_LINK, latency: float = ROUTER_LATENCY_S, cores: int = 4,
          sockets: int = 1, name: str | None = None) -> Fabric:
    """A torus, mesh or mix of the two over ``dims``.

    A dimension of size k > 2 that wraps adds k cables per line of routers; size 2
    adds one (both neighbours are the same router); size 1 adds none.

    >>> t = torus((4, 4, 4))                # k^n routers, n k^n router cables
    >>> t.n_switches, t.n_links // 2 - t.n_hosts
    (64, 192)
    >>> torus((3, 3), periodic=False).n_links // 2 - 9     # mesh: 2 * 3 * 2 cables
    12
    """
    dims = tuple(int(d) for d in dims)
    if not dims or min(dims) < 1:
        raise FabricError(f"torus dimensions must be positive, got {'x'.join(map(str, dims))}")
    per = (bool(periodic),) * len(dims) if isinstance(periodic, (bool, int, np.bool_)) else tuple(bool(p) for p in periodic)
    if len(per) != len(dims):
        raise FabricError(f"periodic has {len(per)} entries for {len(dims)} dimensions")
    if hosts_per_router < 1:
        raise FabricError("hosts_per_router must be at least 1")
    coords = np.indices(dims, dtype=np.int32).reshape(len(dims), -1).T     # routers in C order
    n_r = len(coords)
    n_h = n_r * hosts_per_router
    # cables as arrays (tests/fabric/test_vectorised.py holds them equal to building them one by one):
    # host i to its router, then per dimension every router to its + neighbour (the wrap last in
    # each line of a torus); ports: a host's NIC is 1, a router numbers its hosts 1.., then per
    # dimension its + cable before its - cable, so that OpenSM's dor (first least-hop port in port
    # order) goes + half-way round an even ring
    h = np.arange(n_h, dtype=np.int64)
    ca, cb = [h], [n_h + h // hosts_per_router]
    pa, pb = [np.ones(n_h, np.int64)], [h % hosts_per_router + 1]
    has = np.zeros((n_r, len(dims), 2), bool)              # router has a + / - cable along dimension d
    along = []
    stride = n_r
    for d, k in enumerate(dims):
        stride //= k
        if k == 1:
            continue
        c = coords[:, d]
        wrap = per[d] and k > 2
        r = np.flatnonzero((c + 1 < k) | (wrap & (c == k - 1)))
        nb = np.where(c[r] + 1 < k, r + stride, r - (k - 1) * stride)
        has[r, d, 0] = True
        has[nb, d, 1] = True
        along.append((d, r, nb))
    port = hosts_per_router + np.cumsum(has.reshape(n_r, -1), axis=1).reshape(has.shape)
    for d, r, nb in along:
        ca.append(n_h + r)
        cb.append(n_h + nb)
        pa.append(port[r, d, 0])
        pb.append(port[nb, d, 1])
    link_src, link_dst = _directed(np.concatenate(ca), np.concatenate(cb))
    n_links = len(link_src)
    sp = np.empty(n_links, np.int16)
    sp[0::2], sp[1::2] = np.concatenate(pa), np.concatenate(pb)
    # routers in C order are the coordinates' product, last fastest (a quarter of the time of
    # formatting each row of coords)
    names = list(map("nid%05d".__mod__, range(n_h)))
    names += ["r(" + ",".join(c) + ")" for c in product(*([str(i) for i in range(k)] for k in dims))]
    host_coords = np.repeat(coords, hosts_per_router, axis=0)
    groups, levels = {}, ()
    if hosts_per_router > 1:
        groups = {"router": np.arange(n_h) // hosts_per_router}
        levels = (Level("router", "Same Router"),)
    return Fabric(
        name=name or ("torus" if all(per) else "mesh") + f"({'x'.join(map(str, dims))})",
        node_names=tuple(names), n_hosts=n_h, link_src=link_src, link_dst=link_dst,
        link_capacity=np.full(n_links, float(capacity)), link_latency=np.full(n_links, float(latency)),
        link_src_port=sp, link_dst_port=sp[np.arange(n_links) ^ 1], switch_level=np.zeros(n_r, np.int16),
        coords=host_coords, dims=dims, periodic=per, groups=groups, levels=levels,
        host_cores=np.full(n_h, cores), host_sockets=np.full(n_h, sockets),
        params={"generator": "torus", "dims": list(dims), "periodic": list(per),
                "hosts_per_router": hosts_per_router, "capacity": capacity, "latency": latency,
                "cores": cores},
    )


def torus_size(dims: Sequence[int], *, periodic: bool | Sequence[bool] = True, hosts_per_router: int = 1,
               **_: object) -> Size:
    """What :func:`torus` would build, counted (Python integers: nothing is allocated).

    >>> torus_size((4, 4, 4)).links == torus((4, 4, 4)).n_links
    True
    >>> torus_size((100000,) * 3).hosts
    1000000000000000
    """
    dims = tuple(int(d) for d in dims)
    per = (bool(periodic),) * len(dims) if isinstance(periodic, (bool, int, np.bool_)) \
        else tuple(bool(p) for p in periodic)
    routers = prod(max(d, 0) for d in dims) if dims else 0
    cables = 0
    for d, k in enumerate(dims):
        if k > 1:                          # k - 1 cables along each line of k routers, one more if it wraps
            cables += routers // k * (k - 1 + (1 if d < len(per) and per[d] and k > 2 else 0))
    hosts = routers * max(int(hosts_per_router), 0)
    return Size(hosts, routers, 2 * (hosts + cables))


def mesh_size(dims: Sequence[int], **kw: object) -> Size:
    """What :func:`mesh` would build."""
    kw.setdefault("periodic", False)
    return torus_size(dims, **kw)  # type: ignore[arg-type]


def mesh(dims: Sequence[int], **kw) -> Fabric:
    """A mesh: :func:`torus` without wrap-around links."""
    kw.setdefault("periodic", False)
    return torus(dims, **kw)


def hypercube(d: int, *, hosts_per_router: int = 1, capacity: float = BGP_LINK,
              latency: float = ROUTER_LATENCY_S, cores: int = 4) -> Fabric:
    """A binary d-cube: 2^d routers, d 2^(d-1) router cables (a mesh of 2s).

    >>> h = hypercube(4)
    >>> h.n_switches, h.n_links // 2 - h.n_hosts
    (16, 32)
    """
    if d < 1:
        raise FabricError(f"hypercube dimension must be at least 1, got {d}")
    f = torus((2,) * d, periodic=False, hosts_per_router=hosts_per_router, capacity=capacity,
              latency=latency, cores=cores, name=f"hypercube(d={d})")
    return f.with_params(generator="hypercube", d=d)


def hypercube_size(d: int, *, hosts_per_router: int = 1, **_: object) -> Size:
    """What :func:`hypercube` would build.

    >>> hypercube_size(4).links == hypercube(4).n_links
    True
    """
    return torus_size((2,) * max(int(d), 0), periodic=False, hosts_per_router=hosts_per_router)


def dragonfly_size(a: int, p: int, h: int, g: int, **_: object) -> Size:
    """What :func:`dragonfly` would build.

    >>> dragonfly_size(a=4, p=2, h=2, g=9).links == dragonfly(a=4, p=2, h=2, g=9).n_links
    True
    """
    a, p, h, g = (max(int(x), 0) for x in (a, p, h, g))
    hosts, routers = g * a * p, g * a
    per_pair = (a * h) // (g - 1) if g > 1 else 0
    return Size(hosts, routers, 2 * (hosts + g * (a * (a - 1) // 2) + per_pair * (g * (g - 1) // 2)))


def dragonfly(a: int, p: int, h: int, g: int, *, capacity: float = 3071e6, global_capacity: float | None = None,
              latency: float = ROUTER_LATENCY_S, cores: int = 8) -> Fabric:
    """Dragonfly (Kim et al.): g groups of a routers, p hosts and h global links per router.

    Routers of a group are joined all-to-all.  Global cables join every pair of
    groups as evenly as the a*h global ports of a group allow (at least one
    per pair: g <= a*h + 1), taking each group's free ports in order::

        group 0: [r0 r1 ... r(a-1)]  all-to-all inside
                   |h   |h      |h   global cables to the other groups

    >>> f = dragonfly(a=4, p=2, h=2, g=9)     # a*h = 8 = g - 1: one cable per group pair
    >>> f.n_hosts, f.n_switches, f.n_links // 2 - f.n_hosts
    (72, 36, 90)
    """
    if min(a, p, h, g) < 1:
        raise FabricError(f"dragonfly parameters must be positive, got a={a} p={p} h={h} g={g}")
    if g > a * h + 1:
        raise FabricError(f"dragonfly with g={g} groups needs a*h >= g-1 global ports per group, has {a * h}")
    gcap = capacity if global_capacity is None else global_capacity
    # cables as arrays, in the order the reference built them one by one (tests/fabric/test_vectorised.py):
    # host i to router i // p; each group's routers all-to-all (i < j, i then j ascending); then
    # per_pair rounds over the group pairs (gi < gj), each cable taking the next free global port
    # of both groups, h a router; a node's ports are numbered in that order
    n_h, n_r = g * a * p, g * a
    h_ = np.arange(n_h, dtype=np.int64)
    i, j = np.triu_indices(a, 1)
    grp = np.repeat(np.arange(g, dtype=np.int64), len(i))
    ca = [h_, n_h + grp * a + np.tile(i, g)]
    cb = [n_h + h_ // p, n_h + grp * a + np.tile(j, g)]
    caps = [np.full(n_h + len(grp), float(capacity))]
    if g > 1:
        gi, gj = np.triu_indices(g, 1)
        reps = (a * h) // (g - 1)
        ends = np.empty(2 * len(gi) * reps, np.int64)      # the groups' ends in the order they take ports
        ends[0::2], ends[1::2] = np.tile(gi, reps), np.tile(gj, reps)
        taken = _occurrence(ends)                          # that group's global ports taken before
        router = n_h + ends * a + taken // h
        ca.append(router[0::2])
        cb.append(router[1::2])
        caps.append(np.full(len(gi) * reps, float(gcap)))
    link_src, link_dst = _directed(np.concatenate(ca), np.concatenate(cb))
    n_links = len(link_src)
    sp = (_occurrence(link_src) + 1).astype(np.int16)
    cap = np.repeat(np.concatenate(caps), 2)
    names = [f"g{x // (a * p):02d}n{x % (a * p):03d}" for x in range(n_h)]
    names += [f"g{x // a:02d}r{x % a:02d}" for x in range(n_r)]
    return Fabric(
        name=f"dragonfly(a={a},p={p},h={h},g={g})", node_names=tuple(names), n_hosts=n_h,
        link_src=link_src, link_dst=link_dst, link_capacity=cap, link_latency=np.full(n_links, float(latency)),
        link_src_port=sp, link_dst_port=sp[np.arange(n_links) ^ 1], switch_level=np.zeros(n_r, np.int16),
        groups={"router": np.arange(n_h) // p, "group": np.arange(n_h) // (a * p)},
        levels=(Level("router", "Same Router"), Level("group", "Same Group")), far_label="Diff Groups",
        host_cores=np.full(n_h, cores),
        params={"generator": "dragonfly", "a": a, "p": p, "h": h, "g": g, "capacity": capacity,
                "global_capacity": gcap, "latency": latency, "cores": cores},
    )


def _directed(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Cables ``a[i] - b[i]`` as directed links: link ``2 i`` from ``a[i]``, ``2 i + 1`` back.

    >>> [x.tolist() for x in _directed(np.array([0, 1]), np.array([5, 6]))]
    [[0, 5, 1, 6], [5, 0, 6, 1]]
    """
    src = np.empty(2 * len(a), np.int32)
    dst = np.empty(2 * len(a), np.int32)
    src[0::2], src[1::2] = a, b
    dst[0::2], dst[1::2] = b, a
    return src, dst


def _occurrence(x: np.ndarray) -> np.ndarray:
    """How many times each entry's value came before it.

    >>> _occurrence(np.array([3, 1, 3, 3, 1])).tolist()
    [0, 0, 1, 2, 1]
    """
    order = np.argsort(x, kind="stable")
    s = x[order]
    starts = np.r_[0, np.flatnonzero(s[1:] != s[:-1]) + 1]
    out = np.empty(len(x), np.int64)
    out[order] = np.arange(len(x)) - np.repeat(starts, np.diff(np.r_[starts, len(x)]))
    return out
