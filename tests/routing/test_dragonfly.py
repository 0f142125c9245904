"""Dragonfly routing as dragonflies route: local-global-local minimal, Valiant, UGAL."""

import numpy as np
import pytest

from fabscope.errors import RoutingError
from fabscope.fabric.generators import dragonfly, fat_tree
from fabscope.model.maxmin import maxmin
from fabscope.routing import check_routes, make_routing
from fabscope.routing.dragonfly import DragonflyRouting, cable_key, layout

SMALL = dragonfly(a=4, p=2, h=2, g=9)          # balanced (a = 2p = 2h), one cable per pair of groups
CLASSIC = dragonfly(a=8, p=4, h=4, g=33)       # balanced, 1,056 hosts


def _globals(f, routes):
    """Global cables each flow crosses (weighted when split)."""
    g = f.groups["group"]
    sw_group = np.zeros(f.n_nodes, int)
    sw_group[f.host_switch] = g
    a, b = f.link_src[routes.link], f.link_dst[routes.link]
    is_global = (a >= f.n_hosts) & (b >= f.n_hosts) & (sw_group[a] != sw_group[b])
    return np.bincount(routes.flow, weights=routes.weight * is_global, minlength=routes.n_flows)


def _conserved(f, s, d, routes):
    """Every flow leaves its source whole, reaches its destination whole, and loses nothing on the way."""
    net = np.zeros((routes.n_flows, f.n_nodes))
    np.add.at(net, (routes.flow, f.link_src[routes.link]), -routes.weight)
    np.add.at(net, (routes.flow, f.link_dst[routes.link]), routes.weight)
    want = np.zeros_like(net)
    moving = np.flatnonzero(s != d)
    want[moving, s[moving]] = -1
    want[moving, d[moving]] = 1
    return np.allclose(net, want)


def _throughput(f, s, d, engine):
    """(average, saturation) accepted rate per host as a share of its injection link: the mean of what
    max-min gives every host, and the rate every flow reaches at once (the smallest flow rate)."""
    r = make_routing(f, engine).routes(s, d)
    rate = maxmin(r.matrix(f.n_links), f.link_capacity)
    cap = f.link_capacity[0]
    per_host = np.bincount(s, weights=rate, minlength=f.n_hosts) / cap
    return per_host.mean(), rate.min() * len(s) / f.n_hosts / cap


def _uniform(f):
    i = np.arange(f.n_hosts)
    s, d = np.meshgrid(i, i, indexing="ij")
    return s[s != d], d[s != d]


def test_minimal_crosses_at_most_one_global_cable():
    """Min-hop routing took two global cables for most of the group shift; local-global-local takes one."""
    f = SMALL
    rng = np.random.default_rng(5)
    s, d = rng.integers(0, f.n_hosts, 500), rng.integers(0, f.n_hosts, 500)
    r = make_routing(f, "minimal").routes(s, d)
    check_routes(f, s, d, r)
    g = f.groups["group"]
    assert np.array_equal(_globals(f, r), (g[s] != g[d]).astype(float))
    assert r.hops.max() <= 5                   # host, local, global, local, host
    shift = np.arange(CLASSIC.n_hosts)
    assert _globals(CLASSIC, make_routing(CLASSIC, "minimal").routes(shift, (shift + 32) % 1056)).max() == 1


@pytest.mark.parametrize("a,p,h,g,owners", [(4, 2, 2, 5, {0: 1, 2: 1}), (2, 1, 4, 3, {0: 2, 1: 2})])
def test_which_global_cable_when_groups_are_joined_by_several(a, p, h, g, owners):
    """A router with cables to the destination group takes its own, the (x mod k)-th of its k; one
    without takes the (x mod k)-th of the k cables between the two groups, in link order; x hashes
    the destination host with the pair of groups."""
    f = dragonfly(a=a, p=p, h=h, g=g)           # (a h) // (g - 1) cables per pair of groups
    lay = layout(f)
    n_h = f.n_hosts
    gl = lay.glinks[lay.gkeys == 1]            # group 0 -> group 1, in link order
    assert len(gl) == (a * h) // (g - 1) and np.all(np.diff(gl) > 0)
    assert {int(r): int(c) for r, c in zip(*np.unique(f.link_src[gl] - n_h, return_counts=True))} == owners
    d = np.arange(a * p, 2 * a * p)             # every host of group 1
    for router in range(a):
        src = router * p                        # its first host
        r = make_routing(f, "minimal").routes(np.full(len(d), src), d)
        used = [int(l) for l in r.link if l in gl]
        mine = gl[f.link_src[gl] - n_h == router]
        x = cable_key(d, np.full(len(d), 0 * g + 1))
        if router in owners:
            assert used == [int(mine[k % len(mine)]) for k in x]
        else:                                   # to the holder of the pair's pick, which takes its own pick
            for k, c in zip(x, used):
                holder = f.link_src[gl[k % len(gl)]]
                theirs = gl[f.link_src[gl] == holder]
                assert c == theirs[k % len(theirs)]
            assert len(set(used)) > 1                 # a router's flows to one group spread over its cables


