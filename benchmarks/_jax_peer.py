"""The peer of ``benchmarks.peer_speed``: the same self-play and updates written the way the
JAX stack writes them (pgx's games under ``jax.vmap``, mctx's search, optax's Adam), each
jit-compiled end to end. Imported only when the peer runs: it needs the ``bench`` extra.

The network is this project's (``inference.networks``), rewritten as a pure function over a
pytree taken from the torch module's own weights, so both sides evaluate the same function
from the same weights (``tests/benchmarks/test_peer_speed.py`` checks the values and
logits): a residual MLP of (Linear -> LayerNorm -> GELU) layers, exact (erf) GELU as
``nn.GELU``, over the board and each of its symmetric images, values averaged and logits
averaged after mapping each image's actions back.

pgx observes a board as ``[H, W, planes]`` booleans, the first two the mover's stones and the
opponent's (Hex adds the colour and whether a swap is allowed, not used here); these are
transposed to this project's encoding ``[2, H, W]`` before the network. pgx's Hex has one
action more than ours (the swap move, ``size * size``): the search and the children run
over our ``A`` actions only, so it is never played.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import mctx
import numpy as np
import optax
import pgx
import pgx.hex
from pgx.experimental import auto_reset
from torch import nn

LN_EPS = 1e-5  # nn.LayerNorm's default


def _linear(layer: nn.Linear) -> tuple[jnp.ndarray, jnp.ndarray]:
    return jnp.asarray(layer.weight.detach().numpy().T), jnp.asarray(layer.bias.detach().numpy())


def params_from_torch(net: nn.Module) -> dict:
    """The weights of ``build_network``'s MLP (``Symmetrized`` or not) as a pytree."""
    mlp = getattr(net, "net", net)

    def head(seq):
        return [_linear(seq[0]), _linear(seq[2])]

    blocks = []
    for block in mlp.blocks:
        layers = []
        for layer in block.body:
            linear, norm = layer[0], layer[1]
            layers.append((*_linear(linear), jnp.asarray(norm.weight.detach().numpy()),
                           jnp.asarray(norm.bias.detach().numpy())))
        blocks.append(layers)
    params = {"stem": _linear(mlp.stem), "blocks": blocks, "value": head(mlp.value_head)}
    if mlp.policy_head is not None:
        params["policy"] = head(mlp.policy_head)
    return params


def _gelu(x):
    return jax.nn.gelu(x, approximate=False)  # nn.GELU()'s exact form


def _layer_norm(x, gamma, beta):
    mean = x.mean(-1, keepdims=True)
    var = ((x - mean) ** 2).mean(-1, keepdims=True)
    return (x - mean) * jax.lax.rsqrt(var + LN_EPS) * gamma + beta


def mlp(params: dict, x: jnp.ndarray) -> tuple[jnp.ndarray | None, jnp.ndarray]:
    """ResidualMLP: ``x`` [N, *obs_shape] -> (logits [N, A] or None, value [N])."""
    h = x.reshape(x.shape[0], -1) @ params["stem"][0] + params["stem"][1]  # [N, width]
    for block in params["blocks"]:
        y = h
        for w, b, gamma, beta in block:
            y = _gelu(_layer_norm(y @ w + b, gamma, beta))
        h = h + y
    (w1, b1), (w2, b2) = params["value"]
    value = (_gelu(h @ w1 + b1) @ w2 + b2)[:, 0]
    logits = None
    if "policy" in params:
        (w1, b1), (w2, b2) = params["policy"]
        logits = _gelu(h @ w1 + b1) @ w2 + b2
    return logits, value


IMAGES = {"identity": lambda x: x, "mirror": lambda x: x[..., ::-1], "rot180": lambda x: x[..., ::-1, ::-1]}


def symmetrized(game, params: dict, x: jnp.ndarray) -> tuple[jnp.ndarray | None, jnp.ndarray]:
    """``mlp`` averaged over ``game``'s symmetries as ``inference.networks.Symmetrized`` does it."""
    values, logits = [], []
    for sym in game.symmetries():
        out_logits, value = mlp(params, IMAGES[sym.name](x))
        values.append(value)
        if out_logits is not None:
            logits.append(out_logits[:, np.asarray(sym.action)])
    return (jnp.stack(logits).mean(0) if logits else None), jnp.stack(values).mean(0)


