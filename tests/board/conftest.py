"""The board's fixtures: servers on a free loopback port, HTTP clients with their own
cookie jars, and small checkpoints written as ``python -m launch`` writes them."""

from __future__ import annotations

import http.cookiejar
import json
import urllib.error
import urllib.request

import pytest

import games
from board.agents import OracleAgent, load_agent
from board.cli import BackgroundServer
from board.session import Table
from learner.checkpoint import LearnerState, RunCheckpoint, save_run_checkpoint
from learner.learner import Learner
from inference.networks import NetworkConfig

SMALL = NetworkConfig("mlp", width=16, blocks=1, layers_per_block=1, head_width=16)


def write_checkpoint(directory, game, algo="avi", config=SMALL):
    """An untrained network's checkpoint, in the layout of launch/train.py's."""
    learner = Learner(game, config, device="cpu")
    path = directory / "checkpoints" / "ckpt-000000003.pt"
    save_run_checkpoint(path, RunCheckpoint(counters={"updates": 3}, learner=LearnerState(learner.state_dict(), {}),
                                            actors=[], config=json.dumps({"algo": algo, "game": game.name, "gamma": 1.0}),
                                            faults={}))
    return path


class Client:
    """One browser's worth of HTTP: its own cookie jar, JSON in and out."""

    def __init__(self, url: str):
        self.url = url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def raw(self, path: str, data: bytes | None = None, content_type="application/json"):
        request = urllib.request.Request(self.url + path, data=data, method="GET" if data is None else "POST",
                                         headers={"Content-Type": content_type})
        try:
            with self.opener.open(request, timeout=60) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def get(self, path="/api/state"):
        status, body = self.raw(path)
        return status, json.loads(body)

    def post(self, path, body):
        status, raw = self.raw(path, json.dumps(body).encode())
        return status, json.loads(raw)


@pytest.fixture(scope="session")
def connect4():
    return games.make("connect4")


@pytest.fixture(scope="session")
def c4_oracle(connect4):
    return Table.oracle_for(connect4, None)


@pytest.fixture(scope="session")
def c4_checkpoint(tmp_path_factory, connect4):
    return write_checkpoint(tmp_path_factory.mktemp("c4-run"), connect4)


@pytest.fixture(scope="session")
def c4_table(connect4, c4_oracle, c4_checkpoint):
    """Connect Four against an untrained AVI checkpoint (it makes mistakes to mark)."""
    _, agent = load_agent(c4_checkpoint, "connect4")
    return Table(connect4, agent, oracle=c4_oracle)


@pytest.fixture(scope="session")
def c4_server(c4_table):
    with BackgroundServer(c4_table) as server:
        yield server


@pytest.fixture
def client(c4_server):
    return Client(c4_server.url)


class ScriptedAgent:
    """Plays the moves it is given, in order (known positions for the marks)."""

    def __init__(self, moves, game=None):
        self.moves, self.game, self.name = list(moves), game, "scripted"

    def think(self, state):
        move = self.moves.pop(0)
        legal = [] if self.game is None else self.game.legal(state)[0].nonzero()[0]
        return move, {"kind": "values", "values": {str(a): float(a == move) for a in legal}}


@pytest.fixture
def oracle_agent(connect4, c4_oracle):
    return OracleAgent(connect4, c4_oracle)
