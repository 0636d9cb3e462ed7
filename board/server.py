"""The HTTP server: the page and its JSON API, one game per session cookie.

Routes (docs/board.md):
  GET  /                the page (static/index.html; its script and style under /static/)
  GET  /api/state       this session's game
  POST /api/move        {"action": A}: the person's move, then the agent's reply
  POST /api/new         {"human": 0 | 1 | null}: a new game, the person first, second, or watching
  POST /api/step        watching: one move of the side to move
  POST /api/undo        take back the person's last move and the agent's reply
  POST /api/replay      {"text": "...", "index": 0}: show a recorded game (board.replay)
  POST /api/seek        {"ply": k}: the replay's position after k plies
Every answer is the game's state (``Session.to_json``); bad input gets HTTP 400 with
``{"error": "..."}`` naming the problem, and the game stays as it was.

Sessions: a client without a ``board_session`` cookie gets one, with a game of its own;
at most ``max_sessions`` are kept (the least recently used is dropped). Requests are
served one at a time (a lock around every game's work): the network and the solver are
not shared between threads, and no request sees another's half-made move.
"""

from __future__ import annotations

import json
import secrets
import threading
import traceback
from collections import OrderedDict
from importlib import resources

import anyio
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from board.replay import ReplayError, parse_replay
from board.session import BadMove, Session, Table

COOKIE = "board_session"
_STATIC = resources.files("board") / "static"


class BadRequest(ValueError):
    pass


class Sessions:
    def __init__(self, table: Table, max_sessions: int = 256, human: int | None = 0):
        self.table, self.max_sessions, self.human = table, max_sessions, human
        self.games: OrderedDict[str, Session] = OrderedDict()
        self.lock = threading.Lock()
        self.replay = None  # (moves, source, who per ply or None): a recorded game new sessions open with

    def get(self, key: str | None) -> tuple[str, Session]:
        if key in self.games:
            self.games.move_to_end(key)
            return key, self.games[key]
        key = secrets.token_urlsafe(16)
        self.games[key] = Session(self.table, self.human)
        if self.replay is not None:
            self.games[key].load_replay(*self.replay)
        while len(self.games) > self.max_sessions:
            self.games.popitem(last=False)
        return key, self.games[key]


def _body(raw: bytes) -> dict:
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise BadRequest(f"malformed JSON body: {e}") from None
    if not isinstance(body, dict):
        raise BadRequest(f"the body must be a JSON object, got {type(body).__name__}")
    return body


def _need(body: dict, key: str):
    if key not in body:
        raise BadRequest(f"the body has no {key!r}: send e.g. {{\"{key}\": 3}}")
    return body[key]


def _command(name: str, session: Session, body: dict) -> None:
    if name == "move":
        session.move(_need(body, "action"))
    elif name == "new":
        session.new(body.get("human", 0))
    elif name == "step":
        session.step()
    elif name == "undo":
        session.undo()
    elif name == "replay":
        text, index = _need(body, "text"), body.get("index", 0)
        if not isinstance(text, str) or isinstance(index, bool) or not isinstance(index, int):
            raise BadRequest("replay needs {\"text\": string, \"index\": integer}")
        try:
            moves = parse_replay(text, session.game, index)
        except ReplayError as e:
            raise BadRequest(str(e)) from None
        session.load_replay(moves, str(body.get("name") or "the uploaded game"))
    elif name == "seek":
        session.seek(_need(body, "ply"))


COMMANDS = ("move", "new", "step", "undo", "replay", "seek")


def make_app(table: Table, *, max_sessions: int = 256, human: int | None = 0) -> Starlette:
    """The app; ``app.state.sessions`` holds its games."""
    sessions = Sessions(table, max_sessions, human)

    async def api(request: Request) -> Response:
        name = request.path_params.get("command", "state")
        if request.method == "POST" and name not in COMMANDS:
            return JSONResponse({"error": f"no API command {name!r}: POST one of {', '.join(COMMANDS)}; "
                                          f"GET /api/state"}, status_code=404)
        raw = await request.body() if request.method == "POST" else b""

        def work():
            with sessions.lock:
                key, session = sessions.get(request.cookies.get(COOKIE))
                try:
                    if request.method == "POST":
                        _command(name, session, _body(raw))
                    return key, 200, session.to_json()
                except (BadRequest, BadMove) as e:
                    return key, 400, {"error": str(e)}
                except Exception as e:  # a bug: answer it, log it, keep serving
                    traceback.print_exc()
                    return key, 500, {"error": f"internal error: {type(e).__name__}: {e}"}

        key, status, payload = await anyio.to_thread.run_sync(work)
        response = JSONResponse(payload, status_code=status)
        if request.cookies.get(COOKIE) != key:
            response.set_cookie(COOKIE, key, httponly=True, samesite="strict")
        return response

    async def page(request: Request) -> Response:
        return Response((_STATIC / "index.html").read_bytes(), media_type="text/html; charset=utf-8")

    async def http_error(request: Request, exc: HTTPException) -> Response:  # 404, 405: JSON like the rest
        return JSONResponse({"error": f"{request.method} {request.url.path}: {exc.detail}"}, status_code=exc.status_code)

    app = Starlette(routes=[Route("/", page), Route("/api/state", api, methods=["GET"]),
                            Route("/api/{command:str}", api, methods=["POST"]),
                            Mount("/static", StaticFiles(directory=str(_STATIC)), name="static")],
                    exception_handlers={HTTPException: http_error})
    app.state.sessions = sessions
    return app
