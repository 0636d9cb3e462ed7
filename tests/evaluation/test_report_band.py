"""A figure's 95% band over seeds stays on its metric's scale: over two seeds a Student-t
half-width of a match score can pass 1, which the scale's end says already."""

from __future__ import annotations

import numpy as np

from evaluation.report import band, band_edges


def test_bounded_kinds_are_clipped_to_their_scale_and_the_others_kept():
    mean, half = np.array([0.2, 0.5]), np.array([3.0, 0.1])
    low, high = band_edges("eval/othello-grhino/score", mean, half)
    assert low.tolist() == [-1.0, 0.4] and np.allclose(high, [1.0, 0.6])
    low, high = band_edges("eval/connect4-play/ply-10/error_rate", np.array([0.05]), np.array([0.2]))
    assert low.tolist() == [0.0] and np.allclose(high, [0.25])  # a subset's rate too
    low, high = band_edges("eval/connect4-uniform/value_mae", np.array([0.1]), np.array([0.3]))
    assert np.allclose(low, [-0.2]) and np.allclose(high, [0.4])  # no scale declared: as it is
    low, high = band_edges("loss", np.array([0.1]), np.array([0.3]))  # not an evaluation metric
    assert np.allclose(low, [-0.2])


def test_two_seeds_far_apart_give_a_band_past_the_scale_that_the_edges_clip():
    x = np.array([0.0, 1.0])
    grid, mean, half = band([(x, np.array([-1.0, -0.9])), (x, np.array([-1.0, 0.5]))], points=3)
    assert (mean + half)[-1] > 1.0  # t(1) = 12.7: the raw band leaves the scale
    low, high = band_edges("eval/h2h/score", mean, half)
    assert high[-1] == 1.0 and low[-1] == -1.0 and low[0] == high[0] == -1.0  # equal seeds: no width
