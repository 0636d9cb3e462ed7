"""The fixed datasets: sizes and counts from the papers, labels checked against the
oracles and an independent slow Grundy computation, determinism under the seed, and
clear errors for unknown, missing and corrupt files."""

import functools
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

import games
from evaluation import datasets
from evaluation.__main__ import main
from evaluation.datasets import DatasetError, build_dataset, load_dataset
from games.connect4 import moves_to_digits
from oracle_service.connect4_solver import Connect4Solver, plies_to_end
from oracle_service.store import connect4_keys


@functools.cache
def _slow_grundy(profile: tuple) -> int:
    """mex over the children, straight from the rules (row r cut to c for rows >= r)."""
    seen = set()
    for r, length in enumerate(profile):
        for c in range(1 if r == 0 else 0, length):
            child = tuple(min(x, c) if k >= r else x for k, x in enumerate(profile))
            seen.add(_slow_grundy(child))
    g = 0
    while g in seen:
        g += 1
    return g


def test_chomp_dataset_labels():
    d = load_dataset("chomp-9x10")
    assert len(d) == 1024 and d.labelled
    profiles = np.array(d.column("profile"))
    # The stored move lists rebuild the stored profiles.
    np.testing.assert_array_equal(d.states.profile, profiles)
    assert len({tuple(p) for p in profiles}) == 1024
    rng = np.random.default_rng(0)
    small = [i for i in range(len(d)) if profiles[i].sum() <= 22]
    for i in rng.choice(small, size=min(40, len(small)), replace=False):
        g = _slow_grundy(tuple(int(x) for x in profiles[i]))
        assert d.column("grundy")[i] == g
        assert d.labels.v_star[i] == (1.0 if g else -1.0)
        win = d.column("winning_moves")[i]
        assert (len(win) > 0) == (g != 0)
        for a in win:  # each winning move leads to a Grundy-0 child (or takes the last square)
            r, c = divmod(a, 10)
            child = tuple(min(x, c) if k >= r else x for k, x in enumerate(profiles[i]))
            assert _slow_grundy(child) == 0


def test_fgame_datasets_and_openings_have_the_paper_sizes():
    for shape, (h, b) in datasets.FGAME_SHAPES.items():
        d = load_dataset(f"fgame-{shape}-3")
        assert len(d) == 4096 and d.game.params == {"depth": h, "branching": b, "beta": 0.05, "seed": 3}
        np.testing.assert_array_equal(d.labels.v_star, d.game.value(d.states))
        assert not d.game.terminal(d.states).any()
    assert len(load_dataset("othello-openings")) == 54  # all positions after 3 plies (Table 1)
    go = load_dataset("go-openings")
    assert len(go) == 81 and (go.plies == 1).all()
    hexo = load_dataset("hex-random-openings")
    assert len(hexo) == 128 and (hexo.plies == 2).all() and hexo.labels is None


def test_generation_is_deterministic(tmp_path):
    a = pq.read_table(build_dataset("fgame-wide-1", out_dir=tmp_path / "a"))
    b = pq.read_table(build_dataset("fgame-wide-1", out_dir=tmp_path / "b"))
    assert a.equals(b)
    a = pq.read_table(build_dataset("hex-random-openings", out_dir=tmp_path / "a"))
    b = pq.read_table(build_dataset("hex-random-openings", out_dir=tmp_path / "b"))
    assert a.equals(b)


def test_bad_datasets_are_named(tmp_path, monkeypatch):
    with pytest.raises(DatasetError, match="unknown dataset 'connect5-uniform'"):
        load_dataset("connect5-uniform")
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    with pytest.raises(DatasetError, match=r"dataset 'connect4-uniform' is missing.*python -m evaluation build"):
        load_dataset("connect4-uniform")
    (tmp_path / "connect4-eps-optimal.parquet").write_bytes(b"PAR1 this is not parquet")
    with pytest.raises(DatasetError, match=r"connect4-eps-optimal.*connect4-eps-optimal.parquet is not a readable"):
        load_dataset("connect4-eps-optimal")
    cache = tmp_path / "cache"
    path = build_dataset("go-openings", cache_dir=cache)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])  # truncated
    with pytest.raises(DatasetError, match="go-openings"):
        load_dataset("go-openings", cache_dir=cache)


