// The board page: draws the state that GET /api/state answers and sends the person's
// clicks to POST /api/move. No framework, no build step.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const CELL = 64;
const MARK_COLOUR = { optimal: "#2b8a3e", inaccuracy: "#e8a200", error: "#e8590c", blunder: "#c92a2a" };
const STONE = { 1: "#e03131", 2: "#f2c200" };  // Connect Four red (first) and yellow (second)
const PLAYER_NAME = { 1: "first player", 2: "second player" };
let state = null;
let watching = null;

function $(id) { return document.getElementById(id); }

function el(name, attrs, parent) {
  const node = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  if (parent) parent.appendChild(node);
  return node;
}

function say(text, isError) {
  const m = $("message");
  m.textContent = text || "";
  m.className = isError ? "error" : "";
}

async function api(path, body) {
  const options = body === undefined ? { method: "GET" } :
    { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) };
  let response;
  try {
    response = await fetch(path, Object.assign({ credentials: "same-origin" }, options));
  } catch (e) {
    say("the server does not answer: " + e, true);
    return null;
  }
  const data = await response.json();
  if (!response.ok) {
    say(data.error || ("HTTP " + response.status), true);
    return null;
  }
  say("");
  state = data;
  render();
  return data;
}

function scoreText(game, m) {
  if (!m) return "";
  if (game === "connect4") return (m.score > 0 ? "+" : "") + m.score;
  return m.q > 0 ? "win" : m.q < 0 ? "loss" : "draw";
}

// The cell each ply's stone went to (Connect Four: the column's lowest free cell;
// placement games: the cell whose click plays the move).
function plyCells(s) {
  const g = s.board, cells = {};
  if (!g) return cells;
  if (g.shape === "columns") {
    const height = new Array(g.cols).fill(0);
    s.moves.forEach((a, i) => { cells[i] = [g.rows - 1 - height[a], a]; height[a] += 1; });
  } else if (g.shape !== "chomp") {
    s.moves.forEach((a, i) => {
      const r = Math.floor(a / g.cols), c = a % g.cols;
      if (r < g.rows && g.cells[r][c] !== 0) cells[i] = [r, c];
    });
  }
  return cells;
}

function cellXY(g, r, c) {
  const shift = g.shape === "hex" ? r * CELL / 2 : 0;
  return [c * CELL + CELL / 2 + shift, r * CELL + CELL / 2 + 28];
}