class _Hex(pgx.hex.Hex):
    """pgx's Hex with its initial state sized to the board: pgx 2.6 takes the size for its
    rules but starts every game from an 11x11 board and mask."""

    def _init(self, key):
        state, n = super()._init(key), self.size * self.size
        return state.replace(_x=state._x._replace(board=jnp.zeros(n, jnp.int32)),
                             legal_action_mask=jnp.ones(n + 1, jnp.bool_).at[-1].set(False),
                             observation=jnp.zeros((self.size, self.size, 4), jnp.bool_))


def _scanned(move, steps: int):
    """``move`` (params, (state, key), _) -> ((state, key), row) scanned over ``steps`` moves
    and jit-compiled: (params, state, key) -> (state, key, rows)."""
    @jax.jit
    def run(params, state, key):
        (state, key), rows = jax.lax.scan(functools.partial(move, params), (state, key), None, length=steps)
        return state, key, rows

    return run


# This project's game -> its pgx environment (Hex sized to the board).
PGX_GAMES = {"connect4": lambda game: pgx.make("connect_four"), "hex": lambda game: _Hex(size=game.obs_shape[-1])}


class Peer:
    """One game's pgx environment and this project's network for it, as jit-compiled steps."""

    def __init__(self, game, net_config, net: nn.Module):
        self.game = game
        make = PGX_GAMES.get(game.name)
        if make is None:
            raise ValueError(f"peer: no pgx game for {game.name!r}; pgx's here: {', '.join(PGX_GAMES)}")
        self.env = make(game)
        self.A = game.num_actions  # pgx's Hex: one more (swap), masked
        self.params = params_from_torch(net)
        self.symmetrize = net_config.symmetrize
        self.env_step = auto_reset(self.env.step, self.env.init)

    def forward(self, params, obs):
        """pgx observations [N, H, W, 2] -> (logits [N, A], value [N]) of the project's network."""
        x = jnp.transpose(obs[..., :2], (0, 3, 1, 2)).astype(jnp.float32)  # [N, 2, H, W], our encoding
        return symmetrized(self.game, params, x) if self.symmetrize else mlp(params, x)

    def legal(self, state) -> jnp.ndarray:
        return state.legal_action_mask[:, :self.A]  # [B, A]: Hex's swap move left out

    def init(self, num_envs: int, seed: int):
        return jax.vmap(self.env.init)(jax.random.split(jax.random.PRNGKey(seed), num_envs))

    # ------------------------------------------------------------- AlphaZero self-play
    def alphazero(self, num_envs: int, steps: int, *, search: str, mcts, gumbel):
        """A jitted ``(params, state, key) -> (state, key, rows)``: ``steps`` moves of every
        environment, each a search of ``mcts.simulations`` (PUCT: ``mctx.muzero_policy``,
        Dirichlet noise, the move drawn from the visits at temperature 1; Gumbel:
        ``mctx.gumbel_muzero_policy``, the Sequential Halving winner played), the policy
        target and observation of every move kept, as a self-play actor keeps them."""
        B = num_envs

        def masked(logits, legal):
            logits = logits - logits.max(-1, keepdims=True)
            return jnp.where(legal, logits, jnp.finfo(logits.dtype).min)

        def recurrent_fn(params, key, action, state):
            player = state.current_player
            state = jax.vmap(self.env.step)(state, action)
            logits, value = self.forward(params, state.observation)
            reward = state.rewards[jnp.arange(B), player]
            value = jnp.where(state.terminated, 0.0, value)
            discount = jnp.where(state.terminated, 0.0, -1.0)
            out = mctx.RecurrentFnOutput(reward=reward, discount=discount,
                                         prior_logits=masked(logits, self.legal(state)), value=value)
            return out, state

        def move(params, carry, _):
            state, key = carry
            key, k_search, k_step = jax.random.split(key, 3)
            logits, value = self.forward(params, state.observation)
            legal = self.legal(state)
            root = mctx.RootFnOutput(prior_logits=masked(logits, legal), value=jnp.clip(value, -1, 1),
                                     embedding=state)
            if search == "puct":
                out = mctx.muzero_policy(params, k_search, root, recurrent_fn, mcts.simulations,
                                         invalid_actions=~legal, dirichlet_fraction=mcts.noise_fraction,
                                         dirichlet_alpha=mcts.dirichlet_alpha, pb_c_init=mcts.c_puct,
                                         temperature=mcts.temperature)
            else:
                qtransform = functools.partial(mctx.qtransform_completed_by_mix_value,
                                               value_scale=gumbel.value_scale, maxvisit_init=gumbel.maxvisit_init)
                out = mctx.gumbel_muzero_policy(params, k_search, root, recurrent_fn, mcts.simulations,
                                                invalid_actions=~legal,
                                                max_num_considered_actions=gumbel.max_considered,
                                                gumbel_scale=gumbel.gumbel_scale, qtransform=qtransform)
            row = (state.observation, out.action_weights)
            state = jax.vmap(self.env_step)(state, out.action, jax.random.split(k_step, B))
            return (state, key), row

        return _scanned(move, steps)

    # ------------------------------------------------------------------ AVI self-play
    def avi(self, num_envs: int, steps: int, *, epsilon: float, gamma: float):
        """A jitted ``(params, state, key) -> (state, key, rows)``: ``steps`` epsilon-greedy
        steps, every child of every state evaluated in one call (all ``A`` of them: static
        shapes), the one-step target ``max_a r + gamma (-v(child))`` over the legal moves."""
        B, A = num_envs, self.A
        actions = jnp.arange(A)

        def children(state):  # one state -> its A children
            return jax.vmap(lambda a: self.env.step(state, a))(actions)

        def move(params, carry, _):
            state, key = carry
            key, k_explore, k_random, k_step = jax.random.split(key, 4)
            kids = jax.vmap(children)(state)  # [B, A] states
            obs = kids.observation.reshape(B * A, *kids.observation.shape[2:])
            _, v = self.forward(params, obs)
            v = v.reshape(B, A)
            player = state.current_player
            reward = kids.rewards[jnp.arange(B), :, player]  # [B, A], the mover's
            q = reward + gamma * jnp.where(kids.terminated, 0.0, -v)
            legal = self.legal(state)
            q = jnp.where(legal, q, -jnp.inf)
            target = q.max(1)
            random = jax.random.categorical(k_random, jnp.where(legal, 0.0, -jnp.inf))
            action = jnp.where(jax.random.uniform(k_explore, (B,)) < epsilon, random, q.argmax(1))
            row = (state.observation, target)
            state = jax.vmap(self.env_step)(state, action, jax.random.split(k_step, B))
            return (state, key), row

        return _scanned(move, steps)

    # ------------------------------------------------------------------------- learner
    def learner(self, lr: float, policy: bool):
        """``(init, update)``: Adam at ``lr`` on the value MSE (plus the policy's cross
        entropy with ``policy``), the gradient norm reported as ours reports it."""
        optimizer = optax.adam(lr)

        def loss_fn(params, obs, z, pi):
            x = obs.astype(jnp.float32)  # rows arrive as uint8 [N, 2, H, W], as ours
            logits, value = symmetrized(self.game, params, x) if self.symmetrize else mlp(params, x)
            loss = jnp.mean((value - z) ** 2)
            if policy:
                loss = loss - jnp.mean(jnp.sum(pi * jax.nn.log_softmax(logits), axis=1))
            return loss

        @jax.jit
        def update(params, opt_state, obs, z, pi):
            loss, grads = jax.value_and_grad(loss_fn)(params, obs, z, pi)
            updates, opt_state = optimizer.update(grads, opt_state, params)
            return optax.apply_updates(params, updates), opt_state, jnp.stack([loss, optax.global_norm(grads)])

        return optimizer.init, update


def block(tree):
    return jax.block_until_ready(tree)
