"""Link rates by name: every spec and the importer give the documented bytes/s."""

import numpy as np
import pytest

from fabscope.errors import FabricError
from fabscope.fabric.importers import build_fabric, parse_ibnetdiscover
from fabscope.fabric.io import load_fabric
from fabscope.fabric.rates import named_rate

GB = 1e9


@pytest.mark.parametrize("name, gbytes", [
    ("SDR", 0.76775), ("DDR", 1.5355), ("QDR", 3.071), ("FDR10", 3.83875), ("FDR", 4 * 13.64 / 8 * 0.92),
    ("EDR", 12.125), ("HDR", 24.25), ("NDR", 48.0), ("XDR", 96.0),
    ("4xNDR", 48.0), ("1xHDR", 6.0625), ("12xQDR", 9.213), ("2xNDR", 24.0), ("HDR100", 12.125), ("ndr200", 24.0),
    ("NDR400", 48.0), ("100GbE", 11.5), ("400gbe", 46.0), ("800GbE", 92.0), ("10GbE", 1.15),
])
def test_named_rates_are_the_documented_bytes_per_second(name, gbytes):
    assert named_rate(name) == pytest.approx(gbytes * GB)


@pytest.mark.parametrize("bad", ["NDR42", "3xNDR", "4xFOO", "QDR-ish", "100GbEx", "", "HDR150", "2xHDR100"])
def test_a_name_that_is_no_rate_is_refused_naming_the_names(bad):
    with pytest.raises(FabricError, match="neither a number of bytes/s nor a rate name; names: SDR"):
        named_rate(bad)


def test_specs_take_rates_by_name_and_still_by_number():
    ndr = load_fabric("fat-tree:k=4,levels=2,rate=NDR")
    assert np.all(ndr.link_capacity == pytest.approx(48e9))
    assert np.array_equal(load_fabric("fat-tree:k=4,levels=2,capacity=NDR").link_capacity, ndr.link_capacity)
    assert np.all(load_fabric("fat-tree:k=4,levels=2,capacity=2.5e9").link_capacity == 2.5e9)
    assert np.all(load_fabric("fat-tree:k=4,levels=2").link_capacity == 3071e6)      # QDR unless told
    df = load_fabric("dragonfly:a=4,p=2,h=2,g=3,capacity=200GbE,global_capacity=HDR")
    assert np.unique(df.link_capacity).tolist() == pytest.approx([23e9, 24.25e9])
    assert load_fabric("director:radix=8,rate=4xEDR").link_capacity.max() == pytest.approx(12.125e9)
    with pytest.raises(FabricError, match="link rate 'NDRX'"):
        load_fabric("fat-tree:k=4,levels=2,rate=NDRX")
    with pytest.raises(FabricError, match="capacity"):
        load_fabric("fat-tree:k=4,levels=2,capacity=nan")


def test_simulate_on_an_ndr_tree_gives_the_ndr_rate_to_a_pair_alone_on_its_leaf(capsys):
    from fabscope.cli import main

    assert main(["simulate", "--fabric", "fat-tree:k=4,levels=2,rate=NDR", "--ppn", "1", "--pattern", "random-pairs"]) == 0
    same_leaf = [ln for ln in capsys.readouterr().out.splitlines() if ln.endswith("Same Leaf       1")]
    assert same_leaf and same_leaf[0].split()[:3] == ["48000.00"] * 3


#: one host on a switch by each of three links of the generations ibsim cannot bring up (its extended
#: speeds stop at HDR), as ibnetdiscover prints them
NEW_SPEEDS = '''
Switch	8 "S-0000000000200000"		# "L0" base port 0 lid 2 lmc 0
[1]	"H-0000000000100000"[1](100001) 		# "h1" lid 1 4xNDR
[2]	"H-0000000000300000"[1](300001) 		# "h2" lid 3 4xXDR
[3]	"H-0000000000400000"[1](400001) 		# "h3" lid 4 2xHDR

Ca	1 "H-0000000000100000"		# "h1"
[1](100001) 	"S-0000000000200000"[1]		# lid 1 lmc 0 "L0" lid 2 4xNDR

Ca	1 "H-0000000000300000"		# "h2"
[1](300001) 	"S-0000000000200000"[2]		# lid 3 lmc 0 "L0" lid 2 4xXDR

Ca	1 "H-0000000000400000"		# "h3"
[1](400001) 	"S-0000000000200000"[3]		# lid 4 lmc 0 "L0" lid 2 2xHDR
'''


def test_import_of_ndr_xdr_and_hdr100_links_gives_the_documented_rates():
    f = build_fabric(parse_ibnetdiscover(NEW_SPEEDS))
    cap = {f.node_names[int(f.link_src[i])]: float(f.link_capacity[i]) for i in range(f.n_links)
           if f.link_src[i] < f.n_hosts}
    assert cap == {"h1": pytest.approx(48e9), "h2": pytest.approx(96e9), "h3": pytest.approx(12.125e9)}
