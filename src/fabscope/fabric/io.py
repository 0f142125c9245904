"""Fabrics in and out of JSON, and the ``--fabric`` spec every command takes.

A spec is a generator name with parameters, a preset, or a JSON file::

    itasca                       itasca:leaves=34
    fat-tree:k=16,levels=3       xgft:m=16x16,w=1x8
    torus:8x8x16                 torus:27x20x24,periodic=0x0x1
    mesh:4x4                     hypercube:d=6
    dragonfly:a=8,p=4,h=4,g=33   director:radix=36
    bgp  xt3  redstorm           fabric.json
    fat-tree:k=8,levels=2,rate=NDR                (link rates by name: fabscope.fabric.rates)

>>> load_fabric("fat-tree:k=4,levels=2").n_hosts
16
>>> load_fabric("torus:8x8x16").dims
(8, 8, 16)
>>> round(float(load_fabric("fat-tree:k=2,levels=2,rate=4xHDR").link_capacity[0]) / 1e9, 2)
24.25
"""

from __future__ import annotations

import inspect
import os
import re
import typing
from typing import Any, Callable

import numpy as np

from fabscope.errors import FabricError, SchemaError
from fabscope.fabric import generators as gen
from fabscope.fabric.model import MAX_CORES, Fabric, Level
from fabscope.fabric.rates import named_rate
from fabscope.numbers import number

# What only files need (JSON, the schema, name checks, atomic writes) is imported by the
# functions that read and write them: a generated fabric's process has no use for it
# (json, shlex, unicodedata and fcntl were 3-5 ms of the 16x16x16 torus's 0.15 s).

SCHEMA = "fabscope.fabric"
SCHEMA_VERSION = 1

GENERATORS: dict[str, Callable[..., Fabric]] = {
    "itasca": gen.itasca,
    "fat-tree": gen.fat_tree,
    "xgft": gen.xgft,
    "director": gen.director,
    "torus": gen.torus,
    "mesh": gen.mesh,
    "hypercube": gen.hypercube,
    "dragonfly": gen.dragonfly,
}

#: machines of the seeds, as specs
PRESETS = {
    "bgp": "torus:8x8x16,capacity=425e6,cores=4",            # Blue Gene/P partition of seed 002
    "xt3": "torus:11x12x16,capacity=3.8e9,cores=2",          # PSC BigBen, seed 002
    "redstorm": "torus:27x20x24,periodic=0x0x1,capacity=2.04e9,cores=2",  # seed 004
    # a rail-optimised GPU pod as NVIDIA's DGX SuperPOD reference architecture (DGX H100, 4 scalable units)
    # describes its compute fabric: 32 nodes per unit, 8 NDR 400 Gb/s NICs per node, NIC r of a unit's
    # nodes on that unit's rail-r leaf (32 down, 32 up), 16 spines of 64 ports (2 cables to each leaf);
    # NICs at rate=NDR: 48 GB/s, NDR's 50 GB/s at MPI's share (fabric/rates.py); 8 ranks per node, one per GPU; on-node copies
    # over NVLink 4 (450 GB/s each way per GPU, 8 GPUs on the node's NVSwitches) (docs/multirail.md)
    "gpu-pod": "xgft:m=32x4,w=1x16,links_per_pair=2,rails=8,rail_optimised=1,rate=NDR,cores=8,"
               "copy_rate=450e9,memory_bw=3.6e12",
}

#: what each generator would build, counted from its parameters before it runs
ESTIMATORS: dict[str, Callable[..., gen.Size]] = {
    "itasca": gen.itasca_size,
    "fat-tree": gen.fat_tree_size,
    "xgft": gen.xgft_size,
    "director": gen.director_size,
    "torus": gen.torus_size,
    "mesh": gen.mesh_size,
    "hypercube": gen.hypercube_size,
    "dragonfly": gen.dragonfly_size,
}

_POSITIONAL = {"torus": "dims", "mesh": "dims", "xgft": None}


def load_fabric(spec: str) -> Fabric:
    """A fabric from a spec (see the module docstring); raises FabricError naming the fault."""
    spec = spec.strip()
    if spec.endswith(".json") or os.path.sep in spec or os.path.isfile(spec):
        return read_json(spec)
    name, _, arg = spec.partition(":")
    name = name.strip().lower()
    if name in PRESETS:
        base = load_fabric(PRESETS[name] + (("," + arg) if arg else ""))
        return base.with_params(preset=name)
    if name not in GENERATORS:
        raise FabricError(f"unknown fabric {name!r}; choose from {', '.join(sorted(GENERATORS) + sorted(PRESETS))}, "
                          "or give a fabric .json file")
    fn = GENERATORS[name]
    kwargs = _parse_params(name, fn, arg)
    try:
        inspect.signature(fn).bind(**kwargs)
    except TypeError as err:
        raise FabricError(f"fabric {name!r}: {err}") from None
    _check_values(name, kwargs)
    gen.check_size(spec, ESTIMATORS[name](**kwargs))
    try:
        return fn(**kwargs)
    except TypeError as err:
        raise FabricError(f"fabric {name!r}: {err}") from err


