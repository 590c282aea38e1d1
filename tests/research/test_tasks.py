"""Task scorers on constructed streams (thesis §3.2)."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.errors import InvalidParameterError
from research import tasks


def test_exceed() -> None:
    true = np.array([10, 61, 70, 59, 80, 5])
    assert tasks.ticks_exceeding(true, 60) == 3
    s = tasks.score_exceed(true + np.array([0, -2, 0, 3, 0, 0]), true, 60)
    assert (s.estimate, s.truth, s.error) == (3, 3, 0) and s.accuracy == 1.0
    s = tasks.score_exceed(true - 15, true, 60)
    assert s.estimate == 1 and s.error == 2 and s.accuracy == pytest.approx(1 / 3)


def test_night_region() -> None:
    sod = np.arange(0, 86400, 3600)
    night = tasks.night_mask(sod)
    assert night.sum() == 12 and night[0] and night[18] and not night[12]
    counts = np.zeros((24, 4))
    counts[night, 0] = 1  # region 0 (locations 0, 1)
    counts[night, 2] = 3  # region 1 (locations 2, 3): most occupied at night
    counts[~night, 0] = 50  # busy in the day only
    region_of = np.array([0, 0, 1, 1])
    s = tasks.score_night_region(counts, counts, region_of, night)
    assert s.estimate == s.truth == 1 and s.accuracy == 1
    wrong = counts.copy()
    wrong[night, 1] = 5
    s = tasks.score_night_region(wrong, counts, region_of, night)
    assert s.estimate == 0 and s.error == 1 and s.accuracy == 0


def test_broken_sensor() -> None:
    rng = np.random.default_rng(0)
    true = np.concatenate([rng.integers(3, 9, 100), np.zeros(40)])
    assert tasks.trailing_zero_start(true) == 100
    assert tasks.broken_since(true) == 100
    noisy = true + rng.laplace(0, 1.0, true.size)
    s = tasks.score_broken_sensor(noisy, true, level=2.0)
    assert s.truth == 100 and s.error <= 3 and s.accuracy >= 0.75
    s = tasks.score_broken_sensor(noisy, true, truth_tick=130)
    assert s.error >= 25 and s.accuracy == 0


def test_weekly_event() -> None:
    tpw = 7 * 24
    true = np.zeros(3 * tpw)
    for w in range(3):
        true[w * tpw + 40: w * tpw + 43] = 20  # weekly meeting at tick-of-week 40
        true[w * tpw + 100: w * tpw + 110] = 5
    assert tasks.event_start(true, tpw, window=3) == 40
    noisy = true + np.random.default_rng(1).laplace(0, 2.0, true.size)
    s = tasks.score_weekly_event(noisy, true, tpw, window=3)
    assert s.truth == 40 and s.error <= 1
    s = tasks.score_weekly_event(np.roll(true, 5), true, tpw, window=3, truth_tick=40 + tpw)
    assert s.estimate == 45 and s.error == 5
    # circular distance within the week
    s = tasks.score_weekly_event(true, true, tpw, window=3, truth_tick=tpw - 2 + 40 - 40)
    assert s.error == min(abs(40 - (tpw - 2)), tpw - abs(40 - (tpw - 2)))


def test_bad_input() -> None:
    with pytest.raises(InvalidParameterError):
        tasks.ticks_exceeding(np.zeros((2, 2)), 1)
    with pytest.raises(InvalidParameterError):
        tasks.region_means(np.zeros((3, 2)), np.array([0, 1]), np.zeros(3, bool))
