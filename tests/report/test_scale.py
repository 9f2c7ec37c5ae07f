"""Nice axis domains shared by the SVG and the terminal plot."""

from __future__ import annotations

import math

from precision_shell.report.scale import (
    Domain,
    LinearScale,
    cosine_domain,
    decibel_domain,
    nice_step,
)


def test_nice_step_is_1_2_or_5_times_a_power_of_ten() -> None:
    assert nice_step(0.107342) == 0.05  # raw 0.0215: 0.01 and 0.02 are too small
    assert math.isclose(nice_step(0.1), 0.02)
    assert nice_step(73.87) == 20.0
    assert nice_step(13, ticks=10) == 2.0
    assert nice_step(5.0) == 1.0


def test_cosine_domain_reaches_below_the_lowest_cosine_and_the_threshold() -> None:
    # 0.892658 -> step 0.05 -> floor 0.85, which is 0.043 below: no extra step
    assert cosine_domain([1.0, 0.892658, math.nan], 0.98) == Domain(0.85, 1.0, 0.05)
    # all healthy: the threshold sets the bottom; 0.98 would sit on the edge, so one more step
    assert cosine_domain([1.0, 0.999], 0.98) == Domain(0.975, 1.0, 0.005)
    assert cosine_domain([-1.0], 0.98) == Domain(-1.0, 1.0, 0.5)
    assert Domain(0.85, 1.0, 0.05).ticks() == [0.85, 0.9, 0.95, 1.0]


def test_decibel_domain_holds_zero_the_values_and_the_reference() -> None:
    assert decibel_domain([74.07, 6.14, math.inf, math.nan], 13.98) == Domain(0.0, 80.0, 20.0)
    assert decibel_domain([-3.0, 12.0], None) == Domain(-5.0, 15.0, 5.0)
    assert decibel_domain([], None) == Domain(0.0, 60.0, 20.0)


def test_linear_scale_maps_ends_and_middle() -> None:
    y = LinearScale(0.85, 1.0, 240.0, 40.0)
    assert (y(0.85), y(1.0)) == (240.0, 40.0)
    assert math.isclose(y(0.925), 140.0)
    assert LinearScale(3, 3, 80.0, 860.0)(3) == 470.0