def _parse_params(name: str, fn: Callable[..., Fabric], arg: str) -> dict[str, Any]:
    sig = inspect.signature(fn)
    hints = typing.get_type_hints(fn)
    out: dict[str, Any] = {}
    for i, part in enumerate(p for p in arg.split(",") if p.strip()):
        key, eq, value = part.partition("=")
        if not eq:
            pos = _POSITIONAL.get(name)
            if i == 0 and pos:
                key, value = pos, part
            else:
                raise FabricError(f"fabric {name!r}: parameter {part!r} should be key=value")
        key = key.strip().replace("-", "_")
        if key == "rate" and "capacity" in sig.parameters:   # rate=NDR: the links' rate by name or number
            key = "capacity"
        if key not in sig.parameters:
            raise FabricError(f"fabric {name!r} has no parameter {key!r} (takes: {', '.join(sig.parameters)})")
        out[key] = _convert(name, key, value.strip(), hints.get(key, str))
    return out


_TRUE, _FALSE = ("1", "true", "yes", "t", "y"), ("0", "false", "no", "f", "n")


def _flag(name: str, key: str, v: str) -> bool:
    """A 0/1 flag; anything else (``periodic=5x5``) refused rather than read as false."""
    t = v.strip().lower()
    if t in _TRUE:
        return True
    if t in _FALSE:
        return False
    raise FabricError(f"fabric {name!r}: {key} flag {v.strip()[:20]!r} is neither 0 nor 1")


def _convert(name: str, key: str, value: str, hint: Any) -> Any:
    text = str(hint)
    try:
        if "Sequence" in text or "tuple" in text:
            if "bool" in text:
                return tuple(_flag(name, key, v) for v in value.replace(".", "x").split("x"))
            return tuple(int(v) for v in value.split("x"))
        if "bool" in text and "Sequence" not in text:
            if "x" in value:
                return tuple(_flag(name, key, v) for v in value.split("x"))
            return _flag(name, key, value)
        if "int" in text and "float" not in text:
            return int(value)
        if "float" in text:
            if key in _RATES and not _NUMBER.fullmatch(value):
                return named_rate(value)          # capacity=NDR, global_capacity=200GbE
            return float(value)
    except ValueError:
        kind = "a list like 8x8x16" if ("Sequence" in text or "tuple" in text) else (
            "an integer" if "int" in text and "float" not in text else "a number")
        raise FabricError(f"fabric {name!r}: {key}={value!r} is not {kind}") from None
    return value


#: parameters that take a link rate by name as well as bytes/s
_RATES = ("capacity", "global_capacity")
_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?|[+-]?(inf|infinity|nan)", re.IGNORECASE)

#: bounds of the generators' number parameters: (lowest, open at the lowest, highest)
_RANGES: dict[str, tuple[float, bool, float | None]] = {
    "capacity": (0, True, None), "global_capacity": (0, True, None), "copy_rate": (0, True, None),
    "memory_bw": (0, True, None), "latency": (0, False, None),
    "cores": (1, False, MAX_CORES), "sockets": (1, False, MAX_CORES),
}


def _check_values(name: str, kwargs: dict[str, Any]) -> None:
    """Numbers of a spec finite and in range (``capacity=nan``, ``cores=1e9`` refused by name)."""
    for key, v in kwargs.items():
        if key in _RANGES and isinstance(v, (int, float)) and not isinstance(v, bool):
            lo, lo_open, hi = _RANGES[key]
            number(v, f"fabric {name!r}: {key}", lo, hi, lo_open=lo_open, error=FabricError)


