"""The training losses, one per algorithm (its descriptor's ``loss``,
``algorithms.descriptors.AlgorithmDescriptor``), each over one minibatch:

    AVI        (AVI paper eq. 5)   (V(s) - y)^2
    ALPHAZERO  (eq. 11)            (V(s) - z)^2 - pi . log softmax(logits)
    azal(w)    (AZAL paper eq. 10) AlphaZero's + w * (-q_aux . log softmax(logits)),
                                   the last term averaged over the oracle-labelled rows only
                                   (w = lambda_aux, AZAL's own setting ``aux_weight``)

A :class:`Loss` reads the action distributions of the rows by column name
(``replay.rows.POLICY``, ``AUX_POLICY``) and answers the total and the extra metrics it
names, detached, in order (``Learner.metric_names``). A loss with a parameter of its
algorithm is made from it (:func:`azal`), so that the others take none.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from replay.rows import AUX_POLICY, POLICY


@dataclass(frozen=True)
class Loss:
    """A loss and the metrics it reports beside the total."""

    metrics: tuple[str, ...]  # names of the extra metrics, in the order ``compute`` answers them
    # (value [N], logits [N, A] or None, target [N], {column: [N, A]}) -> (loss, extra metrics)
    compute: Callable[..., tuple[torch.Tensor, list[torch.Tensor]]]


def _value(value, logits, y, pi):
    return F.mse_loss(value, y), []  # eq. (5)


def _policy_terms(value, logits, y, pi):
    """eq. (11)'s value and policy terms, and the log-policy [N, A] they used."""
    value_loss = F.mse_loss(value, y)
    log_p = F.log_softmax(logits, dim=1)  # [N, A]
    policy_loss = -(pi[POLICY] * log_p).sum(1).mean()
    return value_loss, policy_loss, log_p


def _alphazero(value, logits, y, pi):
    value_loss, policy_loss, _ = _policy_terms(value, logits, y, pi)
    return value_loss + policy_loss, [value_loss.detach(), policy_loss.detach()]


def _azal(value, logits, y, pi, *, aux_weight: float):
    value_loss, policy_loss, log_p = _policy_terms(value, logits, y, pi)  # one log-policy for both terms
    labelled = (pi[AUX_POLICY].sum(1) > 0).float()  # [N]; unlabelled rows are all zeros
    per_row = -(pi[AUX_POLICY] * log_p).sum(1)  # [N]
    aux_loss = (per_row * labelled).sum() / labelled.sum().clamp(min=1.0)  # over labelled rows only
    loss = value_loss + policy_loss + aux_weight * aux_loss
    return loss, [value_loss.detach(), policy_loss.detach(), aux_loss.detach(), labelled.mean()]


AVI = Loss((), _value)
ALPHAZERO = Loss(("value_loss", "policy_loss"), _alphazero)


def azal(aux_weight: float) -> Loss:
    """AZAL's loss with lambda_aux = ``aux_weight`` (the AZAL paper's: 1.0)."""
    if not aux_weight >= 0:
        raise ValueError(f"azal: aux_weight must be >= 0, got {aux_weight}")
    return Loss(("value_loss", "policy_loss", "aux_loss", "aux_labelled_fraction"),
                functools.partial(_azal, aux_weight=float(aux_weight)))