function drawBoard() {
  const s = state, svg = $("board"), g = s.board;
  while (svg.firstChild) svg.removeChild(svg.firstChild);
  $("extra-moves").innerHTML = "";
  if (!g) {  // F-Games: a button per move
    svg.setAttribute("width", 0); svg.setAttribute("height", 0);
    for (const a of s.legal) addMoveButton(a, "move " + s.legal_names[a]);
    return;
  }
  const width = g.cols * CELL + (g.shape === "hex" ? g.rows * CELL / 2 : 0), height = g.rows * CELL + 32;
  svg.setAttribute("width", width); svg.setAttribute("height", height);
  svg.setAttribute("viewBox", `0 0 ${width} ${height}`);
  const oracle = s.oracle && s.oracle.position ? s.oracle.position.moves : {};
  if (g.shape === "columns") {
    el("rect", { x: 0, y: 28, width: g.cols * CELL, height: g.rows * CELL, rx: 10, fill: "#1c5fd1", class: "frame" }, svg);
  }
  const lastCells = plyCells(s);
  const markAt = {};
  s.history.forEach((p, i) => {
    if (lastCells[i] && p.mark && p.who !== "human") markAt[lastCells[i].join(",")] = p.mark;
  });
  const last = s.moves.length ? lastCells[s.moves.length - 1] : null;
  for (let r = 0; r < g.rows; r++) {
    for (let c = 0; c < g.cols; c++) {
      const [x, y] = cellXY(g, r, c), v = g.cells[r][c];
      if (g.shape === "columns") {
        el("circle", { cx: x, cy: y, r: CELL * 0.4, fill: v ? STONE[v] : "#fafafa", class: "cell",
                       "data-row": r, "data-col": c }, svg);
      } else if (g.shape === "chomp") {
        const poisoned = r === 0 && c === 0;
        el("rect", { x: x - CELL / 2 + 2, y: y - CELL / 2 + 2, width: CELL - 4, height: CELL - 4, rx: 4,
                     fill: v ? (poisoned ? "#5c940d" : "#8d5524") : "#eee", class: "cell",
                     "data-action": g.click[r][c] === null ? "" : g.click[r][c] }, svg);
      } else {
        const shape = g.shape === "hex" ?
          el("polygon", { points: hexPoints(x, y), fill: "#e9ecef", stroke: "#868e96", class: "cell" }, svg) :
          el("rect", { x: x - CELL / 2, y: y - CELL / 2, width: CELL, height: CELL, fill: "#cfa86e",
                       stroke: "#5f3d0d", class: "cell" }, svg);
        shape.setAttribute("data-action", g.click[r][c]);
        if (v) el("circle", { cx: x, cy: y, r: CELL * 0.38, fill: v === 1 ? "#111" : "#fff", stroke: "#333", class: "stone" }, svg);
      }
      const mk = markAt[r + "," + c];
      if (mk) {  // the agent's move, ringed in its mark's colour (a white ring under it, to show on any disc)
        el("circle", { cx: x, cy: y, r: CELL * 0.27, fill: "none", stroke: "#fff", "stroke-width": 9, class: "ring" }, svg);
        el("circle", { cx: x, cy: y, r: CELL * 0.27, fill: "none", stroke: MARK_COLOUR[mk],
                       "stroke-width": 5, class: "ply-mark " + mk }, svg);
      }
      if (last && last[0] === r && last[1] === c) {
        el("circle", { cx: x, cy: y, r: 5, fill: "#111", class: "last-move" }, svg);
      }
      if (g.shape !== "columns" && g.click[r][c] !== null && oracle[g.click[r][c]] && s.legal.includes(g.click[r][c])) {
        const t = el("text", { x: x, y: y + 5, "text-anchor": "middle", "font-size": 14, class: "oracle" }, svg);
        t.textContent = scoreText(s.game, oracle[g.click[r][c]]);
      }
    }
  }
  if (g.shape === "columns") {
    for (let c = 0; c < g.cols; c++) {  // a column's click target over its cells, its oracle score above it
      const label = el("text", { x: c * CELL + CELL / 2, y: 20, "text-anchor": "middle", "font-size": 16,
                                 class: "oracle col-score", "data-col": c }, svg);
      label.textContent = scoreText(s.game, oracle[c]);
      if (oracle[c] && oracle[c].best) label.setAttribute("font-weight", "bold");
      const hit = el("rect", { x: c * CELL, y: 28, width: CELL, height: g.rows * CELL, fill: "transparent",
                               class: "column", "data-action": c }, svg);
      hit.addEventListener("click", () => play(c));
    }
  } else {
    svg.querySelectorAll("[data-action]").forEach(node => {
      const a = node.getAttribute("data-action");
      if (a !== "") node.addEventListener("click", () => play(Number(a)));
    });
  }
  for (const extra of g.extra) addMoveButton(extra.action, extra.name);
}

function hexPoints(x, y) {
  const pts = [], r = CELL * 0.55;
  for (let i = 0; i < 6; i++) {
    const t = Math.PI / 180 * (60 * i + 30);
    pts.push((x + r * Math.cos(t)).toFixed(1) + "," + (y + r * Math.sin(t)).toFixed(1));
  }
  return pts.join(" ");
}

function addMoveButton(action, label) {
  const b = document.createElement("button");
  b.type = "button"; b.textContent = label; b.setAttribute("data-action", action);
  b.addEventListener("click", () => play(action));
  $("extra-moves").appendChild(b);
}

function valuesTable(table, header, rows) {
  table.innerHTML = "";
  if (!rows.length) return;
  const head = table.insertRow();
  for (const h of header) { const th = document.createElement("th"); th.textContent = h; head.appendChild(th); }
  for (const row of rows) {
    const tr = table.insertRow();
    row.cells.forEach((v, i) => {
      const td = tr.insertCell(); td.textContent = v;
      if (row.best && i > 0) td.className = "best";
    });
  }
}