@pytest.mark.parametrize("a,p,h,g", [(4, 2, 2, 9), (3, 1, 5, 5), (4, 1, 6, 6), (6, 1, 5, 5)])
def test_minimal_is_destination_based(a, p, h, g):
    """Every router's next hop depends on the destination alone: the routes fit forwarding tables (the
    testbed installs them), also where routers hold several cables to one group."""
    from fabscope.testbed.plan import forwarding

    f = dragonfly(a=a, p=p, h=h, g=g)
    lft = forwarding(f, make_routing(f, "minimal"))
    assert lft.shape == (f.n_switches, f.n_hosts)


@pytest.mark.parametrize("engine", ["valiant", "valiant:spread=flow", "ugal-l", "ugal-g", "ugal-g:parts=4"])
def test_non_minimal_routes_are_whole_and_go_through_a_third_group(engine):
    f = SMALL
    rng = np.random.default_rng(2)
    s, d = rng.integers(0, f.n_hosts, 300), rng.integers(0, f.n_hosts, 300)
    r = make_routing(f, engine).routes(s, d)
    assert _conserved(f, s, d, r)
    g = f.groups["group"]
    cables = _globals(f, r)
    assert np.all(cables[g[s] == g[d]] == 0)
    assert np.all((cables[g[s] != g[d]] >= 1) & (cables[g[s] != g[d]] <= 2))
    if engine.startswith("valiant"):
        assert np.allclose(cables[g[s] != g[d]], 2)
    if engine == "valiant:spread=flow":
        check_routes(f, s, d, r)                # one path per flow


def test_valiant_by_flow_follows_the_seed():
    f = SMALL
    s = np.arange(f.n_hosts)
    d = (s + 8) % f.n_hosts
    a, b, c = (make_routing(f, "valiant:spread=flow", seed=k).routes(s, d) for k in (1, 1, 2))
    assert np.array_equal(a.link, b.link)
    assert not np.array_equal(a.link, c.link)


def test_group_shift_collapses_minimal_and_not_valiant_or_ugal():
    """Kim et al.'s worst case: every host to the same host of the next group.  All a*p flows of a group
    share the one cable to the next group under minimal routing (1/(a p) of injection); Valiant and
    UGAL spread them to about half."""
    f = CLASSIC
    s = np.arange(f.n_hosts)
    d = (s + 32) % f.n_hosts
    avg, sat = _throughput(f, s, d, "minimal")
    assert avg == pytest.approx(1 / 32) and sat == pytest.approx(1 / 32)
    sats = {}
    for engine in ("valiant", "ugal-l", "ugal-g"):
        avg, sats[engine] = _throughput(f, s, d, engine)
        assert 0.45 <= avg <= 0.55, engine
    assert sats["ugal-g"] > 4 / 32             # no flow left to the collapse
    # the local view sees the cable through its own queues (credit flow control fills them back from it)
    assert sats["ugal-l"] > 4 / 32
    assert _throughput(f, s, d, "valiant")[1] == pytest.approx(_throughput(f, s, d, "valiant")[0])


def test_uniform_traffic_minimal_near_one_valiant_near_half_ugal_near_minimal():
    """Uniform random traffic as flows: every host to every other at once; saturation = the rate all
    flows reach together."""
    f = SMALL
    s, d = _uniform(f)
    sat = {e: _throughput(f, s, d, e)[1] for e in ("minimal", "valiant", "ugal-l", "ugal-g")}
    assert sat["minimal"] > 0.95
    assert 0.45 <= sat["valiant"] <= 0.6
    assert sat["ugal-l"] > 0.9 and sat["ugal-g"] > 0.9