# ---- JSON -------------------------------------------------------------------
def to_dict(f: Fabric) -> dict[str, Any]:
    """The fabric as JSON-ready columns; cables by node name (one entry per two directed links)."""
    even = np.arange(0, f.n_links, 2)
    names = np.array(f.node_names, dtype=object)
    doc: dict[str, Any] = {
        "schema": SCHEMA, "version": SCHEMA_VERSION, "name": f.name,
        "hosts": {
            "name": list(f.host_names), "cores": f.host_cores.tolist(), "sockets": f.host_sockets.tolist(),
            "memory_bw": f.host_memory_bw.tolist(), "copy_rate": f.host_copy_rate.tolist(),
        },
        "switches": {"name": list(f.node_names[f.n_hosts:]), "level": f.switch_level.tolist()},
        "cables": {
            "a": names[f.link_src[even]].tolist(), "b": names[f.link_dst[even]].tolist(),
            "port_a": f.link_src_port[even].tolist(), "port_b": f.link_dst_port[even].tolist(),
            "capacity": f.link_capacity[even].tolist(), "latency": f.link_latency[even].tolist(),
        },
        "groups": {k: v.tolist() for k, v in f.groups.items()},
        "levels": [{"key": lv.key, "label": lv.label} for lv in f.levels],
        "far_label": f.far_label,
        "params": _jsonable(f.params),
    }
    if f.coords is not None:
        doc.update(coords=f.coords.tolist(), dims=list(f.dims or ()), periodic=list(f.periodic or ()))
    asym = np.flatnonzero(f.link_capacity[even] != f.link_capacity[even + 1])
    if len(asym):
        doc["cables"]["capacity_ba"] = f.link_capacity[even + 1].tolist()
    # optional, additive: InfiniBand LIDs and the forwarding tables read from the switches
    if f.host_lid is not None or f.switch_lid is not None:
        doc["lids"] = {"host": None if f.host_lid is None else f.host_lid.tolist(),
                       "switch": None if f.switch_lid is None else f.switch_lid.tolist(), "lmc": int(f.lmc)}
        if not f.single_port and f.terminal_lid is not None:
            doc["lids"]["port"] = f.terminal_lid.tolist()      # every host port's, in host then port order
    if f.lft is not None:
        about = "host" if f.single_port else "host port (hosts in order, each one's ports in port order)"
        doc["tables"] = {"lft": f.lft.tolist(),
                         "about": f"lft[switch][{about}] = directed link id (cable k is links 2k and 2k+1), -1 none"}
    return doc


def _jsonable(v: Any) -> Any:
    if isinstance(v, dict):
        return {str(k): _jsonable(x) for k, x in v.items() if not isinstance(x, np.ndarray) or x.size < 100000}
    if isinstance(v, (list, tuple)):
        return [_jsonable(x) for x in v]
    if isinstance(v, np.ndarray):
        return v.tolist()
    if isinstance(v, np.generic):
        return v.item()
    return v