function drawPanels() {
  const s = state, names = a => s.legal_names[a] || a;
  const now = s.oracle && s.oracle.position;
  valuesTable($("oracle-now"), ["move", "score", "meaning"], now ? Object.entries(now.moves).map(([a, m]) => (
    { cells: [names(a), scoreText(s.game, m), m.text], best: m.best })) : []);
  $("oracle-now").classList.add("oracle");
  const v = s.values;
  let rows = [], header = ["move", "value"];
  if (v && v.kind === "mcts") {
    header = ["move", "prior", "visits"];
    rows = Object.keys(v.prior).map(a => ({ cells: [actionName(a), v.prior[a].toFixed(3), v.visits[a]] }));
  } else if (v && v.values) {
    rows = Object.entries(v.values).map(([a, x]) => ({ cells: [actionName(a), Number(x).toFixed(3)] }));
  }
  valuesTable($("agent-values"), header, rows);
  const list = $("history");
  list.innerHTML = "";
  s.history.forEach((p, i) => {
    const li = document.createElement("li");
    li.className = "ply " + (p.mark || "");
    li.setAttribute("data-ply", i);
    let text = `${p.who}: ${p.name} `;
    li.appendChild(document.createTextNode(text));
    if (p.mark) {
      const m = document.createElement("span");
      m.className = "mark oracle " + p.mark; m.textContent = p.mark;
      li.appendChild(m);
      if (p.oracle && p.mark !== "optimal") {
        const o = p.oracle, chosen = o.moves[p.action];
        const best = Object.entries(o.moves).filter(([, m]) => m.best).map(([a]) => Number(a) + (s.game === "connect4" ? 1 : 0));
        const why = document.createElement("span");
        why.className = "why oracle";
        why.textContent = ` the position was a ${o.value_text}; this move ${scoreText(s.game, chosen)} (${chosen.text}); ` +
          `best: ${best.join(", ")} at ${scoreText(s.game, { score: o.best_score, q: o.value })}`;
        li.appendChild(why);
      }
    }
    if (s.replay && i === s.replay.cursor - 1) li.classList.add("current");
    list.appendChild(li);
  });
  const counts = s.oracle ? s.oracle.agent_marks : null;
  $("mark-counts").textContent = counts ? "agent's moves: " + Object.entries(counts).map(([k, n]) => `${n} ${k}`).join(", ") : "no oracle for this game";
}

function render() {
  const s = state;
  $("title").textContent = s.game + (Object.keys(s.params).length ? " " + JSON.stringify(s.params) : "");
  $("players").textContent = "agent: " + s.agent + (s.opponent ? "; opponent: " + s.opponent : "");
  let status;
  if (s.replay) status = `replay of ${s.replay.source}: ply ${s.replay.cursor} of ${s.replay.length}`;
  else if (s.done) status = s.result === "draw" ? "game over: a draw" :
    `game over: the ${PLAYER_NAME[s.result.winner + 1]} (${s.result.who}) wins`;
  else status = `${PLAYER_NAME[s.to_move + 1]} to move (${s.turn === "human" ? "you" : s.turn})`;
  $("status").textContent = status;
  $("replay-bar").hidden = !s.replay;
  if (s.replay) $("replay-pos").textContent = `${s.replay.cursor} / ${s.replay.length}`;
  document.body.classList.toggle("hidden-oracle", !$("show-oracle").checked);
  drawBoard();
  drawPanels();
  if (s.human === null && !s.replay && !s.done && (s.turn === "agent" || s.turn === "opponent")) {
    clearTimeout(watching);
    watching = setTimeout(() => api("/api/step", {}), 600);
  }
}

function play(action) { return api("/api/move", { action: action }); }

function seek(delta, absolute) {
  const r = state.replay;
  const ply = absolute !== undefined ? absolute : Math.max(0, Math.min(r.length, r.cursor + delta));
  return api("/api/seek", { ply: ply });
}

window.addEventListener("DOMContentLoaded", () => {
  $("new-first").addEventListener("click", () => api("/api/new", { human: 0 }));
  $("new-second").addEventListener("click", () => api("/api/new", { human: 1 }));
  $("watch").addEventListener("click", () => api("/api/new", { human: null }));
  $("undo").addEventListener("click", () => api("/api/undo", {}));
  $("show-oracle").addEventListener("change", render);
  $("replay-load").addEventListener("click", () => {
    const file = $("replay-file").files[0];
    if (!file) { say("choose a recorded game first (JSON record, SGF, or Connect Four digits)", true); return; }
    file.text().then(text => api("/api/replay", { text: text, name: file.name }));
  });
  $("replay-start").addEventListener("click", () => seek(0, 0));
  $("replay-back").addEventListener("click", () => seek(-1));
  $("replay-forward").addEventListener("click", () => seek(1));
  $("replay-end").addEventListener("click", () => seek(0, state.replay.length));
  document.addEventListener("keydown", e => {
    if (!state || !state.replay) return;
    if (e.key === "ArrowLeft") seek(-1);
    if (e.key === "ArrowRight") seek(1);
  });
  api("/api/state");
});

// A move's name for people (Connect Four columns 1..7), from the moves the server named.
function actionName(a) {
  if (state.legal_names[a]) return state.legal_names[a];
  const i = state.moves.indexOf(Number(a));
  if (i >= 0) return state.move_names[i];
  return state.game === "connect4" ? String(Number(a) + 1) : String(a);
}