def test_dragonfly_engines_refused_elsewhere_and_bad_options_named():
    with pytest.raises(RoutingError, match="routes dragonflies"):
        make_routing(fat_tree(k=2, levels=2), "valiant")
    with pytest.raises(RoutingError, match="parts"):
        make_routing(SMALL, "ugal-g:parts=0")
    with pytest.raises(RoutingError, match="spread"):
        make_routing(SMALL, "valiant:spread=packets")
    for bad in ("0", "1.5", "x"):
        with pytest.raises(RoutingError, match="load"):
            make_routing(SMALL, f"ugal-l:load={bad}")
    with pytest.raises(RoutingError, match="no option"):
        make_routing(SMALL, "valiant:parts=2")
    assert make_routing(fat_tree(k=2, levels=2), "minimal").name == "minimal"   # min-hop off dragonflies


def _shift_rates(f, engine):
    """Max-min rate of each flow of the group shift, as a share of its injection link."""
    s = np.arange(f.n_hosts)
    d = (s + f.n_hosts // f.params["g"]) % f.n_hosts
    r = make_routing(f, engine).routes(s, d)
    return r, maxmin(r.matrix(f.n_links), f.link_capacity) / f.link_capacity[0]


@pytest.mark.parametrize("mode", ["ugal-l", "ugal-g"])
def test_ugal_stays_minimal_while_the_minimal_path_is_not_full(mode):
    """A queue stands only where a link is offered more than it carries: at 1/10 of injection the 8
    flows of a group fit on the one cable to the next (0.8 of it), so UGAL routes all of them minimally,
    as a router does whose minimal queue stays empty.  Taking the utilisation for the queue sent flows
    round from the first ones placed."""
    f = SMALL
    mine, _ = _shift_rates(f, f"{mode}:load=0.1")
    minimal, _ = _shift_rates(f, "minimal")
    assert np.array_equal(mine.flow, minimal.flow) and np.array_equal(mine.link, minimal.link)
    assert _globals(f, _shift_rates(f, f"{mode}:load=1")[0]).max() > 1     # offered in full, some go round


@pytest.mark.parametrize("mode", ["ugal-l", "ugal-g"])
def test_ugal_carries_close_to_half_when_offered_it_in_parts(mode):
    """Saturation as a packet simulator measures it: offered 0.45 of injection, in 8 parts a flow,
    UGAL's choices carry every flow of the worst case at its full 0.45 (the per-packet figure is about
    1/2); one choice a flow cannot.  Before, the choices fell short (0.22 at most in 32 parts)."""
    f = dragonfly(a=6, p=3, h=3, g=19)
    _, one = _shift_rates(f, f"{mode}:load=0.45")
    _, eight = _shift_rates(f, f"{mode}:load=0.45,parts=8")
    assert eight.min() >= 0.45 * (1 - 1e-9)
    assert one.min() < 0.45


def test_valiant_leaves_the_intermediate_group_by_the_pairs_pick_not_its_arrival_router():
    """With many cables between two groups (here 14), the router a Valiant path arrives at from one
    group mostly holds a cable to the next group too (the generator lays consecutive groups on
    neighbouring ports): by its own cables, a group shift's paths came into the destination group at
    one router and its local links carried them all (saturation 0.15).  By the pair's pick they
    spread over the group."""
    f = dragonfly(a=16, p=8, h=15, g=13)
    _, rate = _shift_rates(f, "valiant")
    assert rate.min() > 0.3
    assert rate.mean() > 0.5


def test_a_spread_valiant_flow_takes_several_cables_between_two_groups():
    """A packet picks among the cables between two groups as it picks its intermediate group: with
    14 cables a pair, a flow's share through each intermediate group is split over 4 picks, so more
    global cables leave its source group than there are intermediate groups; with one cable a pair
    nothing changes (the balanced dragonflies)."""
    f = dragonfly(a=16, p=8, h=15, g=13)
    r = make_routing(f, "valiant").routes(np.array([0]), np.array([f.n_hosts // 13]))
    sw_group = np.zeros(f.n_nodes, int)
    sw_group[f.host_switch] = f.groups["group"]
    a, b = f.link_src[r.link], f.link_dst[r.link]
    leaving = (a >= f.n_hosts) & (b >= f.n_hosts) & (sw_group[a] == 0) & (sw_group[b] != 0)
    assert len(np.unique(r.link[leaving])) > 13 - 2
    assert np.isclose(r.weight[leaving].sum(), 1.0)
    assert make_routing(SMALL, "valiant").draws == 1


def test_minimal_routing_draws_nothing_and_loads_no_random_generator():
    """numpy.random costs a simulation of the group shift 15-20 ms of CPU, 8 % of its whole process
    (bench/bench_dragonfly_simgrid.py): the minimal routes take no seed, so it is not loaded."""
    import subprocess
    import sys

    code = ("import sys\nfrom fabscope.cli import main\n"
            "main(['simulate', '--fabric', 'dragonfly:a=4,p=2,h=2,g=9', '--ppn', '1', '--pattern', 'shift:k=8',"
            " '--dynamic'])\nprint('numpy.random' in sys.modules, file=sys.stderr)")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "dynamic: shift" in p.stdout and p.stderr.strip().splitlines()[-1] == "False"


SEVEN = dragonfly(a=8, p=4, h=7, g=9)          # 7 cables between every two groups


def test_ugal_minimal_side_spreads_over_the_cables_between_two_groups():
    """UGAL's minimal paths are spread over every cable joining the two groups, as a router spreads its
    packets over its minimal paths; `minimal` keeps the one cable its tables give (the docs say which).
    At 1/20 of injection nothing is full, so UGAL routes the flow minimally, over all 7 cables."""
    f = SEVEN
    s, d = np.array([0]), np.array([32])
    sw_group = np.zeros(f.n_nodes, int)
    sw_group[f.host_switch] = f.groups["group"]

    def cables(r):
        a, b = f.link_src[r.link], f.link_dst[r.link]
        g = (a >= f.n_hosts) & (b >= f.n_hosts) & (sw_group[a] != sw_group[b])
        return r.link[g], r.weight[g]

    one, _ = cables(make_routing(f, "minimal").routes(s, d))
    for mode in ("ugal-l", "ugal-g"):
        links, w = cables(make_routing(f, f"{mode}:load=0.05").routes(s, d))
        assert len(one) == 1 and len(links) == 7 and np.allclose(w, 1 / 7)
        assert set(sw_group[f.link_dst[links]]) == {1}          # all straight into the destination group


@pytest.mark.parametrize("mode", ["ugal-l", "ugal-g"])
def test_ugal_carries_the_group_shift_where_groups_share_several_cables(mode):
    """With 7 cables between two groups, minimal's one cable per destination (by the tables' hash)
    held UGAL's group-shift saturation at 0.24, below Valiant's 0.53: its minimal side loaded a few
    cables and the local links behind them.  Spread over the 7, it carries every flow at 0.55."""
    f = SEVEN
    _, rate = _shift_rates(f, f"{mode}:load=0.55,parts=8")
    assert rate.min() >= 0.55 * (1 - 1e-9)
    _, val = _shift_rates(f, "valiant")
    assert val.min() < 0.55


def _global_loads(f, r):
    """Each global cable's load: the weights of the flows crossing it (flows of rate 1)."""
    sw_group = np.zeros(f.n_nodes, int)
    sw_group[f.host_switch] = f.groups["group"]
    a, b = f.link_src, f.link_dst
    glob = (a >= f.n_hosts) & (b >= f.n_hosts) & (sw_group[a] != sw_group[b])
    return np.bincount(r.link, weights=r.weight, minlength=f.n_links)[glob]


def test_valiant_via_all_groups_takes_the_direct_cable_as_booksim_does():
    """Valiant's intermediate group drawn among the other g - 2 groups (the default) never crosses the
    cable between a flow's two groups: under the group shift those 9 cables idle and the other 63 carry
    16/7 of a host's rate each (saturation 7/16).  Drawn among all g groups (``via=all``, as Valiant's
    scheme and BookSim2's intermediate node), 2 draws in 9 are the flow's own groups and route
    minimally: all 72 cables carry 16/9, and the saturation is 1/2 (a local link carries 2 then)."""
    f = SMALL
    others, rate = _shift_rates(f, "valiant")
    load = _global_loads(f, others)
    assert np.sum(load == 0) == 9 and np.allclose(load[load > 0], 16 / 7)
    assert rate.min() == pytest.approx(7 / 16)
    every, rate = _shift_rates(f, "valiant:via=all")
    assert np.allclose(_global_loads(f, every), 16 / 9)
    assert rate.min() == pytest.approx(1 / 2)
    assert np.allclose(_globals(f, every), 2 - 2 / 9)          # 2 draws in 9 cross one cable
    s = np.arange(f.n_hosts)
    one = make_routing(f, "valiant:via=all,spread=flow", seed=4).routes(s, (s + 8) % f.n_hosts)
    crossed = _globals(f, one)
    assert set(crossed.tolist()) == {1.0, 2.0}                  # one group a flow: some drew their own
    check_routes(f, s, (s + 8) % f.n_hosts, one)


def test_cables_and_via_from_the_routing_spec():
    """``minimal:cables=all`` spreads minimal over every cable between two groups (UGAL's minimal
    side); ``ugal-l:cables=tables`` puts UGAL's minimal side on minimal's one cable; bad values and
    options where they do not apply are refused in one line."""
    f = SEVEN
    s, d = np.array([0]), np.array([32])
    one = make_routing(f, "minimal").routes(s, d)
    spread = make_routing(f, "minimal:cables=all").routes(s, d)
    assert np.count_nonzero(_global_loads(f, one)) == 1
    assert np.allclose(np.sort(_global_loads(f, spread))[-7:], 1 / 7)
    assert np.count_nonzero(_global_loads(f, spread)) == 7
    for mode in ("ugal-l", "ugal-g"):
        tables = make_routing(f, f"{mode}:cables=tables,load=0.05").routes(s, d)   # idle: minimal
        assert np.array_equal(tables.link, one.link)
        assert np.count_nonzero(_global_loads(f, make_routing(f, f"{mode}:load=0.05").routes(s, d))) == 7
    for spec, words in (("minimal:cables=some", "minimal: cables must be tables or all, got 'some'"),
                        ("valiant:cables=all", "routing 'valiant' takes no option 'cables'"),
                        ("valiant:via=any", "valiant: via must be others or all, got 'any'"),
                        ("ugal-g:via=all", "routing 'ugal-g' takes no option 'via'"),
                        ("minimal:via=all", "takes no option 'via'")):
        with pytest.raises(RoutingError, match=words) as err:
            make_routing(f, spec)
        assert "\n" not in str(err.value)
    with pytest.raises(RoutingError, match="valiant: cables=all is a minimal side"):
        DragonflyRouting(f, "valiant", cables="all")
    with pytest.raises(RoutingError, match="ugal-g: via=all is valiant's"):
        DragonflyRouting(f, "ugal-g", via="all")
    with pytest.raises(RoutingError, match="routing 'minimal' takes cables= on dragonflies only"):
        make_routing(fat_tree(k=2, levels=2), "minimal:cables=all")


def test_cables_from_the_command_line(capsys):
    from fabscope.cli import main

    argv = ["simulate", "--fabric", "dragonfly:a=8,p=4,h=7,g=9", "--ppn", "1", "--pattern", "shift:k=32",
            "--routing"]
    overall = {}
    for spec in ("minimal", "minimal:cables=all"):
        assert main(argv + [spec]) == 0
        line = next(x for x in capsys.readouterr().out.splitlines() if "Overall" in x)
        overall[spec] = [float(v) for v in line.split()[:3]]          # Max, Average, Min
    # over every cable each flow gets the same share; by the tables' one cable some share fewer cables
    mx, avg, mn = overall["minimal:cables=all"]
    assert mx == mn == avg
    assert overall["minimal"][0] > overall["minimal"][2]
    assert overall["minimal"][1] == pytest.approx(avg, rel=1e-3)        # the same cables' total
    assert main(argv + ["minimal:cables=every"]) == 1
    err = capsys.readouterr().err.strip()
    assert "minimal: cables must be tables or all, got 'every'" in err and "\n" not in err