def from_dict(doc: dict[str, Any], origin: str = "fabric") -> Fabric:
    if not isinstance(doc, dict):
        raise SchemaError(f"{origin}: not a fabscope fabric (a JSON {type(doc).__name__}, not an object)")
    if doc.get("schema") != SCHEMA:
        raise SchemaError(f"{origin}: not a fabscope fabric (schema {doc.get('schema')!r})")
    if doc.get("version") != SCHEMA_VERSION:
        raise SchemaError(f"{origin}: fabric schema version {doc.get('version')!r}, "
                          f"this fabscope reads version {SCHEMA_VERSION}")
    from fabscope.names import check_names, check_switch_name
    from fabscope.schemas import validate

    validate(doc, "fabric", origin)
    for key in ("lids", "tables"):
        if doc.get(key) is not None and not isinstance(doc[key], dict):
            raise SchemaError(f"{origin}: {key!r} must be an object, not a JSON {type(doc[key]).__name__}")
    _check_coords(doc, origin)
    try:
        hosts, switches, cables = doc["hosts"], doc["switches"], doc["cables"]
        check_names(hosts["name"], switches["name"], origin)
        # the fabric's own name and its class labels reach scripts, tables and CSV files too
        for what, text in [("fabric", doc.get("name", origin)), ("class", doc.get("far_label", "Far")),
                           *(("class", lv.get("label") if isinstance(lv, dict) else lv) for lv in doc.get("levels", []))]:
            check_switch_name(text, origin, what=what)
        names = list(hosts["name"]) + list(switches["name"])
        index = {n: i for i, n in enumerate(names)}
        if len(index) != len(names):
            dup = next(n for n in names if names.count(n) > 1)
            raise FabricError(f"{origin}: node name {dup!r} appears twice")
        a, b = [], []
        for k, (x, y) in enumerate(zip(cables["a"], cables["b"])):
            for end in (x, y):
                if end not in index:
                    raise FabricError(f"{origin}: cable {k} is dangling: it names node {end!r}, "
                                      "which is neither a host nor a switch")
            a.append(index[x])
            b.append(index[y])
        n = len(a)
        a_arr, b_arr = np.array(a, dtype=np.int32), np.array(b, dtype=np.int32)
        src = np.empty(2 * n, np.int32)
        dst = np.empty(2 * n, np.int32)
        src[0::2], src[1::2] = a_arr, b_arr
        dst[0::2], dst[1::2] = b_arr, a_arr

        def both(key: str, other: str | None = None, default: float = 0.0) -> np.ndarray:
            v = np.asarray(cables.get(key, [default] * n), dtype=float)
            w = np.asarray(cables.get(other, v), dtype=float) if other else v
            out = np.empty(2 * n)
            out[0::2], out[1::2] = v, w
            return out

        sp = np.empty(2 * n, np.int16)
        dp = np.empty(2 * n, np.int16)
        pa = np.asarray(cables.get("port_a", [0] * n))
        pb = np.asarray(cables.get("port_b", [0] * n))
        sp[0::2], sp[1::2], dp[0::2], dp[1::2] = pa, pb, pb, pa
        return Fabric(
            name=doc.get("name", origin), node_names=tuple(names), n_hosts=len(hosts["name"]),
            link_src=src, link_dst=dst,
            link_capacity=both("capacity", "capacity_ba"), link_latency=both("latency"),
            link_src_port=sp, link_dst_port=dp,
            switch_level=switches.get("level"),
            host_cores=hosts.get("cores"), host_sockets=hosts.get("sockets"),
            host_memory_bw=hosts.get("memory_bw"), host_copy_rate=hosts.get("copy_rate"),
            groups={k: np.asarray(v) for k, v in doc.get("groups", {}).items()},
            levels=tuple(Level(lv["key"], lv["label"]) for lv in doc.get("levels", [])),
            far_label=doc.get("far_label", "Far"),
            coords=doc.get("coords"), dims=tuple(doc["dims"]) if doc.get("dims") else None,
            periodic=tuple(doc["periodic"]) if doc.get("periodic") else None,
            params=doc.get("params", {}),
            lft=np.asarray(doc["tables"]["lft"], dtype=np.int32).reshape(
                len(switches["name"]), int(np.sum(src < len(hosts["name"]))))     # one column per host port
            if doc.get("tables") else None,
            host_lid=(doc.get("lids") or {}).get("host"), switch_lid=(doc.get("lids") or {}).get("switch"),
            terminal_lid=(doc.get("lids") or {}).get("port"),
            lmc=int((doc.get("lids") or {}).get("lmc", 0)),
        )
    except KeyError as err:
        raise SchemaError(f"{origin}: fabric file lacks {err.args[0]!r}") from err
    except (TypeError, ValueError, AttributeError, OverflowError) as err:
        raise FabricError(f"{origin}: malformed fabric file ({str(err).splitlines()[0] if str(err) else err!r})") from None


#: the longest side of a torus or mesh a fabric file may give (its classes are counted in hops)
MAX_DIM = 1 << 16


def _check_coords(doc: dict[str, Any], origin: str) -> None:
    """Torus/mesh sides 1..MAX_DIM, and every host's coordinates inside them."""
    dims = doc.get("dims")
    if not dims:
        return
    if not isinstance(dims, list) or not all(type(d) is int and 1 <= d <= MAX_DIM for d in dims):
        raise FabricError(f"{origin}: 'dims' must be a list of integers 1..{MAX_DIM}, got {str(dims)[:60]}")
    coords = doc.get("coords")
    if coords is None:
        return
    try:
        c = np.asarray(coords, dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        raise FabricError(f"{origin}: 'coords' must be rows of integers") from None
    if c.ndim != 2 or c.shape[1] != len(dims):
        raise FabricError(f"{origin}: 'coords' must have one row of {len(dims)} integers per host")
    if c.size and (c.min() < 0 or np.any(c.max(axis=0) >= np.array(dims))):
        raise FabricError(f"{origin}: a host's coordinates lie outside the {'x'.join(map(str, dims))} grid")


def write_json(f: Fabric, path: str | os.PathLike[str]) -> None:
    import json

    from fabscope.atomic import atomic_open
    from fabscope.schemas import validate

    doc = to_dict(f)
    validate(doc, "fabric")
    with atomic_open(path) as fh:
        json.dump(doc, fh, separators=(",", ":"))
        fh.write("\n")


def read_json(path: str | os.PathLike[str]) -> Fabric:
    from fabscope.textio import load_json

    if not os.path.exists(path) and "\x00" not in os.fspath(path):
        raise FabricError(f"fabric file {os.fspath(path)!r} does not exist")
    doc = load_json(path, "fabric file", FabricError)
    if not isinstance(doc, dict):
        raise SchemaError(f"{os.fspath(path)}: not a fabscope fabric")
    return from_dict(doc, os.fspath(path))