def test_stale_versions_are_refused_or_rebuilt(tmp_path, monkeypatch):
    # A committed file of older contents (the states from ply 12 on) is refused by name.
    table = pq.read_table(datasets.DATA_DIR / "connect4-uniform.parquet")
    meta = json.loads(table.schema.metadata[b"evaluation"])
    monkeypatch.setattr(datasets, "DATA_DIR", tmp_path)
    pq.write_table(table.replace_schema_metadata({"evaluation": json.dumps({**meta, "version": 1})}),
                   tmp_path / "connect4-uniform.parquet")
    with pytest.raises(DatasetError, match=r"'connect4-uniform'.*version 1 of its contents.*reads version 2"):
        load_dataset("connect4-uniform")
    # A cached one is rebuilt (here: as if go-openings had moved on to version 2).
    cache = tmp_path / "cache"
    build_dataset("go-openings", cache_dir=cache)
    monkeypatch.setitem(datasets.VERSIONS, "go-openings", 2)
    with pytest.raises(DatasetError, match="holds version 1"):
        load_dataset("go-openings", cache_dir=cache, build=False)
    assert load_dataset("go-openings", cache_dir=cache).meta["version"] == 2


# ---------------------------------------------------------------- Connect Four


def _committed(name):
    try:
        return load_dataset(name)
    except DatasetError as e:
        pytest.fail(f"committed dataset {name!r} is missing or corrupt: {e}")


@pytest.mark.parametrize("name", ["connect4-uniform", "connect4-eps-optimal"])
def test_connect4_states_against_the_solver(name):
    d = _committed(name)
    assert len(d) == 1500 and d.labelled
    assert set(d.groups) == set(datasets.GROUPS)  # the hard openings too, now from every ply
    assert d.meta["version"] == 2 and (d.plies < 12).sum() > 300  # states before the 12-ply book
    scores, move_scores, remaining = d.column("score"), d.column("move_scores"), d.column("remaining")
    # Groups follow D.3 from plies played and remaining.
    for g, n, r in zip(d.groups, d.plies, remaining):
        phase = "opening" if n <= 14 else "midgame" if n < 28 else "endgame"
        level = "easy" if r < 14 or phase == "endgame" else "medium" if r < 28 else "hard"
        assert g == f"{level}-{phase}"
    solver = Connect4Solver(tt_log2_size=20)
    rng = np.random.default_rng(0)
    moves = d.moves
    for i in rng.choice(len(d), size=12, replace=False):
        digits = moves_to_digits(moves[i])
        assert solver.analyze(digits) == move_scores[i]
        assert solver.solve(digits) == scores[i] == max(s for s in move_scores[i] if s is not None)
        assert remaining[i] == plies_to_end(scores[i], len(moves[i]))
    assert (d.labels.v_star == np.sign(scores)).all()


def test_connect4_openings():
    d = _committed("connect4-openings")
    assert len(d) == 568 and (d.plies == 4).all() and d.labels is None
    keys, _ = connect4_keys(d.states.current, d.states.mask)
    assert len(set(keys.tolist())) == 568  # one per mirror class
    game = games.make("connect4")
    assert not game.terminal(d.states).any()


def test_connect4_discounted_labels():
    d = _committed("connect4-uniform")
    undiscounted, discounted = d.labels, d.labels_at(0.9)
    np.testing.assert_array_equal(np.sign(discounted.v_star), undiscounted.v_star)
    remaining = np.array(d.column("remaining"))
    won = undiscounted.v_star != 0
    # A result r plies away is worth gamma ** (r - 1).
    np.testing.assert_allclose(np.abs(discounted.v_star[won]), 0.9 ** (remaining[won] - 1), rtol=1e-5)
    with pytest.raises(DatasetError, match="undiscounted labels only"):
        load_dataset("chomp-9x10").labels_at(0.9)


def test_build_command(tmp_path, capsys):
    assert main(["build", "--game", "go", "--out", str(tmp_path)]) == 0
    assert (tmp_path / "go-openings.parquet").is_file()
    assert "go-openings" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        main(["build", "--game", "connect5", "--out", str(tmp_path)])
    assert "no datasets for game 'connect5'" in capsys.readouterr().err
    assert main(["frobnicate"]) == 2
